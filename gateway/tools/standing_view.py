"""Where a run stands (`gateway.domain.standing`), read from the store and put on the wire.

`warrant_status`, `GET /api/runs/{id}` and the console's run page all answer it with
`standing_view(await read_standing(store, run, now))`: four small reads (plan, milestones, newest
checkpoint, pending approvals), each bounded by the contract's own bounds.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from gateway.clock import isoformat
from gateway.domain.contract import DIMENSIONS
from gateway.domain.lifecycle import ApprovalStatus
from gateway.domain.standing import (
    ApprovalLine,
    ArtifactLine,
    MilestoneLine,
    Standing,
    StandingInputs,
    TaskLine,
    standing,
)
from gateway.store.ports import ApprovalStore, PlanStore, ProgressStore
from gateway.store.records import ApprovalRecord, RunRecord


class StandingStore(PlanStore, ProgressStore, ApprovalStore, Protocol):
    """What `read_standing` reads."""


async def read_standing(
    store: StandingStore, run: RunRecord, now: float, *, pending: Sequence[ApprovalRecord] | None = None
) -> Standing:
    """`pending`: the run's pending approvals when the caller has read them already."""
    if pending is None:
        pending = (await store.list_approvals(run.tenant, status=ApprovalStatus.PENDING, run_id=run.run_id)).items
    plan = await store.read_plan(run.tenant, run.run_id)
    records = {m.milestone_id: m for m in await store.list_milestones(run.run_id)}
    checkpoint = await store.latest_checkpoint(run.run_id)
    tasks = [TaskLine(t.task_id, t.spec.title, t.status, t.attempts, t.spec.max_attempts, t.error) for t in plan.tasks]
    milestones = []
    for spec in run.contract.get("milestones") or []:
        record = records.get(spec["id"])
        milestones.append(
            MilestoneLine(
                spec["id"],
                record.status if record is not None else "pending",
                bool(spec.get("required", True)),
                tuple(record.reasons) if record is not None else (),
            )
        )
    artifacts = [
        ArtifactLine(t.output_ref, t.finished_at or t.updated_at, task_id=t.task_id)
        for t in plan.tasks
        if t.output_ref is not None
    ]
    if checkpoint is not None and checkpoint.artifacts:
        artifacts.append(
            ArtifactLine(checkpoint.artifacts[-1], checkpoint.created_at, checkpoint_version=checkpoint.version)
        )
    remaining = run.snapshot().remaining(now)
    # A dimension limited to 0 (a read-only run's writes) was never there to run out.
    exhausted = [dim for dim in DIMENSIONS if run.limits.get(dim, 0) > 0 and remaining.get(dim, 1) <= 0]
    return standing(
        StandingInputs(
            status=run.status,
            status_reason=run.status_reason,
            tasks=tasks,
            milestones=milestones,
            artifacts=artifacts,
            approvals=[ApprovalLine(a.approval_id, a.tool, a.decide_by) for a in pending],
            exhausted=exhausted,
        )
    )


def standing_view(found: Standing) -> dict[str, Any]:
    """{task, milestone, last_artifact, blocker, next_decision, rule, why} (docs/progress.md)."""
    task, milestone, artifact, blocker = found.task, found.milestone, found.last_artifact, found.blocker
    return {
        "task": None
        if task is None
        else {
            "task_id": task.task_id,
            "title": task.title,
            "status": task.status.value,
            "attempts": task.attempts,
            "max_attempts": task.max_attempts,
        },
        "milestone": None
        if milestone is None
        else {"milestone_id": milestone.milestone_id, "status": milestone.status},
        "last_artifact": None
        if artifact is None
        else {
            "artifact": dict(artifact.artifact),
            "saved_at": isoformat(artifact.at),
            "checkpoint_version": artifact.checkpoint_version,
            "task_id": artifact.task_id,
        },
        "blocker": None if blocker is None else {"kind": blocker.kind, "detail": blocker.detail, **blocker.refs},
        "next_decision": found.decision.value,
        "rule": found.rule,
        "why": found.why,
    }
