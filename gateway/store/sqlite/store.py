"""The embedded store: one SQLite file, WAL, every decision in one `BEGIN IMMEDIATE` transaction.

The transactions are the shared ones (`SqlStore`, gateway/store/sql/); this back end gives them
its database (`Database`, db.py) and what only SQLite does: long reads on a read-only connection
of their own, one server per file (no other live process, no one to tell of a hard cancel), and
the checkpointer's health.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable
from typing import TypeVar

from gateway.clock import Clock
from gateway.domain.events import Outbox
from gateway.domain.refusals import RefusalLimits
from gateway.errors import StoreError
from gateway.safeguards import ALL_ON, Safeguards
from gateway.store.ports import CancelNotices
from gateway.store.records import NO_ALERT_ROUTES, AlertRoutes
from gateway.store.reports import HealthReport
from gateway.store.sql.connection import Conn
from gateway.store.sql.store import SqlStore
from gateway.store.sqlite.db import BUSY_TIMEOUT_S, Database

T = TypeVar("T")

__all__ = ["SQLiteStore"]


class SQLiteStore(SqlStore):
    """One SQLite file, WAL, every decision in one `BEGIN IMMEDIATE` transaction (gateway/store/sql/)."""

    _db: Database

    def __init__(
        self,
        path: str,
        *,
        clock: Clock,
        ledger_key: bytes,
        process_id: str | None = None,
        migrate: bool = True,
        refusal_limits: RefusalLimits | None = None,
        safeguards: Safeguards = ALL_ON,
        alert_routes: AlertRoutes = NO_ALERT_ROUTES,
        outbox: Outbox | None = None,
    ) -> None:
        """`migrate`: apply due schema migrations when opening; off, a store that needs any is refused.
        `refusal_limits`: `limits.refusals` (docs/limits.md); `safeguards`: the drill's switches
        (gateway/safeguards.py), read inside the admit and settle transactions."""
        super().__init__(
            Database(path, migrate=migrate),
            clock=clock,
            ledger_key=ledger_key,
            process_id=process_id,
            refusal_limits=refusal_limits,
            safeguards=safeguards,
            alert_routes=alert_routes,
            outbox=outbox,
        )

    async def _aside(self, fn: Callable[[Conn], T]) -> T:
        """Run `fn` as a long read: ONE read transaction on a read-only connection of its own, on a
        worker thread (an in-memory store has only the one it serves from). As `Database.read`, it
        sees every transaction submitted before it (queued read settles commit first), and one
        snapshot throughout; the gate's connection never waits for it (WAL); at most
        `LongReads.limit` run at once (gateway/store/long_reads.py).

        Raises: StoreError when SQLite cannot complete it."""
        path = self._db.path
        if path == ":memory:":
            return await self._db.read(fn)
        checkpointer = self._db._checkpointer
        await self._db.read(lambda conn: None)  # reads' settles still queued commit first

        def run() -> T:
            conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False)
            if checkpointer is not None:
                checkpointer.long_read(+1)
            try:
                conn.row_factory = sqlite3.Row
                conn.execute("PRAGMA query_only = ON")
                conn.execute("BEGIN")
                return fn(conn)
            finally:
                conn.close()  # ends the read transaction
                if checkpointer is not None:
                    checkpointer.long_read(-1)

        try:
            return await self._long_reads.run(lambda: asyncio.to_thread(run))
        except sqlite3.Error as exc:
            raise StoreError(f"the SQLite store could not complete a long read: {exc}") from exc

    def _process_alive(self, conn: Conn, process_id: str | None) -> bool:
        """On SQLite, no other gateway process that dispatched actions still runs: one `warrant
        serve` holds the file (`ServeLock`)."""
        return False

    def _announce_hard_cancel(self, conn: Conn, run_id: str) -> None:
        """SQLite has nobody to tell: one server per file, and Gateway.cancel aborts this process's
        calls itself."""

    def cancel_notices(self) -> CancelNotices | None:
        return None  # no other process can share the file

    async def health(self) -> HealthReport:
        await self._db.read(lambda conn: conn.execute("SELECT 1").fetchone())
        report: HealthReport = {"store": {"status": "ok"}}
        checkpointer = self._db._checkpointer  # a file store's WAL checkpoints (db.py)
        if checkpointer is not None:
            report["checkpointer"] = {"status": "ok" if checkpointer._thread.is_alive() else "down"}
        return report
