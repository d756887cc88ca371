"""The watchdog: time enforcement and alerts, on every `warrant serve`, acting once across processes.

Each tick (every `watchdog.tick`, 5 s by default):

1. take or renew the watchdog lease in the store (3 ticks long); a process that does not hold it
   does nothing else, and takes over once the holder stops renewing;
2. sweep: runs past their deadline expire, approvals past `decide_by`/`valid_until` expire with
   their rule's `on_expiry` applied — what the lazy path does when a run is touched;
3. decide the alerts each live run calls for (`gateway/domain/watch.py`) and every `unknown`
   action's, and record them: the store raises each (run, kind, episode) once, with its `alert`
   entry and one delivery per webhook that takes the kind (`gateway/runtime/webhooks.py` sends them);
4. look `unknown` actions up again through their adapters (terminal runs included), each on a
   backoff of its own, so a destination that is down is not asked every tick;
5. queue a heartbeat to the webhooks every `watchdog.heartbeat`, so a receiver notices silence;
6. purge the bodies retention says are due (gateway/runtime/retention.py), every `retention.purge_every`.

`/healthz` reports the `watchdog` check from the last tick that completed: not ok once it is
more than three ticks old. Tests call `tick()` with a moved clock; nothing here sleeps but `run`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from gateway.backoff import backoff_delay
from gateway.bounded import BoundedSet
from gateway.catalog.catalog import Catalog
from gateway.clock import Clock
from gateway.domain.retention import PurgeReport
from gateway.domain.watch import Alert, UnknownAction, WatchPolicy, open_alerts
from gateway.errors import Code
from gateway.gate.reconcile import reconcile_action
from gateway.observe.metrics import Metrics
from gateway.runtime.retention import Purger
from gateway.runtime.settings import WatchdogSettings, Webhook
from gateway.runtime.webhooks import Deliverer
from gateway.safeguards import ALL_ON, Safeguards
from gateway.store.ports import WatchdogStore
from gateway.store.records import AlertDraft, RaisedAlert, Sweep

log = logging.getLogger("warrant.watchdog")

LEASE_TICKS = 3  # the watchdog lease lasts this many ticks; /healthz tolerates as many
LOOKUPS_PER_TICK = 10
LOOKUP_CAP = 3600.0  # the longest wait between two lookups of one unknown action
SEEN_MAX = 100_000  # alerts remembered as recorded


@dataclass
class Tick:
    holding: bool
    sweep: Sweep | None = None
    raised: list[RaisedAlert] = field(default_factory=list)
    heartbeat: bool = False
    purged: PurgeReport | None = None


class Watchdog:
    def __init__(
        self,
        store: WatchdogStore,
        clock: Clock,
        settings: WatchdogSettings,
        webhooks: Sequence[Webhook] = (),
        *,
        catalog: Catalog | None = None,
        metrics: Metrics | None = None,
        purger: Purger | None = None,
        safeguards: Safeguards = ALL_ON,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        """`catalog`: the adapters unknown actions are looked up through (None: no lookups);
        `purger`: the scheduled purge (gateway/runtime/retention.py; None: none); `safeguards`: the
        drill's switches (gateway/safeguards.py), which the lookups' reconciliation passes."""
        self.store = store
        self.clock = clock
        self.settings = settings
        self.webhooks = tuple(webhooks)
        self.catalog = catalog
        self.metrics = metrics
        self.purger = purger
        self.safeguards = safeguards
        self.policy = WatchPolicy(
            approval_fraction=settings.approval_warning_share, approval_at_most=settings.approval_warning
        )
        self.holder = store.process_id
        self._monotonic = monotonic
        self._started = monotonic()
        self.last_tick: float | None = None  # monotonic time of the last tick that completed
        self.holding = False
        # Alerts known to be recorded already (by any process): a cache that spares the store
        # their inserts, never a decision — the store's unique row is.
        self._seen: BoundedSet[tuple[str, str, str]] = BoundedSet(SEEN_MAX)
        self._lookups: dict[str, tuple[int, float]] = {}  # action id -> (attempts, next lookup at)
        self.reconciling: asyncio.Task[None] | None = None

    async def tick(self) -> Tick:
        self.holding = await self.store.hold_watch_lease(self.holder, LEASE_TICKS * self.settings.tick)
        result = Tick(self.holding)
        if self.holding:
            result.sweep = await self.store.sweep_expiries()
            state = await self.store.watch_state()
            now = self.clock.now()
            result.raised = await self._raise(open_alerts(state.runs, state.unknown, now, self.policy))
            self._start_lookups(state.unknown, now)
            targets = self._targets("heartbeat")
            if targets:
                data = {"process_id": self.holder}
                result.heartbeat = await self.store.queue_heartbeat(self.holder, self.settings.heartbeat, targets, data)
            if self.purger is not None:
                result.purged = await self.purger.tick()
        self.last_tick = self._monotonic()
        return result

    async def _raise(self, alerts: list[Alert]) -> list[RaisedAlert]:
        fresh = [a for a in alerts if (a.run_id, a.kind, a.episode) not in self._seen]
        drafts = [AlertDraft(a, self._targets(a.kind)) for a in fresh]
        raised = await self.store.raise_alerts(drafts, max_attempts=self.settings.delivery_attempts)
        self._seen.update((a.run_id, a.kind, a.episode) for a in fresh)
        for r in raised:
            log.warning("alert %s on run %s: %s", r.alert.kind, r.alert.run_id, r.alert.data)
            if self.metrics is not None:
                self.metrics.observe_alert(r.alert.kind)
        return raised

    def _targets(self, kind: str) -> tuple[str, ...]:
        return tuple(hook.name for hook in self.webhooks if hook.wants(kind))

    def _start_lookups(self, unknown: list[UnknownAction], now: float) -> None:
        """Look unknown actions up again in the background, each when its own backoff says."""
        current = {a.action_id for a in unknown}
        for action_id in list(self._lookups):
            if action_id not in current:
                del self._lookups[action_id]  # settled (by a lookup, an operator, a resume)
        if self.catalog is None or (self.reconciling is not None and not self.reconciling.done()):
            return
        due = [a for a in unknown if self._lookups.get(a.action_id, (0, now))[1] <= now][:LOOKUPS_PER_TICK]
        if due:
            self.reconciling = asyncio.get_running_loop().create_task(self._look_up(due, now))

    async def _look_up(self, due: list[UnknownAction], now: float) -> None:
        catalog = self.catalog
        assert catalog is not None

        async def one(unknown: UnknownAction) -> None:
            attempts = self._lookups.get(unknown.action_id, (0, now))[0] + 1
            delay = backoff_delay(attempts, initial=self.settings.reconcile_every, cap=LOOKUP_CAP)
            self._lookups[unknown.action_id] = (attempts, now + delay)
            try:
                action = await self.store.get_action(unknown.tenant, unknown.action_id)
                settled = await reconcile_action(
                    self.store, catalog, action, self.clock.now(), safeguards=self.safeguards
                )
            except Exception:
                log.exception("looking up unknown action %s failed", unknown.action_id)
                return
            if settled is not None:
                log.info("unknown action %s reconciled: %s", unknown.action_id, settled.status.value)

        await asyncio.gather(*(one(a) for a in due))

    def health(self) -> dict[str, Any]:
        """The `/healthz` check: ok while the last completed tick is at most three ticks old."""
        if not self.settings.enabled:
            return {"status": "ok", "enabled": False}
        age = self._monotonic() - (self.last_tick if self.last_tick is not None else self._started)
        if age > LEASE_TICKS * self.settings.tick:
            return {"status": "down", "code": Code.WATCHDOG_STALLED, "last_tick_age": round(age, 1)}
        return {"status": "ok", "holder": self.holding, "last_tick_age": round(age, 1)}

    async def run(self, deliverer: Deliverer | None = None) -> None:
        """Tick every `settings.tick` seconds until cancelled; a failing tick is logged and retried."""
        while True:
            try:
                await self.tick()
            except Exception:
                log.exception("a watchdog tick failed; /healthz shows it once ticks stop completing")
            if deliverer is not None:
                deliverer.wake.set()
            await asyncio.sleep(self.settings.tick)


@contextlib.asynccontextmanager
async def watching(watchdog: Watchdog, deliverer: Deliverer) -> AsyncIterator[None]:
    """Run the watchdog and the deliveries, each in a task of its own, until the block ends."""
    tasks = []
    if watchdog.settings.enabled:
        tasks = [
            asyncio.create_task(watchdog.run(deliverer), name="warrant-watchdog"),
            asyncio.create_task(deliverer.run(watchdog.settings.tick), name="warrant-webhooks"),
        ]
    try:
        yield
    finally:
        if watchdog.reconciling is not None:
            tasks.append(watchdog.reconciling)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await deliverer.aclose()
