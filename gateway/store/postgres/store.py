"""The PostgreSQL store: the shared transaction functions (gateway/store/sql/), run on PostgreSQL.

Several gateway replicas share one database. Every decision is the same function as on
SQLite (gate, approvals, leases, lineage, progress, watch, ...), run in one SERIALIZABLE
transaction by `PostgresDatabase` (db.py) instead of one `BEGIN IMMEDIATE` transaction,
so every invariant those functions keep (one epoch, no overspend, single-use approvals, cancel
wins) holds across replicas. docs/postgres.md says why, and what differs.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections.abc import Callable
from typing import Any, TypeVar

import psycopg

from gateway.clock import Clock
from gateway.domain.admission import CallFacts
from gateway.domain.events import Outbox
from gateway.domain.refusals import RefusalLimits
from gateway.errors import StoreError
from gateway.safeguards import ALL_ON, Safeguards
from gateway.store.long_reads import LONG_READS_MAX, LongReads
from gateway.store.ports import CancelNotices
from gateway.store.postgres.db import CONNECT_TIMEOUT_S, POOL_MAX, PostgresDatabase, postgres_url, redact
from gateway.store.postgres.notices import CANCEL_CHANNEL, listen
from gateway.store.records import NO_ALERT_ROUTES, AdmitResult, Admitted, AlertRoutes, Intent
from gateway.store.reports import HealthReport
from gateway.store.sql.connection import Conn
from gateway.store.sql.store import SqlStore

T = TypeVar("T")
log = logging.getLogger("warrant.store")

__all__ = ["PostgresStore"]


class PostgresStore(SqlStore):
    """The shared store (gateway/store/sql/) over a PostgreSQL pool: the functions run on
    db.py's `Conn` and `Row`, which answer the calls of the connection protocol
    (gateway/store/sql/connection.py). The store contract suite, run against both back ends, is
    what holds the two to one behaviour.
    """

    _db: PostgresDatabase

    def __init__(
        self,
        url: str,
        *,
        clock: Clock,
        ledger_key: bytes,
        process_id: str | None = None,
        pool_size: int = POOL_MAX,
        database_time: bool = True,
        replica_liveness: bool = True,
        migrate: bool = True,
        refusal_limits: RefusalLimits | None = None,
        safeguards: Safeguards = ALL_ON,
        alert_routes: AlertRoutes = NO_ALERT_ROUTES,
        outbox: Outbox | None = None,
    ) -> None:
        """`database_time`: the store's transactions take their time from the database's clock
        (tests that move an injected clock by hand turn it off). `replica_liveness`: another
        process's admitted actions are orphans only once that process is gone (off: every other
        process is taken for gone, as with SQLite's one server per file)."""
        self._url = postgres_url(url)
        db = PostgresDatabase(
            self._url, max_size=pool_size, database_time=database_time, local=clock.now, migrate=migrate
        )
        super().__init__(
            db,
            clock=DatabaseClock(db, clock) if database_time else clock,
            ledger_key=ledger_key,
            process_id=process_id,
            refusal_limits=refusal_limits,
            safeguards=safeguards,
            outbox=outbox,
            # Long reads (verify, export, audit) never hold more than half the pool.
            long_reads=LongReads(max(1, min(LONG_READS_MAX, pool_size // 2))),
            alert_routes=alert_routes,
        )
        self._alive: psycopg.Connection[Any] | None = None
        self._liveness = replica_liveness
        # A read's settle is not awaited (settle_soon); on PostgreSQL it runs beside whatever comes
        # next, and the same run's next admit would conflict with it on the run's row. That admit
        # waits for it instead: reads admitted, by action, and the settles each run has in flight.
        self._reads: dict[str, str] = {}
        self._settling: dict[str, set[asyncio.Future[Any]]] = {}

    async def open(self) -> None:
        await super().open()
        if not self._liveness:
            return
        try:
            self._alive = await asyncio.to_thread(self._hold_liveness)
        except psycopg.Error as exc:
            await super().close()
            raise StoreError(f"cannot open the PostgreSQL store at {redact(self._url)}: {exc}") from exc

    async def close(self) -> None:
        try:
            await super().close()
        finally:
            alive, self._alive = self._alive, None
            if alive is not None:
                await asyncio.to_thread(alive.close)  # its session ends: the lock is free, this process is gone

    def _hold_liveness(self) -> psycopg.Connection[Any]:
        """This process is alive while its session holds its advisory lock (released with the session)."""
        conn = psycopg.connect(self._url, autocommit=True, connect_timeout=int(CONNECT_TIMEOUT_S))
        taken = conn.execute("SELECT pg_try_advisory_lock(%s)", (liveness_key(self._process_id),)).fetchone()
        if taken is None or not taken[0]:
            # Another store of the same process id holds it (two stores in one process: tests); the
            # process is alive while that one is open.
            log.warning("process id %s is held alive by another store already", self._process_id)
        return conn

    def _process_alive(self, conn: Conn, process_id: str | None) -> bool:
        """Another replica is alive while its session holds its liveness lock: a lock this
        transaction can take belongs to nobody (and is released at its commit)."""
        if process_id is None or not self._liveness:
            return False
        taken = conn.execute("SELECT pg_try_advisory_xact_lock(?)", (liveness_key(process_id),)).fetchone()
        return not taken[0]

    async def admit(self, intent: Intent, facts: CallFacts) -> AdmitResult:
        settling = self._settling.get(intent.run_id)
        if settling:
            await asyncio.wait(set(settling))  # its failure is logged where it was submitted
        result = await super().admit(intent, facts)
        if isinstance(result, Admitted) and intent.effect == "read":
            self._reads[result.action.action_id] = intent.run_id
        return result

    def _settling_soon(self, action_id: str, future: asyncio.Future[Any]) -> None:
        run_id = self._reads.pop(action_id, None)
        if run_id is None:
            return
        settling = self._settling.setdefault(run_id, set())
        settling.add(future)

        def settled(done: asyncio.Future[Any]) -> None:
            settling.discard(done)
            if not settling and self._settling.get(run_id) is settling:
                del self._settling[run_id]

        future.add_done_callback(settled)

    def _announce_hard_cancel(self, conn: Conn, run_id: str) -> None:
        # Delivered at commit, once, to every replica listening (notices.py).
        conn.execute("SELECT pg_notify(?, ?)", (CANCEL_CHANNEL, run_id))

    def cancel_notices(self) -> CancelNotices:
        return listen(self._url)

    async def _aside(self, fn: Callable[[Conn], T]) -> T:
        # A read is one REPEATABLE READ READ ONLY snapshot on a pooled connection of its own
        # already; the bound keeps long reads from taking the connections the gate needs.
        return await self._long_reads.run(lambda: self._db.read(fn))

    async def health(self) -> HealthReport:
        await self._db.read(lambda conn: conn.execute("SELECT 1").fetchone())
        return {"store": {"status": "ok"}}


def liveness_key(process_id: str) -> int:
    """The advisory lock key that says a gateway process is alive (64 bits of a hash of its id)."""
    digest = hashlib.sha256(b"warrant.process:" + process_id.encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


class DatabaseClock:
    """The store's time: inside a transaction, the database's clock at the transaction's start,
    so every replica decides expiries on one clock and a replica whose own clock is wrong cannot
    extend a lease or an approval. Outside one, this process's clock corrected by the skew the
    last transaction saw."""

    def __init__(self, db: PostgresDatabase, local: Clock) -> None:
        self._db = db
        self._local = local

    def now(self) -> float:
        at = self._db.now()
        return at if at is not None else self._local.now() + self._db.skew
