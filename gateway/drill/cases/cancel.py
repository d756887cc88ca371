"""4. Cancelled write.

Three runs, one world:

    waiting    a write waits for approval (email__send outside @acme.example); the run is cancelled;
               an approver approves afterwards: refused; the call again is refused run_cancelled;
               nothing is sent
    soft       a write is in flight (crm__create_contact, held by the CRM with a `delay` fault); a
               soft cancel lets it settle with its real outcome: the CRM confirms it (succeeded,
               the CRM's one row, `effect_after_cancel`)
    hard       a write in flight (email__send to @acme.example, held by the mail service) and a
               `{"hard": true}` cancel: aborted, recorded `unknown` (shown apart from the confirmed
               ones) until a reconcile asks the destination what it did

Every later call of a cancelled run is refused run_cancelled (a read, a new write, the same write's
retry) and reaches no destination. Each in-flight run gets a successor: an operator's call (the
approver and the auditor are refused), with no lease until one is granted (the old token still
answers run_cancelled and adds nothing to the successor), the predecessor's remaining budget
(limit - spent - reserved: the hard run's successor is made while the aborted write still holds
its reservation) and the predecessor's deadline.

Restart mode, three gateway processes: the first is killed at `after_dispatch` of the soft run's
write (the soft cancel was answered, the CRM has confirmed, nothing is recorded); the second, after
the waiting write is approved too late, at `before_settle` inside the hard cancel (the abort is
never recorded, the cancel's answer is lost). After each restart the orphaned write is `unknown`
until a lookup proves what the destination did (the watchdog's or the reconcile route's).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import httpx

from gateway.drill.case import Findings, Mode, case
from gateway.drill.cases.common import actions_of, contacts, messages, settlements
from gateway.drill.world import Agent, Service, World

# The case's own write timeout and the destination's hold inside it: the cancel must land in the
# hold, before the answer (and in restart mode before the failpoint that kills the gateway on it),
# from a drill process that may share two cores with other cases.
TOOL_TIMEOUT = 5.0
DELAY = 3.0  # seconds a destination holds the write: well inside the tool timeout, so it can still confirm
MARGIN = 0.6  # seconds past the tool timeout before a reconcile: a destination's "no such key" counts then
BOUND = 60.0  # seconds: the bound on any one wait of this case


@dataclass(frozen=True)
class Write:
    """One in-flight write of the case: its tool, the destination that holds it, where its rows are."""

    kind: str  # soft | hard
    tool: str
    service: Callable[[World], Service]
    path: str
    failpoint: str  # restart mode: where the gateway dies during this write
    target: str  # the field naming the object (email, to)
    rows: Callable[[World, str], list[dict[str, Any]]]

    def arguments(self, value: str) -> dict[str, Any]:
        if self.tool == "email__send":
            return {"to": value, "subject": f"Drill: {value}", "body": "cancelled write"}
        return {"email": value, "name": f"Lead {value.split('@')[0]}"}


SOFT = Write("soft", "crm__create_contact", lambda w: w.crm, "/contacts", "after_dispatch", "email", contacts)
HARD = Write("hard", "email__send", lambda w: w.mail, "/messages", "before_settle", "to", messages)


@case(
    "cancelled-write",
    "4. Cancelled write",
    "a write waiting for approval never executes (the late approval refused); an in-flight write keeps its "
    "real outcome (soft: succeeded, one row; hard: unknown until a lookup, rows agree); later calls "
    "run_cancelled; the successor needs an operator, has the remaining budget and the deadline",
    depends_on=("approval",),
)
async def cancelled_write(world: World, mode: Mode, f: Findings) -> None:
    started = time.monotonic()
    restart = mode == "restart"
    world.tool_timeout = TOOL_TIMEOUT
    await world.start_gateway({SOFT.failpoint: {"tool": SOFT.tool}} if restart else None)
    waiting = await wait_for_approval_and_cancel(world, mode, f)
    await in_flight(world, mode, f, SOFT, then={HARD.failpoint: {"tool": HARD.tool}})
    await approve_too_late(world, mode, f, *waiting)
    await in_flight(world, mode, f, HARD, then={})
    f.saw(f"{world.starts} gateway start(s), {time.monotonic() - started:.1f} s")


# -- the waiting write -----------------------------------------------------------------------------
async def wait_for_approval_and_cancel(world: World, mode: Mode, f: Findings) -> tuple[str, Agent, dict[str, Any]]:
    run_id, agent = await world.start_run("worker-waiting")
    to = f"cancel-waiting-{mode}@outside.example"
    arguments = {"to": to, "subject": f"Drill {mode}: cancelled while waiting", "body": "never to be sent"}
    first = await agent.call("email__send", arguments, operation_id="waiting-1")
    f.equal(first.code, "approval_required", "the write outside @acme.example")
    f.equal(len(messages(world, to)), 0, "messages sent before any approval")
    f.equal((await world.run(run_id))["status"], "waiting", "the run with a write waiting for approval")
    await world.ok("POST", f"/api/runs/{run_id}/cancel", json={"reason": "drill: cancelled while a write waits"})
    f.saw(f"waiting: {first.code}, cancelled")
    return run_id, agent, arguments


async def approve_too_late(world: World, mode: Mode, f: Findings, run_id: str, agent: Agent, args: Any) -> None:
    """After the cancel (and, in restart mode, a crash): the approval is refused, the call too."""
    approvals = await world.approvals(run_id, "superseded")
    f.expect(bool(approvals), "the waiting write's approval was not superseded by the cancel")
    f.equal(await world.approvals(run_id, "pending"), [], "approvals still pending after the cancel")
    answers = []
    for approval in approvals:
        path = f"/api/approvals/{approval['approval_id']}/approve"
        answer = await world.request("POST", path, "approver", json={"note": "drill: too late"})
        answers.append(answer.status_code)
        f.expect(answer.status_code == 409, f"the late approval answered {answer.status_code}: {answer.text[:200]}")
    f.equal(await world.approvals(run_id, "approved"), [], "approved approvals of the cancelled run")
    again = await agent.call("email__send", args, operation_id="waiting-1")
    f.equal(again.code, "run_cancelled", "the waiting write called again after the late approval")
    await asyncio.sleep(0.2)
    f.equal(len(messages(world, args["to"])), 0, "messages sent for the cancelled waiting write")
    for action in await actions_of(world, run_id):
        f.expect(action["status"] == "rejected", f"the waiting run has an action {action['status']}")
    f.saw(f"late approve {answers}, again {again.code}, 0 sent")


# -- a write in flight -----------------------------------------------------------------------------
async def in_flight(world: World, mode: Mode, f: Findings, write: Write, then: dict[str, Any]) -> None:
    """Cancel while `write` is held at its destination; the recorded outcome must be the real one.
    In restart mode the gateway dies at the write's failpoint and starts again armed with `then`."""
    kind, restart, service = write.kind, mode == "restart", write.service(world)
    run_id, agent = await world.start_run(f"worker-{kind}")
    target = f"cancel-{kind}-{mode}@acme.example"
    arguments = write.arguments(target)
    await service.fault(method="POST", path=write.path, mode="delay", times=1, delay=DELAY)
    started = time.monotonic()
    call = asyncio.create_task(agent.call(write.tool, arguments, operation_id=f"{kind}-1", bound=BOUND))
    held = await wait_in_flight(world, run_id, write)
    f.expect(held is not None, f"{kind}: the write was never in flight at its destination")
    body: dict[str, Any] = {"reason": f"drill: {kind} cancel during a write", "hard": kind == "hard"}
    asked = time.monotonic()
    try:
        answer = await world.request("POST", f"/api/runs/{run_id}/cancel", json=body)
        answered = f"{answer.status_code} in {time.monotonic() - asked:.2f} s"
        f.expect(answer.status_code == 200, f"{kind}: the cancel answered {answer.status_code}: {answer.text[:300]}")
        f.expect(not call.done(), f"{kind}: the cancel waited for the write in flight ({answered})")
    except httpx.TransportError as exc:  # restart mode, hard: the gateway dies inside the cancel
        answered = f"lost ({type(exc).__name__})"
        f.expect(restart and kind == "hard", f"{kind}: the cancel got no answer: {exc!r}")
    reply = await call
    heard = time.monotonic() - started
    if restart:
        died = await world.died_at(write.failpoint, wait=BOUND)
        f.expect(died, f"{kind}: the gateway did not die at {write.failpoint}")
        answered += f", SIGKILL at {write.failpoint}" if died else f", no SIGKILL at {write.failpoint}"
        await world.start_gateway(then)
    f.equal((await world.run(run_id))["status"], "cancelled", f"the run after the {kind} cancel")
    mine = await actions_of(world, run_id, write.tool)
    f.equal(len(mine), 1, f"{kind}: actions of the write")
    if not mine:
        return
    action_id = mine[0]["action_id"]

    # What was first recorded: the history is kept, whatever a lookup (the watchdog's too) did since.
    # The cancel must have come while the write was in flight: before its first settlement.
    history = await world.events(run_id)
    first = ([e["status"] for e in await settlements(world, run_id, action_id, history)] or ["none"])[0]
    cancelled = [e["seq"] for e in history if e["type"] == "run_cancelled"]
    settled = [e["seq"] for e in history if e["type"] == "action_settled" and e["data"].get("action_id") == action_id]
    f.expect(
        bool(cancelled and settled) and cancelled[0] < settled[0],
        f"{kind}: the cancel did not land while the write was in flight (cancel {cancelled}, settled {settled})",
    )
    if restart:
        f.equal(reply.code, "transport", f"{kind}: what the agent heard from the gateway that died")
        f.equal(first, "unknown", f"{kind}: the write orphaned by the crash, as first recorded")
    elif kind == "hard":
        f.equal(reply.code, "outcome_unknown", f"{kind}: what the agent heard of the aborted write")
        f.equal(first, "unknown", f"{kind}: the aborted write, as first recorded")
    elif first == "unknown" and heard >= TOOL_TIMEOUT:
        # A loaded machine: the destination's answer came after the tool timeout, and the write
        # became unknown by that timeout, as any write would (not by the cancel).
        f.equal(reply.code, "outcome_unknown", f"{kind}: what the agent heard of the write that timed out")
        answered += f"; timed out after {heard:.1f} s"
    else:
        f.expect(reply.ok, f"{kind}: the write the cancel let finish answered {reply.code}: {reply.text[:200]}")
        f.equal(first, "succeeded", f"{kind}: the write the cancel let finish (its destination confirmed it)")
    await shown_apart(world, f, run_id, action_id, kind)

    await refused_after_cancel(world, f, agent, write, mode, arguments)
    if kind == "hard":  # its successor while the aborted write may still hold its reservation
        await successor(world, f, run_id, agent, write, mode)
    if (await action(world, run_id, action_id))["status"] == "unknown":
        # Let the destination finish (or forget) the write and a tool timeout pass: its answer is final.
        await asyncio.sleep(max(0.0, max(DELAY, TOOL_TIMEOUT) + MARGIN - (time.monotonic() - started)))
        await world.ok("POST", f"/api/runs/{run_id}/reconcile")
    final = await action(world, run_id, action_id)
    rows = write.rows(world, target)
    outcome_matches_rows(f, kind, final, rows)
    if final["status"] == "succeeded":
        events = [e["type"] for e in await world.events(run_id)]
        f.expect("effect_after_cancel" in events, f"{kind}: a success after the cancel raised no effect_after_cancel")
    if kind == "soft":
        await successor(world, f, run_id, agent, write, mode)
    path = " -> ".join(e["status"] for e in await settlements(world, run_id, action_id))
    f.saw(f"{kind}: cancel {answered}; agent: {reply.code or 'ok'}; {path}; {len(rows)} row")


