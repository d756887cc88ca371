"""What the store hands back about a run's waits and signals (docs/decisions/0027-waits.md)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gateway.clock import isoformat
from gateway.domain.lifecycle import RunStatus


@dataclass(frozen=True)
class WaitRecord:
    wait_id: str
    run_id: str
    reason: str
    until: float
    on_timeout: str
    wake_on: tuple[str, ...]
    epoch: int
    worker: str
    started_at: float
    ended_at: float | None = None
    cause: str | None = None  # why it ended: signal, timeout, or the lifecycle event that moved the run
    signal_id: str | None = None  # the signal that woke it

    def view(self) -> dict[str, Any]:
        return {
            "wait_id": self.wait_id,
            "reason": self.reason,
            "until": isoformat(self.until),
            "on_timeout": self.on_timeout,
            "wake_on": list(self.wake_on),
            "started_at": isoformat(self.started_at),
            "ended_at": isoformat(self.ended_at),
            "cause": self.cause,
            "signal_id": self.signal_id,
        }


@dataclass(frozen=True)
class SignalRecord:
    signal_id: str
    run_id: str
    name: str
    payload: Any
    payload_sha256: str
    idempotency_key: str
    principal: str
    received_at: float
    wait_id: str | None = None  # the wait it woke
    payload_purged_at: float | None = None  # the retention purge took its payload (docs/retention.md)

    def view(self) -> dict[str, Any]:
        return {
            "signal_id": self.signal_id,
            "name": self.name,
            "payload": self.payload,
            "payload_purged": self.payload_purged_at is not None,  # then payload is null; the hash stays
            "payload_sha256": self.payload_sha256,
            "at": isoformat(self.received_at),
            "woke_wait_id": self.wait_id,
        }


@dataclass(frozen=True)
class SignalAnswer:
    """A signal as recorded (the first one, for a replayed key), and the run's status after it."""

    signal: SignalRecord
    status: RunStatus
    replayed: bool = False  # the key was sent before: nothing was recorded or woken now

    @property
    def woke(self) -> bool:
        return self.signal.wait_id is not None
