"""Revisions, successors and delegated sub-runs through the Store interface (docs/progress.md)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from gateway.domain import ActionStatus, Contract, RunStatus, build_report, merge_patch, parse_contract, token_hash
from gateway.errors import Conflict, Forbidden, InvalidRequest, Refusal
from gateway.gate import META_REPLAYED
from gateway.store.progress_records import MilestoneSubmission
from gateway.store.records import ApprovalStatus, Refused
from tests.contracts import child_contract
from tests.harness import OPS, TENANT, Run, World, code_of, contract, op, text_of

pytestmark = pytest.mark.anyio


def revised(patch: dict[str, Any], spec_version: str = "v2") -> Contract:
    return parse_contract(merge_patch(contract(), {**patch, "spec_version": spec_version}))


async def revise(world: World, run: Run, patch: dict[str, Any], *, widening: bool = False, to: str = "v2") -> Any:
    return await world.store.revise(
        OPS, run.run_id, contract=revised(patch, to), reason="scope cut", widening=widening, base_spec_version="v1"
    )


# -- revisions -------------------------------------------------------------------------------
async def test_an_operator_narrows_and_the_worker_must_read_it_before_its_next_call(world: World) -> None:
    run = await world.new_run()
    after = await revise(world, run, {"budgets": {"spend": "50.00", "writes": 5}})

    assert (after.spec_version, after.acked_spec_version) == ("v2", "v1")
    assert (after.limits["spend"], after.limits["writes"]) == (5000, 5)
    assert code_of(await world.call(run.token, "t__write", {"text": "a"})) == "spec_version_mismatch"
    assert world.tools.effects == []

    acked = await world.store.acknowledge_spec(token_hash(run.token))
    assert acked is not None and acked.acked_spec_version == "v2"
    assert code_of(await world.call(run.token, "t__write", {"text": "a"})) is None
    events = await world.events(run.run_id)
    entry = next(e for e in events if e.type == "run_revised")
    data = entry.data
    assert (data["from"], data["to"], data["widening"], data["by"]) == ("v1", "v2", False, "ops")
    assert {c["field"] for c in entry.data["changes"]} == {"budgets.spend", "budgets.writes"}
    assert [e.type for e in events].count("spec_acknowledged") == 1


async def test_acknowledging_twice_records_it_once_and_a_superseded_token_cannot(world: World) -> None:
    run = await world.new_run()
    await revise(world, run, {"budgets": {"writes": 5}})
    old_token = run.token
    new_token = await world.takeover(run)
    not_mine = await world.store.acknowledge_spec(token_hash(old_token))
    assert not_mine is not None and not_mine.acked_spec_version == "v1"
    await world.store.acknowledge_spec(token_hash(new_token))
    await world.store.acknowledge_spec(token_hash(new_token))
    assert (await world.event_types(run.run_id)).count("spec_acknowledged") == 1
    assert await world.store.acknowledge_spec("0" * 64) is None


async def test_an_operator_cannot_widen_and_nothing_changes(world: World) -> None:
    run = await world.new_run()
    with pytest.raises(Forbidden) as refused:
        await revise(world, run, {"budgets": {"writes": 500, "spend": "10.00"}})
    assert refused.value.code == "widening_requires_admin"
    assert [c["field"] for c in refused.value.details["changes"]] == ["budgets.writes"]
    after = await world.run(run.run_id)
    assert (after.spec_version, after.limits["writes"]) == ("v1", 100)
    assert "run_revised" not in await world.event_types(run.run_id)


async def test_an_admin_widens(world: World) -> None:
    run = await world.new_run()
    after = await revise(world, run, {"budgets": {"writes": 500}, "expires_in": "96h"}, widening=True)
    created = await world.run(run.run_id)
    assert after.limits["writes"] == 500
    assert after.deadline == created.created_at + 96 * 3600
    entry = next(e for e in await world.events(run.run_id) if e.type == "run_revised")
    assert entry.data["widening"] is True


async def test_a_revision_supersedes_pending_and_approved_unused_approvals(world: World) -> None:
    run = await world.new_run()
    first = await world.call(run.token, "t__approve", {"text": "one"})
    assert (await world.decide(first)).status is ApprovalStatus.APPROVED
    second = await world.call(run.token, "t__approve", {"text": "two"})
    assert code_of(second) == "approval_required"
    assert (await world.run(run.run_id)).status is RunStatus.WAITING

    after = await revise(world, run, {"budgets": {"writes": 50}})

    assert (await world.approval(first)).status is ApprovalStatus.SUPERSEDED
    assert (await world.approval(second)).status is ApprovalStatus.SUPERSEDED
    assert after.status is RunStatus.RUNNING  # nothing pending any more
    await world.store.acknowledge_spec(token_hash(run.token))
    asked_again = await world.call(run.token, "t__approve", {"text": "one"})
    assert code_of(asked_again) == "approval_required"  # the old approval does not carry over
    assert world.tools.effects == []


async def test_two_concurrent_revisions_of_one_version_one_wins(world: World) -> None:
    run = await world.new_run()
    results = await asyncio.gather(
        revise(world, run, {"budgets": {"writes": 50}}, to="v2a"),
        revise(world, run, {"budgets": {"writes": 40}}, to="v2b"),
        return_exceptions=True,
    )
    won = [r for r in results if not isinstance(r, BaseException)]
    lost = [r for r in results if isinstance(r, BaseException)]
    assert len(won) == 1 and len(lost) == 1
    assert isinstance(lost[0], Conflict) and lost[0].code == "revision_conflict"
    assert (await world.run(run.run_id)).spec_version == won[0].spec_version
    assert (await world.event_types(run.run_id)).count("run_revised") == 1


async def test_a_revision_to_the_same_version_or_of_a_terminal_run_is_refused(world: World) -> None:
    run = await world.new_run()
    with pytest.raises(Conflict) as same:
        await revise(world, run, {"budgets": {"writes": 5}}, to="v1")
    assert same.value.code == "spec_version_unchanged"
    with pytest.raises(InvalidRequest) as currency:
        await revise(world, run, {"currency": "EUR", "budgets": {"spend": "1.00"}})
    assert currency.value.code == "invalid_contract"
    await world.store.cancel(OPS, run.run_id, "off", hard=False)
    with pytest.raises(Refusal) as terminal:
        await revise(world, run, {"budgets": {"writes": 5}})
    assert terminal.value.code == "run_cancelled"


async def test_a_narrowed_authority_refuses_the_next_call_after_it_was_read(world: World) -> None:
    run = await world.new_run()
    assert code_of(await world.call(run.token, "t__write", {"text": "a"})) is None  # the gate caches the run
    await revise(world, run, {"authority": {"deny": ["t__denied", "t__write"]}})
    await world.gate.status(run.token)
    assert code_of(await world.call(run.token, "t__write", {"text": "b"})) == "forbidden"
    assert len(world.tools.effects) == 1


async def test_a_widened_authority_admits_the_next_call_after_it_was_read(world: World) -> None:
    run = await world.new_run(authority={"allow": ["t__read"]})
    assert code_of(await world.call(run.token, "t__read", {"q": "a"})) is None  # the gate caches the run
    body = merge_patch(contract(authority={"allow": ["t__read"]}), {"spec_version": "v2"})
    body["authority"]["allow"] = ["t__read", "t__write"]
    await world.store.revise(
        OPS, run.run_id, contract=parse_contract(body), reason="more", widening=True, base_spec_version="v1"
    )
    await world.gate.status(run.token)
    assert code_of(await world.call(run.token, "t__write", {"text": "b"})) is None
    assert world.tools.effects[1:] == [("write", {"text": "b"})]


# -- successors ------------------------------------------------------------------------------
async def test_a_successor_inherits_the_remaining_budget_deadline_and_lineage(world: World) -> None:
    run = await world.new_run()
    for text in ("a", "b"):
        assert code_of(await world.call(run.token, "t__paid", {"text": text})) is None
    assert code_of(await world.call(run.token, "t__read", {"q": "x"})) is None
    ended = await world.store.cancel(OPS, run.run_id, "worker lost", hard=False)

    successor = await world.store.create_successor(OPS, run.run_id, reason="carry on", extend_by=None)

    assert successor.lineage_id == run.lineage_id and successor.run_id != run.run_id
    assert successor.predecessor_run_id == run.run_id
    assert successor.status is RunStatus.RUNNING
    assert successor.deadline == ended.deadline
    assert successor.limits == {
        "spend": 10000 - 10,
        "tool_calls": 1000 - 3,
        "writes": 100 - 2,
        "active_seconds": 100000 - int(ended.active_seconds_spent),
    }
    assert successor.contract["budgets"]["spend"] == "99.90"  # the contract says what it may spend
    assert "successor_created" in await world.event_types(run.run_id)
    created = (await world.events(successor.run_id))[0]
    assert created.type == "run_created"
    assert (created.data["predecessor_run_id"], created.data["reason"], created.data["by"]) == (
        run.run_id,
        "carry on",
        "ops",
    )


async def test_a_live_run_has_no_successor(world: World) -> None:
    run = await world.new_run()
    with pytest.raises(Conflict) as refused:
        await world.store.create_successor(OPS, run.run_id, reason="carry on", extend_by=None)
    assert refused.value.code == "run_not_terminal"


async def test_a_successor_past_the_deadline_needs_an_extension(world: World) -> None:
    run = await world.new_run(expires_in="1h")
    world.clock.advance(3601)
    assert (await world.store.get_run(TENANT, run.run_id)).status is RunStatus.RUNNING  # read lazily
    with pytest.raises(Conflict) as refused:
        await world.store.create_successor(OPS, run.run_id, reason="carry on", extend_by=None)
    assert refused.value.code == "deadline_passed"
    successor = await world.store.create_successor(OPS, run.run_id, reason="more time", extend_by=7200)
    predecessor = await world.run(run.run_id)
    assert predecessor.status is RunStatus.EXPIRED
    assert successor.deadline == predecessor.deadline + 7200 > world.clock.now()


async def test_a_successor_replays_the_predecessors_write_instead_of_repeating_it(world: World) -> None:
    run = await world.new_run()
    first = await world.call(run.token, "t__write", {"text": "once"}, op("send-1"))
    assert code_of(first) is None
    await world.store.cancel(OPS, run.run_id, "worker lost", hard=False)
    successor = await world.store.create_successor(OPS, run.run_id, reason="carry on", extend_by=None)
    grant = await world.store.acquire_lease(OPS, successor.run_id, "worker-2", takeover=False)

    again = await world.call(grant.token, "t__write", {"text": "once"}, op("send-1"))

    assert code_of(again) is None and again.meta[META_REPLAYED] is True
    assert text_of(again).startswith("not executed again: identical to action")
    assert world.tools.effects == [("write", {"text": "once"})]


async def test_a_successor_is_blocked_by_the_predecessors_unknown_write(world: World) -> None:
    run = await world.new_run()
    world.tools.modes["write"] = "crash"
    lost = await world.call(run.token, "t__write", {"text": "maybe"}, op("send-1"))
    assert (await world.action(lost)).status is ActionStatus.UNKNOWN
    await world.store.cancel(OPS, run.run_id, "worker lost", hard=False)
    successor = await world.store.create_successor(OPS, run.run_id, reason="carry on", extend_by=None)
    assert successor.limits["writes"] == 100 - 1  # the unknown write's reservation is not the successor's
    grant = await world.store.acquire_lease(OPS, successor.run_id, "worker-2", takeover=False)
    world.tools.modes["write"] = "ok"
    assert code_of(await world.call(grant.token, "t__write", {"text": "maybe"}, op("send-1"))) == "outcome_unknown"


async def cancelled_after_two_of_three_writes(world: World) -> Run:
    """Issue 26's case: a contract with `writes: 3`, two writes made, then cancelled."""
    run = await world.new_run(budgets={"writes": 3})
    for text in ("a", "b"):
        assert code_of(await world.call(run.token, "t__write", {"text": text})) is None
    await world.store.cancel(OPS, run.run_id, "worker lost", hard=False)
    return run