async def wait_in_flight(world: World, run_id: str, write: Write) -> dict[str, Any] | None:
    """The write once it is admitted and its destination holds it (its key claimed there, or, for a
    write sent without a key, a moment after its admission)."""
    deadline = time.monotonic() + BOUND
    while time.monotonic() < deadline:
        admitted = await actions_of(world, run_id, write.tool, "admitted")
        if admitted:
            key = admitted[0]["idempotency_key"]
            if key is None:  # nothing to see at the destination: cancel early in its DELAY hold
                await asyncio.sleep(0.1)
                return admitted[0]
            if write.service(world).rows("idempotency_keys", "key = ? AND state = 'in_flight'", (key,)):
                return admitted[0]
        await asyncio.sleep(0.02)
    return None


async def shown_apart(world: World, f: Findings, run_id: str, action_id: str, kind: str) -> None:
    """The recovery package shows a confirmed write as confirmed and an unknown one as uncertain."""
    status = (await action(world, run_id, action_id))["status"]
    effects = (await world.ok("GET", f"/api/runs/{run_id}/recovery", "auditor"))["effects"]
    if (await action(world, run_id, action_id))["status"] != status:
        return  # a lookup (the watchdog's) settled it meanwhile: the package was read in between
    confirmed = {e["action_id"] for e in effects["confirmed"]}
    uncertain = {e["action_id"] for e in effects["uncertain"]}
    if status == "succeeded":
        f.expect(action_id in confirmed and action_id not in uncertain, f"{kind}: succeeded, not shown confirmed")
    elif status == "unknown":
        f.expect(action_id in uncertain and action_id not in confirmed, f"{kind}: unknown, not shown uncertain")


