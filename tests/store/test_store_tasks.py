"""The run's plan and its tasks through the Store interface, on both back ends (docs/tasks.md):
the transition table pair by pair, readiness, fencing, completion checks, revisions and the tool
calls counted per task."""

from __future__ import annotations

from typing import Any

import pytest

from gateway.domain.checks import CheckResult
from gateway.domain.tasks import TASK_ID_META, Plan, TaskStatus, parse_plan
from gateway.store.records import Refused
from gateway.store.task_records import PlanState, TaskMoved
from tests.harness import OPS, TENANT, Run, World, code_of
from tests.unit.test_tasks import AGENT_MOVES

pytestmark = pytest.mark.anyio

S = TaskStatus
# How a task gets to each status from ready, by the agent's moves (a pending one waits on `gate`).
PATHS: dict[TaskStatus, list[TaskStatus]] = {
    S.PENDING: [],
    S.READY: [],
    S.RUNNING: [S.RUNNING],
    S.BLOCKED: [S.RUNNING, S.BLOCKED],
    S.WAITING_FOR_APPROVAL: [S.RUNNING, S.WAITING_FOR_APPROVAL],
    S.RETRYING: [S.RUNNING, S.RETRYING],
    S.COMPLETED: [S.RUNNING, S.COMPLETED],
    S.FAILED: [S.RUNNING, S.FAILED],
    S.CANCELLED: [S.CANCELLED],
    S.COMPENSATED: [S.RUNNING, S.COMPLETED, S.COMPENSATED],
}


def plan_of(*tasks: dict[str, Any]) -> Plan:
    return parse_plan([{"title": t["id"].upper(), **t} for t in tasks], max_tasks=500)


async def save(world: World, run: Run, plan: Plan, *, expected: int = 0, epoch: int = 1) -> PlanState | Refused:
    return await world.store.save_plan(run.run_id, epoch=epoch, worker="worker-1", expected_version=expected, plan=plan)


async def move(
    world: World, run: Run, task_id: str, status: TaskStatus, *, epoch: int = 1, **kw: Any
) -> TaskMoved | Refused:
    return await world.store.move_task(run.run_id, epoch=epoch, worker="worker-1", task_id=task_id, status=status, **kw)


async def moved(world: World, run: Run, task_id: str, status: TaskStatus, **kw: Any) -> TaskMoved:
    done = await move(world, run, task_id, status, **kw)
    assert isinstance(done, TaskMoved), done
    return done


async def states(world: World, run: Run) -> dict[str, tuple[TaskStatus, int]]:
    plan = await world.store.read_plan(TENANT, run.run_id)
    return {t.task_id: (t.status, t.attempts) for t in plan.tasks}


# -- the table, pair by pair ---------------------------------------------------------------------
@pytest.mark.parametrize("start", list(TaskStatus))
async def test_every_move_from_each_status_is_made_or_refused_as_the_table_says(
    world: World, start: TaskStatus
) -> None:
    run = await world.new_run()
    tasks = [{"id": "gate"}]
    for target in TaskStatus:
        tasks.append({"id": target.value, "depends_on": ["gate"] if start is S.PENDING else []})
    saved = await save(world, run, plan_of(*tasks))
    assert isinstance(saved, PlanState)
    for target in TaskStatus:
        for step in PATHS[start]:
            await moved(world, run, target.value, step)
    assert {tid: s for tid, (s, _) in (await states(world, run)).items() if tid != "gate"} == {
        t.value: start for t in TaskStatus
    }
    for target in TaskStatus:
        answer = await move(world, run, target.value, target)
        if target is start:
            assert isinstance(answer, TaskMoved) and not answer.moved
        elif (start, target) in AGENT_MOVES:
            assert isinstance(answer, TaskMoved), (start, target, answer)
            assert answer.task.status is target and answer.previous is start
        else:
            assert isinstance(answer, Refused), (start, target)
            assert answer.refusal.code == "invalid_task_transition"
            action = await world.action(answer.action_id)
            assert (action.tool, action.status.value, action.code) == ("warrant_task", "rejected", answer.refusal.code)
    after = await states(world, run)
    for target in TaskStatus:
        moves = (start, target) in AGENT_MOVES
        assert after[target.value][0] is (target if moves else start)