async def test_a_terminal_run_has_one_successor_and_a_second_request_is_refused_naming_it(world: World) -> None:
    run = await cancelled_after_two_of_three_writes(world)

    first = await world.store.create_successor(OPS, run.run_id, reason="carry on", extend_by=None)
    for _ in range(2):
        with pytest.raises(Conflict) as refused:
            await world.store.create_successor(OPS, run.run_id, reason="once more", extend_by=None)
        assert refused.value.code == "successor_exists"
        assert refused.value.details["successor_run_id"] == first.run_id
    assert (await world.event_types(run.run_id)).count("successor_created") == 1

    # The five-writes scenario of issue 26: the lineage makes at most the contract's three writes.
    grant = await world.store.acquire_lease(OPS, first.run_id, "worker-2", takeover=False)
    assert code_of(await world.call(grant.token, "t__write", {"text": "c"})) is None
    assert code_of(await world.call(grant.token, "t__write", {"text": "d"})) == "budget_exhausted"
    assert len(world.tools.effects) == 3


async def test_twenty_concurrent_successor_requests_make_exactly_one(world: World) -> None:
    run = await world.new_run()
    await world.store.cancel(OPS, run.run_id, "worker lost", hard=False)

    results = await asyncio.gather(
        *(world.store.create_successor(OPS, run.run_id, reason=f"try {i}", extend_by=None) for i in range(20)),
        return_exceptions=True,
    )

    won = [r for r in results if not isinstance(r, BaseException)]
    lost = [r for r in results if isinstance(r, BaseException)]
    assert len(won) == 1 and len(lost) == 19
    for refusal in lost:
        assert isinstance(refusal, Conflict) and refusal.code == "successor_exists", refusal
        assert refusal.details["successor_run_id"] == won[0].run_id
    assert (await world.event_types(run.run_id)).count("successor_created") == 1


