"""What the store hands back about retries and dead letters (docs/decisions/0030-retries.md)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from gateway.clock import isoformat


class DeadLetterStatus(StrEnum):
    OPEN = "open"  # waits for an operator
    RETRIED = "retried"  # an operator sent it again under a fresh operation id (retried_action_id)
    RESOLVED = "resolved"  # an operator says it is dealt with otherwise
    DROPPED = "dropped"  # an operator gave it up


@dataclass(frozen=True)
class RetryAccount:
    """What the settle of a retried call counts: the policy's bound on failed attempts of one
    operation id (None: a read, whose attempts are bounded per call and never dead-lettered)."""

    max_attempts: int
    dead_letters: bool  # a write with an operation id: reaching max_attempts makes a dead letter


@dataclass(frozen=True)
class RetryState:
    """An operation id's failed attempts so far, its dead letter if it has one, and the run's
    failed attempts (what a contract's `attempts` budget bounds)."""

    failed_attempts: int
    run_attempts_failed: int
    dead_letter: DeadLetterRecord | None = None


@dataclass(frozen=True)
class DeadLetterRecord:
    dead_letter_id: str
    run_id: str
    tenant: str
    lineage_id: str
    operation_id: str
    tool: str
    payload_sha256: str
    action_id: str
    attempts: int
    last_code: str | None
    last_message: str | None
    status: DeadLetterStatus
    created_at: float
    decided_by: str | None = None
    decided_at: float | None = None
    reason: str | None = None
    retried_action_id: str | None = None

    def view(self) -> dict[str, Any]:
        return {
            "dead_letter_id": self.dead_letter_id,
            "run_id": self.run_id,
            "operation_id": self.operation_id,
            "tool": self.tool,
            "payload_sha256": self.payload_sha256,
            "action_id": self.action_id,
            "attempts": self.attempts,
            "last_code": self.last_code,
            "last_message": self.last_message,
            "status": self.status.value,
            "created_at": isoformat(self.created_at),
            "decided_by": self.decided_by,
            "decided_at": isoformat(self.decided_at),
            "reason": self.reason,
            "retried_action_id": self.retried_action_id,
        }
