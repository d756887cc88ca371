"""The MCP front with the official SDK client over streamable HTTP, both protocol eras."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.api.conftest import CONTRACT, Api

pytestmark = pytest.mark.anyio

MODES = ["auto", "legacy"]


async def start(api: Api, **changes: Any) -> tuple[str, str]:
    async with api.client("op") as c:
        run = (await c.post("/api/runs", json={**CONTRACT, **changes})).json()
        grant = (await c.post(f"/api/runs/{run['run_id']}/lease", json={"worker": "agent"})).json()
    return run["run_id"], grant["token"]


@asynccontextmanager
async def mcp_client(api: Api, token: str | None, mode: str) -> AsyncIterator[Client]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with httpx2.AsyncClient(headers=headers, timeout=10) as http:
        async with Client(streamable_http_client(f"{api.url}/mcp", http_client=http), mode=mode, cache=None) as c:
            yield c


@pytest.mark.parametrize("mode", MODES)
async def test_tools_list_shows_the_runs_tools_and_the_gateway_tools(api: Api, mode: str) -> None:
    _, token = await start(api)
    async with mcp_client(api, token, mode) as c:
        names = {t.name for t in (await c.list_tools()).tools}
    assert names == {
        "shop__find",
        "shop__order",
        "shop__charge",
        "warrant_status",
        "warrant_propose",
        "warrant_repeat",
        "warrant_compensate",
        "warrant_checkpoint",
        "warrant_milestone",
        "warrant_complete",
        "warrant_plan",
        "warrant_task",
        "warrant_wait",
    }


@pytest.mark.parametrize("mode", MODES)
async def test_permitted_read_passes_with_warrant_meta(api: Api, mode: str) -> None:
    _, token = await start(api)
    async with mcp_client(api, token, mode) as c:
        result = await c.call_tool("shop__find", {"q": "x"})
    assert result.is_error is False
    assert result.structured_content == {"hits": []}
    assert result.meta is not None and result.meta["warrant/action_id"].startswith("act_")
    assert result.meta["warrant/replayed"] is False
    assert result.meta["warrant/budget_remaining"]["tool_calls"] == 99


@pytest.mark.parametrize("mode", MODES)
async def test_refusal_is_an_error_result_with_code(api: Api, mode: str) -> None:
    _, token = await start(api, authority={"allow": ["shop__find"]})
    async with mcp_client(api, token, mode) as c:
        names = {t.name for t in (await c.list_tools()).tools}
        result = await c.call_tool("shop__order", {"to": "x@example.com"})
    assert "shop__order" not in names
    assert result.is_error is True
    assert result.structured_content is not None
    assert result.structured_content["error"]["code"] == "forbidden"
    assert result.content[0].text.startswith("[forbidden]")
    assert api.effects == []


async def test_missing_or_unknown_token_is_http_401(api: Api) -> None:
    async with httpx.AsyncClient(base_url=api.url) as c:
        for headers in ({}, {"Authorization": "Bearer wl_nope-nope-nope-nope-nope"}):
            r = await c.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, headers=headers)
            assert r.status_code == 401
            assert "Bearer" in r.headers["www-authenticate"]
            assert r.json()["error"]["message"].startswith("[unauthenticated]")


async def test_a_lease_token_is_read_from_the_store_once_for_the_guard_and_the_gate(
    api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    # One cache of lease tokens (the gate's): the /mcp guard's look-up serves the call's step 1 too.
    _, token = await start(api)
    store = api.gateway.store
    read, reads = store.authenticate, []

    async def counted(digest: str) -> Any:
        reads.append(digest)
        return await read(digest)

    monkeypatch.setattr(store, "authenticate", counted)
    headers = {
        "authorization": f"Bearer {token}",
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": "2025-11-25",
    }
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "shop__find", "arguments": {"q": "x"}},
    }
    async with httpx.AsyncClient(base_url=api.url, headers=headers) as c:
        for _ in range(3):
            answer = await c.post("/mcp", json=body)
            assert answer.status_code == 200 and answer.json()["result"]["isError"] is False
    assert len(reads) == 1


async def test_only_post_is_served_at_mcp_and_401s_follow_rfc_6750(api: Api) -> None:
    _, token = await start(api)
    async with httpx.AsyncClient(base_url=api.url) as c:
        stream = await c.get("/mcp", headers={"Authorization": f"Bearer {token}", "Accept": "text/event-stream"})
        assert stream.status_code == 405 and stream.headers["allow"] == "POST"
        bare = await c.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        # No error code without credentials (RFC 6750 3.1); the OAuth metadata named (RFC 9728 5.1).
        metadata = f'resource_metadata="{api.url}/.well-known/oauth-protected-resource/mcp"'
        assert bare.headers["www-authenticate"] == f'Bearer realm="warrant", {metadata}'
        wrong = await c.post(
            "/mcp",
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
            headers={"Authorization": "Bearer wl_not-a-token-we-ever-made-here"},
        )
        assert 'error="invalid_token"' in wrong.headers["www-authenticate"]
