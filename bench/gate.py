"""Throughput and latency of one tools/call through the gate, in process, on a real SQLite file.

    .venv/bin/python bench/gate.py [--calls N] [--concurrency C] [--warmup W] [--distinct-reads]
        [--lease-ttl D] [--smoke]

`--lease-ttl` (default 1h, which no run of the bench outlasts) set short makes the lease's
renewal by requests (docs/leases.md: written once a tenth of the TTL has passed) part of what is
measured: the `normal tx` column then counts the renewals too.

One run (budgets far above what the bench uses), one lease, a `PythonAdapter` with a no-op read
tool and a no-op write tool (policies: effect read, effect write). Each phase calls the gate
`--calls` times, after `--warmup` calls of the same kind: reads and writes separately, first one
call at a time, then `--concurrency` tasks at once. Every write carries a distinct payload, so
none is replayed; reads repeat one payload unless `--distinct-reads`. Latency is measured around
`Gate.call` (token to settled result).

Durable commits are counted, not assumed: the store's `Database.transaction` is wrapped to count
the transactions run with `durable=True` (synchronous=FULL: the commit is fsynced) and with
`durable=False` (synchronous=NORMAL), per action, split at the moment the adapter is dispatched.
SQL statements per call are counted in a separate pass after the timed phases (a statement trace
on the store's connection would slow the timed ones).
"""

from __future__ import annotations

import argparse
import asyncio
import contextvars
import os
import platform
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gateway.adapters import CallRequest, PythonAdapter
from gateway.catalog import Catalog
from gateway.clock import SystemClock
from gateway.domain import Contract
from gateway.gate import META_REPLAYED, Gate
from gateway.policy import ToolPolicy
from gateway.store import Principal
from gateway.store.sqlite import SQLiteStore

READ_TOOL = "bench__noop_read"
WRITE_TOOL = "bench__noop_write"
TRACED_CALLS = 200  # calls of each kind in the statement-counting pass
# `--smoke` (tests/bench/): the same phases and counts with tiny numbers, to show the bench still runs.
SMOKE = {"calls": 20, "concurrency": 4, "warmup": 5, "traced": 10}


@dataclass
class Tally:
    """Store work attributed to one action (or to a whole phase)."""

    durable: int = 0  # transactions with durable=True: synchronous=FULL, fsynced commit
    normal: int = 0  # transactions with durable=False: synchronous=NORMAL
    reads: int = 0  # Database.read round trips (no transaction of their own)
    durable_at_dispatch: int | None = None  # `durable` when the adapter was called

    def add(self, other: Tally) -> None:
        self.durable += other.durable
        self.normal += other.normal
        self.reads += other.reads


# The tally of the call in progress. The gate dispatches in a task of its own, which copies the
# context, so the settle transaction is attributed to the same call.
CURRENT: contextvars.ContextVar[Tally | None] = contextvars.ContextVar("bench_tally", default=None)


def count_store_work(store: SQLiteStore) -> None:
    """Wrap the store's Database so every transaction (awaited or lazy) and read is counted against CURRENT.

    Transactions are counted where they are submitted (`Database.submit`), so a read's lazy settle,
    which nobody awaits, counts as well. Group commit may put several in one COMMIT: the counts
    are transactions asked for, an upper bound on commits.
    """
    db = store._db
    submit, read = db.submit, db.read

    def counted_submit(fn: Callable[[Any], Any], *, durable: bool, lazy: bool = False) -> Any:
        tally = CURRENT.get()
        if tally is not None:
            if durable:
                tally.durable += 1
            else:
                tally.normal += 1
        return submit(fn, durable=durable, lazy=lazy)

    async def counted_read(fn: Callable[[Any], Any]) -> Any:
        tally = CURRENT.get()
        if tally is not None:
            tally.reads += 1
        return await read(fn)

    db.submit = counted_submit  # type: ignore[method-assign]
    db.read = counted_read  # type: ignore[method-assign]


_CONTROL = ("BEGIN", "COMMIT", "ROLLBACK", "SAVEPOINT", "RELEASE", "PRAGMA")


async def count_statements(store: SQLiteStore, bench: Bench, kind: str, calls: int) -> tuple[float, float]:
    """SQL statements per call, sequential: (all, without transaction control and pragmas).

    Sequential reads commit one read's lazy settle with the next read's admit, so the count per
    read holds both. The pass ends by waiting for the store's queue, so the last settle counts.
    """
    seen: list[str] = []

    def trace(sql: str) -> None:
        seen.append(sql.lstrip().split(None, 1)[0].upper())

    await store._db._call(lambda conn: conn.set_trace_callback(trace))
    try:
        await bench.phase(kind, calls, 1)
        await store._db.read(lambda conn: None)  # the last lazy settle commits first
    finally:
        await store._db._call(lambda conn: conn.set_trace_callback(None))
    data = [word for word in seen if word not in _CONTROL]
    return len(seen) / calls, len(data) / calls


