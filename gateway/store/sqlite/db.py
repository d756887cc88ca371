"""The SQLite connection: pragmas, migrations, the transaction runner and the exclusive-serve lock.

Every transaction runs as ONE function call: `BEGIN IMMEDIATE`, the reads it decides on, its
writes, `COMMIT`. Batches that may wait (an fsync, another process's write lock) run on
aiosqlite's worker thread, one hop per batch; a batch that cannot wait runs on the event loop's
thread, with no hop at all (`Database._run_here`). `BEGIN IMMEDIATE` takes SQLite's write lock at
the start, so two processes sharing the file serialize on the database, not on anything in memory.

Durability: WAL mode. A transaction that writes a write-action's intent or outcome runs with
`synchronous=FULL` (its commit is fsynced before dispatch proceeds); others with `NORMAL`, which
survives a process crash but not a power cut (WAL preserves order, so a later FULL commit
carries every earlier one to disk).
"""

from __future__ import annotations

import asyncio
import fcntl
import functools
import logging
import os
import sqlite3
import threading
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, TypeVar

import aiosqlite

from gateway.errors import ConfigError, StoreError
from gateway.store.schema import check_migrations

T = TypeVar("T")
log = logging.getLogger("warrant.store")

BUSY_TIMEOUT_S = 30.0
LOOP_BATCH_MAX = 64  # the most transactions a batch run on the event loop's thread may hold
# Prepared statements kept per connection (Python's default is 128). The store has about 110
# statements and the audit query one per combination of filters; a hot statement pushed out of
# the cache is prepared again, at tens of microseconds, on the next call that uses it.
CACHED_STATEMENTS = 512
WAL_RESTART_BYTES = 64 * 1024 * 1024  # a WAL growing past this size is restarted (see Checkpointer)


def _migrations() -> list[tuple[int, str]]:
    folder = resources.files("gateway.store") / "migrations" / "sqlite"
    found = []
    for entry in folder.iterdir():
        name = entry.name
        if name.endswith(".sql") and name[:4].isdigit():
            found.append((int(name[:4]), entry.read_text(encoding="utf-8")))
    return sorted(found)


SCHEMA_VERSION = _migrations()[-1][0]  # the newest migration this gateway ships


