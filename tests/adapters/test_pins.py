"""Pins with a store: first use, a downstream that is down at start-up, and acceptance rules."""

from __future__ import annotations

from pathlib import Path

import pytest

from gateway.adapters import CallRequest, OutcomeKind, ToolDefinition
from gateway.adapters.mcp import McpAdapter, McpAdapterConfig
from gateway.catalog import Catalog, Pins, PinState, definition_json
from gateway.clock import ManualClock
from gateway.errors import Conflict, InvalidRequest
from gateway.policy import ToolPolicy
from gateway.store.records import Principal, ToolPin
from gateway.store.sqlite import SQLiteStore
from tests.adapters.conftest import free_port
from tests.harness import LEDGER_KEY

pytestmark = pytest.mark.anyio

ADMIN = Principal("ops", "acme", frozenset({"admin"}))
NOTE = ToolDefinition("write_note", "Add a note to the notebook.", {"type": "object"})


async def test_a_downstream_down_at_start_serves_its_pinned_tools_and_sends_nothing(tmp_path: Path) -> None:
    store = SQLiteStore(str(tmp_path / "w.db"), clock=ManualClock(), ledger_key=LEDGER_KEY)
    await store.open()
    try:
        pinned = ToolPin("files__write_note", "files", NOTE.sha256(), definition_json(NOTE), "first_use", 0.0)
        await store.pin_first_use("files", [pinned])
        url = f"http://127.0.0.1:{free_port()}/mcp"
        adapter = McpAdapter(McpAdapterConfig(name="files", url=url, start_wait=0.1, connect_wait=0.1, timeout=2))
        catalog = Catalog([adapter], {"files__write_note": ToolPolicy(effect="write")})
        pins = Pins(store, catalog)
        await pins.load()
        pins.follow(adapter)
        await adapter.start()
        try:
            assert [(s.name, s.pin_state, s.timeout) for s in catalog] == [("files__write_note", PinState.PINNED, 2)]
            request = CallRequest("write_note", {}, "run_x", "act_x", "wk_x", timeout=2)
            outcome = await adapter.call(request)
            assert (outcome.kind, outcome.code) == (OutcomeKind.NOT_SENT, "upstream_unavailable")
        finally:
            await adapter.close()
    finally:
        await store.close()


async def test_accepting_needs_the_definition_now_listed_and_a_pinning_adapter(tmp_path: Path) -> None:
    from tests.unit.test_catalog_pins import Downstream

    store = SQLiteStore(str(tmp_path / "w.db"), clock=ManualClock(), ledger_key=LEDGER_KEY)
    await store.open()
    try:
        files = Downstream("files", NOTE)
        notes = Downstream("notes", NOTE, pin=None)
        catalog = Catalog([files, notes], {})
        pins = Pins(store, catalog)
        await pins.load()
        await pins.on_listing(files)  # the first listing ever: pinned on first use
        assert catalog.get("files__write_note").pin_state is PinState.PINNED  # type: ignore[union-attr]

        changed = ToolDefinition("write_note", "Add a note, and mail it to everyone.", {"type": "object"})
        files.tools = [changed]
        await pins.on_listing(files)  # not the first listing: it waits
        assert catalog.get("files__write_note").pin_state is PinState.CHANGED  # type: ignore[union-attr]
        with pytest.raises(InvalidRequest) as mismatch:
            await pins.accept("files__write_note", NOTE.sha256(), ADMIN)
        assert mismatch.value.code == "payload_mismatch"
        with pytest.raises(Conflict) as trusted:
            await pins.accept("notes__write_note", NOTE.sha256(), ADMIN)
        assert trusted.value.code == "not_pinned"
        accepted = await pins.accept("files__write_note", changed.sha256(), ADMIN)
        assert accepted.pin_state is PinState.PINNED and accepted.pinned is not None
        assert accepted.pinned.pinned_by == "acme/ops"
        # Another gateway process over the same store sees the pin.
        other = Pins(store, Catalog([Downstream("files", changed)], {}))
        await other.load()
        assert other.pin("files__write_note") == accepted.pinned
    finally:
        await store.close()
