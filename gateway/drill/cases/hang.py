"""Also drilled: a downstream server that hangs."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx

from gateway.drill.case import Findings, Mode, case
from gateway.drill.cases.common import actions_of, contacts, pause_and_resume, settlements
from gateway.drill.world import TOOL_TIMEOUT, Agent, Reply, World

TOOL = "crm__create_contact"
READ = "crm__search_contacts"
HANG = 3.5  # seconds the CRM holds a request before it commits: longer than the tool timeout
AT_ONCE = 1.0  # seconds past an idle request an operator's control may take while a call hangs (and before it)
SLACK = 1.0  # seconds past the tool timeout a quick call may take to answer (the MCP client, the settle)


async def admitted(world: World, run_id: str, email: str, wait: float = 5.0) -> bool:
    """Wait until the write to `email` is admitted and in flight (the gateway's own view: timing only)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + wait
    while loop.time() < deadline:
        for action in await actions_of(world, run_id, TOOL):
            if action["status"] == "admitted":
                return True
        await asyncio.sleep(0.02)
    return False


async def timed(world: World, method: str, path: str, **body: Any) -> tuple[float, int]:
    started = time.monotonic()
    kwargs: dict[str, Any] = {"json": {"reason": "drill", **body}} if method == "POST" else {}
    answer = await world.request(method, path, **kwargs)
    return time.monotonic() - started, answer.status_code


async def hanging_call(agent: Agent, email: str, bound: float = 10.0) -> asyncio.Task[Reply]:
    return asyncio.create_task(agent.call(TOOL, {"email": email, "name": "Hang Lead"}, operation_id=email, bound=bound))


async def wait_for_row(world: World, email: str, wait: float = HANG + 3) -> bool:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + wait
    while loop.time() < deadline:
        if contacts(world, email):
            return True
        await asyncio.sleep(0.1)
    return False


async def reconciled_once(world: World, f: Findings, run_id: str, agent: Agent, email: str, action_id: str) -> None:
    """The hung write committed late at the CRM: resume proves it, the retry replays, one row."""
    f.expect(await wait_for_row(world, email), f"the CRM never committed {email}")
    await pause_and_resume(world, run_id)
    [action] = [a for a in await world.actions(run_id) if a["action_id"] == action_id] or [{"status": "missing"}]
    rows = contacts(world, email)
    f.saw(f"after resume: {action['status']}")
    f.equal(action["status"], "succeeded", "the hung write after resume")
    receipt_id = (action.get("receipt") or {}).get("id")
    f.expect(bool(rows) and receipt_id == rows[0]["id"], f"the receipt id {receipt_id} is not the CRM's")
    retry = await agent.call(TOOL, {"email": email, "name": "Hang Lead"}, operation_id=email)
    f.expect(retry.ok and retry.replayed, f"the retry of the hung write was not a replay ({retry.code})")
    f.equal(len(contacts(world, email)), 1, f"contacts {email} in the end")


async def first_recorded_unknown(world: World, f: Findings, run_id: str, action_id: str, what: str) -> None:
    history = await settlements(world, run_id, action_id)
    first = history[0] if history else {}
    f.equal((first.get("status"), first.get("code")), ("unknown", "outcome_unknown"), f"{what} as first recorded")


async def control(
    world: World, f: Findings, path: str, call: asyncio.Task[Reply], what: str, **body: Any
) -> tuple[float, float]:
    """One operator control while `call` hangs: (seconds it took, when it answered). It must answer
    at once, and (but for a hard cancel, which ends the call first) before the hanging call does."""
    took, status = await timed(world, "POST", path, **body)
    answered = time.monotonic()
    f.equal(status, 200, f"{what} while a call hangs")
    if not body.get("hard"):
        f.expect(not call.done(), f"{what} answered only after the hanging call did ({took:.2f} s)")
    return took, answered


async def controllable(world: World, f: Findings, mode: Mode) -> None:
    """While a write hangs: pause and cancel answer at once, before the call; resume too; a hard
    cancel aborts the call, which answers at once with its outcome unknown."""
    run_id, agent = await world.start_run(worker=f"control-{mode}")
    # The same API with nothing hanging: on a loaded machine "at once" is this plus AT_ONCE.
    idle = sorted([(await timed(world, "GET", f"/api/runs/{run_id}"))[0] for _ in range(3)])[1]
    timings: dict[str, float] = {}
    await world.crm.fault(method="POST", path="/contacts", mode="delay", delay=HANG, times=None)
    try:
        # Pause, then resume, while a call hangs; the call ends at its own bound, unknown.
        email = f"hang-paused-{mode}@leads.example"
        call = await hanging_call(agent, email)
        f.expect(await admitted(world, run_id, email), "the write to pause under was never in flight")
        timings["pause"], _ = await control(world, f, f"/api/runs/{run_id}/pause", call, "pause")
        timings["resume"], _status = await timed(world, "POST", f"/api/runs/{run_id}/resume")
        reply = await call
        f.equal(reply.code, "outcome_unknown", "the call that hung through a pause")

        # A cancel while a call hangs: the call keeps its real outcome; later calls are refused.
        email = f"hang-cancelled-{mode}@leads.example"
        call = await hanging_call(agent, email)
        f.expect(await admitted(world, run_id, email), "the write to cancel under was never in flight")
        timings["cancel"], _ = await control(world, f, f"/api/runs/{run_id}/cancel", call, "cancel")
        reply = await call
        f.equal(reply.code, "outcome_unknown", "the call that hung through a cancel")
        after = await agent.call(READ, {"q": "hang"})
        f.equal(after.code, "run_cancelled", "a call after the cancel")

        # A hard cancel aborts the hanging call: its answer comes now, not at the bound.
        run_id, agent = await world.start_run(worker=f"hard-{mode}")
        email = f"hang-aborted-{mode}@leads.example"
        call = await hanging_call(agent, email)
        f.expect(await admitted(world, run_id, email), "the write to abort was never in flight")
        path = f"/api/runs/{run_id}/cancel"
        timings["hard cancel"], cancelled_at = await control(world, f, path, call, "hard cancel", hard=True)
        reply = await call
        late = time.monotonic() - cancelled_at
        f.equal(reply.code, "outcome_unknown", "the call a hard cancel aborted")
        f.expect(late < AT_ONCE + idle, f"the aborted call answered {late:.2f} s after the hard cancel")
        [action] = await actions_of(world, run_id, TOOL) or [{"status": "missing", "reason": ""}]
        f.equal(action["status"], "unknown", "the aborted write")
        f.expect("hard cancel" in str(action.get("reason")), f"the aborted write's reason: {action.get('reason')!r}")
    finally:
        await world.crm.clear_faults()
    shown = ", ".join(f"{k} {v * 1000:.0f} ms" for k, v in timings.items())
    f.saw(f"while a call hangs: {shown} (a read of the run, nothing hanging: {idle * 1000:.0f} ms)")
    for what, seconds in timings.items():
        f.expect(seconds < AT_ONCE + idle, f"{what} took {seconds:.2f} s while a call hung (idle: {idle:.2f} s)")


@case(
    "downstream-hang",
    "Also drilled: a downstream server that hangs",
    "a write to a hanging CRM times out unknown within its bound and resume reconciles it (one row); a read "
    "gives up within its bound and retries a flaky one; pause, resume, cancel answer at once while a call "
    "hangs and a hard cancel aborts it; a gateway frozen at a failpoint is killed and the write reconciled",
    depends_on=("idempotency",),
)
async def downstream_hang(world: World, mode: Mode, f: Findings) -> None:
    email = f"hang-{mode}@leads.example"
    if mode == "active":
        await world.start_gateway()
        run_id, agent = await world.start_run()
        warm = await agent.call(READ, {"q": "warm-up"})  # the first call of a process pays its start-up
        f.expect(warm.ok, f"a read before any hang failed ({warm.code})")
        # A write to a CRM that holds the request past the tool timeout: unknown, at the bound.
        await world.crm.fault(method="POST", path="/contacts", mode="delay", delay=HANG, times=1)
        started = time.monotonic()
        reply = await agent.call(TOOL, {"email": email, "name": "Hang Lead"}, operation_id=email)
        took = time.monotonic() - started
        f.saw(f"hung write: {reply.code} after {took:.1f} s")
        f.equal(reply.code, "outcome_unknown", "the write to a hanging CRM")
        f.expect(not contacts(world, email), "the CRM had committed before the agent's answer: the gateway waited")
        f.expect(took < HANG, f"the hung write answered after {took:.1f} s, not at its {TOOL_TIMEOUT:g} s bound")

        # A read of a hanging CRM gives up within its bound; a flaky one is retried and succeeds.
        await world.crm.fault(method="GET", path="/contacts", mode="delay", delay=HANG, times=3)
        started = time.monotonic()
        read = await agent.call(READ, {"q": "hang"})
        took = time.monotonic() - started
        await world.crm.clear_faults()
        f.saw(f"hung read: {read.code} after {took:.1f} s")
        f.equal(read.code, "upstream_unavailable", "a read of a hanging CRM")
        f.expect(took < HANG, f"the hung read answered after {took:.1f} s, not at its {TOOL_TIMEOUT:g} s bound")
        await world.crm.fault(method="GET", path="/contacts", mode="unavailable", times=2, retry_after=0)
        started = time.monotonic()
        flaky = await agent.call(READ, {"q": "hang"})
        took = time.monotonic() - started
        async with httpx.AsyncClient(base_url=world.crm.url) as http:
            left = (await http.get("/_admin/faults")).json()["items"]
        f.saw(f"flaky read: {'ok' if flaky.ok else flaky.code} after {took:.1f} s")
        f.expect(flaky.ok, f"a read that met two 503s was not retried to success ({flaky.code})")
        f.equal(left, [], "503s the CRM still had to give (the read was asked three times)")
        f.expect(took < TOOL_TIMEOUT + SLACK, f"the flaky read answered after {took:.1f} s")
    else:
        # The gateway itself hangs right after the adapter gave up on a hanging CRM: the outcome
        # exists only in the frozen process's memory. Killed from outside, started again.
        await world.start_gateway({"after_dispatch": {"tool": TOOL, "action": "hang"}})
        run_id, agent = await world.start_run()
        await world.crm.fault(method="POST", path="/contacts", mode="delay", delay=HANG, times=1)
        call = await hanging_call(agent, email, bound=15)
        frozen = await hung_at(world, "after_dispatch")
        f.expect(frozen, "the gateway did not hang at the after_dispatch failpoint")
        f.expect(not await answers(world), "the frozen gateway still answered /healthz")
        await world.kill_gateway()
        reply = await call
        f.saw(f"frozen after dispatch, SIGKILL from outside; the agent got {reply.code}")
        f.equal(reply.code, "transport", "the call whose gateway froze")
        await world.start_gateway()
    [action] = await actions_of(world, run_id, TOOL) or [{"status": "missing", "action_id": ""}]
    f.expect(action["status"] in ("unknown", "succeeded"), f"the hung write is {action['status']}")
    await first_recorded_unknown(world, f, run_id, action["action_id"], "the hung write")
    await reconciled_once(world, f, run_id, agent, email, action["action_id"])
    await controllable(world, f, mode)


async def hung_at(world: World, failpoint: str, wait: float = 10.0) -> bool:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + wait
    while loop.time() < deadline:
        if f"warrant failpoint {failpoint} fired (hang" in world.gateway_log.read_text():
            return world.gateway is not None and world.gateway.poll() is None
        await asyncio.sleep(0.05)
    return False


async def answers(world: World, wait: float = 1.0) -> bool:
    try:
        async with httpx.AsyncClient(timeout=wait) as http:
            await http.get(f"{world.url}/healthz")
    except httpx.TransportError:
        return False
    return True