class Database:
    def __init__(self, path: str, *, migrate: bool = True) -> None:
        """`migrate`: apply due migrations when opening (else refuse to open; `warrant migrate` applies them)."""
        self.path = path
        self.migrate = migrate
        self.migrated: list[int] = []  # the migrations the last open applied
        self._conn: aiosqlite.Connection | None = None
        self._durable: bool | None = None
        self._queue: list[_Job] = []
        self._flusher: asyncio.Task[None] | None = None
        self._last: asyncio.Future[Any] | None = None  # the newest queued transaction
        self._checkpointer: Checkpointer | None = None
        self._soon: asyncio.Handle | None = None  # the flush of lazy transactions, once the loop is free
        self._on_thread = 0  # calls handed to the database thread and not yet returned
        self._busy_ms: int | None = None  # the connection's busy timeout, as last set

    async def open(self) -> None:
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        try:
            # Used from the event loop's thread too (`_run_here`), never from two threads at once.
            self._conn = await aiosqlite.connect(
                self.path,
                timeout=BUSY_TIMEOUT_S,
                isolation_level=None,
                check_same_thread=False,
                cached_statements=CACHED_STATEMENTS,
            )
            self._conn.row_factory = sqlite3.Row
            await self._call(self._setup)
            if self.path != ":memory:":
                self._checkpointer = Checkpointer(self.path)
                await self._call(lambda conn: conn.execute("PRAGMA wal_autocheckpoint=0"))
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open the SQLite store at {self.path}: {exc}") from exc

    async def close(self) -> None:
        if self._soon is not None:
            self._soon.cancel()
            self._soon = None
        self._kick()
        if self._flusher is not None and not self._flusher.done():
            await asyncio.shield(self._flusher)  # queued transactions (read settles) commit first
        if self._checkpointer is not None:
            self._checkpointer.stop()
            self._checkpointer = None
        if self._conn is not None:
            await self._conn.close()
            self._conn = None

    def _setup(self, conn: sqlite3.Connection) -> None:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA foreign_keys=ON")
        conn.execute(f"PRAGMA busy_timeout={int(BUSY_TIMEOUT_S * 1000)}")
        conn.execute("PRAGMA synchronous=FULL")
        conn.execute(f"PRAGMA journal_size_limit={WAL_RESTART_BYTES}")  # the WAL's size after a restart
        self._durable = True
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.execute("CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at REAL)")
            applied = {row[0] for row in conn.execute("SELECT version FROM schema_migrations")}
            migrations = dict(_migrations())
            pending = check_migrations(applied, list(migrations), where=self.path, apply=self.migrate)
            for version in pending:
                for statement in _statements(migrations[version]):
                    conn.execute(statement)
                conn.execute("INSERT INTO schema_migrations VALUES (?, strftime('%s','now'))", (version,))
            conn.execute("COMMIT")
            self.migrated = pending
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    async def _call(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        if self._conn is None:
            raise StoreError("the store is not open")
        conn = self._conn
        # aiosqlite's `_execute` runs a callable on its worker thread, which owns the sqlite3
        # connection; it is what every public aiosqlite method uses. We need it to run a whole
        # transaction in one hop. Pinned by tests/store/test_sqlite_specific.py.
        raw: sqlite3.Connection = conn._conn

        def patiently(conn: sqlite3.Connection) -> T:
            self._wait_when_busy(conn, BUSY_TIMEOUT_S)
            return fn(conn)

        self._on_thread += 1
        try:
            return await conn._execute(patiently, raw)  # type: ignore[no-untyped-call,no-any-return]
        except sqlite3.OperationalError as exc:
            raise StoreError(f"the SQLite store could not complete the operation: {exc}") from exc
        finally:
            self._on_thread -= 1

    def _sync(self, conn: sqlite3.Connection, *, durable: bool) -> None:
        """FULL: the next COMMIT is fsynced; NORMAL: it is not (outside a transaction only)."""
        if durable is not self._durable:
            conn.execute("PRAGMA synchronous=FULL" if durable else "PRAGMA synchronous=NORMAL")
            self._durable = durable

    def _wait_when_busy(self, conn: sqlite3.Connection, seconds: float) -> None:
        """How long a statement waits for another process's write lock (a PRAGMA, when it changes)."""
        ms = int(seconds * 1000)
        if ms != self._busy_ms:
            conn.execute(f"PRAGMA busy_timeout={ms}")
            self._busy_ms = ms

    def _run_here(self, batch: list[_Job]) -> list[tuple[bool, Any]] | None:
        """Run a batch on the event loop's thread, or None when it must go to the database thread.

        Only a batch that never waits: nothing in it is fsynced (no durable job), nothing else is
        using the connection, and the write lock is free now (the busy timeout is zero here, so a
        lock held by another process is a refusal, not a wait). Such a batch is CPU work of a few
        hundred microseconds; running it here saves two thread wake-ups, which on a VM cost about
        as much as the batch itself.
        """
        if self._on_thread or len(batch) > LOOP_BATCH_MAX or any(job.durable for job in batch):
            return None
        assert self._conn is not None
        conn: sqlite3.Connection = self._conn._conn
        try:
            self._sync(conn, durable=False)
            self._wait_when_busy(conn, 0)
            try:
                conn.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError:
                return None  # another process is writing: wait for it on the database thread
            return self._run_batch(conn, batch=batch, begun=True)
        except sqlite3.OperationalError as exc:
            raise StoreError(f"the SQLite store could not complete the operation: {exc}") from exc

    async def read(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run `fn` as a read (a deferred transaction of its own statements).

        A read sees every transaction submitted before it, including those nobody awaits (read
        settles): it waits for the last one queued before it to commit.
        """
        last = self._last
        if last is not None and not last.done():
            self._kick()
            await asyncio.wait([last])
        return await self._call(fn)

    async def transaction(self, fn: Callable[[sqlite3.Connection], T], *, durable: bool) -> T:
        """Run `fn` inside BEGIN IMMEDIATE ... COMMIT; any exception rolls back `fn`'s writes and propagates.

        Group commit: transactions asked for while another batch is on the database thread are
        run together in the next batch, one BEGIN IMMEDIATE ... COMMIT around them, each inside
        its own SAVEPOINT so that one failing function rolls back only its own writes. A function
        sees the writes of those before it in the batch, exactly as if they had committed first;
        its result is delivered only after the batch's COMMIT. A batch is fsynced (FULL) when any
        of its functions asked for durability.
        """
        return await self.submit(fn, durable=durable)

    def submit(self, fn: Callable[[sqlite3.Connection], T], *, durable: bool, lazy: bool = False) -> asyncio.Future[T]:
        """Queue `fn` for the next batch; the future resolves after its batch commits.

        `lazy`: nobody waits for it (a read's settle). It commits once the task that queued it
        yields to the event loop, in one batch with whatever was queued by then: in process, when
        calls follow back to back, the next call's admit; when served, the caller's answer is
        written first (the fast path does not yield between the settle and the write), so the
        settle commits while the loop waits for the next request instead of in front of its admit.
        """
        if self._conn is None:
            raise StoreError("the store is not open")
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        self._queue.append(_Job(fn, durable, future))
        self._last = future
        if not lazy:
            self._kick()
        elif self._soon is None and (self._flusher is None or self._flusher.done()):
            self._soon = loop.call_soon(self._lazy_due)
        return future

    def _lazy_due(self) -> None:
        self._soon = None
        self._kick()

    def _kick(self) -> None:
        # A pending flush callback stays pending: when it runs with nothing queued it does nothing.
        if self._queue and (self._flusher is None or self._flusher.done()):
            self._flusher = asyncio.get_running_loop().create_task(self._flush())

    async def _flush(self) -> None:
        while self._queue:
            batch, self._queue = self._queue, []
            try:
                outcomes = self._run_here(batch)
                if outcomes is None:
                    outcomes = await self._call(functools.partial(self._run_batch, batch=batch))
            except BaseException as exc:
                error = exc if isinstance(exc, Exception) else StoreError("the store was closed")
                for job in batch:
                    if not job.future.done():
                        job.future.set_exception(error)
                if not isinstance(exc, Exception):
                    raise
                continue
            for job, (ok, value) in zip(batch, outcomes, strict=True):
                if job.future.done():
                    continue
                if ok:
                    job.future.set_result(value)
                else:
                    job.future.set_exception(value)

    def _run_batch(self, conn: sqlite3.Connection, *, batch: list[_Job], begun: bool = False) -> list[tuple[bool, Any]]:
        if not begun:
            self._sync(conn, durable=any(job.durable for job in batch))
        single = len(batch) == 1
        outcomes: list[tuple[bool, Any]] = []
        if not begun:
            conn.execute("BEGIN IMMEDIATE")
        try:
            for job in batch:
                if not single:
                    conn.execute("SAVEPOINT job")
                try:
                    outcomes.append((True, job.fn(conn)))
                except Exception as exc:
                    if single:
                        raise
                    conn.execute("ROLLBACK TO job")
                    outcomes.append((False, _translate(exc)))
                if not single:
                    conn.execute("RELEASE job")
            conn.execute("COMMIT")
        except Exception as exc:
            conn.execute("ROLLBACK")
            if single and not isinstance(exc, sqlite3.OperationalError):
                return [(False, exc)]
            raise
        if self._checkpointer is not None:
            self._checkpointer.committed()
        return outcomes


class Checkpointer:
    """Moves WAL pages into the database file on a thread of its own, off the commit path.

    SQLite's automatic checkpoint runs inside whichever COMMIT crosses the threshold, which put
    ~20 ms spikes into one call in every few dozen. Here the serving connection never checkpoints;
    this thread's own connection does a PASSIVE checkpoint (it never blocks writers) every
    `every` commits or `interval` seconds, and a TRUNCATE one when the store closes.

    A PASSIVE checkpoint alone never lets the WAL start over while the server writes without a
    pause: SQLite rewinds the WAL only for a writer that begins when every frame is already in
    the database file, and under steady load a new commit always lands first. The WAL then grows
    by every commit's pages (about 33 KB per read) for as long as the load lasts. So once it has
    grown past `restart_at` bytes, the thread also runs a RESTART checkpoint: it holds the write
    lock while it copies the few frames the PASSIVE one left and syncs the database file, and the
    next commit writes from the start of the WAL again, cutting the file back to `restart_at`
    (the serving connection's `journal_size_limit`). Writers wait for it on the database thread
    (the event loop never waits: see `Database._run_here`).

    A RESTART checkpoint also waits for every reader to move to the newest snapshot, holding the
    write lock meanwhile; a long read (a verify over a million entries, an export) holds its
    snapshot for seconds, so a RESTART then would stall every writer until it ended. While a
    long read runs (`long_read`), only PASSIVE checkpoints run and the WAL may grow past
    `restart_at`; the first round after the last one ends restarts it. A reader in another process
    (`warrant backup` of a file whose WAL is past `restart_at`) is not known here: a RESTART then
    waits for it, and writers with it (docs/operations.md, "Audits and backups beside the agents").
    """

    def __init__(
        self, path: str, *, every: int = 500, interval: float = 1.0, restart_at: int = WAL_RESTART_BYTES
    ) -> None:
        self._path = path
        self._every = every
        self._interval = interval
        self._restart_at = restart_at
        self._commits = 0
        self._long_reads = 0  # long reads holding a snapshot now (other threads: under _lock)
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stopping = False
        self._thread = threading.Thread(target=self._run, name="warrant-checkpoint", daemon=True)
        self._thread.start()

    def committed(self) -> None:
        self._commits += 1
        if self._commits % self._every == 0:
            self._wake.set()

    def long_read(self, delta: int) -> None:
        """A long read's snapshot begins (+1) or ends (-1)."""
        with self._lock:
            self._long_reads += delta

    def stop(self) -> None:
        self._stopping = True
        self._wake.set()
        self._thread.join(timeout=BUSY_TIMEOUT_S)

    def _run(self) -> None:
        conn = sqlite3.connect(self._path, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False)
        try:
            while not self._stopping:
                self._wake.wait(self._interval)
                self._wake.clear()
                self._checkpoint(conn, "PASSIVE")
                with self._lock:  # a long read begins after the RESTART, never while it waits for readers
                    if self._wal_bytes() > self._restart_at and not self._long_reads:
                        self._checkpoint(conn, "RESTART")
            self._checkpoint(conn, "TRUNCATE")
        finally:
            conn.close()

    def _wal_bytes(self) -> int:
        try:
            return os.path.getsize(self._path + "-wal")
        except OSError:
            return 0

    @staticmethod
    def _checkpoint(conn: sqlite3.Connection, mode: str) -> None:
        try:
            conn.execute(f"PRAGMA wal_checkpoint({mode})").fetchone()
        except sqlite3.Error as exc:  # busy: the next round catches up
            log.debug("checkpoint %s did not complete: %s", mode, exc)


@dataclass
class _Job:
    fn: Callable[[sqlite3.Connection], Any]
    durable: bool
    future: asyncio.Future[Any]


def _translate(exc: Exception) -> Exception:
    if isinstance(exc, sqlite3.OperationalError):
        return StoreError(f"the SQLite store could not complete the operation: {exc}")
    return exc


def _statements(script: str) -> list[str]:
    """Split a migration into statements (a trigger's body, `;` and all, stays one).

    Migrations keep `--` out of string literals.
    """
    statements: list[str] = []
    pending = ""
    for line in script.splitlines():
        pending += line.split("--", 1)[0] + "\n"
        if sqlite3.complete_statement(pending):
            statements.append(pending.strip().rstrip(";").strip())
            pending = ""
    if pending.strip():
        raise StoreError(f"a migration ends inside a statement: {pending.strip()[:80]!r}")
    return [s for s in statements if s]


def sqlite_path(url: str) -> str:
    """`sqlite:///relative.db`, `sqlite:////abs/path.db`, or `sqlite://:memory:` (tests only)."""
    if not url.startswith("sqlite://"):
        raise ConfigError(f"not a sqlite URL: {url!r}")
    rest = url[len("sqlite://") :]
    if rest == ":memory:":
        return ":memory:"
    if not rest.startswith("/"):
        raise ConfigError(f"write a sqlite URL as sqlite:///relative.db or sqlite:////absolute.db, not {url!r}")
    return rest[1:]  # "/warrant.db" -> "warrant.db"; "//abs/w.db" -> "/abs/w.db"


class ServeLock:
    """One `warrant serve` per SQLite file: an exclusive flock on `<file>.lock`, held while serving.

    Other processes (tests, the CLI's offline commands) may still open the store; only a second
    server is refused, because a server marks every other process's open actions `unknown`.
    """

    def __init__(self, db_path: str) -> None:
        self.path = Path(db_path + ".lock")
        self._fd: int | None = None

    def acquire(self) -> None:
        """Raises: ConfigError when another server holds the file."""
        self.path.parent.mkdir(parents=True, exist_ok=True)  # as the store's own open does
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            holder = self.path.read_text(encoding="utf-8").strip() or "another process"
            raise ConfigError(
                f"another warrant serve ({holder}) already serves {self.path.with_suffix('')}; "
                "one server per SQLite file (use PostgreSQL for several replicas)"
            ) from None
        os.ftruncate(fd, 0)
        os.write(fd, f"pid {os.getpid()}".encode())
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None
