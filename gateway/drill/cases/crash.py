"""1. Crash between dispatch and receipt."""

from __future__ import annotations

from gateway.drill.case import Findings, Mode, case
from gateway.drill.cases.common import actions_of, contacts, pause_and_resume, settlements
from gateway.drill.world import World

TOOL = "crm__create_contact"


@case(
    "crash-dispatch-receipt",
    "1. Crash between dispatch and receipt",
    "unknown (never failed) while the destination is down; resume reconciles it to succeeded with the "
    "destination's id; the retry returns that result; one object",
    depends_on=("idempotency",),
)
async def crash_between_dispatch_and_receipt(world: World, mode: Mode, f: Findings) -> None:
    email = f"crash-{mode}@leads.example"
    arguments = {"email": email, "name": "Crash Lead"}
    if mode == "active":
        # The destination commits, then dies without answering: the receipt is lost in flight.
        await world.start_gateway()
        run_id, agent = await world.start_run()
        await world.crm.fault(method="POST", path="/contacts", mode="die_after_commit", times=1)
        first = await agent.call(TOOL, arguments, operation_id="lead-1")
        f.saw(f"the call answered {first.code}")
        f.equal(first.code, "outcome_unknown", "the call whose receipt was lost")
        await world.crm.stop()  # exited already; make sure it is not running
    else:
        await world.start_gateway({"after_dispatch": {"tool": TOOL}})
        run_id, agent = await world.start_run()
        first = await agent.call(TOOL, arguments, operation_id="lead-1")
        died = await world.died_at("after_dispatch")
        f.expect(died, "the gateway did not die at the after_dispatch failpoint")
        f.saw("SIGKILL after dispatch" if died else f"no SIGKILL at after_dispatch ({first.code})")
        await world.crm.stop()  # the destination is down during recovery, at first
        await world.start_gateway()
    f.equal(len(contacts(world, email)), 1, "contacts at the CRM after the lost receipt")
    [action] = await actions_of(world, run_id, TOOL) or [{"status": "missing", "action_id": None}]
    f.equal(action["status"], "unknown", "the write whose receipt was lost")

    # The variant: the destination is down during recovery; nothing is proved, it stays unknown.
    found = await pause_and_resume(world, run_id)
    [after] = await actions_of(world, run_id, TOOL) or [{"status": "missing"}]
    f.equal(after["status"], "unknown", "after a resume while the destination is down")
    f.saw(f"destination down: {after['status']}")

    await world.crm.start()
    found = await pause_and_resume(world, run_id)
    settled = found.get("reconciliation", {}).get("actions", [])
    [after] = await actions_of(world, run_id, TOOL) or [{"status": "missing", "receipt": None}]
    f.saw(f"after resume: {after['status']}")
    f.equal(after["status"], "succeeded", "after a resume with the destination up")
    # The watchdog looks unknown actions up too: it may have settled this one just before the resume.
    by_resume = any(a["action_id"] == action["action_id"] for a in settled)
    history = [s["status"] for s in await settlements(world, run_id, action["action_id"])]
    f.expect(history[:1] == ["unknown"], f"the first recorded outcome was not unknown: {history}")
    f.expect(by_resume or history[-1:] == ["succeeded"], "neither the resume nor the watchdog reconciled the action")
    rows = contacts(world, email)
    receipt_id = (after.get("receipt") or {}).get("id")
    f.expect(bool(rows) and receipt_id == rows[0]["id"], f"receipt id {receipt_id} is not the destination's")

    retry = await agent.call(TOOL, arguments, operation_id="lead-1")
    f.expect(retry.ok and retry.replayed, f"the retry was not a replay ({retry.code})")
    f.equal(retry.action_id, action["action_id"], "the retry's action")
    f.equal(len(contacts(world, email)), 1, "contacts at the CRM after the retry")
    f.saw(f"retry replayed: {retry.replayed}")
