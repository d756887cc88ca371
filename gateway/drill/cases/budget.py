"""5. Budget exhaustion under concurrency.

A run whose contract admits ten writes; fifty concurrent crm__create_contact calls, each its own
MCP SDK client with its own payload and operation id. Judged from the CRM's rows and the run's
actions and budgets: exactly ten admitted (ten rows, ten succeeded actions, each receipt a row of
its own), the other forty refused `budget_exhausted` naming `writes`; the run's spent equals the
sum of its actions' actual_spend and nothing stays reserved once every write has settled.

Restart mode: the first twenty-five calls against a gateway armed to die inside the sixth settle
transaction; after the restart, before any reconcile is asked for, every orphaned write is
`unknown` and still holds its reservation (reserved = what the admitted-or-unknown actions hold)
and a new call cannot get past them; once a tool timeout has passed, resume reconciles the
unknowns with the CRM; then the other twenty-five calls. Never more than ten in effect (succeeded
or unknown), never a row past ten.

Two replicas on one PostgreSQL store (`budget-two-replicas`): the same fifty calls spread over
both replicas, every other one through each, against the one budget. Restart mode: replica A is
armed to die inside its second settle transaction during the first twenty-five; B keeps serving
while A is down and A is started again: A's calls in flight at the kill (admitted by its dead
process) are marked `unknown` by its restart and none of B's is; once a tool timeout has passed,
a resume reconciles them with the CRM; then the other twenty-five, spread again, against the new
A and the same B.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Sequence
from decimal import Decimal
from typing import Any

from gateway.drill.case import Findings, Mode, case
from gateway.drill.cases.common import pause_and_resume
from gateway.drill.world import CONTRACT, TOOL_TIMEOUT, Agent, Reply, World

TOOL = "crm__create_contact"
WRITES = 10  # what the contract admits
CALLS = 50
BOUND = 60.0  # seconds: the bound on each call (fifty SDK clients on a small machine)
IN_EFFECT = ("succeeded", "unknown")  # actions whose side effect happened or may have


def budgets(writes: int = WRITES) -> dict[str, Any]:
    return {**CONTRACT["budgets"], "writes": writes}


def email(mode: Mode, i: int) -> str:
    return f"budget-{mode}-{i:02d}@leads.example"


async def fire(agents: Sequence[Agent], mode: Mode, calls: range) -> tuple[dict[int, Reply], float]:
    """These calls at once, each with its own payload and operation id, call i through agents[i % n]
    (one agent, or one per replica); the replies and the seconds."""
    started = time.monotonic()
    replies = await asyncio.gather(
        *(
            agents[i % len(agents)].call(
                TOOL, {"email": email(mode, i), "name": f"Lead {i}"}, operation_id=f"budget-{i}", bound=BOUND
            )
            for i in calls
        )
    )
    return dict(zip(calls, replies, strict=True)), time.monotonic() - started


async def fire_a_first(
    world: World, run_id: str, agents: Sequence[Agent], calls: range, *, replica: int
) -> tuple[dict[int, Reply], float]:
    """As `fire`, but the calls through B start once A has admitted two writes (or died): A must
    reach its second settle to die there, and with both started at once a busy machine may let B
    spend the whole budget first. A's calls are still in flight while B's run."""
    started = time.monotonic()
    mine = [i for i in calls if i % len(agents) == replica]
    others = [i for i in calls if i % len(agents) != replica]

    def send(i: int) -> Any:
        agent = agents[i % len(agents)]
        return agent.call(
            TOOL, {"email": email("restart", i), "name": f"Lead {i}"}, operation_id=f"budget-{i}", bound=BOUND
        )

    first = [asyncio.ensure_future(send(i)) for i in mine]
    other = 1 - replica
    deadline = time.monotonic() + BOUND
    while time.monotonic() < deadline and not all(t.done() for t in first):
        ours = set(world.replicas[replica].process_ids)
        actions = await world.actions(run_id, replica=other)
        if sum(x["tool"] == TOOL and x["process_id"] in ours and x["status"] != "rejected" for x in actions) >= 2:
            break
        await asyncio.sleep(0.05)  # stays: polling another process's store through its API
    rest = await asyncio.gather(*(send(i) for i in others))
    done = await asyncio.gather(*first)
    replies = dict(zip(mine, done, strict=True)) | dict(zip(others, rest, strict=True))
    return dict(sorted(replies.items())), time.monotonic() - started


def money(value: Any) -> Decimal:
    return Decimal(str(value)) if value is not None else Decimal(0)


def rows(world: World, mode: Mode) -> list[dict[str, Any]]:
    return world.crm.rows("contacts", "email LIKE ?", (f"budget-{mode}-%",))


@case(
    "budget-concurrency",
    "5. Budget exhaustion under concurrency",
    f"{CALLS} concurrent writes against writes: {WRITES}: exactly {WRITES} admitted ({WRITES} rows, {WRITES} "
    "succeeded), the rest budget_exhausted; spent = sum of actual_spend, nothing left reserved; across a "
    "restart too",
    depends_on=("budget",),
)
async def budget_concurrency(world: World, mode: Mode, f: Findings) -> None:
    if mode == "restart":
        await across_restart(world, f)
        return
    await world.start_gateway()
    run_id, agent = await world.start_run(budgets=budgets())
    replies, seconds = await fire([agent], mode, range(CALLS))
    codes = Counter(r.code or "ok" for r in replies.values())
    f.saw(f"{CALLS} calls in {seconds:.1f} s: {dict(codes)}")
    # A write the CRM did not answer within the tool timeout (a loaded machine) was admitted all the
    # same: it is `unknown` until its lookup, and counts as admitted.
    f.equal(codes["ok"] + codes["outcome_unknown"], WRITES, "calls admitted (answered ok or outcome_unknown)")
    f.equal(codes["budget_exhausted"], CALLS - WRITES, "calls refused budget_exhausted")
    others = sum(codes.values()) - codes["ok"] - codes["outcome_unknown"] - codes["budget_exhausted"]
    f.equal(others, 0, f"calls answered otherwise ({dict(codes)})")
    for reply in replies.values():
        if reply.code == "budget_exhausted":
            f.equal(reply.error.get("dimension"), "writes", "the dimension a refusal names")
            break
    await settle_unknowns(world, f, run_id)
    actions = await world.actions(run_id)
    await check_ledger(world, f, run_id, actions, mode)
    admitted = {email(mode, i) for i, r in replies.items() if r.code in (None, "outcome_unknown")}
    f.equal({r["email"] for r in rows(world, mode)}, admitted, "the CRM's contacts against the calls admitted")


async def across_restart(world: World, f: Findings) -> None:
    mode: Mode = "restart"
    half = CALLS // 2
    # Dies inside the sixth settle transaction of the tool: five writes recorded, the rest in flight.
    await world.start_gateway({"inside_settle": {"tool": TOOL, "skip": 5}})
    run_id, agent = await world.start_run(budgets=budgets())
    first, seconds = await fire([agent], mode, range(half))
    died = await world.died_at("inside_settle", wait=BOUND)
    f.expect(died, "the gateway did not die at inside_settle")
    codes = Counter(r.code or "ok" for r in first.values())
    f.saw(f"{half} calls in {seconds:.1f} s: {dict(codes)}, SIGKILL inside settle: {died}")
    # The CRM is down while the gateway comes back: no lookup (the watchdog's neither) can settle
    # an orphan yet, so what the restarted gateway holds for them is there to be seen.
    await world.crm.stop()
    await world.start_gateway()

    # Before any reconcile can prove anything: orphans are unknown and hold their reservation.
    actions, run = await snapshot(world, run_id)
    states = Counter(a["status"] for a in actions)
    f.expect(states["admitted"] == 0, f"{states['admitted']} actions still admitted after the restart")
    effect = sum(states[s] for s in (*IN_EFFECT, "admitted"))
    f.expect(effect <= WRITES, f"{effect} writes in effect before the reconcile: more than {WRITES}")
    writes = run["budgets"]["writes"]
    held = sum(int(a["reserved"].get("writes", 0)) for a in actions if a["status"] in ("unknown", "admitted"))
    f.equal(int(writes["reserved"]), held, "writes reserved after the restart (the unknown actions' reservations)")
    f.equal(int(writes["spent"]), states["succeeded"], "writes spent after the restart (the succeeded actions)")
    if effect == WRITES:
        extra = await agent.call(TOOL, {"email": email(mode, 99), "name": "Past The Budget"}, bound=BOUND)
        f.equal(extra.code, "budget_exhausted", "a new write while the unknown writes hold the rest of the budget")
    f.saw(f"after restart: {dict(states)}, writes spent {writes['spent']} reserved {writes['reserved']}")

    await world.crm.start()
    # Every orphan proved either way before the other calls: one never sent releases its write.
    reconciled = await settle_unknowns(world, f, run_id)
    second, seconds = await fire([agent], mode, range(half, CALLS))
    codes = Counter(r.code or "ok" for r in second.values())
    f.saw(f"resume reconciled {reconciled}; the other {CALLS - half} in {seconds:.1f} s: {dict(codes)}")
    others = sum(codes.values()) - codes["ok"] - codes["outcome_unknown"] - codes["budget_exhausted"]
    f.equal(others, 0, f"calls answered otherwise ({dict(codes)})")
    await settle_unknowns(world, f, run_id)
    actions = await world.actions(run_id)
    await check_ledger(world, f, run_id, actions, mode)


async def settle_unknowns(world: World, f: Findings, run_id: str) -> int:
    """Writes left `unknown` (no answer within the tool timeout, or orphaned by a SIGKILL) that the
    CRM can tell about: let a tool timeout pass, so that its answer is final (a key it has not seen
    proves nothing before that), and resume, which reconciles them. Returns how many it settled."""
    keyed = [a for a in await world.actions(run_id) if a["status"] == "unknown" and a["idempotency_key"]]
    if not keyed:
        return 0
    await asyncio.sleep(TOOL_TIMEOUT + 0.5)
    found = await pause_and_resume(world, run_id)
    settled = len(found.get("reconciliation", {}).get("actions", []))
    f.saw(f"{len(keyed)} unknown after the calls, {settled} reconciled by a resume")
    return settled


async def snapshot(world: World, run_id: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The run's actions and the run as of one moment (a lookup may settle an action in between: the
    watchdog's): read until the actions are the same before and after the run."""
    for _ in range(10):
        before = await world.actions(run_id)
        run = await world.run(run_id)
        after = await world.actions(run_id)
        if [(a["action_id"], a["status"]) for a in before] == [(a["action_id"], a["status"]) for a in after]:
            return after, run
    return after, run


