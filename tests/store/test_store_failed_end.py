"""The failed end of a run and its alerts, on both back ends (docs/decisions/0024-failed-end.md): an
operator's fail, the contract's rules (on_verification_failed, max_completion_attempts,
fail_run_on_task_failure), serious refusals, and what a failed run keeps (reconciliation, a successor)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from gateway.clock import ManualClock
from gateway.domain import ActionStatus, RunStatus
from gateway.domain.checks import CheckResult
from gateway.domain.tasks import TaskStatus, parse_plan
from gateway.errors import NotFound, Refusal
from gateway.store.progress_records import MilestoneSubmission
from gateway.store.records import AlertRoutes, ApprovalStatus, Refused, Settlement
from gateway.store.task_records import TaskMoved
from tests.harness import OPS, TENANT, Backend, Run, World, code_of, open_world
from tests.store.downgrade import back_to

pytestmark = pytest.mark.anyio

ROUTES = AlertRoutes((("ops-hook", None), ("budget-only", frozenset({"budget_80"}))), max_attempts=3)


@pytest.fixture
async def routed(backend: Backend, clock: ManualClock) -> AsyncIterator[World]:
    """A world whose store queues its own alerts to two webhooks: one takes every kind, one budget_80 only."""
    world = await open_world(backend, clock, alert_routes=ROUTES)
    try:
        yield world
    finally:
        await world.teardown()


async def alerts(world: World, run_id: str) -> list[tuple[str, dict[str, Any]]]:
    return [(a.kind, a.data) for a in reversed(await world.store.list_alerts(TENANT, run_id=run_id))]


async def milestone(world: World, run: Run, status: str, milestone_id: str = "draft") -> Any:
    epoch = (await world.run(run.run_id)).epoch
    submission = MilestoneSubmission(
        milestone_id=milestone_id, status=status, checks=[], reasons=["no"], depends={}, evidence={"n": 1}
    )
    return await world.store.record_milestone(
        run.run_id, epoch=epoch, worker="worker-1", granted_by="ops", submission=submission
    )


async def complete(world: World, run: Run) -> Any:
    epoch = (await world.run(run.run_id)).epoch
    return await world.store.complete_run(run.run_id, epoch=epoch, worker="worker-1", summary="done")


# -- an operator's fail ------------------------------------------------------------------------
async def test_an_operators_fail_ends_the_run_failed_with_its_cause_entry_and_alert_in_one_go(routed: World) -> None:
    world = routed
    run = await world.new_run()
    before = await world.run(run.run_id)
    failed = await world.store.fail_run(run.run_id, "the vendor pulled out", "ops", tenant=TENANT)
    assert failed.status is RunStatus.FAILED
    assert failed.status_cause == {"by": "ops", "reason": "the vendor pulled out", "rule": None}
    assert failed.epoch == before.epoch + 1  # every token dies at once
    assert code_of(await world.call(run.token, "t__read", {})) == "run_failed"
    entry = [e for e in await world.events(run.run_id) if e.type == "run_failed"]
    assert [(e.data["previous"], e.data["by"], e.data["reason"]) for e in entry] == [
        ("running", "ops", "the vendor pulled out")
    ]
    assert [kind for kind, _ in await alerts(world, run.run_id)] == ["run_failed"]
    deliveries = await world.store.list_deliveries()
    assert [(d.target, d.kind, d.max_attempts) for d in deliveries] == [("ops-hook", "run_failed", 3)]
    body = json.loads(deliveries[0].body)
    assert (body["kind"], body["run_id"], body["data"]["reason"]) == ("run_failed", run.run_id, "the vendor pulled out")
    assert (await world.store.verify_ledger()).ok


async def test_a_run_failed_or_ended_already_is_refused_with_its_status_code(world: World) -> None:
    run = await world.new_run()
    await world.store.fail_run(run.run_id, "first", "ops")
    with pytest.raises(Refusal) as again:
        await world.store.fail_run(run.run_id, "second", "ops")
    assert again.value.code == "run_failed"
    other = await world.new_run()
    await world.store.cancel(OPS, other.run_id, "off", hard=False)
    with pytest.raises(Refusal) as cancelled:
        await world.store.fail_run(other.run_id, "too late", "ops")
    assert cancelled.value.code == "run_cancelled"


async def test_another_tenants_run_is_not_found_and_stays_as_it_was(world: World) -> None:
    run = await world.new_run()
    with pytest.raises(NotFound):
        await world.store.fail_run(run.run_id, "not yours", "mallory", tenant="globex")
    assert (await world.run(run.run_id)).status is RunStatus.RUNNING


async def test_a_fail_supersedes_pending_approvals_and_cancels_live_children(world: World) -> None:
    run = await world.new_run()
    asked = await world.call(run.token, "t__approve", {"text": "big"})
    await world.store.fail_run(run.run_id, "stop", "ops")
    assert (await world.approval(asked)).status is ApprovalStatus.SUPERSEDED
    assert (await world.run(run.run_id)).status is RunStatus.FAILED


async def test_a_failed_run_keeps_its_unknown_actions_reconcilable_and_gets_a_successor(world: World) -> None:
    run = await world.new_run()
    world.tools.modes["write"] = "crash"
    unknown = await world.call(run.token, "t__write", {"text": "x"})
    action = await world.action(unknown)
    assert action.status is ActionStatus.UNKNOWN
    await world.store.fail_run(run.run_id, "stop", "ops")
    proof = Settlement.reconciled("succeeded", receipt={"id": "obj-1"})
    assert proof is not None
    settled = await world.store.settle(action.action_id, proof)
    assert settled.action.status is ActionStatus.SUCCEEDED
    successor = await world.store.create_successor(OPS, run.run_id, reason="try again", extend_by=None)
    assert successor.status is RunStatus.RUNNING and successor.predecessor_run_id == run.run_id
    assert (await world.store.verify_ledger()).ok


async def test_an_effect_that_lands_after_a_fail_is_flagged_as_after_a_cancel(world: World) -> None:
    run = await world.new_run()
    world.tools.modes["write"] = "block"
    in_flight = world.spawn(world.gate.call(run.token, "t__write", {"text": "x"}))
    await world.tools.wait_for_effects(1)
    await world.store.fail_run(run.run_id, "stop", "ops")
    world.tools.release.set()
    settled = await world.settled(in_flight)
    flagged = [e.data for e in await world.events(run.run_id) if e.type == "effect_after_cancel"]
    assert [(d["action_id"], d["run_status"]) for d in flagged] == [(settled.meta["warrant/action_id"], "failed")]


# -- the contract's rules ----------------------------------------------------------------------
MILESTONES = [{"id": "draft", "checks": []}]


@pytest.mark.parametrize(
    ("setting", "status", "kinds"),
    [
        ("continue", RunStatus.RUNNING, []),
        ("pause", RunStatus.PAUSED, ["verification_failed"]),
        ("fail", RunStatus.FAILED, ["run_failed"]),
    ],
)
async def test_a_failed_milestone_does_what_on_verification_failed_says(
    world: World, setting: str, status: RunStatus, kinds: list[str]
) -> None:
    run = await world.new_run(milestones=MILESTONES, completion={"on_verification_failed": setting})
    recorded = await milestone(world, run, "failed")
    assert not isinstance(recorded, Refused), recorded
    after = await world.run(run.run_id)
    assert after.status is status
    assert [kind for kind, _ in await alerts(world, run.run_id)] == kinds
    if status is RunStatus.FAILED:
        assert after.status_cause is not None
        assert (after.status_cause["by"], after.status_cause["rule"]) == (
            "gateway",
            "completion.on_verification_failed",
        )
        assert after.status_cause["milestone_id"] == "draft"
    assert (await world.store.verify_ledger()).ok


async def test_an_unverified_milestone_is_no_failed_verification(world: World) -> None:
    run = await world.new_run(milestones=MILESTONES, completion={"on_verification_failed": "fail"})
    await milestone(world, run, "unverified")
    assert (await world.run(run.run_id)).status is RunStatus.RUNNING


async def test_every_refused_completion_alerts_and_the_last_attempt_fails_the_run(world: World) -> None:
    run = await world.new_run(milestones=MILESTONES, completion={"max_completion_attempts": 2})
    first = await complete(world, run)
    assert isinstance(first, Refused) and first.refusal.code == "completion_refused"
    assert first.refusal.details["completion_refusals"] == 1
    assert (await world.run(run.run_id)).status is RunStatus.RUNNING
    second = await complete(world, run)
    assert isinstance(second, Refused) and second.refusal.details["status"] == "failed"
    assert (await world.run(run.run_id)).status is RunStatus.FAILED
    assert [kind for kind, _ in await alerts(world, run.run_id)] == [
        "completion_refused",
        "completion_refused",
        "run_failed",
    ]
    assert (await world.store.verify_ledger()).ok


async def test_without_a_bound_refused_completions_only_alert(world: World) -> None:
    run = await world.new_run(milestones=MILESTONES)
    for _ in range(3):
        assert isinstance(await complete(world, run), Refused)
    assert (await world.run(run.run_id)).status is RunStatus.RUNNING
    assert [kind for kind, _ in await alerts(world, run.run_id)] == ["completion_refused"] * 3


def _plan(max_attempts: int = 1) -> Any:
    return parse_plan([{"id": "a", "title": "A", "max_attempts": max_attempts, "completion": []}], max_tasks=10)


async def _planned(world: World, **changes: Any) -> Run:
    run = await world.new_run(**changes)
    saved = await world.store.save_plan(run.run_id, epoch=1, worker="worker-1", expected_version=0, plan=_plan())
    assert not isinstance(saved, Refused), saved
    return run


async def _move(world: World, run: Run, status: TaskStatus, **kw: Any) -> Any:
    epoch = (await world.run(run.run_id)).epoch
    return await world.store.move_task(run.run_id, epoch=epoch, worker="worker-1", task_id="a", status=status, **kw)


@pytest.mark.parametrize(("fails_run", "status"), [(True, RunStatus.FAILED), (False, RunStatus.RUNNING)])
async def test_a_task_out_of_attempts_fails_the_run_only_when_the_plan_says_so(
    world: World, fails_run: bool, status: RunStatus
) -> None:
    run = await _planned(world, plan={"fail_run_on_task_failure": fails_run})
    assert isinstance(await _move(world, run, TaskStatus.RUNNING), TaskMoved)  # its one attempt
    exhausted = await _move(world, run, TaskStatus.RETRYING)  # none left: the gateway fails the task
    assert isinstance(exhausted, Refused) and exhausted.refusal.code == "task_attempts_exhausted"
    assert (await world.run(run.run_id)).status is status
    if fails_run:
        assert exhausted.refusal.details["run_status"] == "failed"
        cause = (await world.run(run.run_id)).status_cause
        assert cause is not None and (cause["rule"], cause["task_id"]) == ("plan.fail_run_on_task_failure", "a")


async def test_a_task_whose_completion_check_failed_is_a_failed_verification(world: World) -> None:
    run = await world.new_run(completion={"on_verification_failed": "fail"})
    plan = parse_plan([{"id": "a", "title": "A", "completion": [{"artifact": "out"}]}], max_tasks=10)
    await world.store.save_plan(run.run_id, epoch=1, worker="worker-1", expected_version=0, plan=plan)
    await _move(world, run, TaskStatus.RUNNING)
    failing = [CheckResult("artifact", "failed", "checksum differs", {})]
    refused = await _move(world, run, TaskStatus.COMPLETED, checks=failing)
    assert isinstance(refused, Refused) and refused.refusal.code == "task_check_failed"
    assert refused.refusal.details["run_status"] == "failed"
    assert (await world.run(run.run_id)).status is RunStatus.FAILED


# -- serious refusals --------------------------------------------------------------------------
async def test_a_serious_refusal_alerts_with_its_code_and_tool_never_its_arguments(routed: World) -> None:
    world = routed
    run = await world.new_run(escalation={"serious_refusals": ["forbidden"]})
    refused = await world.call(run.token, "t__denied", {"secret": "hunter2"})
    assert code_of(refused) == "forbidden"
    assert code_of(await world.call(run.token, "t__constrained", {"to": "x@evil.example"})) == "constraint_violated"
    raised = await alerts(world, run.run_id)
    assert [kind for kind, _ in raised] == ["serious_refusal"]  # constraint_violated is not named serious
    data = raised[0][1]
    assert (data["code"], data["tool"], data["action_id"]) == (
        "forbidden",
        "t__denied",
        refused.meta["warrant/action_id"],
    )
    deliveries = await world.store.list_deliveries()
    assert [(d.target, d.kind) for d in deliveries] == [("ops-hook", "serious_refusal")]
    assert "hunter2" not in deliveries[0].body
    assert (await world.store.verify_ledger()).ok


async def test_an_agent_looping_on_a_serious_refusal_raises_one_alert_per_code_tool_and_lease(
    routed: World,
) -> None:
    world = routed
    run = await world.new_run(escalation={"serious_refusals": ["forbidden"]})
    first = await world.call(run.token, "t__denied", {"n": 0})
    for n in range(1, 5):
        assert code_of(await world.call(run.token, "t__denied", {"n": n})) == "forbidden"
    raised = [data for kind, data in await alerts(world, run.run_id) if kind == "serious_refusal"]
    assert [d["action_id"] for d in raised] == [first.meta["warrant/action_id"]]
    assert len(await world.store.list_deliveries()) == 1
    taken = await world.takeover(run)
    assert code_of(await world.call(taken, "t__denied", {"n": 9})) == "forbidden"
    raised = [data for kind, data in await alerts(world, run.run_id) if kind == "serious_refusal"]
    assert [d["epoch"] for d in raised] == [1, 2]


async def test_a_run_naming_no_serious_codes_raises_no_alert_on_refusals(world: World) -> None:
    run = await world.new_run()
    assert code_of(await world.call(run.token, "t__denied", {})) == "forbidden"
    assert await alerts(world, run.run_id) == []


# -- the upgrade from version 23 ---------------------------------------------------------------
async def test_a_store_of_version_23_upgrades_with_its_runs_and_chains_intact_and_they_may_fail(world: World) -> None:
    live = await world.new_run()
    ended = await world.new_run()
    await world.store.cancel(OPS, ended.run_id, "off", hard=False)
    await world.store.close()
    world.backend._execute(*back_to(23, world.backend))  # without 0024's columns, nor any later one's
    world.store = world.backend.store(world.clock, process_id="test-gateway")
    await world.store.open()

    assert (await world.run(ended.run_id)).status is RunStatus.CANCELLED
    assert (await world.run(live.run_id)).status_cause is None
    failed = await world.store.fail_run(live.run_id, "after the upgrade", "ops")
    assert failed.status is RunStatus.FAILED and failed.status_cause is not None
    assert (await world.store.verify_ledger()).ok
