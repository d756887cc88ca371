"""What only the SQLite store has: its file, its migrations, and the aiosqlite internals it leans on."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path

import aiosqlite
import pytest

from gateway.clock import ManualClock
from gateway.domain import parse_contract
from gateway.errors import StoreError
from gateway.store.sqlite import SQLiteStore
from gateway.store.sqlite.db import SCHEMA_VERSION, Database, _migrations
from tests.harness import LEDGER_KEY, OPS, TENANT, contract

pytestmark = pytest.mark.anyio


def _sql(path: Path, sql: str, *params: object) -> list[tuple[object, ...]]:
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        return conn.execute(sql, params).fetchall()
    finally:
        conn.close()


async def test_a_store_refuses_a_file_with_a_newer_schema_version(tmp_path: Path) -> None:
    path = tmp_path / "warrant.db"
    first = SQLiteStore(str(path), clock=ManualClock(), ledger_key=LEDGER_KEY)
    await first.open()
    try:
        # A newer gateway migrated the file while this one was running.
        _sql(path, "INSERT INTO schema_migrations VALUES (?, 0)", SCHEMA_VERSION + 1)
        second = SQLiteStore(str(path), clock=ManualClock(), ledger_key=LEDGER_KEY)
        with pytest.raises(StoreError) as refused:
            await second.open()
        assert refused.value.code == "store_unavailable"
        await second.close()
    finally:
        await first.close()


async def test_a_store_lacking_a_migration_below_its_newest_is_refused_not_skipped(tmp_path: Path) -> None:
    path = tmp_path / "warrant.db"
    store = SQLiteStore(str(path), clock=ManualClock(), ledger_key=LEDGER_KEY)
    await store.open()
    await store.close()
    # As if two branches were merged out of order: version 2 was never applied to this file.
    _sql(path, "DELETE FROM schema_migrations WHERE version = 2")
    again = SQLiteStore(str(path), clock=ManualClock(), ledger_key=LEDGER_KEY)
    with pytest.raises(StoreError) as refused:
        await again.open()
    assert refused.value.code == "store_unavailable"
    await again.close()


async def test_reopening_a_file_keeps_its_runs_and_applies_each_migration_once(tmp_path: Path) -> None:
    path = tmp_path / "warrant.db"
    clock = ManualClock()
    store = SQLiteStore(str(path), clock=clock, ledger_key=LEDGER_KEY)
    await store.open()
    run = await store.create_run(OPS, parse_contract(contract()))
    await store.close()

    again = SQLiteStore(str(path), clock=clock, ledger_key=LEDGER_KEY)
    await again.open()
    try:
        assert (await again.get_run(TENANT, run.run_id)).run_id == run.run_id
    finally:
        await again.close()
    versions = _sql(path, "SELECT version FROM schema_migrations ORDER BY version")
    assert versions == [(v,) for v, _ in _migrations()]  # each shipped one, once
    assert _sql(path, "PRAGMA journal_mode") == [("wal",)]


async def test_a_transaction_that_raises_leaves_nothing_behind(tmp_path: Path) -> None:
    db = Database(str(tmp_path / "warrant.db"))
    await db.open()
    try:

        def write_then_fail(conn: sqlite3.Connection) -> None:
            conn.execute("INSERT INTO blobs (sha256, body, created_at) VALUES ('x', 'y', 0)")
            raise ValueError("changed its mind")

        with pytest.raises(ValueError):
            await db.transaction(write_then_fail, durable=True)
        assert await db.read(lambda conn: conn.execute("SELECT COUNT(*) FROM blobs").fetchone()[0]) == 0
    finally:
        await db.close()


def _insert(sha: str) -> Callable[[sqlite3.Connection], None]:
    def tx(conn: sqlite3.Connection) -> None:
        conn.execute("INSERT INTO blobs (sha256, body, created_at) VALUES (?, 'b', 0)", (sha,))

    return tx


async def test_a_lazy_transaction_commits_as_soon_as_the_loop_is_free_not_after_a_delay(tmp_path: Path) -> None:
    # A served read's settle: nobody awaits it, and nothing else comes. It must commit while the
    # server waits for the next request, not in front of that request's admit.
    path = tmp_path / "warrant.db"
    db = Database(str(path))
    await db.open()
    try:
        future = db.submit(_insert("lazy"), durable=False, lazy=True)
        assert _sql(path, "SELECT COUNT(*) FROM blobs")[0][0] == 0  # queued, not run in the caller's step
        for _ in range(3):  # the flush's callback, its task's step: no timer involved
            await asyncio.sleep(0)
        assert future.done() and future.exception() is None
        assert _sql(path, "SELECT sha256 FROM blobs") == [("lazy",)]  # committed: another connection sees it
    finally:
        await db.close()


async def test_a_lazy_transaction_rides_in_the_batch_of_one_queued_before_the_loop_runs(tmp_path: Path) -> None:
    # In process, calls back to back: one read's settle and the next call's admit, one COMMIT.
    db = Database(str(tmp_path / "warrant.db"))
    await db.open()
    try:
        statements: list[str] = []
        raw: sqlite3.Connection = db._conn._conn  # type: ignore[union-attr]
        raw.set_trace_callback(statements.append)
        lazy = db.submit(_insert("settle"), durable=False, lazy=True)
        await db.transaction(_insert("admit"), durable=False)
        raw.set_trace_callback(None)
        assert lazy.done() and lazy.exception() is None
        assert [s for s in statements if s in ("BEGIN IMMEDIATE", "COMMIT")] == ["BEGIN IMMEDIATE", "COMMIT"]
        assert await db.read(lambda conn: conn.execute("SELECT COUNT(*) FROM blobs").fetchone()[0]) == 2
    finally:
        await db.close()


async def test_the_aiosqlite_internals_the_store_runs_its_transactions_through_are_still_there(
    tmp_path: Path,
) -> None:
    # Database._call runs a whole transaction as one call on aiosqlite's worker thread, through
    # `Connection._execute(fn, raw)` with the raw sqlite3 connection from `Connection._conn`.
    conn = await aiosqlite.connect(tmp_path / "pin.db")
    try:
        raw = conn._conn
        assert isinstance(raw, sqlite3.Connection)
        same, thread = await conn._execute(lambda c: (c is raw, threading.get_ident()), raw)
        assert same and thread != threading.get_ident()
    finally:
        await conn.close()


def test_process_ids_differ_for_stores_opened_at_once() -> None:
    from gateway.store.sql.base import default_process_id

    ids = {default_process_id() for _ in range(1000)}
    assert len(ids) == 1000  # not derived from the clock: one process opening two stores tells them apart


async def test_version_12_moves_an_existing_ledger_into_its_key_ordered_table_and_it_still_verifies(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "warrant.db"
    clock = ManualClock()
    # A file written by a gateway of version 11, with a ledger in it.
    monkeypatch.setattr("gateway.store.sqlite.db._migrations", lambda: [m for m in _migrations() if m[0] <= 11])
    old = SQLiteStore(str(path), clock=clock, ledger_key=LEDGER_KEY)
    await old.open()
    runs = [await old.create_run(OPS, parse_contract(contract())) for _ in range(3)]
    for run in runs:
        await old.acquire_lease(OPS, run.run_id, "worker-1", takeover=False)
    await old.close()
    before = _sql(path, "SELECT run_id, seq, type, at, body, prev_hash, hash FROM events ORDER BY run_id, seq")
    assert len(before) >= 6
    monkeypatch.undo()

    store = SQLiteStore(str(path), clock=clock, ledger_key=LEDGER_KEY)
    await store.open()
    try:
        report = await store.verify_ledger()
        assert report.ok, report
        await store.acquire_lease(OPS, runs[0].run_id, "worker-2", takeover=True)  # the chain goes on
        assert (await store.verify_ledger()).ok
    finally:
        await store.close()
    after = _sql(path, "SELECT run_id, seq, type, at, body, prev_hash, hash FROM events ORDER BY run_id, seq")
    assert set(before) <= set(after)  # every entry as it was, byte for byte
    assert len(after) > len(before)
    (table,) = _sql(path, "SELECT sql FROM sqlite_master WHERE name = 'events'")
    assert "WITHOUT ROWID" in str(table[0])
    indexes = {
        name for (name,) in _sql(path, "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'actions'")
    }
    assert "actions_open" not in indexes and {"actions_in_flight", "actions_unpurged"} <= indexes