async def test_the_gateway_readies_a_task_when_its_dependencies_complete_and_takes_it_back_on_compensation(
    world: World,
) -> None:
    run = await world.new_run()
    await save(world, run, plan_of({"id": "a"}, {"id": "b"}, {"id": "c", "depends_on": ["a", "b"]}))
    assert await states(world, run) == {"a": (S.READY, 0), "b": (S.READY, 0), "c": (S.PENDING, 0)}
    await moved(world, run, "a", S.RUNNING)
    await moved(world, run, "a", S.COMPLETED)
    assert (await states(world, run))["c"] == (S.PENDING, 0)
    await moved(world, run, "b", S.RUNNING)
    done = await moved(world, run, "b", S.COMPLETED)
    assert done.readied == ["c"]
    assert (await states(world, run))["c"] == (S.READY, 0)
    undone = await moved(world, run, "a", S.COMPENSATED)
    assert undone.unreadied == ["c"]
    assert (await states(world, run))["c"] == (S.PENDING, 0)
    types = await world.event_types(run.run_id)
    assert types.count("task_ready") == 3 and types.count("task_pending") == 1
    assert types[:4] == ["run_created", "lease_granted", "plan_created", "task_ready"]


# -- fencing ------------------------------------------------------------------------------------
async def test_a_superseded_worker_can_neither_move_a_task_nor_plan(world: World) -> None:
    run = await world.new_run()
    await save(world, run, plan_of({"id": "a"}))
    await world.takeover(run)
    late = await move(world, run, "a", S.RUNNING, epoch=1)
    assert isinstance(late, Refused) and late.refusal.code == "lease_superseded"
    replan = await save(world, run, plan_of({"id": "b"}), expected=1, epoch=1)
    assert isinstance(replan, Refused) and replan.refusal.code == "lease_superseded"
    assert await states(world, run) == {"a": (S.READY, 0)}
    assert (await world.action(late.action_id)).tool == "warrant_task"
    # The new holder moves it.
    assert (await moved(world, run, "a", S.RUNNING, epoch=2)).task.attempts == 1


async def test_a_paused_run_takes_moves_and_plans_but_no_start(world: World) -> None:
    run = await world.new_run()
    await save(world, run, plan_of({"id": "a"}, {"id": "b"}))
    await moved(world, run, "a", S.RUNNING)
    await world.store.pause(OPS, run.run_id, "lunch")
    assert (await moved(world, run, "a", S.BLOCKED)).task.status is S.BLOCKED
    refused = await move(world, run, "b", S.RUNNING)
    assert isinstance(refused, Refused) and refused.refusal.code == "run_paused"
    assert isinstance(await save(world, run, plan_of({"id": "a"}, {"id": "b"}, {"id": "c"}), expected=1), PlanState)


# -- completion and attempts --------------------------------------------------------------------
async def test_a_completion_whose_check_fails_leaves_the_task_running_and_keeps_the_results(world: World) -> None:
    run = await world.new_run()
    await save(world, run, plan_of({"id": "report", "completion": [{"artifact": "report"}, {"artifact": "data"}]}))
    await moved(world, run, "report", S.RUNNING)
    results = [
        CheckResult("artifact", "verified", None, {"artifact": "report"}),
        CheckResult("artifact", "failed", "artifact data was not given", {"artifact": "data"}),
    ]
    claim = await move(world, run, "report", S.COMPLETED, checks=results)
    assert isinstance(claim, Refused) and claim.refusal.code == "task_check_failed"
    assert claim.refusal.details["failed"] == [
        {"index": 1, "kind": "artifact", "status": "failed", "reason": "artifact data was not given"}
    ]
    plan = await world.store.read_plan(TENANT, run.run_id)
    [task] = plan.tasks
    assert task.status is S.RUNNING and task.checks is not None
    assert [c["status"] for c in task.checks] == ["verified", "failed"]
    events = await world.events(run.run_id)
    failed = next(e for e in events if e.type == "task_check_failed")
    assert failed.data["task_id"] == "report" and failed.data["failed"][0]["index"] == 1
    ok = [results[0], CheckResult("artifact", "verified", None, {"artifact": "data"})]
    output = {"id": "report", "uri": "file:///r.md", "sha256": "0" * 64}
    world.clock.advance(60)
    done = await moved(world, run, "report", S.COMPLETED, checks=ok, output_ref=output)
    assert done.task.status is S.COMPLETED and done.task.output_ref == output and done.task.finished_at is not None
    # A completed task is the run's progress: the watchdog's stall clock starts again.
    [watched] = [r for r in (await world.store.watch_state()).runs if r.run_id == run.run_id]
    assert watched.progress_at == done.task.updated_at


