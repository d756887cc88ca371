"""Run and action lifecycles as tables. Anything not in a table is refused with a stable code."""

from __future__ import annotations

from enum import StrEnum

from gateway.errors import Code, Conflict, Refusal


class RunStatus(StrEnum):
    RUNNING = "running"
    WAITING = "waiting"  # an approval, or a wait for a signal or a time (warrant_wait), is pending
    PAUSED = "paused"
    COMPLETED = "completed"
    CANCELLED = "cancelled"
    EXPIRED = "expired"
    FAILED = "failed"  # ended by an operator or by the contract's rules (gateway/domain/completion.py)

    @property
    def terminal(self) -> bool:
        return self in TERMINAL

    @property
    def live(self) -> bool:
        """Calls may be admitted (subject to the status's own rules)."""
        return self in (RunStatus.RUNNING, RunStatus.WAITING)


TERMINAL = frozenset({RunStatus.COMPLETED, RunStatus.CANCELLED, RunStatus.EXPIRED, RunStatus.FAILED})


class RunEvent(StrEnum):
    """What can happen to a run. Who may cause each is the API's business, not the table's."""

    APPROVAL_PENDING = "approval_pending"  # a pending approval was created
    APPROVALS_SETTLED = "approvals_settled"  # the last pending approval was decided or expired
    PAUSE = "pause"
    RESUME = "resume"  # to running; the store picks waiting instead when approvals are pending
    CANCEL = "cancel"
    COMPLETE = "complete"
    EXPIRE = "expire"
    FAIL = "fail"  # an operator's, or the contract's rules (on_verification_failed, max_completion_attempts, ...)
    WAIT = "wait"  # the agent's warrant_wait (gateway/domain/waits.py)
    WAIT_ENDED = "wait_ended"  # a signal it waits for arrived, or its `until` passed with on_timeout: resume


R, W, P = RunStatus.RUNNING, RunStatus.WAITING, RunStatus.PAUSED
C, X, E = RunStatus.COMPLETED, RunStatus.CANCELLED, RunStatus.EXPIRED
F = RunStatus.FAILED

# (from, event) -> to. A pair absent from this table is refused.
TRANSITIONS: dict[tuple[RunStatus, RunEvent], RunStatus] = {
    (R, RunEvent.APPROVAL_PENDING): W,
    (W, RunEvent.APPROVAL_PENDING): W,
    (P, RunEvent.APPROVAL_PENDING): P,  # a paused run stays paused; resume finds it waiting
    (W, RunEvent.APPROVALS_SETTLED): R,
    (R, RunEvent.APPROVALS_SETTLED): R,
    (P, RunEvent.APPROVALS_SETTLED): P,
    (R, RunEvent.PAUSE): P,
    (W, RunEvent.PAUSE): P,
    (P, RunEvent.PAUSE): P,  # idempotent: an operator's retried pause is not an error
    (P, RunEvent.RESUME): R,
    (R, RunEvent.CANCEL): X,
    (W, RunEvent.CANCEL): X,
    (P, RunEvent.CANCEL): X,
    (X, RunEvent.CANCEL): X,  # idempotent
    (R, RunEvent.COMPLETE): C,
    (R, RunEvent.EXPIRE): E,
    (W, RunEvent.EXPIRE): E,
    (P, RunEvent.EXPIRE): E,
    (E, RunEvent.EXPIRE): E,
    # Failing is not idempotent: a run failed already is refused `run_failed` (409 on the API),
    # so the operator learns that someone or something ended it first.
    (R, RunEvent.FAIL): F,
    (W, RunEvent.FAIL): F,
    (P, RunEvent.FAIL): F,
    # A wait starts only from running (the store refuses `wait_open` while one is open); its
    # timeout's pause and fail are the PAUSE and FAIL rows above.
    (R, RunEvent.WAIT): W,
    (W, RunEvent.WAIT_ENDED): R,
}


_STATUS_CODES = {
    RunStatus.WAITING: Code.RUN_WAITING,
    RunStatus.PAUSED: Code.RUN_PAUSED,
    RunStatus.COMPLETED: Code.RUN_COMPLETED,
    RunStatus.CANCELLED: Code.RUN_CANCELLED,
    RunStatus.EXPIRED: Code.RUN_EXPIRED,
    RunStatus.FAILED: Code.RUN_FAILED,
}