@pytest.mark.parametrize("reason", [None, "", "   ", "\t\n"])
async def test_a_successor_without_a_reason_is_refused_and_nothing_is_recorded(world: World, reason: Any) -> None:
    run = await world.new_run()
    await world.store.cancel(OPS, run.run_id, "worker lost", hard=False)
    before = await world.event_types(run.run_id)
    with pytest.raises(InvalidRequest) as refused:
        await world.store.create_successor(OPS, run.run_id, reason=reason, extend_by=None)
    assert refused.value.code == "invalid_request"
    assert await world.event_types(run.run_id) == before
    made = await world.store.create_successor(OPS, run.run_id, reason="now with one", extend_by=None)
    assert made.predecessor_run_id == run.run_id


# -- delegated sub-runs ----------------------------------------------------------------------
CHILD: dict[str, Any] = child_contract()


async def delegate(world: World, parent: Run, **changes: Any) -> tuple[str, str]:
    child = await world.store.create_child(OPS, parent.run_id, parse_contract(merge_patch(CHILD, changes)))
    grant = await world.store.acquire_lease(OPS, child.run_id, "worker-c", takeover=False)
    return child.run_id, grant.token


async def test_a_child_is_carved_out_of_its_parent(world: World) -> None:
    parent = await world.new_run()
    child_id, _ = await delegate(world, parent)
    child = await world.run(child_id)
    after = await world.run(parent.run_id)
    assert child.parent_run_id == parent.run_id and child.lineage_id != parent.lineage_id
    assert child.carved == {"spend": 20, "tool_calls": 10, "writes": 2}
    assert child.deadline <= after.deadline
    assert child.contract["authority"]["deny"] == ["t__denied"]
    assert after.reserved == {"spend": 20, "tool_calls": 10, "writes": 2, "active_seconds": 0}
    assert "child_created" in await world.event_types(parent.run_id)
    created = (await world.events(child_id))[0]
    assert created.data["parent_run_id"] == parent.run_id
    assert created.data["carved"] == {"spend": "0.20", "tool_calls": 10, "writes": 2}