async def refused_after_cancel(
    world: World, f: Findings, agent: Agent, write: Write, mode: Mode, arguments: dict[str, Any]
) -> None:
    """A read, a new write and the same write's retry: each refused run_cancelled, none reaches a destination."""
    fresh = f"cancel-{write.kind}-{mode}-after@acme.example"
    calls = {
        "a read": agent.call("crm__search_contacts", {"q": "cancel"}),
        "a new write": agent.call(write.tool, write.arguments(fresh)),
        "the same write again": agent.call(write.tool, arguments, operation_id=f"{write.kind}-1"),
    }
    replies = await asyncio.gather(*calls.values())
    for what, reply in zip(calls, replies, strict=True):
        f.equal(reply.code, "run_cancelled", f"{write.kind}: {what} after the cancel")
    f.equal(len(write.rows(world, fresh)), 0, f"{write.kind}: objects created after the cancel")


# -- the successor ---------------------------------------------------------------------------------
async def successor(world: World, f: Findings, run_id: str, old: Agent, write: Write, mode: Mode) -> None:
    """An operator's explicit successor: the predecessor's remaining budget and deadline, no lease yet."""
    kind = write.kind
    for role in ("approver", "auditor"):
        answer = await world.request("POST", f"/api/runs/{run_id}/successor", role, json={"reason": "not mine"})
        f.equal(answer.status_code, 403, f"{kind}: a successor asked for by the {role}")
    before = await world.run(run_id)
    made = await world.ok("POST", f"/api/runs/{run_id}/successor", json={"reason": f"drill: go on after {kind}"})
    after = await world.run(run_id)
    new_id = made["run_id"]
    # The successor is made from one state of the predecessor: the one read before it or, where a
    # lookup (the watchdog's) settled the aborted write in between, the one read after it.
    dims = ("spend", "tool_calls", "writes")
    limits = {dim: Decimal(str(made["budgets"][dim]["limit"])) for dim in dims}
    snapshots = [{dim: remaining(state["budgets"][dim]) for dim in dims} for state in (before, after)]
    f.expect(
        limits in snapshots,
        f"{kind}: the successor's limits {fmt(limits)} are the remaining budget of neither the predecessor "
        f"before it {fmt(snapshots[0])} nor after it {fmt(snapshots[1])}",
    )
    seconds = made["budgets"]["active_seconds"]["limit"]
    was = before["budgets"]["active_seconds"]["remaining"]
    f.expect(was - 3 <= seconds <= was, f"{kind}: successor's active_seconds {seconds}, the predecessor had {was} left")
    f.equal(made["deadline"], before["deadline"], f"{kind}: the successor's deadline")
    f.equal(made["lineage_id"], before["lineage_id"], f"{kind}: the successor's lineage")
    f.expect(not made["lease"]["live"], f"{kind}: the successor came with a live lease")

    old_reply = await old.call(write.tool, write.arguments(f"cancel-{kind}-{mode}-old-token@acme.example"))
    f.equal(old_reply.code, "run_cancelled", f"{kind}: the old lease token after the successor")
    f.equal(await world.actions(new_id), [], f"{kind}: actions of the successor before it has a worker")
    recorded = [e for e in await world.events(run_id) if e["type"] == "successor_created"]
    created = [e for e in await world.events(new_id) if e["type"] == "run_created"]
    f.expect(
        any(e["data"].get("successor_run_id") == new_id and e["data"].get("by") == "operator" for e in recorded),
        f"{kind}: the predecessor's history does not record the operator's successor",
    )
    f.expect(
        any(e["data"].get("predecessor_run_id") == run_id for e in created),
        f"{kind}: the successor's history does not name its predecessor",
    )

    agent = await world.lease(new_id, f"worker-{kind}-next")
    target = f"cancel-{kind}-{mode}-successor@acme.example"
    reply = await agent.call(write.tool, write.arguments(target))
    f.expect(reply.ok, f"{kind}: the successor's first write answered {reply.code}")
    f.equal(len(write.rows(world, target)), 1, f"{kind}: objects of the successor's write")
    w = before["budgets"]["writes"]
    f.saw(f"{kind} successor: writes {made['budgets']['writes']['limit']} = {w['limit']}-{w['spent']}-{w['reserved']}")


