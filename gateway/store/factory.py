"""Pick the store implementation from the database URL, in one place."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from gateway.clock import Clock
from gateway.errors import ConfigError
from gateway.store.base import Store
from gateway.store.sqlite import SQLiteStore
from gateway.store.sqlite_db import ServeLock, sqlite_path


@contextlib.asynccontextmanager
async def open_store(url: str, *, clock: Clock, ledger_key: bytes, exclusive: bool = False) -> AsyncIterator[Store]:
    """Open the store named by `url`. `exclusive`: this process serves it (one server per SQLite file).

    Raises: ConfigError for an unsupported URL or a file another server holds.
    """
    if url.startswith("sqlite://"):
        path = sqlite_path(url)
        lock = ServeLock(path) if exclusive and path != ":memory:" else None
        if lock is not None:
            lock.acquire()
        store = SQLiteStore(path, clock=clock, ledger_key=ledger_key)
        try:
            await store.open()
            yield store
        finally:
            await store.close()
            if lock is not None:
                lock.release()
        return
    if url.startswith(("postgresql://", "postgres://")):
        raise ConfigError("the PostgreSQL store is not in this version yet; use sqlite:///warrant.db")
    raise ConfigError(f"unsupported database URL {url.split(':', 1)[0]}:...; use sqlite:///PATH")
