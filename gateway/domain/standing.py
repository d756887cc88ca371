"""Where a run stands, as a useful update names it: the current task and milestone, the last
artifact saved, the blocker, and the next decision (continue, revise, wait for input, stop).

Pure: no I/O. `gateway/tools/standing_view.py` gathers the inputs from the store; the same answer
sits in `warrant_status`, `GET /api/runs/{id}` and the console's run page (docs/progress.md).

The next decision is the first rule of `RULES` whose condition holds, in this order:

| rule              | holds when                                              | decision        |
| ----------------- | ------------------------------------------------------- | --------------- |
| `ended`           | the run is terminal                                     | stop            |
| `paused`          | an operator paused the run                              | wait_for_input  |
| `approval`        | the run waits, or a task waits, on an approval          | wait_for_input  |
| `budget`          | a budget dimension has nothing left                     | wait_for_input  |
| `task_failed`     | a task of the plan failed                               | revise          |
| `milestone_failed`| a required milestone's verification failed              | revise          |
| `task_blocked`    | a task is blocked on something outside the run          | wait_for_input  |
| `done`            | every task completed and every required milestone holds | stop            |
| `go_on`           | otherwise                                               | continue        |

`stop` under `done` means: claim completion (`warrant_complete`); under `ended`: nothing more
will be admitted. A blocker is named for every rule but `done` and `go_on`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from gateway.domain.lifecycle import RunStatus
from gateway.domain.tasks import TaskStatus, current_task, next_task

MAX_TEXT = 200  # an agent's or operator's words quoted in a blocker, at most (characters)


class NextDecision(StrEnum):
    CONTINUE = "continue"  # go on with the current (or next) task
    REVISE = "revise"  # something failed: change the plan or the approach
    WAIT_FOR_INPUT = "wait_for_input"  # a person or the world outside must act first
    STOP = "stop"  # claim completion, or the run has ended


@dataclass(frozen=True)
class TaskLine:
    task_id: str
    title: str
    status: TaskStatus
    attempts: int = 0
    max_attempts: int | None = None
    error: str | None = None  # the agent's word with its last move


@dataclass(frozen=True)
class MilestoneLine:
    milestone_id: str
    status: str  # pending, verified, failed, unverified, pending_review, invalidated
    required: bool = True
    reasons: tuple[str, ...] = ()


@dataclass(frozen=True)
class ArtifactLine:
    """An artifact the run saved: a checkpoint's newest, or a task's output."""

    artifact: Mapping[str, Any]  # {id, uri, sha256, ...} as recorded
    at: float
    checkpoint_version: int | None = None
    task_id: str | None = None


@dataclass(frozen=True)
class ApprovalLine:
    approval_id: str
    tool: str
    decide_by: float | None = None


@dataclass(frozen=True)
class StandingInputs:
    status: RunStatus
    status_reason: str | None = None
    tasks: Sequence[TaskLine] = ()  # the current plan, in plan order; empty without a plan
    milestones: Sequence[MilestoneLine] = ()  # the contract's, in its order
    artifacts: Sequence[ArtifactLine] = ()
    approvals: Sequence[ApprovalLine] = ()  # pending ones
    exhausted: Sequence[str] = ()  # budget dimensions with nothing left


@dataclass(frozen=True)
class Blocker:
    kind: str  # the rule's name: paused, approval, budget, task_failed, milestone_failed, task_blocked, ended
    detail: str
    refs: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Standing:
    task: TaskLine | None  # under way, else the next eligible one
    milestone: MilestoneLine | None  # the first required one that does not hold yet
    last_artifact: ArtifactLine | None
    blocker: Blocker | None
    decision: NextDecision
    rule: str  # the rule of RULES that decided
    why: str


def _quote(text: str | None) -> str:
    if not text:
        return ""
    flat = " ".join(text.split())
    return flat if len(flat) <= MAX_TEXT else flat[: MAX_TEXT - 1] + "…"


def current_task_line(tasks: Sequence[TaskLine]) -> TaskLine | None:
    """The task under way (`gateway.domain.tasks.current_task`), else the next eligible one."""
    return current_task(tasks) or next_task(tasks)


def current_milestone(milestones: Sequence[MilestoneLine]) -> MilestoneLine | None:
    return next((m for m in milestones if m.required and m.status != "verified"), None)


def last_artifact(artifacts: Sequence[ArtifactLine]) -> ArtifactLine | None:
    return max(artifacts, key=lambda a: a.at, default=None)


# -- the rules, in order: (name, the blocker when it holds or None, decision, why) -------------------
Rule = Callable[[StandingInputs], Blocker | None]


def _ended(s: StandingInputs) -> Blocker | None:
    if not s.status.terminal:
        return None
    reason = _quote(s.status_reason)
    return Blocker("ended", f"the run is {s.status.value}" + (f": {reason}" if reason else ""))


def _paused(s: StandingInputs) -> Blocker | None:
    if s.status is not RunStatus.PAUSED:
        return None
    reason = _quote(s.status_reason)
    said = f": {reason}" if reason else ""
    return Blocker("paused", f"an operator paused the run{said}; it resumes when they do")


def _approval(s: StandingInputs) -> Blocker | None:
    waiting_task = next((t for t in s.tasks if t.status is TaskStatus.WAITING_FOR_APPROVAL), None)
    if s.status is not RunStatus.WAITING and waiting_task is None:
        return None
    refs: dict[str, Any] = {}
    detail = "an approval is pending"
    if s.approvals:
        first = s.approvals[0]
        refs = {"approval_id": first.approval_id, "tool": first.tool}
        detail = f"approval {first.approval_id} for {first.tool} is pending with a person"
    elif waiting_task is not None:
        detail = f"task {waiting_task.task_id} waits for an approval"
    if waiting_task is not None:
        refs["task_id"] = waiting_task.task_id
    return Blocker("approval", detail, refs)


def _budget(s: StandingInputs) -> Blocker | None:
    if not s.exhausted:
        return None
    dims = sorted(s.exhausted)
    return Blocker(
        "budget",
        f"nothing is left of the run's {', '.join(dims)} budget; an operator may revise the contract",
        {"dimensions": dims},
    )


def _task_failed(s: StandingInputs) -> Blocker | None:
    task = next((t for t in s.tasks if t.status is TaskStatus.FAILED), None)
    if task is None:
        return None
    said = _quote(task.error)
    return Blocker(
        "task_failed",
        f"task {task.task_id} failed after {task.attempts} attempt(s)" + (f": {said}" if said else ""),
        {"task_id": task.task_id},
    )


def _milestone_failed(s: StandingInputs) -> Blocker | None:
    found = next((m for m in s.milestones if m.required and m.status in ("failed", "unverified")), None)
    if found is None:
        return None
    reasons = _quote("; ".join(found.reasons))
    return Blocker(
        "milestone_failed",
        f"milestone {found.milestone_id} is {found.status}" + (f": {reasons}" if reasons else ""),
        {"milestone_id": found.milestone_id},
    )


def _task_blocked(s: StandingInputs) -> Blocker | None:
    task = next((t for t in s.tasks if t.status is TaskStatus.BLOCKED), None)
    if task is None:
        return None
    said = _quote(task.error)
    detail = f"task {task.task_id} is blocked" + (f": {said}" if said else "")
    return Blocker("task_blocked", detail, {"task_id": task.task_id})


RULES: tuple[tuple[str, Rule, NextDecision], ...] = (
    ("ended", _ended, NextDecision.STOP),
    ("paused", _paused, NextDecision.WAIT_FOR_INPUT),
    ("approval", _approval, NextDecision.WAIT_FOR_INPUT),
    ("budget", _budget, NextDecision.WAIT_FOR_INPUT),
    ("task_failed", _task_failed, NextDecision.REVISE),
    ("milestone_failed", _milestone_failed, NextDecision.REVISE),
    ("task_blocked", _task_blocked, NextDecision.WAIT_FOR_INPUT),
)


def all_done(s: StandingInputs) -> bool:
    """Every task completed (compensated and cancelled ones are no work left either) and every
    required milestone verified; and there is something to have done."""
    if not s.tasks and not any(m.required for m in s.milestones):
        return False
    tasks_done = all(t.status in (TaskStatus.COMPLETED, TaskStatus.CANCELLED, TaskStatus.COMPENSATED) for t in s.tasks)
    return tasks_done and current_milestone(s.milestones) is None


def standing(s: StandingInputs) -> Standing:
    task, milestone, artifact = current_task_line(s.tasks), current_milestone(s.milestones), last_artifact(s.artifacts)
    for name, rule, decision in RULES:
        blocker = rule(s)
        if blocker is not None:
            return Standing(task, milestone, artifact, blocker, decision, name, blocker.detail)
    if all_done(s):
        return Standing(
            task,
            milestone,
            artifact,
            None,
            NextDecision.STOP,
            "done",
            "every task is completed and every required milestone holds: claim completion (warrant_complete)",
        )
    if task is not None:
        why = f"go on with task {task.task_id}" + (" (under way)" if task.status is not TaskStatus.READY else "")
    elif milestone is not None:
        why = f"work toward milestone {milestone.milestone_id}"
    else:
        why = "nothing blocks the run"
    return Standing(task, milestone, artifact, None, NextDecision.CONTINUE, "go_on", why)
