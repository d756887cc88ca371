"""Also drilled: the same event or call delivered twice: one side effect."""

from __future__ import annotations

import asyncio
from typing import Any

from gateway.drill.case import Findings, Mode, case
from gateway.drill.cases.common import actions_of, contacts, messages, pause_and_resume
from gateway.drill.world import Agent, Reply, World

CONTACT = "crm__create_contact"
SEND = "email__send"  # to an @acme.example address: no approval needed (POLICY)
IN_FLIGHT = 1.5  # seconds the destination holds the first call (the tool timeout is 2 s)


def _rows(world: World, tool: str, arguments: dict[str, Any]) -> int:
    return len(contacts(world, arguments["email"]) if tool == CONTACT else messages(world, arguments["to"]))


def _holder(reply: Reply) -> str | None:
    """The action a reply speaks for: a success's own, or the action a refusal names as holding the operation."""
    if reply.ok:
        return reply.action_id
    held = reply.error.get("action_id")
    return held if isinstance(held, str) else None


def _describe(reply: Reply) -> str:
    return f"{reply.code or ('replayed' if reply.replayed else 'executed')} ({_holder(reply)})"


async def _admitted(world: World, run_id: str, tool: str, known: set[str], bound: float = 5.0) -> str | None:
    """Wait until a new action of `tool` is admitted (in flight): its id."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + bound
    while loop.time() < deadline:
        for action in await actions_of(world, run_id, tool, "admitted"):
            if action["action_id"] not in known:
                return str(action["action_id"])
        await asyncio.sleep(0.03)
    return None


async def _settled_once(
    world: World,
    f: Findings,
    agent: Agent,
    what: str,
    tool: str,
    arguments: dict[str, Any],
    op: str | None,
    first: str | None,
) -> None:
    """After the deliveries: a later one replays `first`, and the destination holds one row."""
    later = await agent.call(tool, arguments, operation_id=op)
    f.expect(
        later.ok and later.replayed and later.action_id == first,
        f"{what}: a later delivery was {_describe(later)}, not a replay of {first}",
    )
    f.equal(_rows(world, tool, arguments), 1, f"{what}: rows at the destination")


async def _sequential(
    world: World, f: Findings, agent: Agent, what: str, tool: str, args: dict[str, Any], op: str | None
) -> None:
    first = await agent.call(tool, args, operation_id=op)
    f.expect(first.ok and not first.replayed, f"{what}: the first delivery was {_describe(first)}")
    second = await agent.call(tool, args, operation_id=op)
    f.expect(
        second.ok and second.replayed and second.action_id == first.action_id,
        f"{what}: the second delivery was {_describe(second)}, not a replay of {first.action_id}",
    )
    await _settled_once(world, f, agent, what, tool, args, op, first.action_id)


async def _at_once(
    world: World, f: Findings, agent: Agent, what: str, tool: str, args: dict[str, Any], op: str | None
) -> None:
    """Two deliveries at the same moment: one executes, the other replays it or finds it in flight."""
    replies = await asyncio.gather(*(agent.call(tool, args, operation_id=op) for _ in range(2)))
    executed = [r for r in replies if r.ok and not r.replayed]
    f.equal(len(executed), 1, f"{what}: deliveries that executed ({', '.join(map(_describe, replies))})")
    first = executed[0].action_id if executed else None
    for other in replies:
        if other.ok and not other.replayed:
            continue
        f.expect(
            ((other.ok and other.replayed) or other.code == "operation_in_progress") and _holder(other) == first,
            f"{what}: the other delivery was {_describe(other)}, not a replay of {first} nor operation_in_progress",
        )
    await _settled_once(world, f, agent, what, tool, args, op, first)


async def _while_in_flight(
    world: World, f: Findings, agent: Agent, run_id: str, what: str, tool: str, args: dict[str, Any], op: str | None
) -> None:
    """The second delivery arrives while the destination still holds the first: operation_in_progress."""
    service = world.crm if tool == CONTACT else world.mail
    path = "/contacts" if tool == CONTACT else "/messages"
    await service.fault(method="POST", path=path, mode="delay", times=1, delay=IN_FLIGHT)
    known = {a["action_id"] for a in await actions_of(world, run_id, tool)}
    first_call = asyncio.create_task(agent.call(tool, args, operation_id=op))
    holder = await _admitted(world, run_id, tool, known)
    f.expect(holder is not None, f"{what}: the first delivery was never seen in flight")
    second = await agent.call(tool, args, operation_id=op)
    first = await first_call
    f.expect(first.ok and not first.replayed, f"{what}: the first delivery was {_describe(first)}")
    f.expect(
        second.code == "operation_in_progress" and _holder(second) == first.action_id == holder,
        f"{what}: the delivery while {holder} was in flight was {_describe(second)}, not operation_in_progress",
    )
    await service.clear_faults()
    await _settled_once(world, f, agent, what, tool, args, op, first.action_id)


@case(
    "delivered-twice",
    "Also drilled: the same event or call delivered twice",
    "one side effect: a second delivery (after, at once, or while the first is in flight; with or without an "
    "operation id; across a SIGKILL) replays the first or is refused in progress / outcome_unknown",
    depends_on=("idempotency",),
)
async def delivered_twice(world: World, mode: Mode, f: Findings) -> None:
    if mode == "restart":
        await _across_restart(world, f)
        return
    await world.start_gateway()
    run_id, agent = await world.start_run()

    def contact(tag: str) -> dict[str, Any]:
        return {"email": f"twice-{tag}@leads.example", "name": f"Twice {tag}"}

    def mail(tag: str) -> dict[str, Any]:
        return {"to": f"twice-{tag}@acme.example", "subject": f"Drill twice {tag}", "body": "once, please"}

    await _sequential(world, f, agent, "sequential", CONTACT, contact("seq"), None)
    await _sequential(world, f, agent, "sequential, operation id", SEND, mail("seq-op"), "twice-seq-op")
    await _at_once(world, f, agent, "at once", SEND, mail("once"), None)
    await _at_once(world, f, agent, "at once, operation id", CONTACT, contact("once-op"), "twice-once-op")
    await _while_in_flight(world, f, agent, run_id, "in flight", CONTACT, contact("flight"), None)
    await _while_in_flight(
        world, f, agent, run_id, "in flight, operation id", SEND, mail("flight-op"), "twice-flight-op"
    )
    f.saw("sequential, at once and in flight, with and without operation ids: one row each")


async def _across_restart(world: World, f: Findings) -> None:
    """The first delivery's gateway dies (inside the settle transaction; after the dispatch); the
    re-delivered call is refused outcome_unknown until reconciled, then replays: one row each."""
    lead = {"email": "twice-restart@leads.example", "name": "Twice Restart"}
    note = {"to": "twice-restart@acme.example", "subject": "Drill twice restart", "body": "once, please"}
    await world.start_gateway({"inside_settle": {"tool": CONTACT}})
    run_id, agent = await world.start_run()
    cut = await agent.call(CONTACT, lead)
    died = await world.died_at("inside_settle")
    f.expect(died, f"the gateway did not die inside the settle transaction ({cut.code})")
    # Each destination goes down once its call has been cut off: nothing can reconcile the actions
    # yet (a gateway looks its unknown actions up as it starts), so the re-delivered calls must be
    # refused outcome_unknown, twice at once too, and must not reach anything.
    await world.crm.stop()
    await world.start_gateway({"after_dispatch": {"tool": SEND}})
    cut = await agent.call(SEND, note, operation_id="twice-restart-op")
    died = await world.died_at("after_dispatch") and died
    f.expect(died, f"the gateway did not die after the dispatch ({cut.code})")
    f.saw("SIGKILL inside settle (contact) and after dispatch (mail)" if died else "no SIGKILL at a failpoint")

    await world.mail.stop()
    await world.start_gateway()
    first = {a["tool"]: a for a in await actions_of(world, run_id) if a["status"] != "rejected"}
    for tool, args, op in ((CONTACT, lead, None), (SEND, note, "twice-restart-op")):
        holder = first.get(tool, {})
        f.equal(holder.get("status"), "unknown", f"{tool}'s first delivery after the restart")
        replies = await asyncio.gather(*(agent.call(tool, args, operation_id=op) for _ in range(2)))
        for reply in replies:
            f.expect(
                reply.code == "outcome_unknown" and _holder(reply) == holder.get("action_id"),
                f"{tool} re-delivered before reconciliation: {_describe(reply)}, not outcome_unknown",
            )
    f.saw("re-delivered before reconciliation: outcome_unknown")

    await asyncio.gather(world.crm.start(), world.mail.start())
    await pause_and_resume(world, run_id)
    for tool, args, op in ((CONTACT, lead, None), (SEND, note, "twice-restart-op")):
        holder_id = first.get(tool, {}).get("action_id")
        settled = await actions_of(world, run_id, tool, "succeeded")
        f.equal([a["action_id"] for a in settled], [holder_id], f"{tool}: reconciled by resume")
        replies = await asyncio.gather(*(agent.call(tool, args, operation_id=op) for _ in range(2)))
        for reply in replies:
            f.expect(
                reply.ok and reply.replayed and reply.action_id == holder_id,
                f"{tool} re-delivered after resume: {_describe(reply)}, not a replay of {holder_id}",
            )
        f.equal(_rows(world, tool, args), 1, f"{tool}: rows at the destination")
    f.saw("after resume: replays; one row each")