async def test_a_child_cannot_spend_more_than_was_carved_while_its_parent_still_can(world: World) -> None:
    parent = await world.new_run()
    _, token = await delegate(world, parent)
    for text in ("a", "b"):
        assert code_of(await world.call(token, "t__paid", {"text": text})) is None
    refused = await world.call(token, "t__write", {"text": "c"})
    assert code_of(refused) == "budget_exhausted"
    assert refused.structured is not None and refused.structured["error"]["dimension"] == "writes"
    assert code_of(await world.call(parent.token, "t__write", {"text": "parent"})) is None
    assert len(world.tools.effects) == 3


async def test_a_child_bigger_than_the_parents_remaining_or_wider_is_refused(world: World) -> None:
    parent = await world.new_run(budgets={"writes": 3})
    with pytest.raises(Refusal) as budget:
        await delegate(world, parent, budgets={"writes": 4})
    assert (budget.value.code, budget.value.details["dimension"]) == ("budget_exhausted", "writes")
    with pytest.raises(InvalidRequest) as wider:
        await delegate(world, parent, authority={"allow": ["x__*"]})
    assert wider.value.code == "invalid_contract"
    await delegate(world, parent, budgets={"writes": 3})
    with pytest.raises(Refusal) as second:  # the first child holds every write the parent had
        await delegate(world, parent, budgets={"writes": 1})
    assert second.value.details["dimension"] == "writes"
    assert (await world.run(parent.run_id)).reserved["writes"] == 3


