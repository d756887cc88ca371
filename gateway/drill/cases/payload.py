"""6. Changed payload after approval."""

from __future__ import annotations

from typing import Any

from gateway.canonical import payload_sha256
from gateway.drill.case import Findings, Mode, case
from gateway.drill.cases.common import actions_of, messages
from gateway.drill.world import Agent, Reply, World

SEND = "email__send"  # to an outside address: needs an approval (POLICY)
DEAL = "crm__create_deal"  # always needs an approval; has an amount


async def _requested(world: World, f: Findings, agent: Agent, tool: str, arguments: dict[str, Any], what: str) -> str:
    """Call a write that must wait for a fresh approval: its approval id ("" when it did not)."""
    reply = await agent.call(tool, arguments)
    f.equal(reply.code, "approval_required", what)
    approval_id = reply.error.get("approval_id")
    if not isinstance(approval_id, str):
        return ""
    f.equal(reply.error.get("payload_sha256"), payload_sha256(arguments), f"{what}: the hash the approval binds")
    return approval_id


async def _shown(world: World, approval_id: str) -> dict[str, Any]:
    shown: dict[str, Any] = await world.ok("GET", f"/api/approvals/{approval_id}", "approver")
    return shown


async def _decide(world: World, approval_id: str, verb: str) -> None:
    """Decide as a person does: on the payload shown, bound by its hash."""
    shown = await _shown(world, approval_id)
    body = {"note": "drill", "expected_sha256": shown["payload_sha256"]}
    await world.ok("POST", f"/api/approvals/{approval_id}/{verb}", "approver", json=body)


def _check_diff(
    f: Findings, shown: dict[str, Any], against: str, changed: set[str], spec: dict[str, str] | None
) -> None:
    """The fresh approval is shown with a diff against the approved one: these fields, this spec change."""
    what = f"approval {shown.get('approval_id')}'s diff"
    diff = shown.get("diff")
    if not f.expect(isinstance(diff, dict), f"{what}: none is shown"):
        return
    assert isinstance(diff, dict)
    f.equal(diff.get("against"), against, f"{what}: the approval it is against")
    f.equal({c.get("path") for c in diff.get("changes") or []}, changed, f"{what}: the changed fields")
    f.equal(diff.get("spec_version"), spec, f"{what}: the spec_version change")


async def resumed(world: World, run_id: str) -> dict[str, Any]:
    """Pause the run (running or waiting) and resume it: resume reconciles reality first."""
    if (await world.run(run_id))["status"] in ("running", "waiting"):
        await world.ok("POST", f"/api/runs/{run_id}/pause", json={"reason": "drill"})
    answer: dict[str, Any] = await world.ok("POST", f"/api/runs/{run_id}/resume", json={"reason": "drill"})
    return answer


def _replayed(f: Findings, reply: Reply, action_id: str | None, what: str) -> None:
    f.expect(
        reply.ok and reply.replayed and reply.action_id == action_id,
        f"{what}: expected a replay of {action_id}, got {reply.code or 'a result'} "
        f"(replayed {reply.replayed}, action {reply.action_id})",
    )


