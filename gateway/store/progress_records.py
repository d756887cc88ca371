"""What the store hands back about a run's verified progress (docs/progress.md)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gateway.store.records import ActionRecord, ApprovalRecord, RunRecord
from gateway.store.task_records import PlanState

# A milestone's states. `pending` is never stored: it is a contract milestone nobody submitted yet.
MILESTONE_STATUSES = ("pending", "verified", "failed", "unverified", "pending_review", "invalidated")


@dataclass(frozen=True)
class CheckpointRecord:
    run_id: str
    version: int
    epoch: int
    worker: str
    body: dict[str, Any]  # {artifacts, sources, next_operation}
    body_sha256: str
    good: bool
    bad_reason: str | None
    inherited_from: str | None
    created_at: float

    @property
    def artifacts(self) -> list[dict[str, Any]]:
        return list(self.body.get("artifacts") or [])

    @property
    def sources(self) -> list[dict[str, Any]]:
        return list(self.body.get("sources") or [])

    @property
    def next_operation(self) -> Any:
        return self.body.get("next_operation")


@dataclass(frozen=True)
class MilestoneRecord:
    run_id: str
    milestone_id: str
    status: str
    spec_version: str
    checks: list[dict[str, Any]]  # one result per check: {kind, status, reason, detail}
    reasons: list[str]
    depends: dict[str, Any]  # {artifacts: [{id, uri, sha256}], sources: [{uri, etag|sha256}]}
    evidence_sha256: str | None
    review_approval_id: str | None
    submitted_by: str | None
    epoch: int | None
    attempts: int
    inherited_from: str | None
    updated_at: float
    verified_at: float | None


@dataclass(frozen=True)
class MilestoneSubmission:
    """A checked submission, ready to record: the checks ran before the transaction."""

    milestone_id: str
    status: str
    checks: list[dict[str, Any]]
    reasons: list[str]
    depends: dict[str, Any]
    evidence: Any
    review: ReviewRequest | None = None


@dataclass(frozen=True)
class ReviewRequest:
    """A review check's approval: only `reviewer` decides it, through the approvals surface."""

    reviewer: str
    payload: Any  # what the reviewer sees: the evidence and the artifacts as read
    payload_sha256: str
    definition_sha256: str  # the milestone's checks, as the contract states them


@dataclass(frozen=True)
class Invalidation:
    milestone_id: str
    reason: str


@dataclass(frozen=True)
class Recheck:
    """What a resume's re-read found: milestones to invalidate, and whether the checkpoint holds."""

    invalidated: list[Invalidation] = field(default_factory=list)
    checkpoint_version: int | None = None  # the checkpoint re-checked
    checkpoint_bad: str | None = None  # why it is no longer good; None: it holds
    checked: dict[str, Any] = field(default_factory=dict)  # uri -> {status, reason, at}


@dataclass(frozen=True)
class RecoveryInputs:
    run: RunRecord
    checkpoint: CheckpointRecord | None
    last_good_version: int | None
    milestones: list[MilestoneRecord]
    confirmed: list[ActionRecord]  # succeeded writes of the lineage's run, newest last
    uncertain: list[tuple[ActionRecord, dict[str, Any] | None]]  # unknown actions, with acknowledgement
    pending_approvals: list[ApprovalRecord]
    children: list[RunRecord]
    plan: PlanState | None = None  # the run's plan and its tasks (docs/tasks.md)