async def test_the_parent_counts_the_childs_spend_once_when_it_ends_and_gets_the_rest_back(world: World) -> None:
    parent = await world.new_run()
    child_id, token = await delegate(world, parent)
    assert code_of(await world.call(token, "t__paid", {"text": "a"})) is None
    assert code_of(await world.call(token, "t__read", {"q": "a"})) is None

    await world.store.cancel(OPS, child_id, "done with it", hard=False)

    after = await world.run(parent.run_id)
    assert after.reserved == {"spend": 0, "tool_calls": 0, "writes": 0, "active_seconds": 0}
    assert (after.spent["spend"], after.spent["tool_calls"], after.spent["writes"]) == (5, 2, 1)
    ended = next(e for e in await world.events(parent.run_id) if e.type == "child_ended")
    assert ended.data["child_run_id"] == child_id and ended.data["status"] == "cancelled"
    assert ended.data["returned"] == {"spend": "0.15", "tool_calls": 8, "writes": 1}
    report = build_report(await world.store.report_inputs(TENANT, parent.run_id), world.clock.now())
    assert report.by_tag["children"] == 5 and report.total == after.spent["spend"]
    # Ending the parent charges nothing again.
    await world.store.cancel(OPS, parent.run_id, "off", hard=False)
    assert (await world.run(parent.run_id)).spent["spend"] == 5


async def test_cancelling_the_parent_cancels_the_child_and_returns_the_carve(world: World) -> None:
    parent = await world.new_run()
    child_id, token = await delegate(world, parent)
    assert code_of(await world.call(token, "t__paid", {"text": "a"})) is None

    await world.store.cancel(OPS, parent.run_id, "the job is off", hard=False)

    assert (await world.run(child_id)).status is RunStatus.CANCELLED
    assert code_of(await world.call(token, "t__write", {"text": "b"})) == "run_cancelled"
    after = await world.run(parent.run_id)
    assert after.reserved["spend"] == 0 and after.spent["spend"] == 5


async def test_a_childs_write_still_unknown_at_its_end_is_charged_to_the_parent_in_full(world: World) -> None:
    parent = await world.new_run()
    child_id, token = await delegate(world, parent)
    world.tools.modes["paid"] = "crash"
    assert code_of(await world.call(token, "t__paid", {"text": "a"})) is not None
    await world.store.cancel(OPS, child_id, "stop", hard=False)
    after = await world.run(parent.run_id)
    assert after.reserved["spend"] == 0
    # Its reservation (the policy's cost.max), as spent: the write may have happened.
    assert (after.spent["spend"], after.spent["writes"]) == (10, 1)


async def test_a_child_of_a_cancelled_parent_is_refused(world: World) -> None:
    parent = await world.new_run()
    await world.store.cancel(OPS, parent.run_id, "off", hard=False)
    with pytest.raises(Refusal) as refused:
        await delegate(world, parent)
    assert refused.value.code == "run_cancelled"


