"""An approver's edit and denial message (docs/decisions/0032-approve-edited.md), on both stores: the
edit is checked as the run's own call would be, binds its own hash, is answered to the replaced
payload with the approved arguments, and is the one side effect; a denial's message reaches the model."""

from __future__ import annotations

import asyncio
import json

import anyio
import pytest

from gateway.canonical import canonical_json, sha256_hex
from gateway.errors import Conflict, InvalidRequest
from gateway.store.records import ApprovalStatus, Principal
from tests.harness import APPROVER, TENANT, WAIT, World, code_of, op, text_of

pytestmark = pytest.mark.anyio

PROPOSED = {"text": "mail bob@acme.example: the offer is 10% off"}
EDITED = {"text": "mail carol@acme.example: the offer is 5% off"}


def digest(value: object) -> str:
    return sha256_hex(canonical_json(value))


async def test_an_edit_binds_its_own_hash_and_is_the_one_side_effect(world: World) -> None:
    run = await world.new_run()
    asked = await world.call(run.token, "t__approve", PROPOSED)
    assert code_of(asked) == "approval_required"
    edited = await world.edit(asked, EDITED, note="send it to Carol, at 5%")
    assert edited.status is ApprovalStatus.APPROVED
    assert (edited.payload_sha256, edited.proposed_sha256) == (digest(EDITED), digest(PROPOSED))
    assert await world.store.get_blob(edited.payload_sha256) == EDITED

    # The payload the person replaced: refused, told the exact arguments now approved.
    again = await world.call(run.token, "t__approve", PROPOSED)
    assert code_of(again) == "approval_edited"
    assert again.structured is not None
    error = again.structured["error"]
    assert error["arguments"] == EDITED and error["payload_sha256"] == digest(EDITED)
    assert error["approval_id"] == edited.approval_id and error["note"] == "send it to Carol, at 5%"
    assert json.dumps(EDITED, separators=(",", ":")) in text_of(again)  # the text quotes them too
    assert world.tools.effects == []

    # The edited arguments, resent verbatim: admitted on that approval, once.
    done = await world.call(run.token, "t__approve", error["arguments"])
    assert code_of(done) is None
    assert world.tools.effects == [("approve", EDITED)]
    used = await world.approval(edited.approval_id)
    assert (used.status, used.action_id) == (ApprovalStatus.USED, (await world.action(done)).action_id)
    assert code_of(await world.call(run.token, "t__approve", PROPOSED)) == "approval_edited"
    assert world.tools.effects == [("approve", EDITED)]


async def test_the_ledger_keeps_both_hashes_and_never_the_bodies(world: World) -> None:
    run = await world.new_run()
    asked = await world.call(run.token, "t__approve", PROPOSED)
    await world.edit(asked, EDITED)
    await world.call(run.token, "t__approve", PROPOSED)  # refused approval_edited, recorded
    entries = await world.events(run.run_id)
    approved = next(e for e in entries if e.type == "approval_approved")
    assert approved.data["payload_sha256"] == digest(EDITED)
    assert approved.data["proposed_sha256"] == digest(PROPOSED) and approved.data["edited"] is True
    every = json.dumps([e.data for e in entries])
    assert "carol@" not in every and "bob@" not in every
    rejected = [e for e in entries if e.type == "action_rejected"]
    assert rejected[-1].data["code"] == "approval_edited"


async def test_the_edited_call_with_an_operation_id_goes_through_bound_to_the_approval(world: World) -> None:
    run = await world.new_run()
    asked = await world.call(run.token, "t__approve", PROPOSED, op("mail-1"))
    await world.edit(asked, EDITED)
    assert code_of(await world.call(run.token, "t__approve", PROPOSED, op("mail-1"))) == "approval_edited"
    done = await world.call(run.token, "t__approve", EDITED, op("mail-1"))
    assert code_of(done) is None
    replay = await world.call(run.token, "t__approve", EDITED, op("mail-1"))
    assert code_of(replay) is None and world.tools.effects == [("approve", EDITED)]


@pytest.mark.parametrize(
    ("arguments", "constraint"),
    [
        ({"text": 5}, "invalid_arguments"),  # the tool's input schema
        ({"text": "wire the money"}, "constraint_violated"),  # the contract's constraint
        ({"text": "urgent: pay now"}, "approval_rule"),  # a stricter approval than the one decided
    ],
)
async def test_an_edit_outside_the_runs_authority_is_refused_and_decides_nothing(
    world: World, arguments: dict[str, object], constraint: str
) -> None:
    run = await world.new_run(
        authority={"constraints": {"t__approve": "!args.text.startsWith('wire')"}},
        approvals=[{"tool": "t__approve", "when": "args.text.startsWith('urgent')", "role": "admin"}],
    )
    asked = await world.call(run.token, "t__approve", PROPOSED)
    with pytest.raises(InvalidRequest) as refused:
        await world.edit(asked, arguments)
    assert refused.value.code == "edit_outside_authority"
    assert refused.value.http_status == 422
    assert refused.value.details["constraint"] == constraint
    pending = await world.approval(asked)
    assert (pending.status, pending.payload_sha256, pending.proposed_sha256) == (
        ApprovalStatus.PENDING,
        digest(PROPOSED),
        None,
    )