def speed_probe() -> float:
    """Milliseconds for a fixed piece of pure-Python work: how fast this machine was just now."""
    started = time.perf_counter()
    total = 0
    for i in range(300_000):
        total += i % 7
    return (time.perf_counter() - started) * 1000


def build_adapter() -> PythonAdapter:
    adapter = PythonAdapter("bench")

    def at_dispatch() -> None:
        tally = CURRENT.get()
        if tally is not None:
            tally.durable_at_dispatch = tally.durable

    @adapter.tool(input_schema={"type": "object"}, description="Does nothing; reads nothing.")
    async def noop_read(args: dict[str, Any], call: CallRequest) -> str:
        at_dispatch()
        return "ok"

    @adapter.tool(input_schema={"type": "object"}, description="Does nothing; pretends to write.")
    async def noop_write(args: dict[str, Any], call: CallRequest) -> str:
        at_dispatch()
        return "ok"

    return adapter


@dataclass
class Phase:
    kind: str  # "read" or "write"
    concurrency: int
    calls: int
    seconds: float
    latencies_ms: list[float]
    tally: Tally
    before_dispatch: int  # durable commits before the adapter was called, summed over the calls
    after_dispatch: int
    errors: list[str] = field(default_factory=list)

    @property
    def rate(self) -> float:
        return self.calls / self.seconds

    def percentile(self, q: float) -> float:
        ordered = sorted(self.latencies_ms)
        index = min(len(ordered) - 1, max(0, round(q / 100 * len(ordered)) - 1))
        return ordered[index]


class Bench:
    def __init__(self, gate: Gate, token: str, *, distinct_reads: bool = False) -> None:
        self.gate = gate
        self.token = token
        self.distinct_reads = distinct_reads
        self.serial = 0  # makes every write's payload distinct

    def arguments(self, kind: str) -> tuple[str, dict[str, Any]]:
        self.serial += 1
        if kind == "read":
            return READ_TOOL, {"q": "status", "n": self.serial} if self.distinct_reads else {"q": "status"}
        return WRITE_TOOL, {"n": self.serial, "note": f"bench write {self.serial}"}

    async def one(self, kind: str, phase: Phase) -> None:
        tool, arguments = self.arguments(kind)
        tally = Tally()
        CURRENT.set(tally)
        started = time.perf_counter()
        result = await self.gate.call(self.token, tool, arguments)
        phase.latencies_ms.append((time.perf_counter() - started) * 1000)
        CURRENT.set(None)
        if result.is_error or result.meta.get(META_REPLAYED):
            phase.errors.append(result.code or "replayed")
        phase.tally.add(tally)
        at_dispatch = tally.durable_at_dispatch if tally.durable_at_dispatch is not None else tally.durable
        phase.before_dispatch += at_dispatch
        phase.after_dispatch += tally.durable - at_dispatch

    async def phase(self, kind: str, calls: int, concurrency: int) -> Phase:
        phase = Phase(kind, concurrency, calls, 0.0, [], Tally(), 0, 0)
        remaining = calls

        async def worker() -> None:
            nonlocal remaining
            while remaining > 0:
                remaining -= 1
                await self.one(kind, phase)

        # gather runs each worker as a task with its own context: concurrent calls keep their tallies.
        started = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        phase.seconds = time.perf_counter() - started
        return phase


async def setup(path: str, lease_ttl: str = "1h") -> tuple[SQLiteStore, Gate, str]:
    clock = SystemClock()
    store = SQLiteStore(path, clock=clock, ledger_key=b"bench-ledger-key-not-a-secret-0123456789")
    await store.open()
    try:
        return store, *(await _prepare(store, clock, lease_ttl))
    except BaseException:
        await store.close()  # aiosqlite's thread would keep the process alive
        raise


async def _prepare(store: SQLiteStore, clock: SystemClock, lease_ttl: str) -> tuple[Gate, str]:
    catalog = Catalog(
        [build_adapter()],
        {READ_TOOL: ToolPolicy(effect="read"), WRITE_TOOL: ToolPolicy(effect="write")},
    )
    big = 1_000_000_000
    contract = Contract.model_validate(
        {
            "goal": "benchmark the gate",
            "spec_version": "v1",
            "owner": "bench@example",
            "expires_in": "72h",
            "lease_ttl": lease_ttl,
            "budgets": {"spend": "1000000.00", "tool_calls": big, "writes": big, "active_seconds": big},
            "authority": {"allow": ["bench__*"]},
        }
    )
    operator = Principal("bench-operator", "bench", frozenset({"admin"}))
    run = await store.create_run(operator, contract)
    lease = await store.acquire_lease(operator, run.run_id, "bench-worker", takeover=False)
    count_store_work(store)
    return Gate(store, catalog, clock), lease.token


