"""The calls this process has in flight, and the switches that stop them: a hard cancel of a run,
the drain at shutdown (gateway/runtime/shutdown.py).

One `InFlight` per process, built by the composition root before the gate and shared by the gate
(which tracks every dispatch here) and the drain (which refuses new calls, waits for these and
aborts the rest). The drain lives as long as the process; the gate only as long as the app's
lifespan: they meet here, not in each other.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from typing import Any

from gateway.bounded import BoundedSet
from gateway.errors import Refusal

# How long a run's hard cancel is remembered for calls admitted just before it (seconds): far
# longer than the moment between an admit's commit and its dispatch.
CANCELLED_HARD_KEPT_S = 600.0
CANCELLED_HARD_KEPT = 10_000  # ... and how many runs at most
ABORTED_BY_CANCEL = "the call was aborted by a hard cancel"


class InFlight:
    def __init__(self) -> None:
        self._tasks: dict[str, set[asyncio.Task[Any]]] = defaultdict(set)
        # Dispatches being aborted (by a hard cancel, or at shutdown), each with the reason recorded.
        self._aborting: dict[asyncio.Task[Any], str] = {}
        # Runs a hard cancel was heard for: a call admitted just before the cancel committed, whose
        # dispatch was not yet in flight when the abort came, is not sent either.
        self._cancelled_hard: BoundedSet[str] = BoundedSet(CANCELLED_HARD_KEPT, ttl=CANCELLED_HARD_KEPT_S)
        # While set, calls are refused before their admit with this refusal (the drain);
        # `admitting` counts admits under way, whose dispatch the drain must wait for too.
        self.refusing: Refusal | None = None
        self.admitting = 0
        self._stopped: str | None = None  # the reason every dispatch not yet begun is aborted with

    def refuse(self, refusal: Refusal) -> None:
        """From now on every call is refused so before its admit (the drain)."""
        self.refusing = refusal

    def track(self, run_id: str, task: asyncio.Task[Any]) -> None:
        """A dispatch of `run_id` is in flight in `task`. One admitted after a hard cancel of its run
        (or the shutdown), whose abort came before the dispatch was in flight, is aborted now."""
        self._tasks[run_id].add(task)
        task.add_done_callback(lambda t: self._forget(run_id, t))
        stopped = self._stopped or (ABORTED_BY_CANCEL if run_id in self._cancelled_hard else None)
        if stopped is not None:
            self._aborting[task] = stopped
            task.cancel()

    def abort_reason(self, task: asyncio.Task[Any] | None) -> str | None:
        """Why `task` is being aborted by us (None: it is not; a caller going away is not us)."""
        return self._aborting.get(task) if task is not None else None

    def aborted(self, task: asyncio.Task[Any]) -> str:
        """The reason of an abort that came before `task`'s dispatch began, forgotten here."""
        return self._aborting.pop(task, ABORTED_BY_CANCEL)

    def _forget(self, run_id: str, task: asyncio.Task[Any]) -> None:
        tasks = self._tasks.get(run_id)
        if tasks is not None:
            tasks.discard(task)
            if not tasks:
                del self._tasks[run_id]

    async def abort_run(self, run_id: str) -> int:
        """Hard cancel: abort this run's calls in flight; they settle as `unknown`.

        Aborting a run twice is one abort: a hard cancel is heard here from the operator's request
        and again from the store's notice (gateway/runtime/cancel_relay.py); a second `cancel()` of a task
        already aborting would interrupt the settle that records its outcome."""
        self._cancelled_hard.add(run_id)
        return await self._abort(list(self._tasks.get(run_id, ())), ABORTED_BY_CANCEL)

    async def abort_all(self, reason: str) -> int:
        """Shutdown: abort every call in flight (writes settle `unknown`, reads failed, with `reason`),
        and every dispatch admitted from now on before it is sent. Returns how many were in flight."""
        self._stopped = reason
        return await self._abort([task for tasks in self._tasks.values() for task in tasks], reason)

    async def _abort(self, tasks: list[asyncio.Task[Any]], reason: str) -> int:
        mine = [task for task in tasks if task not in self._aborting]
        for task in mine:
            self._aborting[task] = reason
            task.cancel()
        try:
            # gather with return_exceptions: the tasks' own cancellations are results here, while a
            # cancellation of the caller of abort_run still reaches it.
            await asyncio.gather(*tasks, return_exceptions=True)
        finally:
            for task in mine:
                self._aborting.pop(task, None)
        return len(tasks)

    def busy(self) -> bool:
        """Whether any call is admitting, dispatching or settling in this process."""
        return self.admitting > 0 or any(self._tasks.values())

    def runs(self) -> list[str]:
        """The runs this process has calls in flight for (dispatching or settling)."""
        return [run_id for run_id, tasks in self._tasks.items() if tasks]
