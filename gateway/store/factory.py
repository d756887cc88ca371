"""Pick the store implementation from the database URL, in one place."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator

from gateway.clock import Clock
from gateway.domain.events import Outbox
from gateway.domain.refusals import RefusalLimits
from gateway.errors import ConfigError
from gateway.safeguards import ALL_ON, Safeguards
from gateway.store.ports import Store
from gateway.store.postgres import PostgresStore
from gateway.store.postgres.db import PostgresDatabase, is_postgres_url
from gateway.store.records import NO_ALERT_ROUTES, AlertRoutes
from gateway.store.sqlite import SQLiteStore
from gateway.store.sqlite.db import Database, ServeLock, sqlite_path


@contextlib.asynccontextmanager
async def open_store(
    url: str,
    *,
    clock: Clock,
    ledger_key: bytes,
    migrate: bool = True,
    refusal_limits: RefusalLimits | None = None,
    safeguards: Safeguards = ALL_ON,
    alert_routes: AlertRoutes = NO_ALERT_ROUTES,
    outbox: Outbox | None = None,
) -> AsyncIterator[Store]:
    """Open the store named by `url`: `sqlite:///PATH` or `postgresql://user@host:port/db`,
    applying due schema migrations unless `migrate` is off (then a store that needs any is refused).
    `refusal_limits`: `limits.refusals` (docs/limits.md); `safeguards`: the drill's switches;
    `alert_routes`: the webhooks that take each kind of the alerts the store raises itself;
    `outbox`: the webhooks that take ledger entries (gateway/store/sql/outbox.py).

    Raises: ConfigError for an unsupported URL; StoreError when the store cannot be opened (an
    unreachable server, a schema newer than this gateway).
    """
    store: Store
    if url.startswith("sqlite://"):
        store = SQLiteStore(
            sqlite_path(url),
            clock=clock,
            ledger_key=ledger_key,
            migrate=migrate,
            refusal_limits=refusal_limits,
            safeguards=safeguards,
            alert_routes=alert_routes,
            outbox=outbox,
        )
    elif is_postgres_url(url):
        store = PostgresStore(
            url,
            clock=clock,
            ledger_key=ledger_key,
            migrate=migrate,
            refusal_limits=refusal_limits,
            safeguards=safeguards,
            alert_routes=alert_routes,
            outbox=outbox,
        )
    else:
        raise ConfigError(
            f"unsupported database URL {url.split(':', 1)[0]}:...; use sqlite:///PATH or postgresql://..."
        )
    try:
        await store.open()
        yield store
    finally:
        await store.close()


@contextlib.contextmanager
def serving(url: str) -> Iterator[None]:
    """Held by `warrant serve` for its whole life: one server per SQLite file.

    A server marks every other process's open actions `unknown` at start-up, so two servers on
    one file would each declare the other's calls in flight lost. PostgreSQL takes no lock here:
    several replicas on one database are what it is for.

    Raises: ConfigError when another server already serves the file.
    """
    path = sqlite_path(url) if url.startswith("sqlite://") else ":memory:"
    if path == ":memory:":  # also every PostgreSQL URL
        yield
        return
    lock = ServeLock(path)
    lock.acquire()
    try:
        yield
    finally:
        lock.release()


async def migrate(url: str, *, apply: bool) -> list[int]:
    """`warrant migrate`: the store's due migrations, applied (`apply`) or only found.

    Returns the migrations applied (none: the schema is this gateway's). Raises: MigrationsDue
    (schema.py) when some are due and `apply` is off; StoreError when the store cannot be opened
    or its schema is newer than this gateway's; ConfigError for an unsupported URL.
    """
    db: Database | PostgresDatabase
    if url.startswith("sqlite://"):
        db = Database(sqlite_path(url), migrate=apply)
    elif is_postgres_url(url):
        db = PostgresDatabase(url, min_size=1, max_size=1, migrate=apply)
    else:
        raise ConfigError(
            f"unsupported database URL {url.split(':', 1)[0]}:...; use sqlite:///PATH or postgresql://..."
        )
    try:
        await db.open()
    finally:
        await db.close()
    return db.migrated
