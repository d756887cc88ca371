"""Approvals: bound to one exact payload, single use, restored when their action was never sent."""

from __future__ import annotations

import asyncio

import anyio
import pytest

from gateway.domain import ActionStatus, RunStatus
from gateway.errors import Conflict, Forbidden, InvalidRequest
from gateway.store.records import ApprovalStatus, Principal
from tests.harness import OPS, TENANT, WAIT, World, code_of, op

pytestmark = pytest.mark.anyio


async def test_a_pending_approval_moves_the_run_to_waiting_and_its_decision_moves_it_back(world: World) -> None:
    run = await world.new_run()
    asked = await world.call(run.token, "t__approve", {"text": "big"})
    assert code_of(asked) == "approval_required"
    assert (await world.run(run.run_id)).status is RunStatus.WAITING
    # Asking again returns the same pending approval, not a second one.
    again = await world.call(run.token, "t__approve", {"text": "big"})
    assert (await world.approval(again)).approval_id == (await world.approval(asked)).approval_id

    approval = await world.decide(asked)
    assert approval.status is ApprovalStatus.APPROVED
    assert (await world.run(run.run_id)).status is RunStatus.RUNNING
    done = await world.call(run.token, "t__approve", {"text": "big"})
    assert code_of(done) is None
    assert world.tools.effects == [("approve", {"text": "big"})]
    used = await world.approval(approval.approval_id)
    assert (used.status, used.action_id) == (ApprovalStatus.USED, (await world.action(done)).action_id)


async def test_an_approval_is_used_once_even_by_concurrent_calls(world: World) -> None:
    run = await world.new_run()
    await world.decide(await world.call(run.token, "t__approve", {"text": "big"}))
    # Two deliberate attempts (distinct operation ids) race for the one approval.
    with anyio.fail_after(WAIT):
        results = await asyncio.gather(
            world.gate.call(run.token, "t__approve", {"text": "big"}, op("first")),
            world.gate.call(run.token, "t__approve", {"text": "big"}, op("second")),
        )
    assert sorted(code_of(r) or "ok" for r in results) == ["approval_required", "ok"]
    assert world.tools.effects == [("approve", {"text": "big"})]

    # A later attempt meets a fresh approval request, never the used one.
    later = await world.call(run.token, "t__approve", {"text": "big"}, op("third"))
    assert code_of(later) == "approval_required"
    fresh = await world.approval(later)
    assert fresh.status is ApprovalStatus.PENDING
    assert len(world.tools.effects) == 1


async def test_an_approval_binds_the_exact_payload(world: World) -> None:
    run = await world.new_run()
    await world.decide(await world.call(run.token, "t__approve", {"text": "big"}))
    other = await world.call(run.token, "t__approve", {"text": "bigger"})
    assert code_of(other) == "approval_required"
    assert world.tools.effects == []


async def test_an_approval_whose_action_was_not_sent_is_restored_and_serves_the_retry(world: World) -> None:
    run = await world.new_run()
    approval = await world.decide(await world.call(run.token, "t__approve", {"text": "big"}))
    world.tools.modes["approve"] = "not_sent"

    failed = await world.call(run.token, "t__approve", {"text": "big"})
    assert failed.is_error and failed.structured is not None
    assert failed.structured["error"]["sent"] is False
    first = await world.action(failed)
    assert first.status is ActionStatus.FAILED
    assert (await world.approval(approval.approval_id)).status is ApprovalStatus.APPROVED
    assert "approval_restored" in await world.event_types(run.run_id)
    assert (await world.run(run.run_id)).spent == {"spend": 0, "tool_calls": 0, "writes": 0, "active_seconds": 0}

    world.tools.modes["approve"] = "ok"
    retried = await world.call(run.token, "t__approve", {"text": "big"})
    assert code_of(retried) is None
    restored = await world.approval(approval.approval_id)
    assert (restored.status, restored.action_id) == (ApprovalStatus.USED, (await world.action(retried)).action_id)
    assert world.tools.effects == [("approve", {"text": "big"})]


async def test_a_denied_payload_proposed_again_is_refused_approval_denied(world: World) -> None:
    run = await world.new_run()
    denied = await world.decide(await world.call(run.token, "t__approve", {"text": "big"}), approve=False)
    assert denied.status is ApprovalStatus.DENIED
    assert (await world.run(run.run_id)).status is RunStatus.RUNNING
    assert code_of(await world.call(run.token, "t__approve", {"text": "big"})) == "approval_denied"
    assert world.tools.effects == []


async def test_an_approval_is_decided_once_by_someone_other_than_its_requester(world: World) -> None:
    run = await world.new_run()
    asked = await world.call(run.token, "t__approve", {"text": "big"})
    approval = await world.approval(asked)
    requester = Principal(OPS.name, TENANT, frozenset({"approver"}))
    with pytest.raises(Forbidden):
        await world.store.decide_approval(
            requester, approval.approval_id, approve=True, note=None, expected_sha256=None
        )
    worker_key = Principal("bot", TENANT, frozenset({"worker"}))
    with pytest.raises(Forbidden):
        await world.store.decide_approval(
            worker_key, approval.approval_id, approve=True, note=None, expected_sha256=None
        )
    with pytest.raises(InvalidRequest) as mismatch:
        await world.store.decide_approval(
            Principal("ana", TENANT, frozenset({"approver"})),
            approval.approval_id,
            approve=True,
            note=None,
            expected_sha256="0" * 64,
        )
    assert mismatch.value.code == "payload_mismatch"
    await world.decide(asked)
    with pytest.raises(Conflict) as twice:
        await world.decide(asked, approve=False)
    assert twice.value.code == "approval_not_pending"


