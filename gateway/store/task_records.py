"""What the store hands back about a run's plan and its tasks (docs/tasks.md)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gateway.domain.tasks import TaskState, TaskStatus


@dataclass(frozen=True)
class TaskRecord(TaskState):
    """A task of the current plan as stored: its definition, where it stands, the agent's last word."""

    position: int = 0  # its place in the plan
    output_ref: dict[str, Any] | None = None  # the artifact named with its last move that named one
    error: str | None = None  # the agent's word with its last move
    checks: list[dict[str, Any]] | None = None  # the last completion checks' results: {kind, status, reason, detail}
    plan_version: int = 0  # the plan version that last defined it
    updated_at: float = 0.0
    started_at: float | None = None  # its first attempt began
    finished_at: float | None = None  # it became completed, failed, cancelled or compensated


@dataclass(frozen=True)
class TaskCounts:
    """The tool calls made for one task (`_meta["warrant/task_id"]`), refused ones not counted."""

    tool_calls: int = 0
    writes: int = 0
    effects: int = 0  # writes that succeeded (or were compensated since)
    uncertain: int = 0  # calls whose outcome is unknown
    spend: int = 0  # settled spend, minor units of the run's currency


@dataclass(frozen=True)
class PlanVersion:
    version: int
    body_sha256: str
    diff: dict[str, list[str]]  # {added, removed, changed}: task ids
    epoch: int
    worker: str
    created_at: float


@dataclass(frozen=True)
class PlanState:
    """A run's plan as one read sees it: the newest version, its tasks in order, their counts."""

    run_id: str
    currency: str
    version: int  # 0: the run has no plan
    tasks: list[TaskRecord] = field(default_factory=list)
    counts: dict[str, TaskCounts] = field(default_factory=dict)
    latest: PlanVersion | None = None


@dataclass(frozen=True)
class TaskMoved:
    """A move recorded (or asked for again: `task.status` is `previous`, nothing written)."""

    task: TaskRecord
    previous: TaskStatus
    readied: list[str] = field(default_factory=list)  # tasks that became ready with it
    unreadied: list[str] = field(default_factory=list)  # ready tasks back to pending (a compensation)

    @property
    def moved(self) -> bool:
        return self.task.status is not self.previous
