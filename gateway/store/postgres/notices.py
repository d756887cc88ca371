"""Hard cancels across replicas on PostgreSQL: NOTIFY in the cancel's transaction, LISTEN in each process.

The cancel's transaction runs `pg_notify(CANCEL_CHANNEL, run_id)` (`PostgresStore._announce_hard_cancel`).
PostgreSQL delivers a notification at its transaction's commit, to every session listening then,
and never for a transaction rolled back, so a SERIALIZABLE transaction run again after a
serialization failure notifies once. Each gateway process listens on a connection of its own,
outside the pool (`listen`). A notification sent while a process was not listening is lost to it:
its relay asks the store when it listens again (gateway/runtime/cancel_relay.py).

A connection whose server vanished without closing it (a network partition, a host gone) would wait
for notifications forever: the listener checks it every `HEARTBEAT_S` with a query bounded by
`PING_TIMEOUT_S`, and raises when it does not answer.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, AsyncIterator

import psycopg

from gateway.errors import StoreError
from gateway.store.postgres.db import CONNECT_TIMEOUT_S, redact

CANCEL_CHANNEL = "warrant_cancel"
APPLICATION_NAME = "warrant-cancel-listener"  # how the listening session shows in pg_stat_activity
HEARTBEAT_S = 10.0
PING_TIMEOUT_S = 5.0


@contextlib.asynccontextmanager
async def listen(url: str, *, heartbeat: float = HEARTBEAT_S) -> AsyncIterator[AsyncIterator[str]]:
    """A session listening on `CANCEL_CHANNEL`: the run ids of hard cancels, as they commit.

    Raises: StoreError when the server cannot be reached (on entering) or the connection is lost
    (while iterating).
    """
    try:
        conn = await psycopg.AsyncConnection.connect(
            url, autocommit=True, connect_timeout=int(CONNECT_TIMEOUT_S), application_name=APPLICATION_NAME
        )
    except (psycopg.Error, OSError) as exc:
        raise StoreError(f"cannot listen for cancels at {redact(url)}: {exc}") from exc
    notices = _notices(conn, heartbeat)
    try:
        try:
            await conn.execute(f"LISTEN {CANCEL_CHANNEL}")
        except (psycopg.Error, OSError) as exc:
            raise StoreError(f"cannot listen for cancels at {redact(url)}: {exc}") from exc
        yield notices
    finally:
        await notices.aclose()
        await conn.close()


async def _notices(conn: psycopg.AsyncConnection[tuple[object, ...]], heartbeat: float) -> AsyncGenerator[str, None]:
    try:
        while True:
            # Notifications that arrived while nobody iterated wait in psycopg's backlog: none is missed.
            async for notify in conn.notifies(timeout=heartbeat):
                if notify.channel == CANCEL_CHANNEL:
                    yield notify.payload
            async with asyncio.timeout(PING_TIMEOUT_S):
                await conn.execute("SELECT 1")
    except (psycopg.Error, OSError, TimeoutError) as exc:
        raise StoreError(f"the cancel listener lost its connection: {exc}") from exc