# -- milestones and checkpoints across a revision and a successor ----------------------------
MILESTONES = [{"id": "inventory", "checks": [{"artifact": "inventory"}]}, {"id": "draft", "checks": []}]


async def verified(world: World, run: Run, milestone_id: str) -> None:
    record = await world.run(run.run_id)
    submission = MilestoneSubmission(
        milestone_id=milestone_id, status="verified", checks=[], reasons=[], depends={}, evidence={"note": "ok"}
    )
    recorded = await world.store.record_milestone(
        run.run_id, epoch=record.epoch, worker="worker-1", granted_by="ops", submission=submission
    )
    assert not isinstance(recorded, Refused), recorded


async def test_a_revision_invalidates_the_milestones_it_changed_or_removed_only(world: World) -> None:
    run = await world.new_run(milestones=MILESTONES)
    await verified(world, run, "inventory")
    await verified(world, run, "draft")
    patch = {"milestones": [{"id": "inventory", "checks": [{"artifact": "inventory-v2"}]}, {"id": "draft"}]}
    await revise(world, run, patch)
    states = {m.milestone_id: m.status for m in await world.store.list_milestones(run.run_id)}
    assert states == {"inventory": "invalidated", "draft": "verified"}
    invalidated = [e.data["milestone_id"] for e in await world.events(run.run_id) if e.type == "milestone_invalidated"]
    assert invalidated == ["inventory"]


async def test_a_successor_inherits_the_newest_checkpoint_and_the_milestone_states(world: World) -> None:
    run = await world.new_run(milestones=MILESTONES)
    record = await world.run(run.run_id)
    for version in (0, 1):
        saved = await world.store.save_checkpoint(
            run.run_id, epoch=record.epoch, worker="worker-1", expected_version=version, body={"v": version}
        )
        assert not isinstance(saved, Refused), saved
    await verified(world, run, "inventory")
    await world.store.cancel(OPS, run.run_id, "worker lost", hard=False)

    successor = await world.store.create_successor(OPS, run.run_id, reason="carry on", extend_by=None)

    assert successor.checkpoint_version == 2
    checkpoint = await world.store.latest_checkpoint(successor.run_id)
    assert checkpoint is not None and (checkpoint.version, checkpoint.inherited_from) == (2, run.run_id)
    milestones = await world.store.list_milestones(successor.run_id)
    assert [(m.milestone_id, m.status, m.inherited_from) for m in milestones] == [("inventory", "verified", run.run_id)]


async def test_a_cancelled_child_has_no_successor_its_carve_went_back_to_the_parent(world: World) -> None:
    parent = await world.new_run(budgets={"writes": 3})
    child_id, _ = await delegate(world, parent, budgets={"writes": 2})
    await world.store.cancel(OPS, child_id, "not needed", hard=False)
    assert (await world.run(parent.run_id)).reserved["writes"] == 0  # the parent may make all 3 again

    with pytest.raises(Conflict) as refused:
        await world.store.create_successor(OPS, child_id, reason="carry on", extend_by=None)

    assert (refused.value.code, refused.value.details["parent_run_id"]) == ("successor_of_child", parent.run_id)
    assert "successor_created" not in await world.event_types(child_id)


async def test_a_cancelled_parents_successor_has_what_the_parent_and_its_child_left(world: World) -> None:
    parent = await world.new_run(budgets={"writes": 3})
    child_id, token = await delegate(world, parent, budgets={"writes": 2})
    assert code_of(await world.call(token, "t__write", {"text": "child"})) is None
    assert code_of(await world.call(parent.token, "t__write", {"text": "parent"})) is None

    await world.store.cancel(OPS, parent.run_id, "the job moves", hard=False)
    successor = await world.store.create_successor(OPS, parent.run_id, reason="carry on", extend_by=None)

    assert (await world.run(child_id)).status is RunStatus.CANCELLED
    assert successor.limits["writes"] == 1  # 3 - the child's write - the parent's
    grant = await world.store.acquire_lease(OPS, successor.run_id, "worker-2", takeover=False)
    assert code_of(await world.call(grant.token, "t__write", {"text": "x"})) is None
    assert code_of(await world.call(grant.token, "t__write", {"text": "y"})) == "budget_exhausted"
    assert len(world.tools.effects) == 3