async def test_a_task_out_of_attempts_is_failed_by_the_gateway_and_the_refusal_says_so(world: World) -> None:
    run = await world.new_run()
    await save(world, run, plan_of({"id": "flaky", "max_attempts": 2}))
    await moved(world, run, "flaky", S.RUNNING)
    await moved(world, run, "flaky", S.RETRYING, error="the upstream said 503")
    assert (await moved(world, run, "flaky", S.RUNNING)).task.attempts == 2
    out = await move(world, run, "flaky", S.RETRYING)
    assert isinstance(out, Refused) and out.refusal.code == "task_attempts_exhausted"
    assert await states(world, run) == {"flaky": (S.FAILED, 2)}
    entry = [e for e in await world.events(run.run_id) if e.type == "task_failed"][-1]
    assert (entry.data["by"], entry.data["attempts"], entry.data["reason"]) == ("gateway", 2, "all 2 attempts used")
    retried = next(e for e in await world.events(run.run_id) if e.type == "task_retrying")
    assert retried.data["error"] == "the upstream said 503"


# -- plan versions ------------------------------------------------------------------------------
async def test_plans_are_compare_and_set_and_each_version_records_its_diff(world: World) -> None:
    run = await world.new_run()
    first = await save(world, run, plan_of({"id": "a"}, {"id": "b"}))
    assert isinstance(first, PlanState) and first.version == 1
    stale = await save(world, run, plan_of({"id": "a"}), expected=0)
    assert isinstance(stale, Refused) and stale.refusal.code == "plan_conflict"
    assert stale.refusal.details == {"current_version": 1, "expected_version": 0}
    await moved(world, run, "a", S.RUNNING)
    revised = plan_of({"id": "a", "title": "A again"}, {"id": "c", "depends_on": ["a"]})
    second = await save(world, run, revised, expected=1)
    assert isinstance(second, PlanState) and second.version == 2
    assert second.latest is not None and second.latest.diff == {"added": ["c"], "removed": ["b"], "changed": ["a"]}
    assert [(t.task_id, t.status, t.attempts, t.spec.title) for t in second.tasks] == [
        ("a", S.RUNNING, 1, "A again"),
        ("c", S.PENDING, 0, "C"),
    ]
    entries = [e for e in await world.events(run.run_id) if e.type in ("plan_created", "replanned")]
    assert [(e.type, e.data["version"], e.data["diff"]["added"]) for e in entries] == [
        ("plan_created", 1, ["a", "b"]),
        ("replanned", 2, ["c"]),
    ]
    # A started task stays, with what it depends on and what completes it.
    dropped = await save(world, run, plan_of({"id": "c"}), expected=2)
    assert isinstance(dropped, Refused) and dropped.refusal.code == "plan_invalid"
    assert dropped.refusal.details["problems"] == ["task a is running: a started task stays in the plan"]


