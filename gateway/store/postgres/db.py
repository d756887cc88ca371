"""The PostgreSQL connection pool and transaction runner: a `Database` (gateway/store/sql/connection.py).

The store's logic is written once, as synchronous transaction functions `tx(conn)` (the
parts in gateway/store/sql/). Here each one runs on a worker thread with a pooled psycopg connection,
inside ONE `SERIALIZABLE` transaction: PostgreSQL then guarantees that concurrent transactions,
from this process or another replica, have the effect of some serial order, which is what
SQLite's `BEGIN IMMEDIATE` gives the same functions by taking the write lock up front. A
transaction that PostgreSQL aborts for a serialization failure (40001) or a deadlock (40P01)
is rolled back and run again from the start, `MAX_ATTEMPTS` times at most, with jittered
backoff; past that the caller gets a retryable `StoreError`. A function must therefore touch
nothing outside the database before it returns (none do: ids and times are re-taken on a retry,
and the chains it holds are released by its own `finally`).

`Conn` is what the functions see: `execute(sql, params)` with SQLite's `?` placeholders, rows
readable by name and by position (`Row`), `rowcount`, `fetchone`, `fetchall`, iteration. A
statement written in a SQLite-only form is refused with a `StoreError` naming it, the first
time it runs, rather than approximated (see `sql`).

Durability: a transaction not marked durable commits with `synchronous_commit = off` (it
survives a crash of this process, not of the database server), like SQLite's `NORMAL`.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import logging
import random
import re
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from importlib import resources
from typing import Any, TypeVar

import psycopg
from psycopg.adapt import Dumper
from psycopg.pq import TransactionStatus
from psycopg_pool import ConnectionPool, PoolTimeout

from gateway.errors import ConfigError, StoreError
from gateway.store.schema import check_migrations

T = TypeVar("T")
log = logging.getLogger("warrant.store")

POOL_MIN = 2
POOL_MAX = 8  # connections, and worker threads: each runs one transaction at a time
CONNECT_TIMEOUT_S = 10.0
ACQUIRE_TIMEOUT_S = 30.0  # the longest a transaction waits for a free connection
# A transaction PostgreSQL aborted for serialization or a deadlock runs again, up to ESCALATE_AFTER
# times side by side with the others; then once more alone: it holds WRITERS_LOCK exclusively, which
# every writing transaction of every replica holds shared from its first statement, so it runs
# while no other writes (SQLite's write lock, for one transaction) and cannot be aborted for them.
ESCALATE_AFTER = 3
MAX_ATTEMPTS = ESCALATE_AFTER + 1
BACKOFF_FIRST_S = 0.001
BACKOFF_MAX_S = 0.05
# serialization_failure, deadlock_detected, and unique_violation: two transactions that both append
# entry N+1 to a run's chain (or insert one alert, one operation) are a write-write conflict, but
# PostgreSQL reports it as 23505, not 40001, when the loser never read that key. Run again, the
# loser reads the winner's row and decides on it, as it would have after SQLite's write lock. A
# unique violation that is the store's own bug fails the same way every time, after the last run.
RETRIED = frozenset({"40001", "40P01", "23505"})
# pg_advisory_xact_lock key ("WARN" in ASCII). Taken by the migrating transaction, so two
# replicas starting at once apply each migration once.
MIGRATION_LOCK = 0x5741_524E
# pg_advisory_lock key ("WARW" in ASCII). Shared by every writing transaction, exclusive for one
# that runs alone (ESCALATE_AFTER).
WRITERS_LOCK = 0x5741_5257

_BEGIN_DURABLE = b"BEGIN ISOLATION LEVEL SERIALIZABLE"
_BEGIN_LAZY = b"BEGIN ISOLATION LEVEL SERIALIZABLE; SET LOCAL synchronous_commit TO OFF"
_BEGIN_READ = b"BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"
# What a writing transaction sends after its BEGIN, in the same round trip (not when it runs alone).
_SHARE_WRITERS = b"; SELECT pg_advisory_xact_lock_shared(%d)" % WRITERS_LOCK
# Sent with BEGIN, in the same round trip: the transaction's time by the database's clock.
_DATABASE_NOW = b"; SELECT extract(epoch FROM transaction_timestamp())::float8"


def _migrations() -> list[tuple[int, str]]:
    folder = resources.files("gateway.store") / "migrations" / "postgres"
    found = []
    for entry in folder.iterdir():
        name = entry.name
        if name.endswith(".sql") and name[:4].isdigit():
            found.append((int(name[:4]), entry.read_text(encoding="utf-8")))
    return sorted(found)


SCHEMA_VERSION = _migrations()[-1][0]  # the newest migration this gateway ships


# -- statements ----------------------------------------------------------------------------------
# SQLite-only forms: each has a form both back ends accept, which the store uses instead.
_SQLITE_ONLY = {
    "INSERT OR ": "INSERT ... ON CONFLICT DO NOTHING / DO UPDATE",
    "REPLACE INTO": "INSERT ... ON CONFLICT DO UPDATE",
    "JSON_EXTRACT(": "reading the JSON in Python",
    "STRFTIME(": "a time passed from the store's clock",
    "JULIANDAY(": "a time passed from the store's clock",
    "DATETIME(": "a time passed from the store's clock",
    "ROWID": "an INTEGER PRIMARY KEY column (seq)",
    "PRAGMA": "nothing: PostgreSQL has no pragmas",
    "IFNULL(": "COALESCE(",
    " GLOB ": "LIKE",
    "CHANGES()": "the cursor's rowcount",
    "GROUP_CONCAT(": "reading the rows in Python",
}
# A string literal, a quoted identifier, a `?` placeholder, or a `%` (which psycopg would read as
# the start of a placeholder, inside literals too).
_TOKENS = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|\?|%")
_CACHE_MAX = 2048  # translated statements kept; the store has ~150 and the audit query a few dozen


@functools.lru_cache(maxsize=_CACHE_MAX)
def sql(statement: str) -> bytes:
    """A statement written for the store (`?` placeholders) as psycopg takes it (`%s`).

    Raises: StoreError for a SQLite-only construct (it would mean something else, or nothing,
    on PostgreSQL).
    """
    upper = _TOKENS.sub(lambda m: "''" if m.group(0).startswith("'") else m.group(0), statement).upper()
    for construct, instead in _SQLITE_ONLY.items():
        if construct in upper:
            raise StoreError(
                f"a store statement uses SQLite-only {construct.strip()!r}; write it with {instead}: "
                f"{statement[:120]!r}"
            )

    def replace(match: re.Match[str]) -> str:
        token = match.group(0)
        if token == "?":
            return "%s"
        if token == "%":
            return "%%"
        return token.replace("%", "%%")  # a literal: only its percent signs change

    return _TOKENS.sub(replace, statement).encode("utf-8")


class Row(tuple[Any, ...]):
    """One result row, by position (a tuple: slices and unpacking too) and by column name."""

    __slots__ = ()
    _names: dict[str, int] = {}  # noqa: RUF012  (set per column list by `_row_class`)

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, str):
            return tuple.__getitem__(self, self._names[key])
        return tuple.__getitem__(self, key)

    def keys(self) -> list[str]:
        return list(self._names)


@functools.lru_cache(maxsize=_CACHE_MAX)
def _row_class(names: tuple[str, ...]) -> type[Row]:
    # The first column of a name wins, as with sqlite3.Row (`SELECT *, x AS y`).
    index: dict[str, int] = {}
    for i, name in enumerate(names):
        index.setdefault(name, i)
    return type("Row", (Row,), {"_names": index, "__slots__": ()})


def _row_factory(cursor: psycopg.Cursor[Any]) -> Callable[[Sequence[Any]], Row]:
    description = cursor.description
    cls = _row_class(tuple(column.name for column in description or ()))
    return cls


class Cursor(psycopg.Cursor[Row]):
    """As a sqlite3 cursor: a statement that returns no rows fetches None, or nothing."""

    def fetchone(self) -> Row | None:
        return None if self.description is None else super().fetchone()

    def fetchall(self) -> list[Row]:
        return [] if self.description is None else super().fetchall()

    def __next__(self) -> Row:
        if self.description is None:
            raise StopIteration
        return super().__next__()


class _BoolAsInteger(Dumper):
    """Flags are INTEGER 0/1 in both schemas; a Python bool parameter is bound as one."""

    oid = psycopg.adapters.types["int8"].oid

    def dump(self, obj: Any) -> bytes:
        return b"1" if obj else b"0"


def _configure(pg: psycopg.Connection[Any]) -> None:
    pg.adapters.register_dumper(bool, _BoolAsInteger)


class Conn:
    """What a transaction function sees: `execute(sql, params)` as on a sqlite3 connection."""

    __slots__ = ("_pg",)

    def __init__(self, pg: psycopg.Connection[Row]) -> None:
        self._pg = pg

    def execute(self, statement: str, params: Iterable[Any] = ()) -> Cursor:
        return self._pg.execute(sql(statement), tuple(params))  # type: ignore[return-value]


# -- the database ----------------------------------------------------------------------------------
class PostgresDatabase:
    """A pool of psycopg connections and the threads that run transactions on them.

    The connection protocol's `Database`, as `sqlite/db.py`'s: `open`, `close`, `read`, `transaction`, `submit`.
    """

    def __init__(
        self,
        url: str,
        *,
        min_size: int = POOL_MIN,
        max_size: int = POOL_MAX,
        database_time: bool = False,
        local: Callable[[], float] = time.time,
        migrate: bool = True,
    ) -> None:
        self.url = url
        self._min = min_size
        # With database_time, each transaction learns its time from the database (`now`).
        self.database_time = database_time
        self._now = _TransactionTime()
        self.skew = 0.0  # the database's clock minus this process's, as last seen by a transaction
        self._local = local  # this process's clock
        self.migrate = migrate  # apply due migrations when opening (else refuse: `warrant migrate` applies them)
        self.migrated: list[int] = []  # the migrations the last open applied
        self._max = max_size
        self._pool: ConnectionPool[psycopg.Connection[Row]] | None = None
        self._threads: concurrent.futures.ThreadPoolExecutor | None = None
        self._submitted: set[asyncio.Future[Any]] = set()  # transactions nobody awaits, not yet done
        self.retries = 0  # transactions run again after a serialization failure or deadlock (all time)
        self.escalations = 0  # of those, the runs alone (ESCALATE_AFTER)
        self._repeating = threading.Lock()  # held by the one transaction of this process running again

    async def open(self) -> None:
        pool: ConnectionPool[psycopg.Connection[Row]] = ConnectionPool(
            self.url,
            min_size=self._min,
            max_size=self._max,
            kwargs={"autocommit": True, "row_factory": _row_factory, "cursor_factory": Cursor},
            configure=_configure,
            connection_class=psycopg.Connection[Row],
            timeout=ACQUIRE_TIMEOUT_S,
            open=False,
            name="warrant",
        )
        self._threads = concurrent.futures.ThreadPoolExecutor(self._max, thread_name_prefix="warrant-pg")
        try:
            # Migrate on a connection of its own first: a server that refuses it is reported at once
            # with its own words, where the pool would keep trying until its timeout.
            await self._on_thread(self._migrate)
            await self._on_thread(functools.partial(pool.open, wait=True, timeout=CONNECT_TIMEOUT_S))
            self._pool = pool
        except (PoolTimeout, psycopg.Error) as exc:
            await self.close(pool)
            raise StoreError(f"cannot open the PostgreSQL store at {redact(self.url)}: {exc}") from exc
        except BaseException:
            await self.close(pool)
            raise

    async def close(self, pool: ConnectionPool[Any] | None = None) -> None:
        if self._submitted:
            await asyncio.wait(list(self._submitted))  # transactions nobody awaits commit first
        pool = pool or self._pool
        self._pool = None
        if pool is not None:
            await self._on_thread(pool.close)
        if self._threads is not None:
            self._threads.shutdown(wait=False)
            self._threads = None

    async def _on_thread(self, fn: Callable[[], T]) -> T:
        if self._threads is None:
            raise StoreError("the store is not open")
        return await asyncio.get_running_loop().run_in_executor(self._threads, fn)

    async def read(self, fn: Callable[[Any], T]) -> T:
        """Run `fn` as one read-only transaction: one snapshot for all its statements.

        A read sees every transaction submitted before it (read settles nobody awaits): it waits
        for them first.
        """
        if self._submitted:
            await asyncio.wait(list(self._submitted))
        return await self._on_thread(functools.partial(self._run, fn, _BEGIN_READ))

    async def transaction(self, fn: Callable[[Any], T], *, durable: bool) -> T:
        """Run `fn` in one SERIALIZABLE transaction, run again on a serialization failure or deadlock.

        Any exception rolls back `fn`'s writes and propagates.

        Raises: StoreError when the database is unreachable, or the transaction could not
        commit within `MAX_ATTEMPTS` runs.
        """
        return await self._on_thread(functools.partial(self._run, fn, _BEGIN_DURABLE if durable else _BEGIN_LAZY))

    def submit(self, fn: Callable[[Any], T], *, durable: bool, lazy: bool = False) -> asyncio.Future[T]:
        """Start `fn` now; the future resolves when it has committed. Later reads wait for it.

        `lazy` changes nothing here: there is no batch to join, each transaction has its own
        connection and commit.
        """
        if self._pool is None:
            raise StoreError("the store is not open")
        future = asyncio.ensure_future(self.transaction(fn, durable=durable))
        self._submitted.add(future)
        future.add_done_callback(self._submitted.discard)
        return future

    # -- on a worker thread ------------------------------------------------------------------------
    def _run(self, fn: Callable[[Any], T], begin: bytes) -> T:
        pool = self._pool
        if pool is None:
            raise StoreError("the store is not open")
        delay = BACKOFF_FIRST_S
        attempt = 1
        while True:
            try:
                if attempt == 1:
                    with pool.connection() as pg:
                        return self._once(pg, fn, begin + _SHARE_WRITERS)
                if attempt <= ESCALATE_AFTER:
                    # A transaction run again waits for this process's other repeats: transactions
                    # on one hot run (a burst of calls) then retry one at a time instead of aborting
                    # each other again, and only other replicas' transactions are left to race with.
                    with self._repeating, pool.connection() as pg:
                        return self._once(pg, fn, begin + _SHARE_WRITERS)
                with pool.connection() as pg:
                    return self._alone(pg, fn, begin)
            except psycopg.Error as exc:
                if exc.sqlstate in RETRIED and attempt < MAX_ATTEMPTS:
                    self.retries += 1  # a statistic: a lost increment between threads costs nothing
                    time.sleep(random.uniform(0, delay))
                    delay = min(delay * 2, BACKOFF_MAX_S)
                    attempt += 1
                    continue
                raise _translate(exc, attempt) from exc
            except PoolTimeout as exc:
                raise StoreError(f"no PostgreSQL connection was free within {ACQUIRE_TIMEOUT_S:g} s") from exc

    def _alone(self, pg: psycopg.Connection[Row], fn: Callable[[Any], T], begin: bytes) -> T:
        """Run `fn` while no other writing transaction runs, on any replica: WRITERS_LOCK taken
        exclusively for the session before BEGIN, so the transaction's snapshot comes after every
        writer that held it has ended, and no writer starts until this one has."""
        self.escalations += 1  # a statistic, as `retries`
        pg.execute(b"SELECT pg_advisory_lock(%s)", (WRITERS_LOCK,))
        try:
            return self._once(pg, fn, begin)
        finally:
            pg.execute(b"SELECT pg_advisory_unlock(%s)", (WRITERS_LOCK,))

    def _migrate(self) -> None:
        with psycopg.connect(self.url, autocommit=True, connect_timeout=int(CONNECT_TIMEOUT_S)) as pg:
            pg.execute(b"BEGIN")
            try:
                pg.execute(b"SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
                pg.execute(
                    b"CREATE TABLE IF NOT EXISTS schema_migrations "
                    b"(version INTEGER PRIMARY KEY, applied_at DOUBLE PRECISION NOT NULL)"
                )
                applied = {row[0] for row in pg.execute(b"SELECT version FROM schema_migrations")}
                migrations = dict(_migrations())
                pending = check_migrations(applied, list(migrations), where=redact(self.url), apply=self.migrate)
                for version in pending:
                    pg.execute(migrations[version].encode("utf-8"))  # no parameters: several statements in one go
                    pg.execute(
                        b"INSERT INTO schema_migrations VALUES (%s, extract(epoch FROM clock_timestamp()))", (version,)
                    )
                pg.execute(b"COMMIT")
                self.migrated = pending
            except BaseException:
                _rollback(pg)
                raise

    def now(self) -> float | None:
        """The running transaction's time by the database's clock (on its thread), else None."""
        return self._now.at

    def _once(self, pg: psycopg.Connection[Row], fn: Callable[[Any], T], begin: bytes) -> T:
        if not self.database_time:
            return _once(pg, fn, begin)
        try:
            cursor = pg.execute(begin + _DATABASE_NOW)
            while cursor.nextset():
                pass  # BEGIN, SET and the lock come first: the time is the last statement's row
            row = cursor.fetchone()
        except BaseException:
            _rollback(pg)
            raise
        assert row is not None
        self._now.at = row[0]
        self.skew = row[0] - self._local()
        try:
            return _once(pg, fn, None)
        finally:
            self._now.at = None


class _TransactionTime(threading.local):
    def __init__(self) -> None:
        self.at: float | None = None


def _once(pg: psycopg.Connection[Row], fn: Callable[[Any], T], begin: bytes | None) -> T:
    """Run `fn` in a transaction: begun here with `begin`, or already begun (None)."""
    if begin is not None:
        pg.execute(begin)
    try:
        result = fn(Conn(pg))
        if pg.info.transaction_status is TransactionStatus.INERROR:
            # A statement failed and the function carried on: COMMIT would answer ROLLBACK, silently.
            raise StoreError("a store transaction went on after one of its statements failed")
        pg.execute(b"COMMIT")
    except BaseException:
        _rollback(pg)
        raise
    return result


def _rollback(pg: psycopg.Connection[Any]) -> None:
    if pg.info.transaction_status in (TransactionStatus.INTRANS, TransactionStatus.INERROR):
        try:
            pg.execute(b"ROLLBACK")
        except psycopg.Error:  # a broken connection: the pool discards it
            log.debug("rollback failed", exc_info=True)


def _translate(exc: psycopg.Error, attempt: int) -> Exception:
    if exc.sqlstate in RETRIED:
        return StoreError(f"the PostgreSQL store could not serialize the transaction in {attempt} attempts: {exc}")
    if isinstance(exc, psycopg.OperationalError | psycopg.InterfaceError):
        return StoreError(f"the PostgreSQL store could not complete the operation: {exc}")
    return StoreError(f"the PostgreSQL store refused a statement ({exc.sqlstate}): {exc}")


def redact(url: str) -> str:
    """The URL without its password, for messages and logs."""
    return re.sub(r"(://[^:/@]+):[^@]*@", r"\1:***@", url)


def is_postgres_url(url: str) -> bool:
    return url.startswith(("postgresql://", "postgres://"))


def postgres_url(url: str) -> str:
    """Raises: ConfigError for a URL that is not a PostgreSQL one."""
    if not is_postgres_url(url):
        raise ConfigError(f"not a PostgreSQL URL: {redact(url)!r}")
    return url