def remaining(budget: dict[str, Any]) -> Decimal:
    return Decimal(str(budget["limit"])) - Decimal(str(budget["spent"])) - Decimal(str(budget["reserved"]))


def fmt(limits: dict[str, Decimal]) -> str:
    return ", ".join(f"{dim} {value}" for dim, value in limits.items())


# -- evidence --------------------------------------------------------------------------------------
def outcome_matches_rows(f: Findings, kind: str, action: dict[str, Any], rows: list[dict[str, Any]]) -> None:
    """The recorded outcome against the destination's own rows: succeeded is one row (the receipt's),
    failed none; unknown only where the destination cannot tell (a write sent without a key)."""
    status = action["status"]
    if status == "succeeded":
        f.equal(len(rows), 1, f"{kind}: objects at the destination for the write recorded succeeded")
        receipt = (action.get("receipt") or {}).get("id")
        f.expect(bool(rows) and receipt == rows[0]["id"], f"{kind}: receipt {receipt} is not the destination's")
    elif status == "failed":
        f.equal(len(rows), 0, f"{kind}: objects at the destination for the write recorded failed")
    elif status == "unknown":
        f.expect(
            action.get("idempotency_key") is None,
            f"{kind}: still unknown after a reconcile, though the destination can tell ({len(rows)} row)",
        )
        f.expect(len(rows) <= 1, f"{kind}: {len(rows)} objects at the destination for one write")
    else:
        f.expect(False, f"{kind}: the write ended {status}")


async def action(world: World, run_id: str, action_id: str) -> dict[str, Any]:
    return next(a for a in await world.actions(run_id) if a["action_id"] == action_id)