async def test_an_editor_and_an_approver_racing_exactly_one_wins(world: World) -> None:
    run = await world.new_run()
    asked = await world.call(run.token, "t__approve", PROPOSED)
    approval = await world.approval(asked)
    other = Principal("bea", TENANT, frozenset({"approver"}))
    with anyio.fail_after(WAIT):
        results = await asyncio.gather(
            world.edit(asked, EDITED),
            world.store.decide_approval(
                other, approval.approval_id, approve=True, note=None, expected_sha256=approval.payload_sha256
            ),
            return_exceptions=True,
        )
    won = [r for r in results if not isinstance(r, BaseException)]
    lost = [r for r in results if isinstance(r, BaseException)]
    assert len(won) == 1 and len(lost) == 1
    assert isinstance(lost[0], Conflict) and lost[0].code == "approval_not_pending"
    decided = await world.approval(approval.approval_id)
    winner = EDITED if decided.proposed_sha256 is not None else PROPOSED
    assert decided.payload_sha256 == digest(winner)
    done = await world.call(run.token, "t__approve", winner)
    assert code_of(done) is None and world.tools.effects == [("approve", winner)]
    types = await world.event_types(run.run_id)
    assert types.count("approval_approved") == 1


async def test_a_stale_page_cannot_approve_an_edit_of_a_replaced_proposal(world: World) -> None:
    run = await world.new_run()
    first = await world.approval(await world.call(run.token, "t__approve", PROPOSED))
    second = await world.call(run.token, "t__approve", {"text": "a newer proposal"})
    assert (await world.approval(first.approval_id)).status is ApprovalStatus.SUPERSEDED
    with pytest.raises(Conflict) as stale:
        await world.edit(first.approval_id, EDITED, expected_sha256=first.payload_sha256)
    assert stale.value.code == "approval_not_pending"
    with pytest.raises(InvalidRequest) as mismatch:  # the page showed the old payload beside the new id
        await world.edit(second, EDITED, expected_sha256=first.payload_sha256)
    assert mismatch.value.code == "payload_mismatch"
    assert (await world.approval(second)).status is ApprovalStatus.PENDING


async def test_a_denial_message_reaches_the_model_verbatim_on_the_next_call_and_in_status(world: World) -> None:
    run = await world.new_run()
    asked = await world.call(run.token, "t__approve", PROPOSED)
    approval = await world.approval(asked)
    message = "Not to Bob: he left. Send it to sales@acme.example and drop the discount."
    await world.store.decide_approval(
        APPROVER, approval.approval_id, approve=False, note=message, expected_sha256=approval.payload_sha256
    )
    again = await world.call(run.token, "t__approve", PROPOSED)
    assert code_of(again) == "approval_denied"
    assert again.structured is not None
    assert again.structured["error"]["note"] == message
    assert message in text_of(again) and "change the arguments" in text_of(again)
    status = await world.gate.status(run.token)
    [denied] = status["decided_approvals"]
    assert (denied["decision"], denied["code"], denied["message"]) == ("denied", "approval_denied", message)
    assert denied["approval_id"] == approval.approval_id
    # A changed payload is a fresh proposal.
    changed = await world.call(run.token, "t__approve", {"text": "mail sales@acme.example: the offer"})
    assert code_of(changed) == "approval_required"


async def test_a_stored_note_with_control_characters_reaches_the_model_without_them(world: World) -> None:
    # The API refuses such a note; one written before (or by the store directly) is cleaned on the way out.
    run = await world.new_run()
    approval = await world.approval(await world.call(run.token, "t__approve", PROPOSED))
    await world.store.decide_approval(
        APPROVER, approval.approval_id, approve=False, note="no\x1b[2J\x07 way", expected_sha256=None
    )
    again = await world.call(run.token, "t__approve", PROPOSED)
    assert again.structured is not None
    note = again.structured["error"]["note"]
    assert note == "no [2J  way"


async def test_warrant_status_shows_an_edit_until_it_is_used(world: World) -> None:
    run = await world.new_run()
    edited = await world.edit(await world.call(run.token, "t__approve", PROPOSED), EDITED)
    [shown] = (await world.gate.status(run.token))["decided_approvals"]
    assert shown["decision"] == "edited" and shown["code"] == "approval_edited"
    assert shown["arguments"] == EDITED and shown["payload_sha256"] == edited.payload_sha256
    assert shown["proposed_sha256"] == digest(PROPOSED)
    await world.call(run.token, "t__approve", EDITED)
    assert (await world.gate.status(run.token))["decided_approvals"] == []


async def test_an_edit_equal_to_the_proposal_is_a_plain_approval(world: World) -> None:
    run = await world.new_run()
    approved = await world.edit(await world.call(run.token, "t__approve", PROPOSED), dict(PROPOSED))
    assert approved.proposed_sha256 is None and approved.payload_sha256 == digest(PROPOSED)
    assert code_of(await world.call(run.token, "t__approve", PROPOSED)) is None
