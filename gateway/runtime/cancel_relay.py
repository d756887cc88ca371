"""Hard cancels taken by another gateway process abort this process's calls in flight.

A hard cancel aborts the run's calls in flight; they settle `unknown` (docs: DESIGN.md, "Run
lifecycle"). The process that takes the cancel aborts its own calls itself (`Gateway.cancel`).
Where several processes share the store (PostgreSQL replicas), a call in flight may be on another
one: the store tells every process of each hard cancel as it commits (`Store.cancel_notices`), and
the relay here aborts this process's calls of that run (`Gate.abort_run`: a no-op where there are
none, and one abort when the process that took the cancel hears its own notice too).

A notice sent while this process was not listening (its connection dropped, the server restarted)
is lost to it. So on every (re)connection, once listening, the relay asks the store which of the runs
it has calls in flight for were cancelled hard meanwhile, and aborts those: a cancel commits either
before that question (the answer has it) or after the listening began (the notice has it).
Reconnections back off (gateway/backoff.py) up to `RECONNECT_CAP_S`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator

from gateway import backoff
from gateway.gate.pipeline import Gate
from gateway.store.ports import CancelNotices, CancelStore

log = logging.getLogger("warrant.cancel")

RECONNECT_FIRST_S = 0.1
RECONNECT_CAP_S = 5.0
SHUTDOWN_WAIT_S = 10.0  # for aborts under way to settle their calls when the gateway stops


class CancelRelay:
    """Listens for hard cancels and aborts this process's calls in flight of those runs."""

    def __init__(self, store: CancelStore, gate: Gate) -> None:
        self._store = store
        self._gate = gate
        self._aborts: set[asyncio.Task[int]] = set()
        self.listening = asyncio.Event()  # set while connected, after the sweep that follows each connection
        self.connections = 0  # connections made (the first, then each reconnection)
        self.heard = 0  # notices received
        self.swept = 0  # runs found cancelled hard by a sweep after a (re)connection

    async def run(self, first: CancelNotices) -> None:
        """Listen until cancelled, reconnecting after every loss."""
        notices: CancelNotices | None = first
        failures = 0
        while True:
            if notices is None:
                notices = self._store.cancel_notices()
                if notices is None:  # a store that cannot be shared: nothing to hear
                    return
            try:
                async with notices as runs:
                    self.connections += 1
                    await self._sweep()
                    failures = 0
                    self.listening.set()
                    async for run_id in runs:
                        self.heard += 1
                        self._abort(run_id)
            except Exception:
                failures += 1
                log.warning("lost the cancel notices (attempt %d); reconnecting", failures, exc_info=True)
            finally:
                self.listening.clear()
                notices = None
            await backoff.sleep(backoff.backoff_delay(failures, initial=RECONNECT_FIRST_S, cap=RECONNECT_CAP_S))

    async def _sweep(self) -> None:
        """Abort the calls of runs cancelled hard while this process was not listening."""
        in_flight = self._gate.in_flight_runs()
        if not in_flight:
            return
        for run_id in sorted(await self._store.hard_cancelled_among(in_flight)):
            self.swept += 1
            log.warning("run %s was cancelled hard while this process was not listening", run_id)
            self._abort(run_id)

    def _abort(self, run_id: str) -> None:
        if run_id not in self._gate.in_flight_runs():
            return  # the cancel's run has no call here (most notices, on most replicas)
        task = asyncio.create_task(self._gate.abort_run(run_id), name=f"abort {run_id}")
        self._aborts.add(task)
        task.add_done_callback(self._aborted)

    def _aborted(self, task: asyncio.Task[int]) -> None:
        self._aborts.discard(task)
        if not task.cancelled() and task.exception() is None:
            log.info("a hard cancel heard from the store aborted %d call(s) in flight", task.result())
        elif not task.cancelled():
            log.error("aborting calls after a hard cancel failed", exc_info=task.exception())

    async def drain(self) -> None:
        """Wait (bounded) for aborts under way: each settles its calls as `unknown`. Not cancelled:
        cancelling one would cancel the calls it waits for again, in the middle of their settle."""
        if self._aborts:
            await asyncio.wait(list(self._aborts), timeout=SHUTDOWN_WAIT_S)


@contextlib.asynccontextmanager
async def relaying(store: CancelStore, gate: Gate) -> AsyncIterator[CancelRelay | None]:
    """The relay, running while the block lasts; None (and nothing running) for a store that no
    other process shares."""
    first = store.cancel_notices()
    if first is None:
        yield None
        return
    relay = CancelRelay(store, gate)
    task = asyncio.create_task(relay.run(first), name="cancel relay")
    try:
        yield relay
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        await relay.drain()