def table(phases: list[Phase]) -> str:
    header = (
        f"{'calls':<6} {'tasks':>5} {'n':>6} {'calls/s':>9} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8} "
        f"{'durable tx':>10} {'normal tx':>9} {'reads':>6} {'errors':>6}"
    )
    lines = [header, "-" * len(header)]
    for p in phases:
        n = p.calls
        lines.append(
            f"{p.kind:<6} {p.concurrency:>5} {n:>6} {p.rate:>9,.0f} {p.percentile(50):>8.3f} "
            f"{p.percentile(99):>8.3f} {max(p.latencies_ms):>8.3f} {p.tally.durable / n:>10.2f} "
            f"{p.tally.normal / n:>9.2f} {p.tally.reads / n:>6.2f} {len(p.errors):>6}"
        )
    return "\n".join(lines)


def machine() -> str:
    model = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{os.cpu_count()} CPUs, {model}, Python {platform.python_version()}, SQLite {_sqlite_version()}"


def _sqlite_version() -> str:
    import sqlite3

    return sqlite3.sqlite_version


async def main(
    calls: int, concurrency: int, warmup: int, distinct_reads: bool, lease_ttl: str = "1h", traced: int = TRACED_CALLS
) -> int:
    probes = [speed_probe()]
    with tempfile.TemporaryDirectory(prefix="warrant-bench-") as folder:
        store, gate, token = await setup(os.path.join(folder, "bench.db"), lease_ttl)
        bench = Bench(gate, token, distinct_reads=distinct_reads)
        phases: list[Phase] = []
        statements: dict[str, tuple[float, float]] = {}
        try:
            for kind in ("read", "write"):
                await bench.phase(kind, warmup, 1)
                phases.append(await bench.phase(kind, calls, 1))
                phases.append(await bench.phase(kind, calls, concurrency))
            for kind in ("read", "write"):
                statements[kind] = await count_statements(store, bench, kind, traced)
        finally:
            await store.close()
    probes.append(speed_probe())

    print(f"Warrant gate benchmark: {machine()}")
    reads = "distinct payloads" if distinct_reads else "one payload, repeated"
    print(f"in process, SQLite WAL file in a temp dir, no-op Python adapter; {warmup} warm-up calls per kind")
    print(f"reads: {reads}")
    print(f"speed probe (fixed Python loop, lower is faster): {probes[0]:.0f} ms before, {probes[1]:.0f} ms after")
    print("durable tx / normal tx / reads: store transactions (synchronous FULL / NORMAL) and read round trips")
    print("per call, counted by wrapping Database.transaction and Database.read during the measured phases")
    print()
    print(table(phases))
    print()
    for kind in ("read", "write"):
        mine = [p for p in phases if p.kind == kind]
        n = sum(p.calls for p in mine)
        durable = sum(p.tally.durable for p in mine) / n
        before = sum(p.before_dispatch for p in mine) / n
        after = sum(p.after_dispatch for p in mine) / n
        print(f"durable commits per {kind}: {durable:g} (before dispatch: {before:g}, after: {after:g})")
    for kind, (every, data) in statements.items():
        print(f"SQL statements per {kind} (sequential): {every:.2f}, of which {data:.2f} not BEGIN/COMMIT/SAVEPOINT")
    failed = [p for p in phases if p.errors]
    for p in failed:
        print(f"ERROR: {len(p.errors)} {p.kind} calls failed: {sorted(set(p.errors))}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000, help="measured calls per phase (default 2000)")
    parser.add_argument("--concurrency", type=int, default=16, help="concurrent tasks (default 16)")
    parser.add_argument("--warmup", type=int, default=200, help="warm-up calls per kind (default 200)")
    parser.add_argument("--distinct-reads", action="store_true", help="give every read a payload of its own")
    parser.add_argument("--lease-ttl", default="1h", help="the run's lease_ttl (default 1h: never renewed by time)")
    parser.add_argument(
        "--smoke", action="store_true", help=f"tiny counts ({SMOKE}), the same code: does the bench still run?"
    )
    options = parser.parse_args()
    traced = TRACED_CALLS
    if options.smoke:
        options.calls, options.concurrency, options.warmup = SMOKE["calls"], SMOKE["concurrency"], SMOKE["warmup"]
        traced = SMOKE["traced"]
    if options.calls < 1 or options.concurrency < 1 or options.warmup < 0:
        parser.error("--calls and --concurrency must be at least 1, --warmup at least 0")
    sys.exit(
        asyncio.run(
            main(options.calls, options.concurrency, options.warmup, options.distinct_reads, options.lease_ttl, traced)
        )
    )
