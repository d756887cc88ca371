"""Reported spend and the pilot report (issue 6): pure computation over what the store read, no I/O.

A run's spend has five tags. `tool`: the settled cost of its tool calls (the actions'
`actual_spend`); `model` and `runtime`: what a worker or operator reported
(`POST /api/runs/{id}/usage`, one `charges` row each); `recovery`: any of these incurred between
a resume and the next checkpoint; `children`: what its delegated sub-runs spent (or still held),
charged when each ended (`child_ended`). The report adds them up from the same records the run's
`spend.spent` counter was moved by, so its total equals that counter to the cent.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from gateway.domain.admission import RunSnapshot
from gateway.domain.contract import DIMENSIONS
from gateway.domain.lifecycle import RunStatus
from gateway.domain.units import format_money, parse_money

KINDS = ("model", "runtime")  # what a reporter may say a charge is
TAGS = ("model", "tool", "runtime", "recovery", "children")  # what the report sums by
_TERMINAL = frozenset(f"run_{s.value}" for s in RunStatus if s.terminal)


def in_recovery(last_resumed_at: float | None, last_checkpoint_at: float | None) -> bool:
    """True when the run was resumed and no checkpoint has been recorded since (at or after) the resume."""
    if last_resumed_at is None:
        return False
    return last_checkpoint_at is None or last_checkpoint_at < last_resumed_at


def charge_tag(kind: str, last_resumed_at: float | None, last_checkpoint_at: float | None) -> str:
    """The tag a reported charge is recorded with: `recovery` inside a recovery, else its kind."""
    return "recovery" if in_recovery(last_resumed_at, last_checkpoint_at) else kind


@dataclass(frozen=True)
class Charge:
    """One reported cost, as recorded (`charges`): authoritative, never rewritten."""

    charge_id: str
    run_id: str
    kind: str
    tag: str
    amount: int  # minor units of the run's currency
    note: str | None
    ref: str | None
    principal: str
    created_at: float


@dataclass(frozen=True)
class ChargeRecorded:
    """The answer to a usage report: the charge, the run after it, and whether it was recorded before."""

    charge: Charge
    run: RunSnapshot
    replayed: bool  # the same `ref` and body were reported before: nothing was charged again
    overrun: bool = False  # this charge took the run's spend past its limit


@dataclass(frozen=True)
class ToolCost:
    """The settled cost of one tool call, and when it was admitted."""

    admitted_at: float
    amount: int


@dataclass(frozen=True)
class Fact:
    """One ledger entry the report reads (status changes, approvals, reconciled actions)."""

    type: str
    at: float
    data: dict[str, Any]


@dataclass(frozen=True)
class ReportInputs:
    """What the store reads for a report, in one read."""

    run: RunSnapshot
    charges: Sequence[Charge]
    tool_costs: Sequence[ToolCost]
    facts: Sequence[Fact]  # oldest first
    last_checkpoint_at: float | None


@dataclass(frozen=True)
class ReviewTime:
    approvals: int
    total_seconds: float
    median_seconds: float | None
    max_seconds: float | None


@dataclass(frozen=True)
class Recovery:
    resumes: int
    spend: int
    seconds: float


@dataclass(frozen=True)
class Report:
    run: RunSnapshot
    usable: bool
    review: ReviewTime
    recovery: Recovery
    duplicates_found: int
    by_tag: dict[str, int]
    active_seconds: int

    @property
    def total(self) -> int:
        return sum(self.by_tag.values())

    def as_dict(self) -> dict[str, Any]:
        """The report on the wire: money as decimal strings in the run's currency, seconds as numbers."""
        currency = self.run.currency

        def money(value: int) -> str:
            return format_money(value, currency)

        budgets: dict[str, Any] = {}
        for dim in DIMENSIONS:
            limit, spent = self.run.limits[dim], self.run.spent[dim]
            if dim == "active_seconds":
                spent = self.active_seconds
            budgets[dim] = (
                {"limit": money(limit), "spent": money(spent)}
                if dim == "spend"
                else {
                    "limit": limit,
                    "spent": spent,
                }
            )
        return {
            "run_id": self.run.run_id,
            "status": self.run.status.value,
            "currency": currency,
            "usable": self.usable,
            "review_time": {
                "approvals": self.review.approvals,
                "total_seconds": self.review.total_seconds,
                "median_seconds": self.review.median_seconds,
                "max_seconds": self.review.max_seconds,
            },
            "recovery": {
                "resumes": self.recovery.resumes,
                "recovery_spend": money(self.recovery.spend),
                "recovery_seconds": self.recovery.seconds,
            },
            "duplicates_found": self.duplicates_found,
            "cost": {"total": money(self.total), "by_tag": {tag: money(self.by_tag[tag]) for tag in TAGS}},
            "budgets": budgets,
            "active_seconds": self.active_seconds,
        }


