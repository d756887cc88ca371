"""Also drilled: a retry storm (docs/retries.md, docs/decisions/0030-retries.md).

`crm__add_note` has a retry policy (3 attempts) in the drill's policy. The CRM answers 503 twice,
then does the work: one action, two `action_retrying` entries, one note at the CRM. Then it
answers 429 to every request: the call fails after 3 attempts, the operation id is a dead letter
(an entry, an alert), and the same call again is refused `retry_limit` without reaching the CRM.
In restart mode the gateway is SIGKILLed with the dead letter open: the new process still refuses
it. The CRM comes back; the operator retries the dead letter under a fresh operation id: one more
note, the dead letter `retried`, linked to the new action.
"""

from __future__ import annotations

from typing import Any

from gateway.drill.case import Findings, Mode, case
from gateway.drill.cases.common import actions_of
from gateway.drill.world import World

TOOL = "crm__add_note"
MAX_ATTEMPTS = 3


def notes(world: World, contact_id: str) -> list[dict[str, Any]]:
    return world.crm.rows("notes", "contact_id = ?", (contact_id,))


@case(
    "retry-storm",
    "Also drilled: a retry storm",
    "a note whose CRM answers 503 twice then succeeds is one action with two action_retrying entries and one "
    "note; with every request answered 429 the call fails after 3 attempts and the operation id is a dead "
    "letter (entry and alert); the same call again is refused retry_limit and reaches nothing, also after a "
    "SIGKILL; the operator's retry under a fresh operation id adds exactly one note and marks it retried",
    depends_on=("idempotency",),  # retry_limit is per operation id
)
async def retry_storm(world: World, mode: Mode, f: Findings) -> None:
    await world.start_gateway()
    run_id, agent = await world.start_run()
    made = await agent.call("crm__create_contact", {"email": f"storm-{mode}@leads.example", "name": "Storm Lead"})
    f.expect(made.ok, f"the contact answered {made.code}")
    contact_id = str(((made.structured or {}).get("id")) or "")
    path = f"/contacts/{contact_id}/notes"

    # Two 503s, then the work: retried on the same action and key.
    await world.crm.fault(method="POST", path=path, mode="unavailable", times=2, retry_after=0)
    first = await agent.call(TOOL, {"contact_id": contact_id, "text": "first"}, operation_id=f"note-1-{mode}")
    f.expect(first.ok, f"the note after two 503s answered {first.code}")
    history = await world.events(run_id)
    retrying = [e for e in history if e["type"] == "action_retrying"]
    f.equal([e["data"].get("attempts") for e in retrying], [1, 2], "action_retrying entries")
    f.equal({e["data"].get("action_id") for e in retrying}, {first.action_id}, "the action they retried")
    f.equal(len(await actions_of(world, run_id, TOOL)), 1, "actions of the note")
    f.equal(len(notes(world, contact_id)), 1, "notes at the CRM after two 503s")
    f.saw(f"two 503s: {len(retrying)} retries, one action, {len(notes(world, contact_id))} note")

    # Every request answered 429: a dead letter after max_attempts.
    await world.crm.fault(method="POST", path=path, mode="rate_limit", times=None, retry_after=0)
    op = f"note-2-{mode}"
    failed = await agent.call(TOOL, {"contact_id": contact_id, "text": "second"}, operation_id=op)
    f.equal(failed.code, "rate_limited", "the note while every request is rate limited")
    letters = (await world.ok("GET", f"/api/runs/{run_id}/dead-letters"))["items"]
    f.equal([(d["operation_id"], d["attempts"], d["status"]) for d in letters], [(op, MAX_ATTEMPTS, "open")],
            "the run's dead letters")  # fmt: skip
    history = await world.events(run_id)
    f.equal(len([e for e in history if e["type"] == "dead_lettered"]), 1, "dead_lettered entries")
    kinds = [e["data"].get("kind") for e in history if e["type"] == "alert"]
    f.expect("dead_letter" in kinds, f"no dead_letter alert (alerts: {kinds})")

    if mode == "restart":
        await world.kill_gateway()
        await world.start_gateway()
        f.saw("SIGKILL with the dead letter open")
    again = await agent.call(TOOL, {"contact_id": contact_id, "text": "second"}, operation_id=op)
    f.equal(again.code, "retry_limit", "the same call after the dead letter")
    f.equal(len(notes(world, contact_id)), 1, "notes at the CRM while rate limited")
    f.saw(f"always 429: {failed.code}, then {again.code}; {len(letters)} dead letter")

    # The CRM is back: the operator retries it under a fresh operation id.
    await world.crm.clear_faults()
    if letters:
        retried = await world.ok(
            "POST", f"/api/dead-letters/{letters[0]['dead_letter_id']}/retry", json={"reason": "CRM back"}
        )
        f.equal(retried["dead_letter"]["status"], "retried", "the dead letter after the operator's retry")
        f.equal(retried["result"]["is_error"], False, "the operator's retry")
        f.equal(retried["dead_letter"]["retried_action_id"], retried["result"]["action_id"], "the new action")
    f.equal(len(notes(world, contact_id)), 2, "notes at the CRM after the operator's retry")
    f.saw(f"operator's retry: {len(notes(world, contact_id))} notes")
