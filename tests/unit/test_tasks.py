"""The plan and its tasks in the pure core (gateway/domain/tasks.py, docs/tasks.md): the transition
table over every pair of statuses, readiness, attempts, completion checks, plan validation,
revisions and the check a tagged tool call gets."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from gateway.domain.checks import CheckResult
from gateway.domain.contract import MAX_PLAN_VERSIONS, PlanRules, parse_contract
from gateway.domain.revision import Effect, classify
from gateway.domain.tasks import (
    MAX_PLAN_BYTES,
    TRANSITIONS,
    Mover,
    Plan,
    TaskSpec,
    TaskState,
    TaskStatus,
    call_task_refusal,
    current_task,
    decide_move,
    next_task,
    parse_plan,
    plan_diff,
    progress_of,
    readiness,
    replan_problems,
    revision_refusal,
)
from gateway.errors import Code, Refusal
from tests.contracts import DROP
from tests.contracts import contract as base

S = TaskStatus
P, RD, RU, B, WA, RT = S.PENDING, S.READY, S.RUNNING, S.BLOCKED, S.WAITING_FOR_APPROVAL, S.RETRYING
C, F, X, CO = S.COMPLETED, S.FAILED, S.CANCELLED, S.COMPENSATED

# The table of docs/tasks.md, written out again here so that it is checked, not echoed.
AGENT_MOVES = {
    (RD, RU),
    (RU, B),
    (RU, WA),
    (RU, RT),
    (RU, C),
    (RU, F),
    (B, RU),
    (WA, RU),
    (RT, RU),
    (B, F),
    (WA, F),
    (RT, F),
    (P, X),
    (RD, X),
    (RU, X),
    (B, X),
    (WA, X),
    (RT, X),
    (C, CO),
    (F, CO),
}
GATEWAY_MOVES = {(P, RD), (RD, P)}
ALL_PAIRS = list(itertools.product(TaskStatus, TaskStatus))
VERIFIED = CheckResult("artifact", "verified", None, {"artifact": "out"})


def spec(task_id: str = "t1", *, depends_on: tuple[str, ...] = (), checks: int = 0, max_attempts: int = 3) -> TaskSpec:
    completion = tuple({"artifact": f"a{i}"} for i in range(checks))
    return TaskSpec(task_id, f"task {task_id}", depends_on, completion, max_attempts)


def task(status: TaskStatus, attempts: int = 1, **kw: Any) -> TaskState:
    return TaskState(spec(**kw), status, attempts)


def tasks(body: list[dict[str, Any]], max_tasks: int = 100) -> Plan:
    return parse_plan(body, max_tasks=max_tasks)


def problems_of(body: Any, max_tasks: int = 100) -> list[str]:
    with pytest.raises(Refusal) as caught:
        parse_plan(body, max_tasks=max_tasks)
    assert caught.value.code is Code.PLAN_INVALID
    problems: list[str] = caught.value.details["problems"]
    return problems


# -- the transition table ------------------------------------------------------------------------
def test_the_task_table_is_the_designed_one() -> None:
    assert {pair for pair, who in TRANSITIONS.items() if who is Mover.AGENT} == AGENT_MOVES
    assert {pair for pair, who in TRANSITIONS.items() if who is Mover.GATEWAY} == GATEWAY_MOVES


def test_every_status_that_is_not_done_may_be_cancelled_and_done_ones_only_compensated() -> None:
    for status in TaskStatus:
        assert ((status, X) in AGENT_MOVES) is (not status.done)
    assert {(a, b) for a, b in AGENT_MOVES if a.done} == {(C, CO), (F, CO)}


@pytest.mark.parametrize(("current", "target"), ALL_PAIRS, ids=lambda v: str(v))
def test_every_pair_of_statuses_moves_stays_or_is_refused_invalid_task_transition(
    current: TaskStatus, target: TaskStatus
) -> None:
    state = task(current, attempts=1)
    move = decide_move(state, target, checks=[])
    if target is current:
        assert (move.status, move.attempts, move.refusal) == (current, 1, None)
    elif (current, target) in AGENT_MOVES:
        assert move.refusal is None, move.refusal
        assert move.status is target and move.moved
        assert move.attempts == (2 if (current, target) in {(RD, RU), (RT, RU)} else 1)
    else:
        assert move.refusal is not None and move.refusal.code is Code.INVALID_TASK_TRANSITION
        assert (move.status, move.attempts) == (current, 1)
        details = move.refusal.details
        assert (details["status"], details["requested"]) == (current.value, target.value)
        assert set(details["allowed"]) == {b.value for a, b in AGENT_MOVES if a is current}


@pytest.mark.parametrize("current", list(TaskStatus))
def test_pending_and_ready_are_never_the_agents_to_ask_for(current: TaskStatus) -> None:
    for target in (P, RD):
        if target is current:
            continue
        move = decide_move(task(current), target)
        assert move.refusal is not None and move.refusal.code is Code.INVALID_TASK_TRANSITION
        assert "gateway's" in move.refusal.message


def test_a_pending_task_asked_to_run_is_told_what_it_waits_on() -> None:
    move = decide_move(task(P, 0, depends_on=("fetch", "parse")), RU)
    assert move.refusal is not None and move.refusal.code is Code.INVALID_TASK_TRANSITION
    assert "fetch, parse" in move.refusal.message


# -- readiness -----------------------------------------------------------------------------------
@pytest.mark.parametrize(("a", "b"), list(itertools.product(TaskStatus, TaskStatus)), ids=lambda v: str(v))
def test_a_task_is_ready_exactly_when_every_task_it_depends_on_is_completed(a: TaskStatus, b: TaskStatus) -> None:
    deps = [TaskState(spec("a"), a, 0), TaskState(spec("b"), b, 0)]
    for waiting in (P, RD):
        moves = dict(readiness([*deps, TaskState(spec("c", depends_on=("a", "b")), waiting, 0)]))
        met = a is C and b is C
        expected = RD if met else P
        assert moves.get("c", waiting) is expected


def test_readiness_moves_only_pending_and_ready_tasks_and_keeps_plan_order() -> None:
    states = [
        TaskState(spec("z"), P, 0),
        TaskState(spec("y"), RU, 1),
        TaskState(spec("x", depends_on=("y",)), P, 0),
        TaskState(spec("w"), P, 0),
    ]
    assert readiness(states) == [("z", RD), ("w", RD)]


# -- attempts and completion -------------------------------------------------------------------
def test_attempts_count_the_moves_into_running_from_ready_and_from_retrying_only() -> None:
    state = TaskState(spec(max_attempts=5), RD, 0)
    for target, attempts in ((RU, 1), (B, 1), (RU, 1), (WA, 1), (RU, 1), (RT, 1), (RU, 2), (RT, 2), (RU, 3)):
        move = decide_move(state, target)
        assert move.refusal is None and (move.status, move.attempts) == (target, attempts)
        state = TaskState(state.spec, move.status, move.attempts)


def test_a_task_out_of_attempts_fails_instead_of_retrying_and_says_so() -> None:
    last = task(RU, attempts=2, max_attempts=2)
    move = decide_move(last, RT)
    assert move.refusal is not None and move.refusal.code is Code.TASK_ATTEMPTS_EXHAUSTED
    assert (move.status, move.attempts) == (F, 2)
    assert move.refusal.details == {"task_id": "t1", "attempts": 2, "max_attempts": 2, "status": "failed"}
    # A plan that lowered max_attempts below what was used: the next attempt fails it too.
    move = decide_move(task(RT, attempts=3, max_attempts=2), RU)
    assert move.refusal is not None and (move.status, move.refusal.code) == (F, Code.TASK_ATTEMPTS_EXHAUSTED)
    # One left: retrying and the attempt after it are fine.
    assert decide_move(task(RU, attempts=1, max_attempts=2), RT).refusal is None
    assert decide_move(task(RT, attempts=1, max_attempts=2), RU).attempts == 2


def test_completed_needs_every_check_verified_and_names_each_that_is_not() -> None:
    running = task(RU, checks=3)
    results = [
        VERIFIED,
        CheckResult("artifact", "failed", "artifact a1: its bytes hash to 00, the worker declared 11"),
        CheckResult("http", "unverified", "http://x/: connection refused"),
    ]
    move = decide_move(running, C, checks=results)
    assert move.refusal is not None and move.refusal.code is Code.TASK_CHECK_FAILED
    assert move.status is RU and not move.moved
    assert [f["index"] for f in move.refusal.details["failed"]] == [1, 2]
    assert "completion[1] artifact failed: artifact a1" in move.refusal.message
    assert "completion[2] http unverified" in move.refusal.message
    assert move.checks == tuple(results)
    # Checks not run at all never complete a task that has them.
    assert decide_move(running, C).refusal is not None
    assert decide_move(running, C, checks=[VERIFIED] * 3).status is C
    assert decide_move(task(RU), C).status is C  # no checks: nothing left to verify


# -- plans ---------------------------------------------------------------------------------------
def test_a_plan_keeps_its_order_and_defaults() -> None:
    plan = tasks([{"id": "b", "title": "B"}, {"id": "a", "title": "A", "depends_on": ["b"], "max_attempts": 1}])
    assert [t.task_id for t in plan.tasks] == ["b", "a"]
    assert plan.tasks[0] == TaskSpec("b", "B", (), (), 3)
    assert plan.tasks[1].depends_on == ("b",) and plan.tasks[1].max_attempts == 1
    assert tasks(plan.to_wire()) == plan


def test_a_blocked_expectation_is_a_duration_in_seconds_and_absent_from_the_wire_when_unset() -> None:
    plan = tasks([{"id": "a", "title": "A", "blocked_expectation": "10m"}, {"id": "b", "title": "B"}])
    assert [t.blocked_expectation for t in plan.tasks] == [600, None]
    assert plan.to_wire()[0]["blocked_expectation"] == 600 and "blocked_expectation" not in plan.to_wire()[1]
    assert tasks(plan.to_wire()) == plan


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ({"tasks": []}, "tasks is a list"),
        ([], "at least one task"),
        ([{"id": "a", "title": "A"}, {"id": "a", "title": "A again"}], "'a' names two tasks"),
        ([{"id": "a", "title": "A", "depends_on": ["b"]}], "depends_on names 'b'"),
        ([{"id": "a", "title": "A", "depends_on": ["a"]}], "cannot depend on itself"),
        ([{"id": "a", "title": "A", "depends_on": ["b", "b"]}, {"id": "b", "title": "B"}], "names a task twice"),
        ([{"id": "a b", "title": "A"}], "tasks[0].id"),
        ([{"id": "a", "title": ""}], "tasks[0].title"),
        ([{"id": "a", "title": "A", "owner": "me"}], "unknown keys owner"),
        ([{"id": "a", "title": "A", "max_attempts": True}], "max_attempts"),
        ([{"id": "a", "title": "A", "max_attempts": 0}], "max_attempts"),
        ([{"id": "a", "title": "A", "completion": [{"artifact": "x", "sha256": "no"}]}], "completion[0]: sha256"),
        ([{"id": "a", "title": "A", "completion": [{"review": {"reviewer": "ana"}}]}], "review check"),
        ([{"id": "a", "title": "A", "completion": [{"artifact": "x"}] * 21}], "at most 20 checks"),
        ([{"id": "a", "title": "A", "depends_on": [f"d{i}" for i in range(51)]}], "at most 50 tasks"),
        ([{"id": "a", "title": "A", "depends_on": ["b"]}, {"id": "b", "title": "B", "depends_on": ["a"]}], "a cycle"),
        ([{"id": "a", "title": "x" * 501}], "at most 500 characters"),
        ([{"id": "a", "title": "A", "blocked_expectation": "soon"}], "tasks[0].blocked_expectation"),
        ([{"id": "a", "title": "A", "blocked_expectation": 0}], "tasks[0].blocked_expectation"),
    ],
)
def test_a_plan_that_does_not_hold_together_is_refused_plan_invalid_naming_why(body: Any, expected: str) -> None:
    assert any(expected in p for p in problems_of(body)), problems_of(body)


def test_every_problem_is_named_at_once_and_a_cycle_by_its_path() -> None:
    problems = problems_of([{"id": "a", "title": ""}, {"id": "b", "title": "B", "max_attempts": -1}, 7])
    assert len(problems) == 3
    cycle = problems_of(
        [
            {"id": "a", "title": "A"},
            {"id": "b", "title": "B", "depends_on": ["a", "d"]},
            {"id": "c", "title": "C", "depends_on": ["b"]},
            {"id": "d", "title": "D", "depends_on": ["c"]},
        ]
    )
    assert cycle == ["the dependencies have a cycle: b -> d -> c -> b"]


def test_a_plan_is_bounded_by_the_contracts_max_tasks_and_by_its_size() -> None:
    ten = [{"id": f"t{i}", "title": "T"} for i in range(10)]
    assert len(tasks(ten, max_tasks=10).tasks) == 10
    assert "at most 9" in problems_of(ten, max_tasks=9)[0]
    huge = [{"id": f"t{i}", "title": "x" * 500} for i in range(MAX_PLAN_BYTES // 500 + 1)]
    assert "bytes of JSON" in problems_of(huge, max_tasks=10**6)[0]


def test_the_diff_names_added_removed_and_changed_tasks_in_plan_order() -> None:
    old = tasks([{"id": "a", "title": "A"}, {"id": "b", "title": "B"}, {"id": "c", "title": "C"}])
    new = tasks([{"id": "d", "title": "D"}, {"id": "c", "title": "C", "max_attempts": 5}, {"id": "a", "title": "A"}])
    assert plan_diff(old, new) == {"added": ["d"], "removed": ["b"], "changed": ["c"]}
    assert plan_diff(None, old) == {"added": ["a", "b", "c"], "removed": [], "changed": []}


def test_a_new_plan_keeps_started_tasks_with_what_they_depend_on_and_what_completes_them() -> None:
    old = tasks(
        [
            {"id": "a", "title": "A", "completion": [{"artifact": "x"}]},
            {"id": "b", "title": "B", "depends_on": ["a"]},
            {"id": "c", "title": "C"},
        ]
    )
    states = [TaskState(old.tasks[0], C, 1), TaskState(old.tasks[1], RU, 1), TaskState(old.tasks[2], RD, 0)]
    renamed = tasks(
        [
            {"id": "a", "title": "A, renamed", "completion": [{"artifact": "x"}], "max_attempts": 9},
            {"id": "b", "title": "B", "depends_on": ["a"]},
        ]
    )
    assert replan_problems(states, renamed) == []  # c was not started: it may go
    moved = tasks([{"id": "a", "title": "A"}, {"id": "b", "title": "B"}])
    assert replan_problems(states, moved) == [
        "task a is completed: its depends_on and completion stay as they were (only its title and max_attempts "
        "may change)",
        "task b is running: its depends_on and completion stay as they were (only its title and max_attempts "
        "may change)",
    ]
    assert replan_problems(states, tasks([{"id": "c", "title": "C"}])) == [
        "task a is completed: a started task stays in the plan",
        "task b is running: a started task stays in the plan",
    ]


# -- revisions -----------------------------------------------------------------------------------
LIMITS = {"spend": 1000, "tool_calls": 10, "writes": 5, "active_seconds": 100}
DIFF = {"added": ["x", "y"], "removed": [], "changed": ["z"]}


def refusal_code(version: int, rules: PlanRules, remaining: dict[str, int] | None = None, **diff: Any) -> str | None:
    refusal = revision_refusal(version, rules, {**DIFF, **diff}, limits=LIMITS, remaining=remaining or LIMITS)
    return None if refusal is None else refusal.code


def test_the_first_plan_is_never_a_revision() -> None:
    assert refusal_code(0, PlanRules(max_plan_revisions=0, revision_needs_budget=True), {"tool_calls": 0}) is None


def test_max_plan_revisions_counts_the_versions_after_the_first() -> None:
    assert refusal_code(1, PlanRules(max_plan_revisions=0)) == "plan_revision_limit"
    assert refusal_code(1, PlanRules(max_plan_revisions=2)) is None  # version 2: revision 1
    assert refusal_code(2, PlanRules(max_plan_revisions=2)) is None  # version 3: revision 2
    assert refusal_code(3, PlanRules(max_plan_revisions=2)) == "plan_revision_limit"
    assert refusal_code(MAX_PLAN_VERSIONS - 1, PlanRules()) is None
    assert refusal_code(MAX_PLAN_VERSIONS, PlanRules()) == "plan_revision_limit"  # the hard bound


def test_a_revision_needs_the_remaining_budget_to_cover_it_only_when_the_contract_says_so() -> None:
    needs = PlanRules(revision_needs_budget=True)
    low = {**LIMITS, "tool_calls": 2}
    assert refusal_code(1, PlanRules(), {"tool_calls": 0, "spend": 0, "active_seconds": 0}) is None
    assert refusal_code(1, needs, low) == "plan_over_budget"  # adds two, changes one: three calls at least
    assert refusal_code(1, needs, {**LIMITS, "tool_calls": 3}) is None
    assert refusal_code(1, needs, {**LIMITS, "tool_calls": 0}, added=[], changed=[]) == "plan_over_budget"
    assert refusal_code(1, needs, {**LIMITS, "tool_calls": 1}, added=[], changed=[]) is None
    assert refusal_code(1, needs, {**LIMITS, "active_seconds": 0}) == "plan_over_budget"
    assert refusal_code(1, needs, {**LIMITS, "spend": 0}) == "plan_over_budget"
    refusal = revision_refusal(1, needs, DIFF, limits={**LIMITS, "spend": 0}, remaining={**LIMITS, "spend": 0})
    assert refusal is None  # a run whose tools are free needs no spend left
    refusal = revision_refusal(1, needs, DIFF, limits=LIMITS, remaining=low)
    assert refusal is not None and refusal.details == {"dimension": "tool_calls", "needed": 3, "left": 2}


# -- tagged tool calls -------------------------------------------------------------------------
@pytest.mark.parametrize("status", [None, *TaskStatus])
@pytest.mark.parametrize("is_write", [False, True])
@pytest.mark.parametrize("plan_required", [False, True])
def test_a_call_naming_a_task_needs_it_running_and_a_write_may_need_a_plan(
    status: TaskStatus | None, is_write: bool, plan_required: bool
) -> None:
    refusal = call_task_refusal("t1", status, has_plan=status is not None, is_write=is_write, plan_required=True)
    expected = None if status is RU else ("unknown_task" if status is None else "task_not_running")
    assert (refusal.code if refusal else None) == expected
    for has_plan in (False, True):
        untagged = call_task_refusal(None, None, has_plan=has_plan, is_write=is_write, plan_required=plan_required)
        wanted = "plan_required" if is_write and plan_required and not has_plan else None
        assert (untagged.code if untagged else None) == wanted


def test_the_current_task_is_the_one_under_way_and_the_next_the_first_ready() -> None:
    states = [
        TaskState(spec("a"), C, 1),
        TaskState(spec("b"), B, 1),
        TaskState(spec("c"), RD, 0),
        TaskState(spec("d"), RU, 1),
        TaskState(spec("e"), RD, 0),
    ]
    current, upcoming = current_task(states), next_task(states)
    assert current is not None and current.task_id == "d"  # running before blocked
    assert upcoming is not None and upcoming.task_id == "c"
    assert current_task(states[:3]) == states[1]
    assert current_task(states[:1]) is None and next_task(states[:2]) is None
    assert progress_of(states) == {"done": 1, "total": 5}


# -- the contract's plan rules ------------------------------------------------------------------
def base_contract(**extra: Any) -> dict[str, Any]:
    return base(
        goal="g",
        owner="o",
        expires_in="1h",
        lease_ttl=DROP,
        budgets={"tool_calls": 10, "writes": 1, "active_seconds": 60},
        authority={"allow": ["*"]},
        **extra,
    )


def test_a_contract_without_plan_rules_keeps_todays_behaviour() -> None:
    terms = parse_contract(base_contract()).terms()
    assert terms.plan == PlanRules()
    assert (terms.plan.required_before_writes, terms.plan.max_plan_revisions) == (False, None)
    assert terms.plan.revision_needs_budget is False and terms.plan.max_tasks == 100


@pytest.mark.parametrize("plan", [{"max_tasks": 0}, {"max_tasks": 501}, {"max_plan_revisions": -1}, {"unknown": True}])
def test_plan_rules_out_of_bounds_are_an_invalid_contract(plan: dict[str, Any]) -> None:
    with pytest.raises(Exception) as caught:
        parse_contract(base_contract(plan=plan))
    assert getattr(caught.value, "code", None) == "invalid_contract"


@pytest.mark.parametrize(
    ("was", "now", "effect"),
    [
        ({}, {"required_before_writes": True}, Effect.NARROWS),
        ({"required_before_writes": True}, {}, Effect.WIDENS),
        ({"max_tasks": 50}, {"max_tasks": 20}, Effect.NARROWS),
        ({"max_tasks": 20}, {"max_tasks": 50}, Effect.WIDENS),
        ({}, {"max_plan_revisions": 3}, Effect.NARROWS),
        ({"max_plan_revisions": 3}, {"max_plan_revisions": 1}, Effect.NARROWS),
        ({"max_plan_revisions": 1}, {}, Effect.WIDENS),
        ({}, {"revision_needs_budget": True}, Effect.NARROWS),
    ],
)
def test_a_revision_of_the_plan_rules_narrows_when_stricter_and_widens_when_looser(
    was: dict[str, Any], now: dict[str, Any], effect: Effect
) -> None:
    old = parse_contract(base_contract(plan=was or None))
    new = parse_contract(base_contract(plan=now or None, spec_version="v2"))
    [change] = classify(old, new)
    assert change.field.startswith("plan.") and change.effect is effect
