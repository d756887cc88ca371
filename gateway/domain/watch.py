"""What the watchdog alerts on: pure decisions over a run's state at `now`, no I/O.

Each alert names its condition *episode*: the same condition seen on every tick is one episode,
raised once (the store keeps a row per (run, kind, episode)); a new episode is a new alert.

    kind               when                                              episode
    lease_missed       running, or waiting on an approval (not in a      epoch and the missed expiry
                       warrant_wait), the lease expired unrenewed
    stalled            running, no progress within progress_expectation   the progress time
    budget_80          a dimension at 80% of its limit (reserved counts)  dimension and limit
    budget_exhausted   nothing left of a dimension                        dimension and limit
    approval_expiring  a pending approval within its warning window       the approval
    approval_escalated a pending approval past its rule's escalate_after  the approval
    unknown_action     an action whose outcome is unknown (any run)       the action
    task_blocked_long  running or waiting, a task blocked longer than     the task and when it
                       its blocked_expectation (docs/tasks.md)            became blocked

The heartbeat (the worker's lease renewal) and progress are apart: a worker that renews but
verifies nothing is `stalled`, never `lease_missed`; one that stops renewing is `lease_missed`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gateway.clock import isoformat
from gateway.domain.contract import DIMENSIONS
from gateway.domain.lifecycle import RunStatus
from gateway.domain.units import format_money

KINDS: tuple[str, ...] = (
    "lease_missed",
    "stalled",
    "budget_80",
    "budget_exhausted",
    "approval_expiring",
    "approval_escalated",
    "unknown_action",
    "task_blocked_long",
)

# The alerts the store raises itself, in the transaction of what caused them (not the watchdog's:
# no condition to watch, each is one event): a run failed, a completion claim refused, a run paused
# because verification failed, a refusal the contract names serious (gateway/domain/completion.py,
# docs/decisions/0024-failed-end.md). Webhooks may take them like the watchdog's.
RAISED_KINDS: tuple[str, ...] = ("run_failed", "completion_refused", "verification_failed", "serious_refusal")


@dataclass(frozen=True)
class WatchPolicy:
    budget_warning: float = 0.8  # the share of a limit that raises budget_80
    approval_fraction: float = 0.1  # warn this share of decide_within before the deadline ...
    approval_at_most: float = 900.0  # ... but never earlier than this many seconds before it


@dataclass(frozen=True)
class PendingApproval:
    approval_id: str
    tool: str
    created_at: float
    decide_by: float
    escalate_at: float | None = None  # the rule's escalate_after from created_at; None: never
    # What approval_escalated says besides the id and tool (gateway/store/sql/approvals.py: never the payload).
    reach: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class BlockedTask:
    task_id: str
    since: float  # when it became blocked
    expectation: float  # seconds it may stay blocked (the task's, else the contract's plan.blocked_expectation)


@dataclass(frozen=True)
class RunWatch:
    """A live run as the watchdog sees it."""

    run_id: str
    tenant: str
    status: RunStatus
    currency: str
    epoch: int
    lease_worker: str | None
    lease_expires_at: float | None
    progress_at: float
    progress_expectation: float | None  # seconds; None: the contract sets none, never stalled
    limits: dict[str, int]
    remaining: dict[str, int]  # as the gate sees it at `now`: spent and reserved both count
    approvals: tuple[PendingApproval, ...] = ()
    blocked: tuple[BlockedTask, ...] = ()  # its blocked tasks that have an expectation
    wait_open: bool = False  # a warrant_wait is open: its worker is silent by its own word (docs/leases.md)


@dataclass(frozen=True)
class UnknownAction:
    action_id: str
    run_id: str
    tenant: str
    tool: str
    created_at: float


@dataclass(frozen=True)
class Alert:
    run_id: str
    tenant: str
    kind: str
    episode: str
    data: dict[str, Any] = field(default_factory=dict)


def run_alerts(run: RunWatch, now: float, policy: WatchPolicy = WatchPolicy()) -> list[Alert]:
    """Every alert `run`'s state calls for at `now`, in a stable order."""
    alerts: list[Alert] = []

    def alert(kind: str, episode: str, **data: Any) -> None:
        alerts.append(Alert(run.run_id, run.tenant, kind, episode, data))

    # A paused run's worker, and one in a warrant_wait it declared, are expected to be silent.
    live = run.status is RunStatus.RUNNING or (run.status is RunStatus.WAITING and not run.wait_open)
    if live and run.lease_expires_at is not None and now >= run.lease_expires_at:
        alert(
            "lease_missed",
            f"{run.epoch}@{run.lease_expires_at:.6f}",
            worker=run.lease_worker,
            epoch=run.epoch,
            expired_at=isoformat(run.lease_expires_at),
        )
    if run.status is RunStatus.RUNNING and run.progress_expectation is not None:
        if now - run.progress_at >= run.progress_expectation:
            alert(
                "stalled",
                f"{run.progress_at:.6f}",
                progress_at=isoformat(run.progress_at),
                progress_expectation=run.progress_expectation,
            )
    for dim in DIMENSIONS:
        limit = run.limits[dim]
        if limit <= 0:
            continue  # a dimension given nothing cannot run out
        left = run.remaining[dim]
        used = limit - left

        def show(value: int, dim: str = dim) -> Any:
            return format_money(value, run.currency) if dim == "spend" else value

        if used >= limit * policy.budget_warning:
            alert("budget_80", f"{dim}:{limit}", dimension=dim, limit=show(limit), used=show(used))
        if left <= 0:
            alert("budget_exhausted", f"{dim}:{limit}", dimension=dim, limit=show(limit), used=show(used))
    for approval in run.approvals:
        window = min(policy.approval_fraction * (approval.decide_by - approval.created_at), policy.approval_at_most)
        if approval.decide_by - window <= now < approval.decide_by:
            alert(
                "approval_expiring",
                approval.approval_id,
                approval_id=approval.approval_id,
                tool=approval.tool,
                decide_by=isoformat(approval.decide_by),
            )
        if approval.escalate_at is not None and approval.escalate_at <= now < approval.decide_by:
            alert(
                "approval_escalated",
                approval.approval_id,
                **{
                    **approval.reach,
                    "approval_id": approval.approval_id,
                    "tool": approval.tool,
                    "decide_by": isoformat(approval.decide_by),
                    "escalated_at": isoformat(approval.escalate_at),
                },
            )
    if live:
        for task in run.blocked:
            if now - task.since >= task.expectation:
                alert(
                    "task_blocked_long",
                    f"{task.task_id}@{task.since:.6f}",
                    task_id=task.task_id,
                    blocked_since=isoformat(task.since),
                    blocked_expectation=task.expectation,
                )
    return alerts


def open_alerts(
    runs: list[RunWatch], unknown: list[UnknownAction], now: float, policy: WatchPolicy = WatchPolicy()
) -> list[Alert]:
    """Every alert the state calls for at `now`: what the watchdog raises (once per episode) and
    what the console shows as a run's open alerts (the conditions that hold now)."""
    return [a for run in runs for a in run_alerts(run, now, policy)] + [unknown_alert(a) for a in unknown]


def unknown_alert(action: UnknownAction) -> Alert:
    return Alert(
        action.run_id,
        action.tenant,
        "unknown_action",
        action.action_id,
        {"action_id": action.action_id, "tool": action.tool, "admitted_at": isoformat(action.created_at)},
    )
