"""The run's plan as an agent and an operator read it (docs/tasks.md): every task's state,
attempts and calls, the current task, and the next eligible one with its preconditions.

The same view answers `warrant_plan`, sits in `warrant_status` and the recovery package, and is
`GET /api/runs/{id}/plan`.
"""

from __future__ import annotations

from typing import Any

from gateway.clock import isoformat
from gateway.domain.tasks import current_task, next_task, progress_of
from gateway.domain.units import format_money
from gateway.store.task_records import PlanState, TaskCounts, TaskRecord


def plan_view(state: PlanState) -> dict[str, Any]:
    """The whole plan: {run_id, version, revisions, diff, updated_at, progress, current, next, resume_at,
    tasks}."""
    return {**plan_summary(state), "tasks": [task_view(t, state) for t in state.tasks]}


def plan_summary(state: PlanState) -> dict[str, Any]:
    """Where the plan stands, without every task: what `warrant_status` shows at its top."""
    if state.version == 0:
        return {
            "run_id": state.run_id,
            "version": 0,
            "revisions": 0,
            "diff": None,
            "updated_at": None,
            "progress": {"done": 0, "total": 0},
            "current": None,
            "next": None,
            "resume_at": None,
        }
    current, upcoming = current_task(state.tasks), next_task(state.tasks)
    resume = current or upcoming
    return {
        "run_id": state.run_id,
        "version": state.version,
        "revisions": state.version - 1,
        "diff": state.latest.diff if state.latest is not None else None,
        "updated_at": isoformat(state.latest.created_at) if state.latest is not None else None,
        "progress": progress_of(state.tasks),
        "current": _step(current, state) if isinstance(current, TaskRecord) else None,
        "next": _step(upcoming, state) if isinstance(upcoming, TaskRecord) else None,
        # Where a worker taking over goes on: the task under way, else the next eligible one.
        "resume_at": resume.task_id if resume is not None else None,
    }


def task_view(task: TaskRecord, state: PlanState) -> dict[str, Any]:
    return {
        "task_id": task.task_id,
        "title": task.spec.title,
        "status": task.status.value,
        "attempts": task.attempts,
        "max_attempts": task.spec.max_attempts,
        "depends_on": list(task.spec.depends_on),
        "completion": list(task.spec.completion),
        "output_ref": task.output_ref,
        "error": task.error,
        "checks": task.checks,
        "calls": counts_view(state.counts.get(task.task_id, TaskCounts()), state.currency),
        "plan_version": task.plan_version,
        "started_at": isoformat(task.started_at) if task.started_at is not None else None,
        "finished_at": isoformat(task.finished_at) if task.finished_at is not None else None,
        "updated_at": isoformat(task.updated_at),
    }


def counts_view(counts: TaskCounts, currency: str) -> dict[str, Any]:
    return {
        "tool_calls": counts.tool_calls,
        "writes": counts.writes,
        "effects": counts.effects,
        "uncertain": counts.uncertain,
        "spend": format_money(counts.spend, currency),
    }


def _step(task: TaskRecord, state: PlanState) -> dict[str, Any]:
    """A task with what must hold before and after it: the tasks it depends on (with what they
    produced), the checks that complete it, the attempts it has left."""
    by_id = {t.task_id: t for t in state.tasks}
    return {
        "task_id": task.task_id,
        "title": task.spec.title,
        "status": task.status.value,
        "attempts": task.attempts,
        "preconditions": {
            "depends_on": [
                {
                    "task_id": dep,
                    "status": by_id[dep].status.value if dep in by_id else None,
                    "output_ref": by_id[dep].output_ref if dep in by_id else None,
                }
                for dep in task.spec.depends_on
            ],
            "completion": list(task.spec.completion),
            "attempts_left": max(0, task.spec.max_attempts - task.attempts),
        },
    }
