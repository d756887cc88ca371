"""The run's plan and its tasks, as pure functions (docs/tasks.md): no I/O.

- `TaskStatus` and `TRANSITIONS`: every move a task may make and who makes it, the agent
  (`warrant_task`) or the gateway (readiness; a task out of attempts). Any other move is refused
  `invalid_task_transition`.
- `parse_plan`: the tasks `warrant_plan` takes, or `plan_invalid` naming every problem.
- `readiness`: a task is ready exactly when every task it depends on is completed.
- `decide_move`: one move the agent asks for, with the attempt it counts and the checks it needs.
- `plan_diff`, `replan_problems`, `revision_refusal`: what a new plan version changes, and whether
  it may.
- `call_task_refusal`: gate step 6 for a tool call that names its task (`_meta["warrant/task_id"]`).

The store reads the rows, calls these, and writes what they return, in one transaction.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol, TypeVar

from gateway.canonical import canonical_json
from gateway.domain.checks import CheckResult, ReviewCheck, check_problems, parse_check
from gateway.domain.contract import MAX_PLAN_VERSIONS, PlanRules
from gateway.domain.units import parse_duration
from gateway.errors import Code, Refusal

TASK_ID_META = "warrant/task_id"  # a tool call's `_meta` key naming the task it is made for

MAX_TITLE = 500
MAX_DEPENDS = 50  # tasks one task depends on
MAX_CHECKS = 20  # completion checks of one task
MAX_ATTEMPTS = 100
DEFAULT_MAX_ATTEMPTS = 3
MAX_PLAN_BYTES = 256 * 1024  # the tasks' canonical JSON
MAX_ERROR = 2000  # an `error` the agent gives with a move
_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,127}")
_TASK_KEYS = frozenset({"id", "title", "depends_on", "completion", "max_attempts", "blocked_expectation"})


class TaskStatus(StrEnum):
    PENDING = "pending"  # waits on a task it depends on
    READY = "ready"  # every task it depends on is completed: it may start
    RUNNING = "running"
    BLOCKED = "blocked"  # waits on something outside the run (input, a resource)
    WAITING_FOR_APPROVAL = "waiting_for_approval"
    RETRYING = "retrying"  # the attempt failed; another one follows
    COMPLETED = "completed"  # its completion checks passed, run by the gateway
    FAILED = "failed"
    CANCELLED = "cancelled"
    COMPENSATED = "compensated"  # its effects were undone

    @property
    def done(self) -> bool:
        """No more work follows (a completed or failed task may still be compensated)."""
        return self in DONE

    @property
    def started(self) -> bool:
        """It ran, or was given up: its definition is history a new plan keeps."""
        return self not in (TaskStatus.PENDING, TaskStatus.READY)

    @property
    def active(self) -> bool:
        """An attempt is under way: running, or paused inside it."""
        return self in ACTIVE


DONE = frozenset({TaskStatus.COMPLETED, TaskStatus.FAILED, TaskStatus.CANCELLED, TaskStatus.COMPENSATED})
ACTIVE = frozenset({TaskStatus.RUNNING, TaskStatus.BLOCKED, TaskStatus.WAITING_FOR_APPROVAL, TaskStatus.RETRYING})


class Mover(StrEnum):
    AGENT = "agent"  # asked for with warrant_task
    GATEWAY = "gateway"  # decided by the gateway alone


_P, _RD, _RU = TaskStatus.PENDING, TaskStatus.READY, TaskStatus.RUNNING
_B, _WA, _RT = TaskStatus.BLOCKED, TaskStatus.WAITING_FOR_APPROVAL, TaskStatus.RETRYING
_C, _F, _X, _CO = TaskStatus.COMPLETED, TaskStatus.FAILED, TaskStatus.CANCELLED, TaskStatus.COMPENSATED

# (from, to) -> who makes the move. A pair absent from this table is refused.
TRANSITIONS: dict[tuple[TaskStatus, TaskStatus], Mover] = {
    (_P, _RD): Mover.GATEWAY,  # its last dependency completed
    (_RD, _P): Mover.GATEWAY,  # a new plan gave it a dependency not completed, or one was compensated
    (_RD, _RU): Mover.AGENT,  # attempt 1
    (_RU, _B): Mover.AGENT,
    (_RU, _WA): Mover.AGENT,
    (_RU, _RT): Mover.AGENT,  # the attempt failed; the gateway fails the task instead when none is left
    (_RU, _C): Mover.AGENT,  # only when its completion checks pass
    (_RU, _F): Mover.AGENT,
    (_B, _RU): Mover.AGENT,  # the same attempt goes on
    (_WA, _RU): Mover.AGENT,  # the same attempt goes on
    (_RT, _RU): Mover.AGENT,  # the next attempt
    (_B, _F): Mover.AGENT,
    (_WA, _F): Mover.AGENT,
    (_RT, _F): Mover.AGENT,
    # Any task not done may be cancelled.
    (_P, _X): Mover.AGENT,
    (_RD, _X): Mover.AGENT,
    (_RU, _X): Mover.AGENT,
    (_B, _X): Mover.AGENT,
    (_WA, _X): Mover.AGENT,
    (_RT, _X): Mover.AGENT,
    # Effects undone: of a completed task, or of the part a failed one did.
    (_C, _CO): Mover.AGENT,
    (_F, _CO): Mover.AGENT,
}
# The moves that begin an attempt (counted in `attempts`; at most `max_attempts`).
NEW_ATTEMPT = frozenset({(_RD, _RU), (_RT, _RU)})


@dataclass(frozen=True)
class TaskSpec:
    """One task as the plan defines it."""

    task_id: str
    title: str
    depends_on: tuple[str, ...] = ()
    completion: tuple[dict[str, Any], ...] = ()  # checks, as a milestone's (gateway/domain/checks.py)
    max_attempts: int = DEFAULT_MAX_ATTEMPTS
    # Seconds it may stay blocked before the operator hears of it (`task_blocked_long`); None: the
    # contract's `plan.blocked_expectation`, if any.
    blocked_expectation: int | None = None

    def to_wire(self) -> dict[str, Any]:
        wire: dict[str, Any] = {
            "id": self.task_id,
            "title": self.title,
            "depends_on": list(self.depends_on),
            "completion": [dict(c) for c in self.completion],
            "max_attempts": self.max_attempts,
        }
        if self.blocked_expectation is not None:  # absent otherwise: the plans of before hash the same
            wire["blocked_expectation"] = self.blocked_expectation
        return wire


@dataclass(frozen=True)
class Plan:
    tasks: tuple[TaskSpec, ...]

    def to_wire(self) -> list[dict[str, Any]]:
        return [t.to_wire() for t in self.tasks]

    def by_id(self) -> dict[str, TaskSpec]:
        return {t.task_id: t for t in self.tasks}


@dataclass(frozen=True)
class TaskState:
    """A task of the current plan and where it stands."""

    spec: TaskSpec
    status: TaskStatus = TaskStatus.PENDING
    attempts: int = 0

    @property
    def task_id(self) -> str:
        return self.spec.task_id


@dataclass(frozen=True)
class Move:
    """What one asked-for move comes to: the task's status and attempts after it, and the refusal
    answered (and recorded) — also when something was written (a task out of attempts fails)."""

    previous: TaskStatus
    status: TaskStatus
    attempts: int
    refusal: Refusal | None = None
    checks: tuple[CheckResult, ...] = field(default=())

    @property
    def moved(self) -> bool:
        return self.status is not self.previous


# -- the plan ----------------------------------------------------------------------------------
def plan_invalid(problems: Sequence[str]) -> Refusal:
    shown = "; ".join(problems[:5]) + (f"; and {len(problems) - 5} more" if len(problems) > 5 else "")
    return Refusal(
        Code.PLAN_INVALID,
        f"not planned: the plan has {len(problems)} problem(s): {shown}",
        problems=list(problems[:100]),
    )


def parse_plan(data: Any, *, max_tasks: int) -> Plan:
    """The tasks of a `warrant_plan` call, in their order.

    Raises: Refusal `plan_invalid` naming every problem (each with its task's index): not a list,
    empty, more than `max_tasks` or over MAX_PLAN_BYTES; an id that is not 1-128 characters of
    [A-Za-z0-9._:-], or twice; a title missing or over MAX_TITLE; a dependency unknown, on itself,
    twice or past MAX_DEPENDS; a check that does not parse, a review check (a task's completion is
    decided by the gateway alone), past MAX_CHECKS; max_attempts not 1..MAX_ATTEMPTS; a cycle.
    """
    if not isinstance(data, list):
        raise plan_invalid(["tasks is a list of {id, title, depends_on?, completion?, max_attempts?}"])
    problems: list[str] = []
    if not data:
        problems.append("a plan has at least one task")
    if len(data) > max_tasks:
        raise plan_invalid([f"the plan has {len(data)} tasks; this run's contract allows at most {max_tasks}"])
    try:
        size = len(canonical_json(data))
    except ValueError:
        raise plan_invalid(["the tasks are not representable as canonical JSON"]) from None
    if size > MAX_PLAN_BYTES:
        raise plan_invalid([f"the tasks are {size} bytes of JSON; at most {MAX_PLAN_BYTES}"])
    specs: list[TaskSpec] = []
    seen: set[str] = set()
    for index, item in enumerate(data):
        where = f"tasks[{index}]"
        spec = _task(item, where, problems)
        if spec is None:
            continue
        if spec.task_id in seen:
            problems.append(f"{where}.id: {spec.task_id!r} names two tasks")
        seen.add(spec.task_id)
        specs.append(spec)
    for spec in specs:
        for dep in spec.depends_on:
            if dep not in seen:
                problems.append(f"task {spec.task_id}: depends_on names {dep!r}, which is not a task of this plan")
    if not problems:
        cycle = _cycle(specs)
        if cycle:
            problems.append("the dependencies have a cycle: " + " -> ".join(cycle))
    if problems:
        raise plan_invalid(problems)
    return Plan(tuple(specs))


def _task(item: Any, where: str, problems: list[str]) -> TaskSpec | None:
    if not isinstance(item, Mapping):
        problems.append(f"{where}: a task is an object {{id, title, depends_on?, completion?, max_attempts?}}")
        return None
    unknown = sorted(str(k) for k in set(item) - _TASK_KEYS)
    if unknown:
        problems.append(f"{where}: unknown keys {', '.join(unknown)}")
    task_id = item.get("id")
    if not isinstance(task_id, str) or not _ID.fullmatch(task_id):
        problems.append(f"{where}.id: 1-128 characters of [A-Za-z0-9._:-], beginning with a letter or digit")
        return None
    title = item.get("title")
    if not isinstance(title, str) or not title.strip() or len(title) > MAX_TITLE:
        problems.append(f"{where}.title: a non-empty string of at most {MAX_TITLE} characters")
    depends = item.get("depends_on", [])
    if not isinstance(depends, list) or not all(isinstance(d, str) for d in depends):
        problems.append(f"{where}.depends_on: a list of task ids")
        depends = []
    elif len(depends) > MAX_DEPENDS:
        problems.append(f"{where}.depends_on: at most {MAX_DEPENDS} tasks")
    elif len(set(depends)) != len(depends):
        problems.append(f"{where}.depends_on: names a task twice")
    if task_id in depends:
        problems.append(f"{where}.depends_on: a task cannot depend on itself")
    completion = item.get("completion", [])
    if not isinstance(completion, list):
        problems.append(f"{where}.completion: a list of checks")
        completion = []
    elif len(completion) > MAX_CHECKS:
        problems.append(f"{where}.completion: at most {MAX_CHECKS} checks")
    else:
        bad = check_problems(completion)
        problems.extend(f"{where}.completion{p.removeprefix('checks')}" for p in bad)
        if not bad and any(isinstance(parse_check(c), ReviewCheck) for c in completion):
            problems.append(
                f"{where}.completion: a review check belongs to a milestone; a task's checks are the gateway's"
            )
    attempts = item.get("max_attempts", DEFAULT_MAX_ATTEMPTS)
    if type(attempts) is not int or not 1 <= attempts <= MAX_ATTEMPTS:
        problems.append(f"{where}.max_attempts: an integer from 1 to {MAX_ATTEMPTS}")
        attempts = DEFAULT_MAX_ATTEMPTS
    blocked: int | None = None
    if item.get("blocked_expectation") is not None:
        try:
            blocked = parse_duration(item["blocked_expectation"])
        except ValueError as exc:
            problems.append(f"{where}.blocked_expectation: {exc}")
    return TaskSpec(
        task_id,
        title if isinstance(title, str) else "",
        tuple(depends),
        tuple(dict(c) for c in completion if isinstance(c, Mapping)),
        attempts,
        blocked,
    )


def _cycle(specs: Sequence[TaskSpec]) -> list[str]:
    """One cycle of the dependencies as a path (first id repeated at the end), or [] for none."""
    deps = {s.task_id: s.depends_on for s in specs}
    state: dict[str, int] = {}  # 1: on the path, 2: finished
    for start in deps:
        if state.get(start):
            continue
        path: list[str] = []
        stack: list[tuple[str, int]] = [(start, 0)]
        while stack:
            node, index = stack.pop()
            if index == 0:
                state[node] = 1
                path.append(node)
            if index < len(deps[node]):
                stack.append((node, index + 1))
                nxt = deps[node][index]
                if state.get(nxt) == 1:
                    return [*path[path.index(nxt) :], nxt]
                if not state.get(nxt):
                    stack.append((nxt, 0))
            else:
                state[node] = 2
                path.pop()
    return []


def plan_diff(old: Plan | None, new: Plan) -> dict[str, list[str]]:
    """The task ids a new plan version adds, removes and changes (any field), in plan order."""
    before = old.by_id() if old is not None else {}
    after = new.by_id()
    return {
        "added": [t.task_id for t in new.tasks if t.task_id not in before],
        "removed": [t.task_id for t in (old.tasks if old else ()) if t.task_id not in after],
        "changed": [t.task_id for t in new.tasks if t.task_id in before and before[t.task_id] != t],
    }


def replan_problems(states: Sequence[TaskState], new: Plan) -> list[str]:
    """What a new plan may not do to started tasks: remove them, or change what they depend on or
    what completes them (their title and max_attempts may change). A task not started may change
    in any way, or go."""
    after = new.by_id()
    problems = []
    for state in states:
        if not state.status.started:
            continue
        spec = after.get(state.task_id)
        if spec is None:
            problems.append(f"task {state.task_id} is {state.status}: a started task stays in the plan")
        elif spec.depends_on != state.spec.depends_on or spec.completion != state.spec.completion:
            problems.append(
                f"task {state.task_id} is {state.status}: its depends_on and completion stay as they were "
                "(only its title and max_attempts may change)"
            )
    return problems


def revision_refusal(
    current_version: int,
    rules: PlanRules,
    diff: Mapping[str, Sequence[str]],
    *,
    limits: Mapping[str, int],
    remaining: Mapping[str, int],
) -> Refusal | None:
    """Whether the plan may get version `current_version + 1` (docs/tasks.md, "Revisions").

    The first plan is not a revision. Revision n (plan version n + 1) is refused
    `plan_revision_limit` past the contract's `max_plan_revisions`, and past the hard bound of
    MAX_PLAN_VERSIONS versions. Under `revision_needs_budget` it is refused `plan_over_budget`
    unless the remaining budget (limit − spent − held by calls in flight) covers it: tool_calls
    at least the tasks it adds or changes (each needs one call at least) and never 0,
    active_seconds above 0, and spend above 0 unless the spend limit is 0.
    """
    if current_version == 0:
        return None
    revision = current_version  # the number of this revision: version 2 is revision 1
    allowed = rules.max_plan_revisions
    if current_version >= MAX_PLAN_VERSIONS or (allowed is not None and revision > allowed):
        bound = MAX_PLAN_VERSIONS - 1 if allowed is None else allowed
        return Refusal(
            Code.PLAN_REVISION_LIMIT,
            f"not planned: the plan was revised {current_version - 1} time(s) and this run allows {bound}; go on "
            f"with the current plan (version {current_version}) or ask an operator to revise the contract",
            revisions=current_version - 1,
            max_plan_revisions=bound,
            version=current_version,
        )
    if not rules.revision_needs_budget:
        return None
    work = len(diff.get("added", ())) + len(diff.get("changed", ()))
    needed = {"tool_calls": max(1, work), "active_seconds": 1}
    if limits.get("spend", 0) > 0:
        needed["spend"] = 1
    for dim, need in needed.items():
        left = remaining.get(dim, 0)
        if left < need:
            return Refusal(
                Code.PLAN_OVER_BUDGET,
                f"not planned: the remaining {dim} ({max(left, 0)}) cannot cover this revision, which needs at "
                f"least {need}; this run's contract makes a revision wait for budget (revision_needs_budget)",
                dimension=dim,
                needed=need,
                left=max(left, 0),
            )
    return None


def plan_problems_for_size(plan: Plan, rules: PlanRules) -> list[str]:
    """The contract's bound on a plan's tasks, as the transaction reads the contract."""
    if len(plan.tasks) > rules.max_tasks:
        return [f"the plan has {len(plan.tasks)} tasks; this run's contract allows at most {rules.max_tasks}"]
    return []


# -- readiness and moves -----------------------------------------------------------------------
def readiness(states: Sequence[TaskState]) -> list[tuple[str, TaskStatus]]:
    """The gateway's moves, in plan order: a pending task whose every dependency is completed
    becomes ready; a ready one with a dependency not completed goes back to pending."""
    status = {s.task_id: s.status for s in states}
    moves = []
    for state in states:
        met = all(status.get(dep) is TaskStatus.COMPLETED for dep in state.spec.depends_on)
        if state.status is TaskStatus.PENDING and met:
            moves.append((state.task_id, TaskStatus.READY))
        elif state.status is TaskStatus.READY and not met:
            moves.append((state.task_id, TaskStatus.PENDING))
    return moves


def allowed_moves(status: TaskStatus) -> list[TaskStatus]:
    """The statuses the agent may ask for from `status`, in the enum's order."""
    return [to for to in TaskStatus if TRANSITIONS.get((status, to)) is Mover.AGENT]


def decide_move(task: TaskState, target: TaskStatus, *, checks: Sequence[CheckResult] | None = None) -> Move:
    """One move the agent asks for (`warrant_task`).

    Asking for the status the task has changes nothing (a retried call is not an error). A pair
    the table does not give the agent is refused `invalid_task_transition`. A move that would
    begin an attempt past `max_attempts` (and `retrying` with none left) fails the task instead,
    answered `task_attempts_exhausted`. `completed` needs every completion check verified
    (`checks`: their results, run by the gateway); otherwise the task stays as it is, answered
    `task_check_failed` naming each check that is not.
    """
    current, spec = task.status, task.spec
    if target is current:
        return Move(current, current, task.attempts)
    if TRANSITIONS.get((current, target)) is not Mover.AGENT:
        return Move(current, current, task.attempts, _not_a_move(task, target))
    begins = (current, target) in NEW_ATTEMPT or target is TaskStatus.RETRYING
    if begins and task.attempts >= spec.max_attempts:
        refusal = Refusal(
            Code.TASK_ATTEMPTS_EXHAUSTED,
            f"not moved to {target}: task {spec.task_id} has used all {spec.max_attempts} of its attempts; "
            "the gateway marked it failed: revise the plan (warrant_plan) to go another way",
            task_id=spec.task_id,
            attempts=task.attempts,
            max_attempts=spec.max_attempts,
            status=TaskStatus.FAILED.value,
        )
        return Move(current, TaskStatus.FAILED, task.attempts, refusal)
    if target is TaskStatus.COMPLETED:
        results = tuple(checks or ())
        failing = [(i, r) for i, r in enumerate(results) if r.status != "verified"]
        if len(results) != len(spec.completion) or failing:
            named = [f"completion[{i}] {r.kind} {r.status}: {r.reason or r.status}" for i, r in failing]
            if len(results) != len(spec.completion):
                named.append("the completion checks were not all run")
            refusal = Refusal(
                Code.TASK_CHECK_FAILED,
                f"not completed: task {spec.task_id} stays {current}: " + "; ".join(named),
                task_id=spec.task_id,
                status=current.value,
                failed=[{"index": i, "kind": r.kind, "status": r.status, "reason": r.reason} for i, r in failing],
            )
            return Move(current, current, task.attempts, refusal, results)
        return Move(current, target, task.attempts, None, results)
    attempts = task.attempts + 1 if (current, target) in NEW_ATTEMPT else task.attempts
    return Move(current, target, attempts)


def _not_a_move(task: TaskState, target: TaskStatus) -> Refusal:
    current, spec = task.status, task.spec
    allowed = allowed_moves(current)
    if target in (TaskStatus.PENDING, TaskStatus.READY):
        why = "pending and ready are the gateway's: a task is ready once every task it depends on is completed"
    elif current is TaskStatus.PENDING:
        why = f"it waits on {', '.join(spec.depends_on)}: it may start once each of them is completed"
    else:
        why = f"from {current} it may move to {', '.join(allowed) if allowed else 'nothing: it is done'}"
    return Refusal(
        Code.INVALID_TASK_TRANSITION,
        f"not moved: task {spec.task_id} is {current}, and {current} -> {target} is not a move; {why}",
        task_id=spec.task_id,
        status=current.value,
        requested=target.value,
        allowed=[s.value for s in allowed],
    )


def call_task_refusal(
    task_id: str | None,
    status: TaskStatus | None,
    *,
    has_plan: bool,
    is_write: bool,
    plan_required: bool,
) -> Refusal | None:
    """Gate step 6 for the task a call names (`status`: that task's, None when the plan has no
    such task): it must be running. A write that names none is refused `plan_required` while the
    run has no plan and its contract asks for one before writes."""
    if task_id is None:
        if is_write and plan_required and not has_plan:
            return Refusal(
                Code.PLAN_REQUIRED,
                "not executed: this run's contract needs a plan before any write; record one with warrant_plan "
                "and name the task with _meta['warrant/task_id']",
            )
        return None
    if status is None:
        where = "the run has no plan yet" if not has_plan else "the current plan has no such task"
        return Refusal(
            Code.UNKNOWN_TASK,
            f"not executed: _meta['{TASK_ID_META}'] names task {task_id!r}, and {where}; warrant_status shows the plan",
            task_id=task_id,
        )
    if status is not TaskStatus.RUNNING:
        return Refusal(
            Code.TASK_NOT_RUNNING,
            f"not executed: task {task_id} is {status}; a call made for a task needs it running "
            "(move it with warrant_task first)",
            task_id=task_id,
            status=status.value,
        )
    return None


def valid_task_id(value: Any) -> bool:
    return isinstance(value, str) and _ID.fullmatch(value) is not None


# -- where the plan stands ---------------------------------------------------------------------
class HasTaskStatus(Protocol):
    """A task as any reader holds it (a `TaskState`, a status line): what the two rules below read."""

    @property
    def status(self) -> TaskStatus: ...


T = TypeVar("T", bound=HasTaskStatus)


def current_task(states: Sequence[T]) -> T | None:
    """The task under way: the first in plan order with an attempt under way (running first)."""
    running = [s for s in states if s.status is TaskStatus.RUNNING]
    active = running or [s for s in states if s.status.active]
    return active[0] if active else None


def next_task(states: Sequence[T]) -> T | None:
    """The next eligible task: the first ready one in plan order."""
    return next((s for s in states if s.status is TaskStatus.READY), None)


def progress_of(states: Sequence[TaskState]) -> dict[str, int]:
    """{done, total}: tasks completed (compensated ones are not), of the plan's."""
    return {"done": sum(s.status is TaskStatus.COMPLETED for s in states), "total": len(states)}