async def check_ledger(world: World, f: Findings, run_id: str, actions: list[dict[str, Any]], mode: Mode) -> None:
    """The actions, the run's budgets and the CRM's rows agree, and nothing overspent."""
    writes = [a for a in actions if a["tool"] == TOOL]
    states = Counter(a["status"] for a in writes)
    in_effect = [a for a in writes if a["status"] in IN_EFFECT]
    unknown = [a for a in writes if a["status"] == "unknown"]
    f.equal(len(in_effect), WRITES, f"writes in effect (succeeded or unknown) of {dict(states)}")
    for action in unknown:  # only where the CRM cannot tell: a write sent without a key has no lookup
        f.expect(action["idempotency_key"] is None, f"{action['action_id']} is unknown though the CRM can tell")
    refused = Counter(a["code"] for a in writes if a["status"] == "rejected")
    f.expect(set(refused) <= {"budget_exhausted"}, f"writes refused otherwise: {dict(refused)}")

    found = rows(world, mode)
    f.expect(len(found) <= WRITES, f"{len(found)} contacts at the CRM: more than the {WRITES} the budget admits")
    succeeded = [a for a in writes if a["status"] == "succeeded"]
    ids = {r["id"] for r in found}
    receipts = [(a.get("receipt") or {}).get("id") for a in succeeded]
    f.expect(all(r in ids for r in receipts), "a succeeded write's receipt is no contact at the CRM")
    f.equal(len(set(receipts)), len(succeeded), "distinct receipts of the succeeded writes")
    f.expect(len(succeeded) <= len(found) <= len(succeeded) + len(unknown), "contacts at the CRM against the actions")

    run = await world.run(run_id)
    spend, count = run["budgets"]["spend"], run["budgets"]["writes"]
    actual = sum((money(a["actual_spend"]) for a in actions), Decimal(0))
    held = sum((money(a["reserved"].get("spend")) for a in actions if a["status"] == "unknown"), Decimal(0))
    f.equal(money(spend["spent"]), actual, "the run's spent against the sum of its actions' actual_spend")
    f.equal(money(spend["reserved"]), held, "spend still reserved (only unknown writes may hold any)")
    f.equal(int(count["spent"]), len(succeeded), "writes spent")
    f.equal(int(count["reserved"]), len(unknown), "writes reserved")
    f.expect(int(count["spent"]) + int(count["reserved"]) <= WRITES, f"writes over the limit: {count}")
    f.saw(f"{dict(states)}; {len(found)} contacts; spent {spend['spent']} = sum of actual_spend; writes {count}")


