"""Pinned downstream tool definitions: gateway-wide, pinned once on first use, re-pinned only by compare-and-set."""

from __future__ import annotations

import pytest

from gateway.errors import InvalidRequest
from gateway.store.records import ToolPin
from tests.harness import World

pytestmark = pytest.mark.anyio


def pin(tool: str, sha: str, by: str = "first_use") -> ToolPin:
    definition = {"name": tool.split("__")[1], "description": sha, "input_schema": {"type": "object"}}
    return ToolPin(tool, "files", sha * 64, definition, by, 0.0)


async def test_an_adapters_first_listing_is_pinned_once(world: World) -> None:
    assert await world.store.pin_first_use("files", [pin("files__a", "1"), pin("files__b", "2")])
    assert not await world.store.pin_first_use("files", [pin("files__c", "3")])
    found = await world.store.tool_pins()
    assert sorted(found.pins) == ["files__a", "files__b"]
    assert found.first_use_adapters == frozenset({"files"})
    stored = found.pins["files__a"]
    assert (stored.definition_sha256, stored.pinned_by, stored.definition) == (
        "1" * 64,
        "first_use",
        pin("files__a", "1").definition,
    )
    assert stored.pinned_at == world.clock.now()


async def test_accepting_replaces_only_the_pin_it_was_shown(world: World) -> None:
    await world.store.pin_first_use("files", [pin("files__a", "1")])
    accepted = await world.store.accept_tool_pin(pin("files__a", "2", "acme/ops"), replaces="1" * 64)
    assert (accepted.definition_sha256, accepted.previous_sha256, accepted.pinned_by) == (
        "2" * 64,
        "1" * 64,
        "acme/ops",
    )
    with pytest.raises(InvalidRequest) as refused:
        await world.store.accept_tool_pin(pin("files__a", "3", "acme/ops"), replaces="1" * 64)
    assert (refused.value.code, refused.value.http_status) == ("payload_mismatch", 409)
    again = await world.store.accept_tool_pin(pin("files__a", "2", "acme/ops"), replaces="1" * 64)
    assert again.definition_sha256 == "2" * 64  # the same acceptance twice is one


async def test_a_new_tool_is_pinned_only_if_still_unpinned(world: World) -> None:
    await world.store.accept_tool_pin(pin("files__n", "4", "acme/ops"), replaces=None)
    with pytest.raises(InvalidRequest):
        await world.store.accept_tool_pin(pin("files__n", "5", "acme/ops"), replaces=None)
    assert (await world.store.tool_pins()).pins["files__n"].definition_sha256 == "4" * 64
