"""What the store reads for evidence exports, metrics, health and pilot reports: plain records, no store types."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gateway.domain.report import ReportInputs
from gateway.store.action_spool import ActionSpool
from gateway.store.chain import Head
from gateway.store.records import RunRecord


@dataclass(frozen=True)
class RunExport:
    """One consistent read of a run for its evidence bundle: the entries up to `head` describe
    exactly these action rows (its entries are read afterwards, by seq: they never change)."""

    run: RunRecord
    head: Head | None  # None: the run has no MAC'd head (verification names it)
    actions: ActionSpool  # in the order they were recorded, on disk: read them a page at a time; close it


@dataclass(frozen=True)
class Gauges:
    """A tenant's state as /metrics shows it, read at scrape time."""

    approvals_pending: int
    oldest_pending_at: float | None  # when the oldest pending approval was requested
    actions_unknown: int
    active_runs: int  # every run not in a terminal status
    budgets: list[RunRecord]  # the newest active runs, at most `limit` of them
    refusals_dropped: dict[str, int] = field(default_factory=dict)  # limit -> refusals not recorded, all runs


@dataclass(frozen=True)
class DroppedRefusals:
    """A run's refusals answered but not recorded (limits.refusals), counted by the limit that
    dropped them: in all, and per lease token (epoch), newest first, at most `BY_EPOCH_SHOWN`."""

    rate: int
    max_per_run: int
    by_epoch: list[tuple[int, int, int]]  # (epoch, rate, max_per_run); epoch 0: no lease epoch


BY_EPOCH_SHOWN = 50


HealthReport = dict[str, dict[str, Any]]  # check name -> {"status": "ok" | "down", ...}


# A report over runs reads at most this many runs, and this many rows in all (charges, tool calls,
# ledger facts): past either it stops and says `truncated`.
MAX_REPORT_RUNS = 200
MAX_REPORT_ROWS = 5000
DRILL_HISTORY_KEEP = 500  # drill runs kept per tenant; the oldest past it are deleted


@dataclass(frozen=True)
class ReportFilter:
    """Which runs a report over runs reads. `statuses`: RunStatus values; times: epoch seconds of
    the run's creation, `since` inclusive, `until` exclusive; `tag`: one of the contract's tags."""

    lineage_id: str | None = None
    tag: str | None = None
    since: float | None = None
    until: float | None = None
    statuses: tuple[str, ...] = ()
    limit: int = MAX_REPORT_RUNS


@dataclass(frozen=True)
class ManyInputs:
    items: list[ReportInputs]  # newest first
    truncated: bool  # more runs matched, or the rows bound was reached


@dataclass(frozen=True)
class DrillRun:
    """One `warrant drill` run as kept (drill_runs): its summary and every case's result, as JSON."""

    drill_id: str
    started_at: float
    seconds: float
    profile: str
    modes: str
    sabotage: str | None
    passed: int
    failed: int
    skipped: int
    ok: bool
    summary: dict[str, Any]
    results: list[dict[str, Any]]
    recorded_by: str