@case(
    "budget-two-replicas",
    "5. Budget exhaustion under concurrency",
    f"two gateway replicas on one PostgreSQL store, {CALLS} concurrent writes spread over both against writes: "
    f"{WRITES}: exactly {WRITES} admitted across both, {WRITES} rows, the rest budget_exhausted; one replica "
    "SIGKILLed mid-way and restarted while the other serves: only its own calls in flight become unknown",
    depends_on=("budget",),
    replicas=2,
)
async def budget_two_replicas(world: World, mode: Mode, f: Findings) -> None:
    a, b = 0, 1
    # restart: A dies inside its second settle transaction: one of its writes recorded, others in flight.
    await world.start_replicas({a: {"inside_settle": {"tool": TOOL, "skip": 1}}} if mode == "restart" else None)
    run_id, agent = await world.start_run(budgets=budgets(), replica=b)
    agents = [agent.via(url) for url in world.urls]  # one lease, good on both replicas
    calls = range(CALLS // 2) if mode == "restart" else range(CALLS)
    if mode == "restart":
        replies, seconds = await fire_a_first(world, run_id, agents, calls, replica=a)
    else:
        replies, seconds = await fire(agents, mode, calls)
    codes = Counter(r.code or "ok" for r in replies.values())
    f.saw(f"{len(calls)} calls spread over A and B in {seconds:.1f} s: {dict(codes)}")
    expected = {"ok", "outcome_unknown", "budget_exhausted"}
    if mode == "active":
        f.equal(codes["ok"] + codes["outcome_unknown"], WRITES, "calls admitted across both replicas")
        f.equal(codes["budget_exhausted"], CALLS - WRITES, "calls refused budget_exhausted")
    else:
        await across_replica_restart(world, f, run_id, agents, replies)
        expected.add("transport")  # A's calls cut off by its SIGKILL
        # A's orphans proved either way before the other calls: a write A never sent is failed and
        # releases its reservation to them (left unknown, it would hold it past the last call).
        await settle_unknowns(world, f, run_id)
    f.expect(set(codes) <= expected, f"calls answered otherwise: {dict(codes)}")
    if mode == "restart":
        second, seconds = await fire(agents, mode, range(CALLS // 2, CALLS))
        more = Counter(r.code or "ok" for r in second.values())
        f.saw(f"the other {len(second)} calls, spread again, in {seconds:.1f} s: {dict(more)}")
        f.expect(set(more) <= expected - {"transport"}, f"calls answered otherwise: {dict(more)}")
        replies.update(second)
    await settle_unknowns(world, f, run_id)
    actions = await world.actions(run_id)
    await check_ledger(world, f, run_id, actions, mode)
    by = Counter(_replica_of(world, a["process_id"]) for a in actions if a["tool"] == TOOL and a["status"] in IN_EFFECT)
    f.saw("in effect by replica: " + ", ".join(f"{k} {v}" for k, v in sorted(by.items())))
    # Through both: each replica decided on the one budget, admitting some writes or refusing
    # budget_exhausted ones the other spent it on (which of the two admits how many is timing).
    for index, name in ((b, "gateway-b"), (a, "gateway-a")):
        refused = sum(r.code == "budget_exhausted" for i, r in replies.items() if i % 2 == index)
        f.expect(by.get(name, 0) > 0 or refused > 0, f"replica {name[-1].upper()} decided none of the writes")
    # The agent's replies and the CRM agree: what a call was told succeeded, or may have, is a row.
    told = {email(mode, i) for i, r in replies.items() if r.code is None}
    f.expect(told <= {r["email"] for r in rows(world, mode)}, "a call answered ok has no contact at the CRM")


async def across_replica_restart(
    world: World, f: Findings, run_id: str, agents: Sequence[Agent], replies: dict[int, Reply]
) -> None:
    """A died at its failpoint during the first calls: B serves while A is down; A's restart marks
    its own calls in flight unknown, and none of B's."""
    a, b = 0, 1
    died = await world.died_at("inside_settle", wait=10, replica=a)
    f.expect(died, "replica A did not die at inside_settle")
    cut = sorted(i for i, r in replies.items() if r.code == "transport")
    f.expect(all(i % 2 == a for i in cut), f"calls through B went unanswered: {[i for i in cut if i % 2 == b]}")
    # B keeps serving while A is down: a read through it, and the run through its API.
    read = await agents[b].call("crm__search_contacts", {"email": email("restart", 0)})
    f.expect(read.ok, f"a read through B while A is down answered {read.code}")
    before = await world.actions(run_id, replica=b)
    dead = world.replicas[a].process_ids[-1]
    left = [x for x in before if x["status"] == "admitted"]
    f.expect(all(x["process_id"] == dead for x in left), "an action of a live process is left admitted")
    await world.start_gateway(replica=a)  # the same configuration, without the failpoint

    history = await world.events(run_id, replica=b)
    marked = {e["data"]["action_id"]: e["data"].get("process_id") for e in history if _orphan_mark(e)}
    f.equal(set(marked), {x["action_id"] for x in left}, "the actions A's restart marked unknown")
    f.expect(set(marked.values()) <= {dead}, f"actions of another process marked unknown: {set(marked.values())}")
    mine = set(world.replicas[b].process_ids)
    after = await world.actions(run_id, replica=a)
    f.expect(not [x for x in after if x["process_id"] in mine and x["action_id"] in marked], "B's action marked")
    f.expect(not [x for x in after if x["status"] == "admitted"], "an action left admitted after A's restart")
    f.saw(
        f"A SIGKILLed inside settle: {died}; {len(cut)} of A's calls cut off; B served a read meanwhile; "
        f"A's restart marked {len(marked)} of its own in-flight writes unknown, none of B's"
    )


def _orphan_mark(event: dict[str, Any]) -> bool:
    """An `action_settled` entry written by a start-up for a dead process's action (it names that process)."""
    data = event["data"]
    return event["type"] == "action_settled" and data.get("status") == "unknown" and bool(data.get("process_id"))


def _replica_of(world: World, process_id: str | None) -> str:
    for replica in world.replicas:
        if process_id in replica.process_ids:
            return replica.name
    return "neither"
