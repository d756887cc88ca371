"""Pick the store implementation from the database URL, in one place."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator

from gateway.clock import Clock
from gateway.errors import ConfigError
from gateway.store.base import Store
from gateway.store.postgres import PostgresStore
from gateway.store.postgres_db import is_postgres_url
from gateway.store.sqlite import SQLiteStore
from gateway.store.sqlite_db import ServeLock, sqlite_path


@contextlib.asynccontextmanager
async def open_store(url: str, *, clock: Clock, ledger_key: bytes) -> AsyncIterator[Store]:
    """Open the store named by `url`: `sqlite:///PATH` or `postgresql://user@host:port/db`.

    Raises: ConfigError for an unsupported URL; StoreError when the store cannot be opened (an
    unreachable server, a schema newer than this gateway).
    """
    store: Store
    if url.startswith("sqlite://"):
        store = SQLiteStore(sqlite_path(url), clock=clock, ledger_key=ledger_key)
    elif is_postgres_url(url):
        store = PostgresStore(url, clock=clock, ledger_key=ledger_key)
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
