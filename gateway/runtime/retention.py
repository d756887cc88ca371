"""The scheduled purge (docs/retention.md): bodies of actions settled longer ago than
`retention.payload_bodies` go, every `retention.purge_every`.

It runs inside the watchdog's tick (gateway/runtime/watchdog.py), so only the process holding the
watchdog lease purges, whatever the number of replicas; and a purge is idempotent anyway (a
purged action is marked in the same transaction). A tick purges at most `BATCHES_PER_TICK`
batches; with more left it carries on at the next tick instead of waiting `purge_every`.
Time is the store's clock: tests move it instead of waiting.
"""

from __future__ import annotations

import logging

from gateway.clock import Clock
from gateway.domain.retention import PurgeReport, PurgeScope
from gateway.domain.units import format_duration
from gateway.runtime.settings import RetentionSettings
from gateway.store.ports import RetentionStore

log = logging.getLogger("warrant.retention")

BATCHES_PER_TICK = 10
BY = "retention"


class Purger:
    def __init__(self, store: RetentionStore, clock: Clock, settings: RetentionSettings) -> None:
        self.store = store
        self.clock = clock
        self.settings = settings
        self.last_at: float | None = None  # store time of the last scheduled purge that finished
        self._behind = False  # the last one stopped with batches left

    async def tick(self) -> PurgeReport | None:
        """Purge what is due, if a purge is due now; None when none was."""
        keep = self.settings.payload_bodies
        now = self.clock.now()
        if keep is None:
            return None
        if not self._behind and self.last_at is not None and now - self.last_at < self.settings.purge_every:
            return None
        reason = f"settled more than {format_duration(int(keep))} ago (retention.payload_bodies)"
        report = PurgeReport()
        for _ in range(BATCHES_PER_TICK):
            batch = await self.store.purge_bodies(PurgeScope(before=now - keep), by=BY, reason=reason)
            report.add(batch)
            if not batch.more:
                break
        self._behind = report.more
        self.last_at = now
        if report.purged:
            log.info("retention purged %d bodies of %d actions", report.purged, report.actions)
        return report
