"""The gateway as one object: store, catalog, gate, keys and the operator controls over them.

Built once in the app's lifespan (resources live there, not in modules) and handed to the
HTTP routes and, later, the MCP front.
"""

from __future__ import annotations

import hmac
import logging
from collections.abc import Sequence
from dataclasses import dataclass

from gateway.adapters.base import Adapter
from gateway.catalog import Catalog
from gateway.clock import Clock
from gateway.config import ApiKey
from gateway.gate import Gate
from gateway.pins import Pins
from gateway.reconcile import reconcile_run
from gateway.store.base import Store
from gateway.store.records import Principal, RunRecord

log = logging.getLogger("warrant.service")


@dataclass
class Gateway:
    store: Store
    catalog: Catalog
    gate: Gate
    clock: Clock
    adapters: Sequence[Adapter]
    api_keys: Sequence[ApiKey]
    pins: Pins | None = None  # downstream tool pins (gateway/pins.py)

    def principal_for_key(self, key_sha256: str) -> Principal | None:
        for key in self.api_keys:
            if hmac.compare_digest(key.key_sha256, key_sha256):
                return Principal(name=key.name, tenant=key.tenant, roles=key.roles)
        return None

    async def pause(self, principal: Principal, run_id: str, reason: str | None) -> RunRecord:
        return await self.store.pause(principal, run_id, reason)

    async def resume(self, principal: Principal, run_id: str, reason: str | None) -> RunRecord:
        """Resume reconciles first: `unknown` actions are looked up before the run moves on."""
        await self.store.get_run(principal.tenant, run_id)  # NotFound before any lookup
        await reconcile_run(self.store, self.catalog, principal.tenant, run_id)
        return await self.store.resume(principal, run_id, reason)

    async def cancel(self, principal: Principal, run_id: str, reason: str | None, *, hard: bool) -> RunRecord:
        run = await self.store.cancel(principal, run_id, reason, hard=hard)
        if hard:
            await self.gate.abort_run(run_id)
        for adapter in self.adapters:
            try:
                await adapter.revoke(run_id)
            except Exception:
                log.exception("adapter %s failed to revoke credentials of run %s", adapter.name, run_id)
        return run

    async def reconcile(self, principal: Principal, run_id: str) -> int:
        await self.store.get_run(principal.tenant, run_id)
        return len(await reconcile_run(self.store, self.catalog, principal.tenant, run_id))
