"""An audit never stalls the agents: verify, export, the audit query and backups are long reads,
on a connection and snapshot of their own, so a gate call made meanwhile does not wait for them.

Each test holds a long read open mid-way (a hook at the point where it reads, released by the
test) and shows the call finishing while the read is provably still in progress: ordering, not
timings (bench/verify_stall.py measures the times).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import anyio
import pytest

from gateway.store import ledger_scan
from gateway.store.backup import backup_sqlite
from gateway.store.long_reads import LongReads
from gateway.store.sql import record as sql_record
from gateway.store.sql import stats as sql_stats
from gateway.store.sqlite.db import Checkpointer
from tests.harness import LEDGER_KEY, TENANT, WAIT, SQLiteBackend, World, code_of

T = TypeVar("T")
pytestmark = pytest.mark.anyio


class Hold:
    """A hook that stops each thread reaching it until `release` (bounded), counting who is inside."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self._lock = threading.Lock()
        self._arrived = threading.Condition(self._lock)
        self.inside = 0
        self.most = 0  # the most threads held at once

    def __call__(self) -> None:
        with self._arrived:
            self.inside += 1
            self.most = max(self.most, self.inside)
            self._arrived.notify_all()
        try:
            assert self.release.wait(WAIT), "the test never released the long read"
        finally:
            with self._lock:
                self.inside -= 1

    async def until_inside(self, count: int = 1) -> None:
        def wait() -> bool:
            with self._arrived:
                return self._arrived.wait_for(lambda: self.inside >= count, WAIT)

        assert await asyncio.to_thread(wait), f"{count} long reads never reached the hook"


@contextmanager
def held(monkeypatch: pytest.MonkeyPatch, module: Any, name: str) -> Iterator[Hold]:
    """`module.name` wrapped: every call stops at the hook first."""
    hold = Hold()
    original: Callable[..., Any] = getattr(module, name)

    def hooked(*args: Any, **kwargs: Any) -> Any:
        hold()
        return original(*args, **kwargs)

    monkeypatch.setattr(module, name, hooked)
    try:
        yield hold
    finally:
        hold.release.set()


async def _read_call(world: World, token: str, q: str = "x") -> None:
    result = await world.call(token, "t__read", {"q": q})
    assert code_of(result) is None


async def call_while_held(world: World, hold: Hold, long_read: Awaitable[T], token: str) -> T:
    """Start `long_read`; once it is held mid-way, a read call must finish before it does."""
    task = asyncio.ensure_future(long_read)
    await hold.until_inside()
    await _read_call(world, token, "during the long read")
    assert not task.done()  # the call finished while the long read was still in progress
    hold.release.set()
    with anyio.fail_after(WAIT):
        return await task


