"""How much longer a tool call waits while `warrant ledger verify` runs over a large ledger.

    .venv/bin/python bench/verify_stall.py [--entries N] [--runs R] [--calls C] [--smoke]
                                           # defaults: 100000 entries over 100 runs, 300 calls

In process, no server, as bench/gate.py (its store, gate and no-op read tool): a `SQLiteStore`
on a real SQLite file (WAL) in a temporary directory. The ledger is filled to `--entries` entries
spread over `--runs` runs through the store's own chain code (`Chain.append` inside the store's
transactions, 5000 entries per transaction), so every entry and head is genuine and verifies.
Then `--calls` read calls one at a time, twice: alone, and while verifies of the whole ledger
run back to back beside them (a new verify starts as soon as one ends, so every call of the
second phase overlaps a verify). Latency is measured around `Gate.call` (token in, settled
result out); the bench prints p50/p99/max of both phases side by side, how many verifies ran
and how long one took. `--entries 1000000` is the issue's figure (filling takes a few minutes).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from gate import READ_TOOL, setup, speed_probe  # bench/gate.py

from gateway.domain import Contract
from gateway.gate import Gate
from gateway.store import Principal
from gateway.store.sql import Chain, Conn
from gateway.store.sqlite import SQLiteStore

PER_TRANSACTION = 5000
WARMUP = 50
# `--smoke` (tests/bench/): the same fill, verifies and calls with tiny numbers.
SMOKE = {"entries": 2000, "runs": 4, "calls": 20, "warmup": 5}
OPERATOR = Principal("bench-operator", "bench", frozenset({"admin"}))


async def fill(store: SQLiteStore, entries: int, runs: int) -> None:
    contract = Contract.model_validate(
        {
            "goal": "ledger filler",
            "spec_version": "v1",
            "owner": "bench@example",
            "expires_in": "72h",
            "budgets": {"spend": "1.00", "tool_calls": 1, "writes": 1, "active_seconds": 1},
            "authority": {"allow": ["bench__*"]},
        }
    )
    run_ids = [(await store.create_run(OPERATOR, contract)).run_id for _ in range(runs)]
    per_run = entries // runs
    key, now = store._key, time.time()
    for run_id in run_ids:
        left = per_run
        while left > 0:
            n = min(left, PER_TRANSACTION)

            def tx(conn: Conn, run_id: str = run_id, n: int = n) -> None:
                chain = Chain.read(conn, key, run_id)
                for i in range(n):
                    chain.append(conn, "bench_note", now, {"i": i, "note": "filler entry of bench/verify_stall.py"})
                chain.write_head(conn)

            await store._db.transaction(tx, durable=False)
            left -= n


async def calls(gate: Gate, token: str, count: int) -> list[float]:
    latencies = []
    for _ in range(count):
        started = time.perf_counter()
        result = await gate.call(token, READ_TOOL, {"q": "status"})
        latencies.append((time.perf_counter() - started) * 1000)
        if result.is_error:
            raise SystemExit(f"a call failed: {result.code}")
    return latencies


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * len(ordered)) - 1))]


def verified(ok: bool, first_bad: object) -> None:
    """A ledger that does not verify ends the bench (non-zero exit), not an `assert` that -O drops."""
    if not ok:
        raise SystemExit(f"the ledger did not verify: {first_bad}")


async def main(entries: int, runs: int, count: int, warmup: int = WARMUP) -> None:
    with tempfile.TemporaryDirectory(dir=Path.home()) as folder:
        store, gate, token = await setup(os.path.join(folder, "bench.db"))
        try:
            started = time.perf_counter()
            await fill(store, entries, runs)
            report = await store.verify_ledger()
            verified(report.ok, report.first_bad)
            print(f"filled {report.entries} entries in {report.runs} runs in {time.perf_counter() - started:.1f} s")
            await calls(gate, token, warmup)
            alone = await calls(gate, token, count)

            stop = asyncio.Event()
            took: list[float] = []

            async def verifying() -> None:
                while not stop.is_set():
                    began = time.perf_counter()
                    done = await store.verify_ledger()
                    took.append(time.perf_counter() - began)
                    verified(done.ok, done.first_bad)

            verifier = asyncio.ensure_future(verifying())
            try:
                await asyncio.sleep(0.05)  # the first verify has begun
                beside = await calls(gate, token, count)
            finally:
                stop.set()  # a failed call too: the verifier ends before the store closes
                await verifier
        finally:
            await store.close()
    print(f"speed probe {speed_probe():.1f} ms; {len(took)} verifies, one took {min(took):.2f}-{max(took):.2f} s")
    print(f"{'calls':<16} {'n':>5} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8}")
    for name, values in (("alone", alone), ("during verify", beside)):
        print(f"{name:<16} {len(values):>5} {pct(values, 50):>8.3f} {pct(values, 99):>8.3f} {max(values):>8.3f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--entries", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--smoke", action="store_true", help=f"tiny counts ({SMOKE}), the same code")
    args = parser.parse_args()
    if args.smoke:
        args.entries, args.runs, args.calls = SMOKE["entries"], SMOKE["runs"], SMOKE["calls"]
    warmup = SMOKE["warmup"] if args.smoke else WARMUP
    if min(args.entries, args.runs, args.calls) < 1:
        parser.error("--entries, --runs and --calls must be at least 1")
    asyncio.run(main(args.entries, args.runs, args.calls, warmup))
