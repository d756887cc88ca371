"""The PostgreSQL store: the SQLite store's transaction functions, run on PostgreSQL.

Several gateway replicas share one database. Every decision is the same function as in the
SQLite store (gate, approvals, leases, lineage, progress, watch, ...), run in one SERIALIZABLE
transaction by `PostgresDatabase` (postgres_db.py) instead of one `BEGIN IMMEDIATE` transaction,
so every invariant those functions keep (one epoch, no overspend, single-use approvals, cancel
wins) holds across replicas. docs/postgres.md says why, and what differs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from gateway.clock import Clock
from gateway.store.postgres_db import POOL_MAX, PostgresDatabase, postgres_url
from gateway.store.reports import HealthReport
from gateway.store.sqlite import SQLiteStore
from gateway.store.sqlite_base import Conn

T = TypeVar("T")

__all__ = ["PostgresStore"]


class PostgresStore(SQLiteStore):
    """The store's parts (sqlite.py and the mixins it inherits) over a PostgreSQL pool.

    The parts are typed against sqlite3's connection and rows; what they get here is
    postgres_db's `Conn` and `Row`, which answer the same calls. The store contract suite, run
    against both back ends, is what holds the two to one behaviour.
    """

    def __init__(
        self,
        url: str,
        *,
        clock: Clock,
        ledger_key: bytes,
        process_id: str | None = None,
        pool_size: int = POOL_MAX,
    ) -> None:
        super().__init__(":memory:", clock=clock, ledger_key=ledger_key, process_id=process_id)
        self._db = PostgresDatabase(postgres_url(url), max_size=pool_size)  # type: ignore[assignment]

    async def _aside(self, fn: Callable[[Conn], T]) -> T:
        # A read is one REPEATABLE READ snapshot on a pooled connection of its own already.
        return await self._db.read(fn)

    async def health(self) -> HealthReport:
        await self._db.read(lambda conn: conn.execute("SELECT 1").fetchone())
        return {"store": {"status": "ok"}}
