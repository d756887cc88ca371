"""Also drilled: a malformed, partial or contradictory tool result is recorded as such, never as success."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gateway.drill.case import Findings, Mode, case
from gateway.drill.cases.common import actions_of, contacts, messages, pause_and_resume, settlements
from gateway.drill.world import Service, World


@dataclass(frozen=True)
class Bad:
    """One write the destination commits and then answers badly."""

    fault: str  # the service's fault mode (examples/services/README.md)
    flavor: str  # what the gateway must call the answer: malformed | contradictory
    tool: str
    arguments: dict[str, Any]

    def service(self, world: World) -> Service:
        return world.crm if self.tool.startswith("crm__") else world.mail

    @property
    def path(self) -> str:
        return "/contacts" if self.tool.startswith("crm__") else "/messages"

    def rows(self, world: World) -> list[dict[str, Any]]:
        if self.tool.startswith("crm__"):
            return contacts(world, self.arguments["email"])
        return messages(world, self.arguments["to"])


def bad_writes(mode: Mode) -> list[Bad]:
    return [
        # 201 with half a body: not JSON.
        Bad("malformed", "malformed", "crm__create_contact", {"email": f"malformed-{mode}@leads.example"}),
        # 201 without the `id` the adapter's receipt_id names.
        Bad("partial", "malformed", "crm__create_contact", {"email": f"partial-{mode}@leads.example"}),
        # 201 whose body says `"status": "failed"` (email.yaml's receipt_status expects `sent`).
        Bad(
            "contradictory",
            "contradictory",
            "email__send",
            {"to": f"contradictory-{mode}@acme.example", "subject": f"Drill: a contradictory answer ({mode})"},
        ),
    ]


@case(
    "malformed-result",
    "Also drilled: a malformed, partial or contradictory tool result",
    "a committed write answered with half a body, without its id, or saying failed is recorded unknown "
    "(never succeeded) and the agent sees outcome_unknown; a malformed read fails upstream_failed; "
    "resume reconciles each write to succeeded with the destination's id; one object each",
    depends_on=("idempotency",),
)
async def malformed_result(world: World, mode: Mode, f: Findings) -> None:
    await world.start_gateway()
    run_id, agent = await world.start_run()
    writes = bad_writes(mode)
    action_ids: dict[str, str | None] = {}
    for bad in writes:
        await bad.service(world).fault(method="POST", path=bad.path, mode=bad.fault, times=1)
        reply = await agent.call(bad.tool, bad.arguments, operation_id=f"bad-{bad.fault}")
        action_ids[bad.fault] = reply.action_id
        f.saw(f"{bad.fault}: {reply.code}")
        f.equal(reply.code, "outcome_unknown", f"the agent's answer to a {bad.fault} result")
        message = str(reply.error.get("message", ""))
        f.expect(f"{bad.flavor} response" in message, f"the {bad.fault} answer's message does not say so: {message!r}")
        f.equal(len(bad.rows(world)), 1, f"rows at the destination after the {bad.fault} answer")

    # A read answered with half a body: failed with its code, never a success.
    await world.crm.fault(method="GET", path="/contacts", mode="malformed", times=1)
    read = await agent.call("crm__search_contacts", {"q": "leads.example"})
    f.saw(f"malformed read: {read.code}")
    f.equal(read.code, "upstream_failed", "the agent's answer to a malformed read")
    [read_action] = await actions_of(world, run_id, "crm__search_contacts") or [{"status": "missing"}]
    f.equal((read_action["status"], read_action.get("code")), ("failed", "upstream_failed"), "the malformed read")

    if mode == "restart":
        # The gateway dies with these answers recorded and nothing reconciled yet by resume.
        await world.kill_gateway()
        await world.start_gateway()
        f.saw("SIGKILL and restart")

    # What was recorded when each answer came: unknown, marked malformed or contradictory.
    for bad in writes:
        action_id = action_ids[bad.fault]
        if not f.expect(action_id is not None, f"the {bad.fault} call named no action"):
            continue
        assert action_id is not None
        history = await settlements(world, run_id, action_id)
        first = history[0] if history else {}
        f.equal(
            (first.get("status"), first.get("code")),
            ("unknown", "outcome_unknown"),
            f"the {bad.fault} write as first recorded",
        )
        marked = bool((first.get("receipt") or {}).get(bad.flavor))
        f.expect(marked, f"the {bad.fault} receipt is not marked {bad.flavor}")
        # The same operation again is not executed again (unknown, or replayed once reconciled).
        again = await agent.call(bad.tool, bad.arguments, operation_id=f"bad-{bad.fault}")
        f.expect(
            again.code == "outcome_unknown" or (again.ok and again.replayed),
            f"the retry of the {bad.fault} write answered {again.code} (replayed: {again.replayed})",
        )
        f.equal(len(bad.rows(world)), 1, f"rows at the destination after the {bad.fault} retry")

    # Resume asks each destination by key: the writes happened, with these ids.
    await pause_and_resume(world, run_id)
    settled = {a["action_id"]: a for a in await world.actions(run_id)}
    for bad in writes:
        action = settled.get(action_ids[bad.fault] or "", {"status": "missing"})
        rows = bad.rows(world)
        receipt_id = (action.get("receipt") or {}).get("id")
        f.saw(f"{bad.fault} after resume: {action['status']}")
        f.equal(action["status"], "succeeded", f"the {bad.fault} write after resume")
        same = bool(rows) and receipt_id == rows[0]["id"]
        f.expect(same, f"the {bad.fault} receipt id {receipt_id} is not the row's")
        retry = await agent.call(bad.tool, bad.arguments, operation_id=f"bad-{bad.fault}")
        f.expect(retry.ok and retry.replayed, f"the {bad.fault} retry after resume was not a replay ({retry.code})")
        f.equal(len(bad.rows(world)), 1, f"rows at the destination in the end ({bad.fault})")