def _seconds(value: float) -> float:
    return round(value, 3)


def review_time(facts: Sequence[Fact]) -> ReviewTime:
    """Request to decision, for decided approvals only (approved or denied; not expired or superseded)."""
    requested: dict[str, float] = {}
    waited: dict[str, float] = {}
    for fact in facts:
        approval_id = fact.data.get("approval_id")
        if not isinstance(approval_id, str):
            continue
        if fact.type == "approval_requested":
            requested.setdefault(approval_id, fact.at)
        elif fact.type in ("approval_approved", "approval_denied") and approval_id in requested:
            waited.setdefault(approval_id, max(0.0, fact.at - requested[approval_id]))
    times = list(waited.values())
    if not times:
        return ReviewTime(0, 0.0, None, None)
    return ReviewTime(len(times), _seconds(sum(times)), _seconds(statistics.median(times)), _seconds(max(times)))


def resumes_of(facts: Sequence[Fact]) -> list[float]:
    """When the run was resumed: every move from paused to running (only an operator's resume makes one)."""
    return [f.at for f in facts if f.type == "run_running" and f.data.get("previous") == RunStatus.PAUSED.value]


def recovery_windows(resumes: Sequence[float], checkpoints: Sequence[float], end: float) -> list[tuple[float, float]]:
    """[resume, the first checkpoint at or after it, else the next resume, else `end`) for each resume."""
    windows = []
    ordered = sorted(resumes)
    for i, start in enumerate(ordered):
        stops = [c for c in checkpoints if c >= start]
        if i + 1 < len(ordered):
            stops.append(ordered[i + 1])
        stop = min([*stops, end])
        windows.append((start, max(start, stop)))
    return windows


def _in_windows(at: float, windows: Sequence[tuple[float, float]]) -> bool:
    return any(start <= at < stop for start, stop in windows)


def children_spend(facts: Sequence[Fact], currency: str) -> int:
    """What ended children charged to this run: their spent and still-reserved spend (`child_ended`)."""
    return sum(
        parse_money(f.data["spent"]["spend"], currency) + parse_money(f.data["reserved"]["spend"], currency)
        for f in facts
        if f.type == "child_ended"
    )


def build_report(inputs: ReportInputs, now: float) -> Report:
    """The pilot measures of one run (docs/decisions/0017-time-reported-spend-pilot-report.md).

    A tool call admitted inside a recovery window counts as `recovery`, like a charge reported
    inside one; a charge keeps the tag it was recorded with.
    """
    run, facts = inputs.run, inputs.facts
    ended = [f.at for f in facts if f.type in _TERMINAL]
    # A live run's last window is still open: a call admitted at this very instant is inside it.
    end = ended[-1] if run.status.terminal and ended else math.inf
    resumes = resumes_of(facts)
    checkpoints = [inputs.last_checkpoint_at] if inputs.last_checkpoint_at is not None else []
    windows = recovery_windows(resumes, checkpoints, end)
    by_tag = dict.fromkeys(TAGS, 0)
    for charge in inputs.charges:
        by_tag[charge.tag] += charge.amount
    for cost in inputs.tool_costs:
        by_tag["recovery" if _in_windows(cost.admitted_at, windows) else "tool"] += cost.amount
    by_tag["children"] = children_spend(facts, run.currency)
    duplicates = sum(
        1
        for f in facts
        if f.type == "action_settled" and f.data.get("previous") == "unknown" and f.data.get("status") == "succeeded"
    )
    return Report(
        run=run,
        usable=run.status is RunStatus.COMPLETED,
        review=review_time(facts),
        recovery=Recovery(
            resumes=len(resumes),
            spend=by_tag["recovery"],
            seconds=_seconds(sum(max(0.0, min(stop, now) - start) for start, stop in windows)),
        ),
        duplicates_found=duplicates,
        by_tag=by_tag,
        active_seconds=int(run.active_seconds(now)),
    )
