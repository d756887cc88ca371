"""Retention (docs/retention.md): how long an operation id replays, and which bodies a purge takes.

Two periods, both from `retention:` in warrant.yaml:

- `idempotency`: a settled write's operation id replays its recorded result for this long after
  the write was first recorded; a reuse after that is refused `idempotency_expired`, never
  replayed and never executed again. The action row that tells "expired" from "never seen" is
  kept for good (it is the ledger); only bodies are ever purged.
- `payload_bodies`: the bodies a settled action names (its payload and its result) are purged
  this long after it settled. The hashes stay in the action row and in the chained entries, so
  every chain still verifies; views and bundles show the body as purged. The payloads of the
  signals a run received go the same way this long after the run ended (its last change, an
  ended run's row changes no more): the signal's row and hash stay, its entry held only the hash.

Pure: no I/O. The store decides with these on its own clock, inside its transactions.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gateway.domain.lifecycle import ActionStatus

# Settled writes whose operation id replays; these are the ones whose id can expire. An id held by
# an action in flight or `unknown` never expires: it must settle or be reconciled first.
REPLAYS = frozenset({ActionStatus.SUCCEEDED, ActionStatus.COMPENSATED})
# Actions whose bodies a purge may take: every settled one. Never `admitted` (in flight) or
# `unknown` (awaiting reconciliation: the lookup and the operator need its payload).
PURGEABLE = ("succeeded", "failed", "compensated", "rejected")
PURGE_BATCH = 200  # actions (and signals) per purge transaction: short, so the gate's never wait long
# The runs whose signals' payloads a purge may take: only ended ones (a live run's agent reads them).
ENDED = ("completed", "cancelled", "expired", "failed")


def operation_expired(status: ActionStatus, recorded_at: float, kept_for: float | None, now: float) -> bool:
    """Whether the operation id held by an action so recorded is past `retention.idempotency`."""
    return kept_for is not None and status in REPLAYS and now - recorded_at >= kept_for


@dataclass(frozen=True)
class PurgeScope:
    """Which settled actions' bodies to purge: all that match every filter given."""

    tenant: str | None = None  # None: every tenant (the schedule)
    before: float | None = None  # settled strictly before this time
    run_id: str | None = None
    action_id: str | None = None


@dataclass
class PurgeReport:
    """What one purge did. A body some record outside the purge still names is kept (`kept`)."""

    actions: int = 0  # actions whose bodies were purged (their rows stay, marked)
    purged: int = 0  # bodies deleted
    kept: int = 0  # bodies named by a record the purge may not touch, kept for it
    runs: list[str] = field(default_factory=list)  # runs whose history records the purge
    more: bool = False  # the batch was full: more may match
    signals: int = 0  # signals of ended runs whose payloads were purged (their rows and hashes stay)

    def add(self, other: PurgeReport) -> None:
        self.actions += other.actions
        self.purged += other.purged
        self.kept += other.kept
        self.signals += other.signals
        self.runs += [r for r in other.runs if r not in self.runs]
        self.more = other.more

    def as_dict(self) -> dict[str, object]:
        return {
            "actions": self.actions, "purged": self.purged, "kept": self.kept, "signals": self.signals,
            "runs": self.runs,
        }  # fmt: skip
