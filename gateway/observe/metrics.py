"""Prometheus metrics: what the gate counts as calls pass, and the store's state read at scrape time.

Counted by the gate (process-wide, no ids):

    warrant_calls_total{tool, outcome}      a dispatched call as it settles: succeeded, failed, not_sent,
                                            unknown; a call answered without dispatch: replayed, refused
    warrant_refusals_total{code}            refused calls by code (approval_required included)
    warrant_admit_seconds                   histogram: the admit transaction (gate step 6)
    warrant_alerts_total{kind}              watchdog alerts this process raised (each alert is raised
                                            by one process only: sum over processes)

Read from the store at each scrape, for the scraping key's tenant:

    warrant_approvals_pending, warrant_approval_oldest_pending_seconds, warrant_actions_unknown,
    warrant_active_runs, warrant_budget_remaining{run_id, dimension}   (the newest `BUDGET_RUNS`
    active runs; `spend` in units of the run's currency, the other dimensions as counted)
    warrant_refusals_dropped{limit}         refused calls answered but not recorded past
                                            limits.refusals: `rate` or `max_per_run`

One registry per gateway (held by its gate), never the library's process-global one: two apps in
one process (tests) do not share counters. A tool name the catalog does not know is counted as
`other`, so an agent inventing names cannot grow the label set.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Iterator
from typing import TypeVar

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from gateway.domain.units import format_money
from gateway.store.reports import Gauges

T = TypeVar("T")

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
BUDGET_RUNS = 1000  # the most runs whose budgets one scrape shows (newest first)
# The admit is one SQLite transaction: tens of microseconds unless it waits for an fsync or a lock.
ADMIT_BUCKETS = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)
OTHER_TOOL = "other"


class Metrics:
    def __init__(self, known_tool: Callable[[str], bool] = lambda name: True) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self._known = known_tool
        self._calls = Counter(
            "warrant_calls",
            "Tool calls through the gate, by tool and outcome",
            ("tool", "outcome"),
            registry=self.registry,
        )
        self._refusals = Counter(
            "warrant_refusals", "Calls the gate refused, by code", ("code",), registry=self.registry
        )
        self._admit = Histogram(
            "warrant_admit_seconds",
            "Time of the admit transaction (gate step 6)",
            buckets=ADMIT_BUCKETS,
            registry=self.registry,
        )
        self._call_children: dict[tuple[str, str], Counter] = {}
        self._alerts = Counter("warrant_alerts", "Watchdog alerts raised, by kind", ("kind",), registry=self.registry)

    def observe_alert(self, kind: str) -> None:
        self._alerts.labels(kind).inc()

    def observe_call(self, tool: str, outcome: str, code: str | None = None) -> None:
        """One call's outcome; a `refused` one is also counted by its code."""
        # The labelled child, looked up once per label pair: `labels()` takes a lock and builds a
        # tuple on every call. Whether the catalog knows the tool is asked every time (a tool can
        # leave it); the children are bounded by the tools it has known, and `other`.
        label = tool if self._known(tool) else OTHER_TOOL
        child = self._call_children.get((label, outcome))
        if child is None:
            child = self._call_children[(label, outcome)] = self._calls.labels(label, outcome)
        child.inc()
        if outcome == "refused":
            self._refusals.labels(code or "unknown").inc()

    async def timed(self, admit: Awaitable[T]) -> T:
        """Await the admit transaction, observing how long it took (refused or not)."""
        start = time.perf_counter()
        try:
            return await admit
        finally:
            self._admit.observe(time.perf_counter() - start)

    def render(self, gauges: Gauges, now: float) -> bytes:
        """The Prometheus text exposition: the counters, then the store's gauges."""
        scrape = CollectorRegistry(auto_describe=False)
        scrape.register(_StoreGauges(gauges, now))
        return generate_latest(self.registry) + generate_latest(scrape)


class _StoreGauges(Collector):
    def __init__(self, gauges: Gauges, now: float) -> None:
        self._gauges = gauges
        self._now = now

    def collect(self) -> Iterator[Metric]:
        g = self._gauges
        yield GaugeMetricFamily("warrant_approvals_pending", "Approvals waiting for a decision", g.approvals_pending)
        oldest = max(0.0, self._now - g.oldest_pending_at) if g.oldest_pending_at is not None else 0.0
        yield GaugeMetricFamily(
            "warrant_approval_oldest_pending_seconds", "Age of the oldest approval waiting for a decision", oldest
        )
        yield GaugeMetricFamily(
            "warrant_actions_unknown", "Actions whose outcome could not be established yet", g.actions_unknown
        )
        yield GaugeMetricFamily("warrant_active_runs", "Runs not in a terminal status", g.active_runs)
        dropped = GaugeMetricFamily(
            "warrant_refusals_dropped",
            "Refused calls answered but not recorded past limits.refusals, by the limit (all the tenant's runs)",
            labels=("limit",),
        )
        for limit in ("rate", "max_per_run"):
            dropped.add_metric((limit,), float(g.refusals_dropped.get(limit, 0)))
        yield dropped
        budget = GaugeMetricFamily(
            "warrant_budget_remaining",
            "Budget left per active run (spend in the run's currency units)",
            labels=("run_id", "dimension"),
        )
        for run in g.budgets:
            for dimension, left in run.snapshot().remaining(self._now).items():
                value = float(format_money(left, run.currency)) if dimension == "spend" else float(left)
                budget.add_metric((run.run_id, dimension), value)
        yield budget