async def test_a_read_call_completes_while_a_verify_is_still_running(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = await world.new_run()
    await _read_call(world, run.token)
    with held(monkeypatch, sql_record, "verify_run") as hold:
        report = await call_while_held(world, hold, world.store.verify_ledger(), run.token)
    assert report.ok


async def test_a_verify_reads_one_snapshot_while_calls_append_to_the_chain_it_is_reading(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = await world.new_run()
    for q in ("a", "b", "c"):
        await _read_call(world, run.token, q)
    await world.store.verify_ledger()  # the read settles, committed
    before = len(world.backend.events(run.run_id))
    with held(monkeypatch, sql_record, "verify_run") as hold:
        verify = asyncio.ensure_future(world.store.verify_ledger())
        await hold.until_inside()  # the runs and the head are read; the entries are not yet
        for i in range(5):
            await _read_call(world, run.token, f"appended {i}")  # entries and a new head, committed
        hold.release.set()
        with anyio.fail_after(WAIT):
            report = await verify
    # No false break (an entry past the head it read), and exactly the entries of its snapshot.
    assert (report.ok, report.first_bad, report.entries) == (True, None, before)
    after = await world.store.verify_ledger()
    assert after.ok and after.entries > before


async def test_verify_during_two_hundred_admitted_calls_never_reports_a_break(world: World) -> None:
    runs = [await world.new_run() for _ in range(4)]
    calls_done = asyncio.Event()
    reports = []

    async def caller(index: int) -> None:
        run = runs[index % len(runs)]
        for i in range(50):
            await _read_call(world, run.token, f"{index}-{i}")
            if i % 10 == 0:
                await world.call(run.token, "t__write", {"text": f"{index}-{i}"})

    async def verifier() -> None:
        while not calls_done.is_set():
            reports.append(await world.store.verify_ledger(TENANT))
            await asyncio.sleep(0)  # let the callers' next batch in

    with anyio.fail_after(WAIT * 6):
        verifying = asyncio.ensure_future(verifier())
        await asyncio.gather(*(caller(i) for i in range(4)))
        calls_done.set()
        await verifying
    assert reports, "no verify ran during the calls"
    assert [r.first_bad for r in reports if not r.ok] == []
    final = await world.store.verify_ledger()
    assert final.ok and final.runs == 4


async def test_concurrent_verifies_never_take_the_connections_a_call_needs(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On PostgreSQL each long read holds a pool connection (the test pool has four): however many
    verifies are asked for, a call still finds one."""
    run = await world.new_run()
    with held(monkeypatch, sql_record, "verify_run") as hold:
        verifies = [asyncio.ensure_future(world.store.verify_ledger()) for _ in range(6)]
        await hold.until_inside()
        await _read_call(world, run.token, "beside six verifies")
        assert not any(v.done() for v in verifies)
        hold.release.set()
        with anyio.fail_after(WAIT):
            reports = await asyncio.gather(*verifies)
    assert all(r.ok for r in reports)
    assert hold.most <= 2  # the bound on long reads held (gateway/store/long_reads.py)


async def test_a_read_call_completes_while_an_export_is_still_reading(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = await world.new_run()
    await world.call(run.token, "t__write", {"text": "exported"})
    with held(monkeypatch, sql_stats, "action_from_row") as hold:
        snapshot = await call_while_held(world, hold, world.store.export_snapshot(TENANT, run.run_id), run.token)
    assert [a.tool for a in snapshot.actions][:1] == ["t__write"]
    snapshot.actions.close()


async def test_an_audit_query_that_walks_the_table_does_not_hold_up_a_call(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gateway.store.sql import audit as sql_audit

    run = await world.new_run()
    await _read_call(world, run.token)
    with held(monkeypatch, sql_audit, "action_from_row") as hold:
        page = await call_while_held(world, hold, world.store.audit_actions(TENANT, tool="t__read"), run.token)
    assert page.items


async def test_a_backup_taken_while_the_store_serves_does_not_hold_up_a_call(
    tmp_path: Path, world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not isinstance(world.backend, SQLiteBackend):
        pytest.skip("PostgreSQL is backed up with pg_dump (gateway/store/backup.py)")
    from gateway.store import backup

    run = await world.new_run()
    await world.call(run.token, "t__write", {"text": "backed up"})
    url = f"sqlite:///{world.backend.path}"
    with held(monkeypatch, backup, "check_store") as hold:  # copied; its check of the copy is running
        taking = asyncio.to_thread(backup_sqlite, url, tmp_path / "b.db", LEDGER_KEY)
        check = await call_while_held(world, hold, taking, run.token)
    assert check.ok, check.problems


async def test_a_wal_restart_waits_for_a_long_read_to_end_instead_of_stalling_writes(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A RESTART checkpoint holds the write lock until every reader has left its snapshot; one
    started beside a long read would stall every write for as long as the read lasts."""
    if not isinstance(world.backend, SQLiteBackend):
        pytest.skip("SQLite's WAL checkpoints")
    checkpointer = world.store._db._checkpointer  # type: ignore[attr-defined]
    assert isinstance(checkpointer, Checkpointer)
    checkpointer._restart_at = 0  # every round restarts the WAL
    checkpointer._every = 1
    run = await world.new_run()
    with held(monkeypatch, sql_record, "verify_run") as hold:
        verify = asyncio.ensure_future(world.store.verify_ledger())
        await hold.until_inside()
        for i in range(20):
            await world.call(run.token, "t__write", {"text": f"beside the verify {i}"})
        assert not verify.done()
        hold.release.set()
        with anyio.fail_after(WAIT):
            assert (await verify).ok


async def test_a_long_read_keeps_its_slot_until_it_ends_even_when_its_caller_stops_waiting() -> None:
    reads = LongReads(1)
    release = asyncio.Event()
    began = asyncio.Event()
    started: list[str] = []

    async def read(name: str) -> str:
        started.append(name)
        began.set()
        await release.wait()
        return name

    first = asyncio.ensure_future(reads.run(lambda: read("first")))
    with anyio.fail_after(WAIT):
        await began.wait()
    first.cancel()  # the caller goes; its read goes on
    second = asyncio.ensure_future(reads.run(lambda: read("second")))
    for _ in range(5):
        await asyncio.sleep(0)
    assert started == ["first"] and reads.running == 1  # the second waits for the first's slot
    release.set()
    with anyio.fail_after(WAIT):
        assert await second == "second"
    assert first.cancelled() and reads.running == 0


async def test_verify_in_pages_of_two_entries_and_one_run_counts_every_entry_and_names_a_gap(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pages only bound memory: the answer is the one a single read gives, a gap at a page's
    edge included."""
    monkeypatch.setattr(ledger_scan, "ENTRIES_PER_PAGE", 2)
    monkeypatch.setattr(ledger_scan, "RUNS_PER_PAGE", 1)
    runs = [await world.new_run() for _ in range(3)]
    for run in runs:
        for text in ("a", "b", "c"):
            await world.call(run.token, "t__write", {"text": text})
    report = await world.store.verify_ledger()
    entries = sum(len(world.backend.events(run.run_id)) for run in runs)
    assert (report.ok, report.runs, report.entries) == (True, 3, entries)
    world.backend.delete_events(runs[1].run_id, 5)  # the first entry of the third page
    bad = (await world.store.verify_ledger()).first_bad
    assert bad is not None and (bad.run_id, bad.seq, bad.code) == (runs[1].run_id, 5, "entry_missing")