async def test_a_plan_revised_past_max_plan_revisions_is_refused(world: World) -> None:
    run = await world.new_run(plan={"max_plan_revisions": 1, "max_tasks": 3})
    assert isinstance(await save(world, run, plan_of({"id": "a"})), PlanState)
    assert isinstance(await save(world, run, plan_of({"id": "b"}), expected=1), PlanState)
    third = await save(world, run, plan_of({"id": "c"}), expected=2)
    assert isinstance(third, Refused) and third.refusal.code == "plan_revision_limit"
    assert third.refusal.details == {"revisions": 1, "max_plan_revisions": 1, "version": 2}
    assert (await world.action(third.action_id)).tool == "warrant_plan"
    assert (await world.store.read_plan(TENANT, run.run_id)).version == 2
    big = await save(world, run, plan_of(*({"id": f"t{i}"} for i in range(4))), expected=2)
    assert isinstance(big, Refused) and big.refusal.code == "plan_invalid"


async def test_a_revision_waits_for_budget_when_the_contract_says_so(world: World) -> None:
    run = await world.new_run(plan={"revision_needs_budget": True}, budgets={"tool_calls": 2})
    assert isinstance(await save(world, run, plan_of({"id": "a"})), PlanState)
    assert code_of(await world.call(run.token, "t__read", {"q": "x"})) is None
    over = await save(world, run, plan_of({"id": "a"}, {"id": "b"}, {"id": "c"}), expected=1)
    assert isinstance(over, Refused) and over.refusal.code == "plan_over_budget"
    assert over.refusal.details == {"dimension": "tool_calls", "needed": 2, "left": 1}
    assert isinstance(await save(world, run, plan_of({"id": "a"}, {"id": "b"}), expected=1), PlanState)


# -- tool calls made for a task -----------------------------------------------------------------
async def test_tool_calls_naming_a_task_are_counted_for_it_and_refused_unless_it_runs(world: World) -> None:
    run = await world.new_run()
    for_a = {TASK_ID_META: "a"}
    assert code_of(await world.call(run.token, "t__write", {"text": "x"}, for_a)) == "unknown_task"
    await save(world, run, plan_of({"id": "a"}, {"id": "b"}))
    assert code_of(await world.call(run.token, "t__write", {"text": "x"}, for_a)) == "task_not_running"
    bad = await world.call(run.token, "t__read", {"q": "x"}, {TASK_ID_META: "no such"})
    assert code_of(bad) == "invalid_arguments"
    await moved(world, run, "a", S.RUNNING)
    world.tools.actual_spend["paid"] = 7
    for result in [
        await world.call(run.token, "t__write", {"text": "1"}, for_a),
        await world.call(run.token, "t__paid", {"text": "2"}, for_a),
        await world.call(run.token, "t__read", {"q": "3"}, for_a),
        await world.call(run.token, "t__write", {"text": "untagged"}),
    ]:
        assert code_of(result) is None, result
    world.tools.modes["write"] = "crash"
    assert code_of(await world.call(run.token, "t__write", {"text": "lost"}, for_a)) == "outcome_unknown"
    assert code_of(await world.call(run.token, "t__write", {"text": "y"}, {TASK_ID_META: "b"})) == "task_not_running"
    plan = await world.store.read_plan(TENANT, run.run_id)
    counts = plan.counts["a"]
    assert (counts.tool_calls, counts.writes, counts.effects, counts.uncertain) == (4, 3, 2, 1)
    assert counts.spend == 7 + 0  # the paid write's actual cost; the others cost nothing
    assert "b" not in plan.counts
    tagged = [a for a in await world.actions(run.run_id) if a.task_id == "a"]
    assert len(tagged) == 4 and all(a.status.value != "rejected" for a in tagged)
    admitted = [e for e in await world.events(run.run_id) if e.type == "action_admitted"]
    assert [e.data.get("task_id") for e in admitted] == ["a", "a", None, "a"]