async def test_an_approval_not_decided_in_time_cannot_be_approved_late(world: World) -> None:
    run = await world.new_run()
    asked = await world.call(run.token, "t__approve", {"text": "big"})
    world.clock.advance(120)  # the policy's decide_within: silence never becomes approval
    with pytest.raises(Conflict) as late:
        await world.decide(asked)
    assert late.value.code == "approval_expired"
    assert (await world.approval(asked)).status is ApprovalStatus.EXPIRED
    # The policy's rule says nothing of on_expiry: the default, pause, applies.
    assert (await world.run(run.run_id)).status is RunStatus.PAUSED


async def test_approved_before_names_the_last_approval_a_person_approved_for_the_tool_in_the_run(world: World) -> None:
    run = await world.new_run()
    first = await world.decide(await world.call(run.token, "t__approve", {"text": "big"}))
    assert code_of(await world.call(run.token, "t__approve", {"text": "big"})) is None  # used now
    denied = await world.decide(await world.call(run.token, "t__approve", {"text": "bigger"}), approve=False)
    pending = await world.approval(await world.call(run.token, "t__approve", {"text": "biggest"}))
    elsewhere = await world.new_run()
    other_run = await world.approval(await world.call(elsewhere.token, "t__approve", {"text": "big"}))

    assert await world.store.approved_before(TENANT, first.approval_id) is None  # nothing before it
    shown = await world.store.approved_before(TENANT, pending.approval_id)
    assert shown is not None
    assert (shown.approval_id, shown.status) == (first.approval_id, ApprovalStatus.USED)  # the denial is skipped
    before_denied = await world.store.approved_before(TENANT, denied.approval_id)
    assert before_denied is not None and before_denied.approval_id == first.approval_id
    assert await world.store.approved_before(TENANT, other_run.approval_id) is None  # another run's never count
    assert await world.store.approved_before("another-tenant", pending.approval_id) is None


async def test_a_new_payload_for_the_same_tool_replaces_the_pending_proposal(world: World) -> None:
    run = await world.new_run()
    first = await world.approval(await world.call(run.token, "t__approve", {"text": "big"}))
    replaced = await world.call(run.token, "t__approve", {"text": "bigger"})
    assert code_of(replaced) == "approval_required" and replaced.structured is not None
    assert replaced.structured["error"]["replaced_approval_id"] == first.approval_id
    second = await world.approval(replaced)
    assert (await world.approval(first.approval_id)).status is ApprovalStatus.SUPERSEDED
    assert (await world.run(run.run_id)).status is RunStatus.WAITING
    assert "approval_superseded" in await world.event_types(run.run_id)

    # The replaced proposal can no longer be approved: a page that showed it is stale.
    with pytest.raises(Conflict) as stale:
        await world.decide(first.approval_id)
    assert stale.value.code == "approval_not_pending"
    # Another tool's write is still refused while the run waits; no replacement across tools.
    assert code_of(await world.call(run.token, "t__write", {"text": "a"})) == "run_waiting"

    await world.decide(second.approval_id)
    assert code_of(await world.call(run.token, "t__approve", {"text": "bigger"})) is None
    assert code_of(await world.call(run.token, "t__approve", {"text": "big"})) == "approval_required"
    assert world.tools.effects == [("approve", {"text": "bigger"})]


async def test_proposed_before_names_the_previous_proposal_for_the_tool_whatever_became_of_it(world: World) -> None:
    run = await world.new_run()
    first = await world.approval(await world.call(run.token, "t__approve", {"text": "big"}))
    second = await world.approval(await world.call(run.token, "t__approve", {"text": "bigger"}))  # replaces it
    denied = await world.decide(second.approval_id, approve=False)
    third = await world.approval(await world.call(run.token, "t__approve", {"text": "biggest"}))
    elsewhere = await world.new_run()
    other_run = await world.approval(await world.call(elsewhere.token, "t__approve", {"text": "big"}))

    assert await world.store.proposed_before(TENANT, first.approval_id) is None
    before_second = await world.store.proposed_before(TENANT, second.approval_id)
    assert before_second is not None
    assert (before_second.approval_id, before_second.status) == (first.approval_id, ApprovalStatus.SUPERSEDED)
    before_third = await world.store.proposed_before(TENANT, third.approval_id)
    assert before_third is not None and before_third.approval_id == denied.approval_id
    assert await world.store.approved_before(TENANT, third.approval_id) is None  # none was ever approved
    assert await world.store.proposed_before(TENANT, other_run.approval_id) is None
    assert await world.store.proposed_before("another-tenant", third.approval_id) is None