def status_refusal(status: RunStatus) -> Refusal:
    """The refusal a call meets when the run is in `status` (running admits everything)."""
    messages = {
        RunStatus.WAITING: (
            "not executed: the run is waiting for an approval or a signal (warrant_wait); meanwhile only reads, "
            "the warrant_* tools and an approved write are admitted; check with warrant_status and make this "
            "write once the run is running again"
        ),
        RunStatus.PAUSED: (
            "not executed: the run is paused by an operator; nothing is admitted until an operator resumes it "
            "(warrant_status shows the run's status)"
        ),
        RunStatus.COMPLETED: "not executed: the run is completed; it admits no further call",
        RunStatus.CANCELLED: "not executed: the run was cancelled by an operator; it admits no further call",
        RunStatus.EXPIRED: "not executed: the run's deadline has passed; it admits no further call",
        RunStatus.FAILED: (
            "not executed: the run failed (ended by an operator or by its contract's rules); it admits no further "
            "call: an operator may start a successor"
        ),
    }
    return Refusal(_STATUS_CODES[status], messages[status], status=status.value)


def transition(current: RunStatus, event: RunEvent) -> RunStatus:
    """The status after `event`.

    Raises:
        Refusal: `run_<status>` when the run is terminal (or paused/waiting for `complete`).
        Conflict: `invalid_transition` for any other pair not in the table.
    """
    target = TRANSITIONS.get((current, event))
    if target is not None:
        return target
    if current.terminal or (event is RunEvent.COMPLETE and current in (W, P)):
        raise status_refusal(current)
    raise Conflict(
        f"a {current.value} run cannot {event.value}",
        code=Code.INVALID_TRANSITION,
        status=current.value,
        event=event.value,
    )


class ActionStatus(StrEnum):
    ADMITTED = "admitted"  # intent durably recorded, reservation held
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    UNKNOWN = "unknown"  # the outcome could not be established; never shown as failed
    COMPENSATED = "compensated"
    REJECTED = "rejected"  # refused at the gate; recorded for the audit trail


# Statuses that hold an operation id: a new attempt of the same operation is not admitted.
HOLDS_OPERATION = frozenset(
    {ActionStatus.ADMITTED, ActionStatus.SUCCEEDED, ActionStatus.UNKNOWN, ActionStatus.COMPENSATED}
)

ACTION_TRANSITIONS: frozenset[tuple[ActionStatus, ActionStatus]] = frozenset(
    {
        (ActionStatus.ADMITTED, ActionStatus.SUCCEEDED),
        (ActionStatus.ADMITTED, ActionStatus.FAILED),
        (ActionStatus.ADMITTED, ActionStatus.UNKNOWN),
        (ActionStatus.UNKNOWN, ActionStatus.SUCCEEDED),
        (ActionStatus.UNKNOWN, ActionStatus.FAILED),
        (ActionStatus.SUCCEEDED, ActionStatus.COMPENSATED),
    }
)


def check_action_transition(current: ActionStatus, target: ActionStatus) -> None:
    """Raises:
    Conflict: `invalid_transition` when the action may not move from `current` to `target`.
    """
    if (current, target) not in ACTION_TRANSITIONS:
        raise Conflict(
            f"an {current.value} action cannot become {target.value}",
            code=Code.INVALID_TRANSITION,
            status=current.value,
            target=target.value,
        )


# An approval's lifecycle (gateway/domain/approval_selection.py decides which one a call meets). No
# docstring: the operator API's document shows the enum, and a docstring would become its description.
class ApprovalStatus(StrEnum):
    PENDING = "pending"  # asked for, not yet decided: the run waits on it
    APPROVED = "approved"  # decided yes, until its valid_until: the call with exactly its payload consumes it
    DENIED = "denied"  # decided no: the payload stays refused
    EXPIRED = "expired"  # not decided by its decide_by, or approved and not used in time
    SUPERSEDED = "superseded"  # replaced by a newer proposal for the tool, or its run ended or was revised
    USED = "used"  # consumed by the admitted call (given back if that call was never sent)