async def test_a_contract_that_requires_a_plan_refuses_writes_before_one(world: World) -> None:
    run = await world.new_run(plan={"required_before_writes": True})
    assert code_of(await world.call(run.token, "t__write", {"text": "x"})) == "plan_required"
    assert code_of(await world.call(run.token, "t__read", {"q": "reads are fine"})) is None
    assert [name for name, _ in world.tools.effects] == ["read"]
    await save(world, run, plan_of({"id": "a"}))
    assert code_of(await world.call(run.token, "t__write", {"text": "x"})) is None


async def test_the_recovery_inputs_carry_the_plan_in_the_same_read(world: World) -> None:
    run = await world.new_run()
    await save(world, run, plan_of({"id": "a"}, {"id": "b", "depends_on": ["a"]}))
    await moved(world, run, "a", S.RUNNING)
    inputs = await world.store.recovery_inputs(TENANT, run.run_id)
    assert inputs.plan is not None and inputs.plan.version == 1
    assert [(t.task_id, t.status) for t in inputs.plan.tasks] == [("a", S.RUNNING), ("b", S.PENDING)]
    none = await world.store.recovery_inputs(TENANT, (await world.new_run()).run_id)
    assert none.plan is not None and none.plan.version == 0 and none.plan.tasks == []


# -- successors -----------------------------------------------------------------------------------
async def test_a_successor_inherits_the_plan_and_restarts_the_attempts_its_predecessor_left_under_way(
    world: World,
) -> None:
    run = await world.new_run()
    plan = plan_of(
        {"id": "done"},
        {"id": "going", "depends_on": ["done"], "max_attempts": 2},
        {"id": "stuck", "depends_on": ["done"]},
        {"id": "later", "depends_on": ["going"]},
    )
    await save(world, run, plan)
    await moved(world, run, "done", S.RUNNING)
    await moved(world, run, "done", S.COMPLETED, checks=[])
    await moved(world, run, "going", S.RUNNING)
    await moved(world, run, "stuck", S.RUNNING)
    await moved(world, run, "stuck", S.BLOCKED, error="waiting for the file")
    await world.store.cancel(OPS, run.run_id, "worker lost", hard=False)

    successor = await world.store.create_successor(OPS, run.run_id, reason="carry on", extend_by=None)

    inherited = await world.store.read_plan(TENANT, successor.run_id)
    assert inherited.version == 1
    assert {t.task_id: (t.status, t.attempts) for t in inherited.tasks} == {
        "done": (S.COMPLETED, 1),
        "going": (S.READY, 1),
        "stuck": (S.READY, 1),
        "later": (S.PENDING, 0),
    }
    assert [t.task_id for t in inherited.tasks] == ["done", "going", "stuck", "later"]
    [entry] = [e for e in await world.events(successor.run_id) if e.type == "plan_inherited"]
    assert entry.data == {
        "from_run_id": run.run_id,
        "version": 1,
        "tasks": 4,
        "restarted": ["going", "stuck"],
        "progress": {"done": 1, "total": 4},
    }
    # The predecessor's plan is as it was.
    assert (await states(world, run))["going"] == (S.RUNNING, 1)

    # The successor's worker goes on: attempts count across the lineage, and the plan is CAS'd on
    # the inherited version.
    grant = await world.store.acquire_lease(OPS, successor.run_id, "worker-9", takeover=False)
    again = await world.store.move_task(
        successor.run_id, epoch=grant.epoch, worker="worker-9", task_id="going", status=S.RUNNING
    )
    assert isinstance(again, TaskMoved) and again.task.attempts == 2
    stale = await world.store.save_plan(
        successor.run_id, epoch=grant.epoch, worker="worker-9", expected_version=0, plan=plan
    )
    assert isinstance(stale, Refused) and stale.refusal.code == "plan_conflict"


async def test_a_successor_of_a_run_without_a_plan_has_none(world: World) -> None:
    run = await world.new_run()
    await world.store.cancel(OPS, run.run_id, "worker lost", hard=False)
    successor = await world.store.create_successor(OPS, run.run_id, reason="carry on", extend_by=None)
    assert (await world.store.read_plan(TENANT, successor.run_id)).version == 0
    assert "plan_inherited" not in [e.type for e in await world.events(successor.run_id)]
