"""The connection protocol: the few operations both databases offer the shared transactions.

A transaction function `tx(conn)` sees a `Conn`: `execute(sql, params)` with `?` placeholders,
returning a `Cursor` (`fetchone`, `fetchall`, iteration, `rowcount`) whose rows read by column
name and by position (`Row`). sqlite3's connection is one as it stands; PostgreSQL's is
`gateway.store.postgres.db.Conn`, which translates the placeholders and refuses a SQLite-only
statement (`postgres.db.sql`). Rows are typed `Any` where they are fetched, as sqlite3's own
stubs type them: a row's columns are the schema's, which no type here describes.

A `Database` runs those functions: `read` (one snapshot), `transaction` (one serializable
transaction: `BEGIN IMMEDIATE` on SQLite, `SERIALIZABLE` with retries on PostgreSQL) and
`submit` (one nobody awaits: a read's settle). `gateway.store.sqlite.db.Database` and
`gateway.store.postgres.db.PostgresDatabase` are the two.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Protocol, TypeVar

T = TypeVar("T")

__all__ = ["Conn", "Cursor", "Database", "Row"]


class Row(Protocol):
    """One result row: by position and by column name (the first column of a name wins)."""

    def __getitem__(self, key: int | str, /) -> Any: ...

    def keys(self) -> list[str]: ...


class Cursor(Protocol):
    """A statement's result: a statement that returns no rows fetches None, or nothing."""

    @property
    def rowcount(self) -> int: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...

    def __iter__(self) -> Iterator[Any]: ...


class Conn(Protocol):
    """What a transaction function sees: one connection, inside the transaction that runs it."""

    def execute(self, sql: str, parameters: Sequence[Any] = ..., /) -> Cursor: ...


class Database(Protocol):
    """Runs transaction functions, each as ONE transaction; no driver exception escapes
    (StoreError instead)."""

    @property
    def migrated(self) -> list[int]:
        """The migrations the last `open` applied."""

    async def open(self) -> None:
        """Connect and apply due migrations (or refuse to open: `warrant migrate` applies them)."""

    async def close(self) -> None:
        """Transactions nobody awaits commit first."""

    async def read(self, fn: Callable[[Conn], T]) -> T:
        """`fn` as a read: one snapshot, after every transaction submitted before it."""

    async def transaction(self, fn: Callable[[Conn], T], *, durable: bool) -> T:
        """`fn` in one transaction; any exception rolls back its writes and propagates.
        `durable`: its commit is on disk before this returns."""

    def submit(self, fn: Callable[[Conn], T], *, durable: bool, lazy: bool = False) -> asyncio.Future[T]:
        """`fn` queued as a transaction; the future resolves once it has committed. `lazy`:
        nobody waits for it (it may commit with whatever comes next)."""
