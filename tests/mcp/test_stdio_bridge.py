"""`warrant stdio` as a real subprocess, driven by the official SDK client over stdio."""

from __future__ import annotations

import os
import sys

import pytest
from mcp import Client, StdioServerParameters

from tests.api.conftest import Api
from tests.mcp.test_mcp_front import start

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


def bridge(api: Api, token: str) -> StdioServerParameters:
    env = {**os.environ, "WARRANT_TOKEN": token}
    return StdioServerParameters(command=sys.executable, args=["-m", "gateway.cli", "stdio", "--url", api.url], env=env)


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_the_stdio_bridge_lists_and_calls_through_the_gate(api: Api, mode: str) -> None:
    _, token = await start(api)
    async with Client(bridge(api, token), mode=mode, cache=None) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        read = await client.call_tool("shop__find", {"q": "x"})
        gated = await client.call_tool("shop__order", {"to": "bob@example.com"}, meta={"warrant/operation_id": "o-1"})
    assert {"shop__find", "shop__order", "warrant_status"} <= names
    assert read.is_error is False and read.meta is not None
    assert read.meta["warrant/action_id"].startswith("act_")
    # The gateway's own stamp is stripped; only the bridge's (the server this client talks to) may remain.
    assert read.meta.get("io.modelcontextprotocol/serverInfo", {"name": "warrant-stdio"})["name"] == "warrant-stdio"
    assert gated.is_error is False and gated.structured_content is not None  # waiting: not an error result
    assert gated.meta is not None and gated.meta["warrant/code"] == "approval_required"
    assert gated.structured_content["error"]["code"] == "approval_required"
    assert api.effects == []


async def test_the_stdio_bridge_reports_a_dead_token_with_its_code(api: Api) -> None:
    run_id, token = await start(api)
    async with api.client("op") as c:
        await c.post(f"/api/runs/{run_id}/cancel", json={"reason": "stop"})
    async with Client(bridge(api, token), mode="legacy", cache=None) as client:
        result = await client.call_tool("shop__find", {"q": "x"})
    assert result.is_error is True and result.structured_content is not None
    assert result.structured_content["error"]["code"] == "run_cancelled"
