"""A bound on the long reads a store runs at once (verify, export, audit query, report inputs).

A long read runs on a connection of its own, never on the ones the gate's transactions use: a
SQLite read-only connection on a worker thread, or a PostgreSQL pool connection in a READ ONLY
snapshot. Unbounded, a few auditors could take every PostgreSQL pool connection (and the gate
would wait for them) or every worker thread; so at most `limit` run at once, and the others wait
for a slot, not the gate. A slot is held until its read has really ended: a caller that stops
waiting (a client gone mid-verify) cannot stop the thread, so it does not free the slot early.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

T = TypeVar("T")

LONG_READS_MAX = 2


class LongReads:
    def __init__(self, limit: int = LONG_READS_MAX) -> None:
        if limit < 1:
            raise ValueError("at least one long read must be allowed")
        self.limit = limit
        self._slots = asyncio.Semaphore(limit)
        self.running = 0  # long reads started and not yet ended

    async def run(self, start: Callable[[], Awaitable[T]]) -> T:
        """Run `start()` in a slot of its own; the slot is freed when it ends."""
        await self._slots.acquire()
        try:
            task = asyncio.ensure_future(start())
        except BaseException:
            self._slots.release()
            raise
        self.running += 1
        task.add_done_callback(self._ended)
        return await asyncio.shield(task)

    def _ended(self, task: asyncio.Future[Any]) -> None:
        self.running -= 1
        self._slots.release()
        if not task.cancelled():
            task.exception()  # retrieved: a caller that stopped waiting is not told, nor the loop's log