@case(
    "changed-payload",
    "6. Changed payload after approval",
    "an approval authorizes its exact payload once: a changed recipient, body or amount, or the same "
    "payload under a revised spec_version, needs a fresh approval shown with a diff; a repeat replays; "
    "only the approved payloads arrive, once",
    depends_on=("approval", "idempotency"),
)
async def changed_payload(world: World, mode: Mode, f: Findings) -> None:
    await world.start_gateway()
    run_id, agent = await world.start_run()
    lead = await agent.call("crm__create_contact", {"email": f"payload-{mode}@leads.example", "name": "Payload Lead"})
    contact_id = (lead.structured or {}).get("id")
    if not f.expect(lead.ok and isinstance(contact_id, str), f"the contact for the deal was not created ({lead.code})"):
        return

    mail = {"to": f"payload-{mode}@partner.example", "subject": f"Drill payload {mode}", "body": "the approved body"}
    deal = {"contact_id": contact_id, "title": f"Drill payload deal {mode}", "amount": "1200.00"}
    mail_ok = await _requested(world, f, agent, SEND, mail, "the first send to an outside address")
    if mail_ok:
        await _decide(world, mail_ok, "approve")
    deal_ok = await _requested(world, f, agent, DEAL, deal, "the first deal")
    if deal_ok:
        await _decide(world, deal_ok, "approve")
    f.saw(f"approved a send and a deal ({bool(mail_ok)}, {bool(deal_ok)})")
    if mode == "restart":
        # Between the approval and the call: the approvals are in the store, nothing in memory counts.
        # The approved send itself will die after its dispatch, its receipt never recorded.
        await world.restart({"after_dispatch": {"tool": SEND}})
        f.saw("SIGKILL between approval and call")

    # A changed recipient, body or amount is a new payload: a fresh approval, shown with a diff.
    changes = (
        (SEND, {**mail, "to": f"payload-{mode}-other@partner.example"}, mail_ok, {"/to"}, "a changed recipient"),
        (SEND, {**mail, "body": "a changed body"}, mail_ok, {"/body"}, "a changed body"),
        (DEAL, {**deal, "amount": "12000.00"}, deal_ok, {"/amount"}, "a changed amount"),
    )
    for tool, changed, approved, fields, what in changes:
        fresh = await _requested(world, f, agent, tool, changed, what)
        f.expect(fresh != approved, f"{what} was answered with the approval of the original payload")
        if fresh:
            _check_diff(f, await _shown(world, fresh), approved, fields, None)
            await _decide(world, fresh, "deny")  # the person says no; the run goes back to running
    f.saw("changed recipient, body and amount each asked afresh, diffs shown")

    # The approved payload executes once; a repeat is answered from the record.
    sent = await agent.call(SEND, mail)
    if mode == "restart":
        died = await world.died_at("after_dispatch")
        f.expect(died, f"the gateway did not die after dispatching the approved send ({sent.code})")
        await world.start_gateway()
        admitted = [a for a in await actions_of(world, run_id, SEND) if a["status"] != "rejected"]
        f.equal(len(admitted), 1, "sends admitted before the SIGKILL")
        sent_id = admitted[0]["action_id"] if admitted else None
        # Until it is reconciled the retry is refused outcome_unknown; the watchdog may have looked it
        # up already (it does at once after a start), and then the retry is a replay. Never a second send.
        again = await agent.call(SEND, mail)
        f.expect(
            again.code == "outcome_unknown" or (again.ok and again.replayed and again.action_id == sent_id),
            f"the approved send retried after the restart: {again.code or 'a result'} (replayed {again.replayed})",
        )
        await resumed(world, run_id)
        settled = [a["action_id"] for a in await actions_of(world, run_id, SEND, "succeeded")]
        f.equal(settled, [sent_id], "the sends reconciled to succeeded")
        f.saw(f"the approved send: SIGKILL after dispatch, then {again.code or 'replayed'}, reconciled")
    else:
        f.expect(sent.ok, f"the approved send was refused ({sent.code})")
        sent_id = sent.action_id
    _replayed(f, await agent.call(SEND, mail), sent_id, "the approved send called again")
    approval = await _shown(world, mail_ok) if mail_ok else {}
    f.equal(approval.get("status"), "used", "the send's approval after its call")
    f.equal(approval.get("action_id"), sent_id, "the action the send's approval was used by")

    # A revision: the approval of the unused deal binds v1, so v2 needs a fresh one.
    patch = {"budgets": {"tool_calls": 250}}
    await world.ok("POST", f"/api/runs/{run_id}/revise", json={"spec_version": "v2", "patch": patch, "reason": "drill"})
    stale = await agent.call(DEAL, deal)
    f.equal(stale.code, "spec_version_mismatch", "the approved deal before the worker read the revision")
    status = await agent.call("warrant_status", {})
    f.equal((status.structured or {}).get("spec_version"), "v2", "warrant_status after the revision")
    if deal_ok:
        f.equal(
            (await _shown(world, deal_ok)).get("status"), "superseded", "the unused deal approval after the revision"
        )
    deal_v2 = await _requested(world, f, agent, DEAL, deal, "the approved deal under the revised spec_version")
    f.expect(deal_v2 != deal_ok, "the deal under v2 was answered with its v1 approval")
    if deal_v2:
        _check_diff(f, await _shown(world, deal_v2), deal_ok, set(), {"from": "v1", "to": "v2"})
        await _decide(world, deal_v2, "approve")
    opened = await agent.call(DEAL, deal)
    f.expect(opened.ok, f"the deal approved under v2 was refused ({opened.code})")
    _replayed(f, await agent.call(DEAL, deal), opened.action_id, "the approved deal called again")
    f.saw("after the revision: mismatch, a fresh approval (diff: v1 -> v2), one deal")

    # Ground truth: only the approved payloads arrived, each once.
    arrived = world.mail.rows("messages", "to_address LIKE ?", (f"payload-{mode}%",))
    f.equal(
        [(m["to_address"], m["subject"], m["body"]) for m in arrived],
        [(mail["to"], mail["subject"], mail["body"])],
        "messages at the mail service",
    )
    f.equal(len(messages(world, mail["to"])), 1, "messages to the approved recipient")
    deals = world.crm.rows("deals", "contact_id = ?", (contact_id,))
    f.equal([(d["title"], d["amount"]) for d in deals], [(deal["title"], deal["amount"])], "deals at the CRM")
    f.saw(f"{len(arrived)} message, {len(deals)} deal at the destinations")
