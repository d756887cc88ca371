"""Group commit in the SQLite store: batched transactions keep each one's all-or-nothing."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from gateway.store.sqlite import Database

pytestmark = pytest.mark.anyio


async def test_a_failing_transaction_in_a_batch_rolls_back_only_its_own_writes(tmp_path: Path) -> None:
    db = Database(str(tmp_path / "g.db"))
    await db.open()
    try:
        await db.transaction(lambda c: c.execute("CREATE TABLE t (k TEXT PRIMARY KEY, n INTEGER)"), durable=False)

        def put(key: str, fail: bool = False) -> Callable[[sqlite3.Connection], str]:
            def fn(conn: sqlite3.Connection) -> str:
                conn.execute("INSERT INTO t VALUES (?, 1)", (key,))
                if fail:
                    raise ValueError(key)
                return key

            return fn

        jobs = [db.transaction(put(f"k{i}", fail=i % 3 == 0), durable=i % 2 == 0) for i in range(12)]
        results = await asyncio.gather(*jobs, return_exceptions=True)
        rows = await db.read(lambda c: sorted(r[0] for r in c.execute("SELECT k FROM t")))
    finally:
        await db.close()
    failed = {f"k{i}" for i in range(12) if i % 3 == 0}
    assert {str(r) for r in results if isinstance(r, ValueError)} == failed
    assert sorted(r for r in results if isinstance(r, str)) == sorted(set(rows))
    assert set(rows) == {f"k{i}" for i in range(12)} - failed


async def test_later_transactions_in_a_batch_see_the_earlier_ones(tmp_path: Path) -> None:
    db = Database(str(tmp_path / "g.db"))
    await db.open()
    try:
        await db.transaction(lambda c: c.execute("CREATE TABLE c (n INTEGER)"), durable=False)
        await db.transaction(lambda c: c.execute("INSERT INTO c VALUES (0)"), durable=False)

        def bump(conn: sqlite3.Connection) -> int:
            (n,) = conn.execute("SELECT n FROM c").fetchone()
            conn.execute("UPDATE c SET n = ?", (n + 1,))
            return int(n) + 1

        seen = await asyncio.gather(*(db.transaction(bump, durable=False) for _ in range(50)))
        final = await db.read(lambda c: c.execute("SELECT n FROM c").fetchone()[0])
    finally:
        await db.close()
    assert sorted(seen) == list(range(1, 51))
    assert final == 50
