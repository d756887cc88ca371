"""Reported spend and the pilot report (issue 6): pure computation over what the store read, no I/O.

A run's spend has five tags. `tool`: the settled cost of its tool calls (the actions'
`actual_spend`); `model` and `runtime`: what a worker or operator reported
(`POST /api/runs/{id}/usage`, one `charges` row each); `recovery`: a charge reported between a resume
and the next checkpoint, and a tool call admitted inside a recovery episode
(gateway/domain/recovery.py: a takeover, a restart that orphaned actions, a resume);
`children`: what its delegated sub-runs spent (or still held), charged when each ended
(`child_ended`). The report adds them up from the same records the run's `spend.spent`
counter was moved by, so its total equals that counter to the cent.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from gateway.clock import isoformat
from gateway.domain.admission import RunSnapshot
from gateway.domain.contract import DIMENSIONS
from gateway.domain.lifecycle import RunStatus
from gateway.domain.recovery import CAUSES, Episode, cost_episodes, episodes_of, in_episode
from gateway.domain.units import format_money, parse_money

KINDS = ("model", "runtime")  # what a reporter may say a charge is
TAGS = ("model", "tool", "runtime", "recovery", "children")  # what the report sums by
_TERMINAL = frozenset(f"run_{s.value}" for s in RunStatus if s.terminal)
# The refusals that kept a repeated write from running twice (gateway/domain/replay.py).
PREVENTING_CODES = ("operation_in_progress", "outcome_unknown")
# Why a run's outcome is not usable, in the order they are listed (docs/decisions/0026-reports.md).
UNUSABLE_REASONS = ("not_completed", "duplicate_effects", "unresolved_actions", "over_budget")


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
    tool_costs: Sequence[ToolCost]  # every tool call admitted (not the refused), its settled cost (0 if none)
    facts: Sequence[Fact]  # oldest first
    last_checkpoint_at: float | None
    tags: tuple[str, ...] = ()  # the contract's `tags`
    replays: int = 0  # calls answered with a recorded result instead of running again (runs.replays)
    refused_repeats: int = 0  # rejected actions whose code is in PREVENTING_CODES
    unknown_actions: int = 0  # actions still `unknown`


@dataclass(frozen=True)
class ReviewTime:
    approvals: int
    total_seconds: float
    median_seconds: float | None
    max_seconds: float | None
    p50_seconds: float | None = None
    p90_seconds: float | None = None
    waits: tuple[float, ...] = ()  # each decided approval's wait: for sums over runs


@dataclass(frozen=True)
class Recovery:
    resumes: int  # operator resumes (pause -> running), whether they started an episode or joined one
    spend: int  # = by_tag["recovery"]
    seconds: float  # the episodes' wall-clock seconds, an open one until now
    episodes: tuple[Episode, ...] = ()


@dataclass(frozen=True)
class Duplicates:
    prevented: int  # repeated writes answered from the record, or refused as in progress / outcome unknown
    effects: int  # effects that happened twice: a lookup's or an operator's evidence says so


@dataclass(frozen=True)
class Report:
    run: RunSnapshot
    usable: bool
    unusable_reasons: tuple[str, ...]
    review: ReviewTime
    recovery: Recovery
    duplicates: Duplicates
    by_tag: dict[str, int]
    active_seconds: int
    tags: tuple[str, ...] = ()
    now: float = 0.0

    @property
    def total(self) -> int:
        return sum(self.by_tag.values())

    @property
    def duplicates_found(self) -> int:
        """Deprecated alias of `duplicates.effects` (the wire's `duplicates_found`)."""
        return self.duplicates.effects

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
        episodes = self.recovery.episodes
        return {
            "run_id": self.run.run_id,
            "lineage_id": self.run.lineage_id,
            "status": self.run.status.value,
            "currency": currency,
            "tags": list(self.tags),
            "usable": self.usable,
            "unusable_reasons": list(self.unusable_reasons),
            "review_time": review_dict(self.review),
            "recovery": {
                "resumes": self.recovery.resumes,
                "recovery_spend": money(self.recovery.spend),
                "recovery_seconds": self.recovery.seconds,
                "by_cause": {cause: sum(e.cause == cause for e in episodes) for cause in CAUSES},
                "episodes": [episode_dict(e, currency, self.now) for e in episodes],
            },
            "duplicates_prevented": self.duplicates.prevented,
            "duplicate_effects": self.duplicates.effects,
            "duplicates_found": self.duplicates.effects,  # deprecated: duplicate_effects
            "cost": {"total": money(self.total), "by_tag": {tag: money(self.by_tag[tag]) for tag in TAGS}},
            "budgets": budgets,
            "active_seconds": self.active_seconds,
        }


def review_dict(review: ReviewTime) -> dict[str, Any]:
    return {
        "approvals": review.approvals,
        "total_seconds": review.total_seconds,
        "median_seconds": review.median_seconds,
        "max_seconds": review.max_seconds,
        "p50_seconds": review.p50_seconds,
        "p90_seconds": review.p90_seconds,
    }


def episode_dict(episode: Episode, currency: str, now: float) -> dict[str, Any]:
    return {
        "cause": episode.cause,
        "started_at": isoformat(episode.started_at),
        "ended_at": isoformat(episode.ended_at) if episode.ended_at is not None else None,
        "outcome": episode.outcome,
        "seconds": episode.seconds(now),
        "tool_calls": episode.tool_calls,
        "spend": format_money(episode.spend, currency),
        "triggers": episode.triggers,
        "joined": list(episode.joined),
        "detail": dict(episode.detail),
    }


def _seconds(value: float) -> float:
    return round(value, 3)


def percentile(values: Sequence[float], fraction: float) -> float | None:
    """The nearest-rank percentile (`fraction` in (0, 1]): a wait some approval really had."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(fraction * len(ordered)))
    return _seconds(ordered[rank - 1])


def review_of(times: Sequence[float]) -> ReviewTime:
    """Sums and percentiles of approval waits (seconds)."""
    if not times:
        return ReviewTime(0, 0.0, None, None)
    return ReviewTime(
        len(times),
        _seconds(sum(times)),
        _seconds(statistics.median(times)),
        _seconds(max(times)),
        percentile(times, 0.5),
        percentile(times, 0.9),
        tuple(times),
    )


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
    return review_of(list(waited.values()))


def resumes_of(facts: Sequence[Fact]) -> list[float]:
    """When the run was resumed: every move from paused to running (only an operator's resume makes one)."""
    return [f.at for f in facts if f.type == "run_running" and f.data.get("previous") == RunStatus.PAUSED.value]


def recovery_windows(resumes: Sequence[float], checkpoints: Sequence[float], end: float) -> list[tuple[float, float]]:
    """[resume, the first checkpoint at or after it, else the next resume, else `end`) for each resume.
    The charge tag's rule (`charge_tag`); the report's episodes are gateway/domain/recovery.py."""
    windows = []
    ordered = sorted(resumes)
    for i, start in enumerate(ordered):
        stops = [c for c in checkpoints if c >= start]
        if i + 1 < len(ordered):
            stops.append(ordered[i + 1])
        stop = min([*stops, end])
        windows.append((start, max(start, stop)))
    return windows


def children_spend(facts: Sequence[Fact], currency: str) -> int:
    """What ended children charged to this run: their spent and still-reserved spend (`child_ended`)."""
    return sum(
        parse_money(f.data["spent"]["spend"], currency) + parse_money(f.data["reserved"]["spend"], currency)
        for f in facts
        if f.type == "child_ended"
    )


def duplicate_effects(facts: Sequence[Fact]) -> int:
    """Settled actions whose evidence says the effect happened more than once: a lookup's receipt or an
    operator's resolve (`duplicate: true`) says so. A replay or an unknown that turned out to have
    happened once is not one."""
    return sum(
        1
        for f in facts
        if f.type == "action_settled"
        and isinstance(f.data.get("receipt"), dict)
        and f.data["receipt"].get("duplicate") is True
    )


def unusable_reasons(run: RunSnapshot, duplicates: int, unknown_actions: int) -> tuple[str, ...]:
    """Why the run's outcome cannot be used as it is (empty: usable). A run is usable when it completed,
    no effect happened twice, no action is left `unknown`, and no budget was overrun."""
    reasons = []
    if run.status is not RunStatus.COMPLETED:
        reasons.append("not_completed")
    if duplicates:
        reasons.append("duplicate_effects")
    if unknown_actions:
        reasons.append("unresolved_actions")
    if any(run.spent[dim] > run.limits[dim] for dim in ("spend", "tool_calls", "writes")):
        reasons.append("over_budget")
    return tuple(reasons)


def build_report(inputs: ReportInputs, now: float) -> Report:
    """The pilot measures of one run (docs/decisions/0017-time-reported-spend-pilot-report.md,
    docs/decisions/0026-reports.md).

    A tool call admitted inside a recovery episode counts as `recovery`; a charge keeps the tag it
    was recorded with.
    """
    run, facts = inputs.run, inputs.facts
    checkpoints = [inputs.last_checkpoint_at] if inputs.last_checkpoint_at is not None else []
    episodes = episodes_of(facts, checkpoints)
    cost_episodes(
        episodes,
        ((c.admitted_at, c.amount) for c in inputs.tool_costs),
        ((c.created_at, c.amount) for c in inputs.charges),
    )
    by_tag = dict.fromkeys(TAGS, 0)
    for charge in inputs.charges:
        by_tag[charge.tag] += charge.amount
    for cost in inputs.tool_costs:
        by_tag["recovery" if in_episode(cost.admitted_at, episodes) else "tool"] += cost.amount
    by_tag["children"] = children_spend(facts, run.currency)
    effects = duplicate_effects(facts)
    reasons = unusable_reasons(run, effects, inputs.unknown_actions)
    return Report(
        run=run,
        usable=not reasons,
        unusable_reasons=reasons,
        review=review_time(facts),
        recovery=Recovery(
            resumes=len(resumes_of(facts)),
            spend=by_tag["recovery"],
            seconds=_seconds(sum(e.seconds(now) for e in episodes)),
            episodes=tuple(episodes),
        ),
        duplicates=Duplicates(prevented=inputs.replays + inputs.refused_repeats, effects=effects),
        by_tag=by_tag,
        active_seconds=int(run.active_seconds(now)),
        tags=inputs.tags,
        now=now,
    )
