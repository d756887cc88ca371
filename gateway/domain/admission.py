"""The admission decision of gate step 6, as a pure function over a snapshot of the run.

The store reads the snapshot inside its transaction, calls `refusal_for`, and writes the intent
only when it returns None. Keeping the decision here means SQLite and PostgreSQL decide alike.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gateway.domain.answers import budget_message
from gateway.domain.contract import DIMENSIONS
from gateway.domain.lifecycle import RunStatus, status_refusal
from gateway.domain.limits import CallLimits
from gateway.domain.units import format_money
from gateway.errors import Code, Refusal


@dataclass(frozen=True)
class RunSnapshot:
    run_id: str
    tenant: str
    lineage_id: str
    status: RunStatus
    spec_version: str
    epoch: int
    lease_expires_at: float | None
    deadline: float
    limits: dict[str, int]
    reserved: dict[str, int]
    spent: dict[str, int]
    currency: str = "USD"
    active_seconds_spent: float = 0.0
    active_since: float | None = None
    # The spec_version the worker has read (warrant_status); None: nothing to acknowledge.
    acked_spec_version: str | None = None
    # When the API key that granted the current lease was revoked; None: the lease stands.
    lease_revoked_at: float | None = None
    # Whether a warrant_wait is open (the lease table's `wait` row). The store leaves it False for a
    # request of the token, which the `wait` and `waiting` rows answer alike; the watchdog, whose
    # answer differs, reads the open waits itself (RunWatch.wait_open, store/sql/watch.py).
    wait_open: bool = False

    def active_seconds(self, now: float) -> float:
        running = max(0.0, now - self.active_since) if self.active_since is not None else 0.0
        return self.active_seconds_spent + running

    def remaining(self, now: float) -> dict[str, int]:
        out = {}
        for dim in DIMENSIONS:
            if dim == "active_seconds":
                out[dim] = max(0, int(self.limits[dim] - self.active_seconds(now)))
            else:
                out[dim] = self.limits[dim] - self.spent[dim] - self.reserved[dim]
        return out


@dataclass(frozen=True)
class Reservation:
    """What one admitted call holds until it settles."""

    spend: int = 0
    tool_calls: int = 1
    writes: int = 0

    def as_dict(self) -> dict[str, int]:
        return {"spend": self.spend, "tool_calls": self.tool_calls, "writes": self.writes}


@dataclass(frozen=True)
class CallFacts:
    """What the gate established about the call before the transaction."""

    epoch: int
    is_write: bool
    approved: bool = False  # an approval for exactly this payload will be consumed
    reservation: Reservation = field(default_factory=Reservation)
    limits: CallLimits | None = None  # rates and the concurrency cap the admit enforces (gateway/gate/limits.py)
    # An operator's call (a compensation, gateway/gate/operator_calls.py): no lease to check, the run's
    # state by gateway/domain/compensation.py `operator_run_refusal`, and only the budget's dimensions.
    operator: bool = False


def lease_refusal(run: RunSnapshot, epoch: int, now: float) -> Refusal | None:
    """Gate step 1 for a known token: the run's status and deadline, the epoch, the key that granted
    the lease. Time never refuses the current holder (gateway/domain/lease_rules.py: its table).

    A run past its deadline is expired whatever its lease says; a dead lease is refused before
    a paused run is mentioned, since that worker may not act for the run at all.
    """
    if run.status.terminal:
        return status_refusal(run.status)
    if now >= run.deadline:
        return status_refusal(RunStatus.EXPIRED)
    if epoch != run.epoch:
        return Refusal(
            Code.LEASE_SUPERSEDED,
            "this worker's lease was taken over by another; its calls are no longer admitted",
            epoch=epoch,
            current_epoch=run.epoch,
        )
    if run.lease_revoked_at is not None:
        return Refusal(
            Code.LEASE_REVOKED,
            "the API key that granted this lease was revoked; a valid key must grant a new lease",
            epoch=epoch,
        )
    if run.status is RunStatus.PAUSED:
        return status_refusal(run.status)
    return spec_refusal(run)


# The refusals that end a token for good: a takeover, the revocation of the key that granted it, a
# run that is over. A paused run or an unread revision are not: the holder goes on once they pass,
# and may read its run meanwhile.
DEAD_CODES = frozenset(
    {
        Code.LEASE_SUPERSEDED,
        Code.LEASE_REVOKED,
        Code.RUN_CANCELLED,
        Code.RUN_COMPLETED,
        Code.RUN_EXPIRED,
        Code.RUN_FAILED,
    }
)


def dead_refusal(run: RunSnapshot, epoch: int, now: float) -> Refusal | None:
    """The refusal of a dead token (DEAD_CODES), or None while the token may still read its run."""
    refusal = lease_refusal(run, epoch, now)
    return refusal if refusal is not None and refusal.code in DEAD_CODES else None


def spec_refusal(run: RunSnapshot) -> Refusal | None:
    """A revised contract the worker has not read yet (through warrant_status) refuses its calls."""
    if run.acked_spec_version is not None and run.acked_spec_version != run.spec_version:
        return Refusal(
            Code.SPEC_VERSION_MISMATCH,
            f"the contract was revised to {run.spec_version}; read it with warrant_status before going on",
            spec_version=run.spec_version,
            acknowledged=run.acked_spec_version,
        )
    return None


def refusal_for(run: RunSnapshot, call: CallFacts, now: float) -> Refusal | None:
    """Every check of gate step 6 but the operation id's uniqueness (an index enforces that)."""
    return lease_refusal(run, call.epoch, now) or call_refusal(run, call, now)


def call_refusal(run: RunSnapshot, call: CallFacts, now: float) -> Refusal | None:
    """Step 6 for a caller whose lease holds: the waiting state and every budget dimension."""
    if run.status is RunStatus.WAITING and call.is_write and not call.approved:
        return status_refusal(run.status)
    if run.active_seconds(now) >= run.limits["active_seconds"]:
        return Refusal(
            Code.BUDGET_EXHAUSTED,
            f"not executed: the run has used all of its active_seconds budget ({run.limits['active_seconds']} s of "
            "active time, 0 left); no tool call is admitted; an operator may raise the budget with a revision",
            dimension="active_seconds",
            limit=run.limits["active_seconds"],
            left=0,
        )
    return budget_refusal(run, call)


def budget_refusal(run: RunSnapshot, call: CallFacts) -> Refusal | None:
    """The dimensions a call reserves (spend, tool_calls, writes): each must have room for it."""
    for dim, need in call.reservation.as_dict().items():
        if need and run.spent[dim] + run.reserved[dim] + need > run.limits[dim]:
            show = (lambda v: format_money(v, run.currency)) if dim == "spend" else (lambda v: v)
            left = show(max(0, run.limits[dim] - run.spent[dim] - run.reserved[dim]))
            amounts = {
                "limit": show(run.limits[dim]),
                "spent": show(run.spent[dim]),
                "reserved": show(run.reserved[dim]),
                "needed": show(need),
                "left": left,
            }
            return Refusal(
                Code.BUDGET_EXHAUSTED,
                budget_message(dim, **amounts, holding=run.reserved[dim] > 0),
                dimension=dim,
                **amounts,
            )
    return None