async def test_a_store_that_already_holds_two_successors_of_one_run_migrates_linking_the_first(world: World) -> None:
    run = await world.new_run()
    await world.store.cancel(OPS, run.run_id, "worker lost", hard=False)
    first = await world.store.create_successor(OPS, run.run_id, reason="carry on", extend_by=None)
    await world.store.close()
    # Back to version 12 (0014's guards undone too), with a second successor made the old way.
    if world.backend.name == "sqlite":
        undo_14 = [(f"DROP TRIGGER {t}", ()) for t in ("runs_money_insert", "runs_money_update", "actions_money")]
        undo_14.append(("DROP TRIGGER charges_money", ()))
    else:
        undo_14 = [(f"ALTER TABLE {t} DROP CONSTRAINT {t}_money_bounded", ()) for t in ("runs", "actions", "charges")]
    # 0020's columns and tables go too: a store of version 12 never had them.
    undo_20 = [
        ("DROP INDEX actions_task", ()),
        ("ALTER TABLE actions DROP COLUMN task_id", ()),
        ("ALTER TABLE runs DROP COLUMN plan_version", ()),
        ("DROP TABLE tasks", ()),
        ("DROP TABLE plans", ()),
    ]
    # And 0024's (the failed end), and 0025's (docs/decisions/0025-events.md).
    undo_24 = [(f"ALTER TABLE runs DROP COLUMN {c}", ()) for c in ("status_cause", "completion_refusals")]
    undo_25 = [
        ("DROP INDEX webhook_deliveries_run_pending", ()),
        ("ALTER TABLE webhook_deliveries DROP COLUMN run_id", ()),
        ("ALTER TABLE webhook_deliveries DROP COLUMN event_id", ()),
        ("DROP TABLE event_drops", ()),
    ]
    # 0026's too (the drill history, the replay counter).
    undo_26 = [("DROP TABLE drill_runs", ()), ("ALTER TABLE runs DROP COLUMN replays", ())]
    undo_28 = [("DROP INDEX actions_shared_in_flight", ())]  # the shared limits' count
    world.backend._execute(
        *undo_28,
        *undo_26,
        *undo_25,
        *undo_24,
        *undo_20,
        *undo_14,
        ("DROP INDEX runs_successor", ()),
        ("ALTER TABLE runs DROP COLUMN successor_run_id", ()),
        ("CREATE TEMP TABLE legacy AS SELECT * FROM runs WHERE run_id = ?", (first.run_id,)),
        (
            "UPDATE legacy SET run_id = ?, created_at = created_at + 1, seq = (SELECT MAX(seq) + 1 FROM runs)",
            ("run_legacy_second",),
        ),
        ("INSERT INTO runs SELECT * FROM legacy", ()),
        ("DROP TABLE legacy", ()),
        ("DELETE FROM schema_migrations WHERE version >= 13", ()),
    )
    world.store = world.backend.store(world.clock, process_id="test-gateway")
    await world.store.open()

    with pytest.raises(Conflict) as refused:
        await world.store.create_successor(OPS, run.run_id, reason="a third", extend_by=None)
    assert (refused.value.code, refused.value.details["successor_run_id"]) == ("successor_exists", first.run_id)
    second = await world.run("run_legacy_second")  # kept as it was, naming its predecessor
    assert (second.predecessor_run_id, second.status) == (run.run_id, RunStatus.RUNNING)


async def test_an_operator_cannot_revise_a_successor_back_to_the_original_limits(world: World) -> None:
    run = await cancelled_after_two_of_three_writes(world)
    successor = await world.store.create_successor(OPS, run.run_id, reason="carry on", extend_by=None)
    body = merge_patch(successor.contract, {"spec_version": "v2", "budgets": {"writes": 3}})

    with pytest.raises(Forbidden) as refused:
        await world.store.revise(
            OPS, successor.run_id, contract=parse_contract(body), reason="more", widening=False, base_spec_version="v1"
        )

    assert refused.value.code == "widening_requires_admin"
    assert (await world.run(successor.run_id)).limits["writes"] == 1
