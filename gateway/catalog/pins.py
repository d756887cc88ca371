"""Tool pinning: a downstream tool is called only under the definition someone trusted.

A downstream MCP server lists its own tools, and may change them at any time: a new tool, a new
description that tells the model to do something else, a wider input schema. Each definition
(name, description, input schema: `ToolDefinition.sha256()`) is pinned in the store:

- `pin: first_use` (the default): the adapter's first listing ever is pinned as it is (trust on
  first use, like an SSH host key). A tool listed later, or a changed definition, waits.
- `pin: manual`: nothing is pinned until an operator accepts it.

A tool that waits is refused `tool_definition_changed` at the gate and hidden from `tools/list`
until an admin accepts the exact definition pending (`POST /api/tools/{name}/accept`). Pins are
gateway-wide: every tenant's runs reach the same downstream tools.

The pins live in the store; this object keeps them in memory for the catalog and reloads them
after each change, and (at most once a second) when the gate meets a mismatch, so a pin accepted
through another replica is seen without a restart.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from gateway.adapters.base import Adapter, ToolDefinition
from gateway.catalog.catalog import Catalog, PinState, ToolSpec, exposed_name
from gateway.errors import Code, Conflict, InvalidRequest, NotFound
from gateway.store.ports import PinStore
from gateway.store.records import Principal, ToolPin

log = logging.getLogger("warrant.pins")

REFRESH_AT_MOST_EVERY = 1.0  # seconds between reloads triggered by a mismatch at the gate


def definition_json(definition: ToolDefinition) -> dict[str, Any]:
    """What a pin keeps of a definition: the hashed fields, and the annotations for the record."""
    return {
        "name": definition.name,
        "description": definition.description,
        "input_schema": definition.input_schema,
        "annotations": definition.annotations,
    }


def definition_of(pin: ToolPin) -> ToolDefinition:
    body = pin.definition
    return ToolDefinition(
        name=body["name"],
        description=body.get("description") or "",
        input_schema=body.get("input_schema") or {"type": "object"},
        annotations=body.get("annotations"),
    )


class Pins:
    def __init__(self, store: PinStore, catalog: Catalog) -> None:
        self._store = store
        self._catalog = catalog
        self._pins: dict[str, ToolPin] = {}
        self._first_used: frozenset[str] = frozenset()
        self._loaded_at = float("-inf")
        self._lock = asyncio.Lock()
        catalog.attach_pins(self)

    def pin(self, name: str) -> ToolPin | None:
        return self._pins.get(name)

    async def load(self) -> None:
        """Raises: StoreError."""
        async with self._lock:
            found = await self._store.tool_pins()
            self._pins = dict(found.pins)
            self._first_used = found.first_use_adapters
            self._loaded_at = time.monotonic()
        self._catalog.invalidate()

    async def refresh(self) -> bool:
        """Reload from the store unless that happened within the last second; True when it reloaded."""
        if time.monotonic() - self._loaded_at < REFRESH_AT_MOST_EVERY:
            return False
        await self.load()
        return True

    def follow(self, adapter: Adapter) -> None:
        """Hand a pinning adapter its pinned definitions (served while its downstream is down at
        start-up) and follow its listings. Call after `load`, before the adapter starts."""
        if adapter.pin is None:
            return
        adapter.restore([definition_of(p) for p in self._pins.values() if p.adapter == adapter.name])
        adapter.watch(self.on_listing)

    async def on_listing(self, adapter: Adapter) -> None:
        """After each fresh listing: pin a first-use adapter's first listing ever; rebuild the catalog."""
        if adapter.pin == "first_use" and adapter.name not in self._first_used:
            drafts = [
                ToolPin(
                    tool=exposed_name(adapter.name, d),
                    adapter=adapter.name,
                    definition_sha256=d.sha256(),
                    definition=definition_json(d),
                    pinned_by="first_use",
                    pinned_at=0.0,
                )
                for d in adapter.definitions()
            ]
            if await self._store.pin_first_use(adapter.name, drafts):
                log.info("pinned %d tool definition(s) of %s on first use", len(drafts), adapter.name)
            await self.load()
        self._catalog.invalidate()

    async def accept(self, name: str, definition_sha256: str, principal: Principal) -> ToolSpec:
        """Pin the definition pending for `name`; accepting the pinned one again is a no-op.

        Raises: NotFound; Conflict `not_pinned` (a tool this gateway defines itself);
        InvalidRequest `payload_mismatch` (HTTP 409) when `definition_sha256` is not the one pending.
        """
        spec = self._catalog.get(name)
        if spec is None:
            raise NotFound(f"no tool {name}")
        if spec.pin_state is PinState.TRUSTED:
            raise Conflict(f"{name} is defined in this gateway's configuration; it has no pin", code=Code.NOT_PINNED)
        if definition_sha256 != spec.definition_sha256:
            raise InvalidRequest(
                f"{definition_sha256} is not the definition of {name} now listed",
                code=Code.PAYLOAD_MISMATCH,
                definition_sha256=spec.definition_sha256,
            ).with_status(409)
        if spec.pin_state is PinState.PINNED:
            return spec
        pin = ToolPin(
            tool=name,
            adapter=spec.adapter.name,
            definition_sha256=spec.definition_sha256,
            definition=definition_json(spec.definition),
            pinned_by=f"{principal.tenant}/{principal.name}",
            pinned_at=0.0,
        )
        replaces = spec.pinned.definition_sha256 if spec.pinned is not None else None
        await self._store.accept_tool_pin(pin, replaces=replaces)
        log.warning(
            "tool %s: definition %s accepted by %s (replacing %s)", name, definition_sha256, pin.pinned_by, replaces
        )
        await self.load()
        return self._catalog.get(name) or spec
