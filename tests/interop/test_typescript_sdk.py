"""The official TypeScript SDK's clients through Warrant's /mcp, on both protocol revisions.

Two generations of the SDK, both from the npm registry at exact pins (tests/interop/node):
`@modelcontextprotocol/sdk` 1.x, which most deployed Node clients embed and which speaks 2025-11-25
and earlier only, and `@modelcontextprotocol/client` 2.x, which speaks 2026-07-28 (pinned, or
found by its `auto` probe) and falls back to 2025-11-25 (`legacy`). Each run of
tests/interop/node/ts_client.mjs lists tools and calls a permitted read and an approval-gated
write, printing what the SDK handed its caller.
"""

from __future__ import annotations

import json

import pytest

from gateway.mcp import WARRANT_TOOLS
from tests.api.conftest import Api
from tests.interop.conftest import lease_token
from tests.interop.nodejs import run_node

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

# (sdk, era asked for, protocol revision the client must end up speaking)
CLIENTS = [
    pytest.param("v1", "legacy", "2025-11-25", id="sdk1-2025-11-25"),
    pytest.param("v2", "legacy", "2025-11-25", id="sdk2-legacy-2025-11-25"),
    pytest.param("v2", "modern", "2026-07-28", id="sdk2-pinned-2026-07-28"),
    pytest.param("v2", "auto", "2026-07-28", id="sdk2-auto-2026-07-28"),
]

TOOLS = {"shop__find", "shop__order", "shop__charge", *WARRANT_TOOLS}


@pytest.mark.parametrize(("sdk", "era", "revision"), CLIENTS)
async def test_lists_and_calls_with_the_typescript_sdk(api: Api, sdk: str, era: str, revision: str) -> None:
    token = await lease_token(api)
    ran = await run_node(
        "ts_client.mjs",
        sdk,
        era,
        f"{api.url}/mcp",
        "shop__find",
        '{"q": "x"}',
        "shop__order",
        '{"to": "x@example.com"}',
        env={"WARRANT_TOKEN": token},
    )
    out = ran.json()
    assert out["protocolVersion"] == revision
    assert out["serverInfo"]["name"] == "warrant"
    assert {t["name"] for t in out["tools"]} == TOOLS
    schemas = {t["name"]: t["inputSchema"] for t in out["tools"]}
    assert schemas["shop__find"]["required"] == ["q"]
    annotations = {t["name"]: t.get("annotations", {}) for t in out["tools"]}
    assert annotations["shop__find"]["readOnlyHint"] is True
    assert annotations["shop__order"]["readOnlyHint"] is False

    find, order = (call["result"] for call in out["calls"])
    assert find["isError"] is False
    assert find["structuredContent"] == {"hits": []}
    assert find["_meta"]["warrant/action_id"].startswith("act_")
    assert find["_meta"]["warrant/replayed"] is False
    assert find["_meta"]["warrant/budget_remaining"]["tool_calls"] == 99

    assert order["isError"] is False and order["_meta"]["warrant/code"] == "approval_required"  # waiting
    assert order["structuredContent"]["error"]["code"] == "approval_required"
    assert order["structuredContent"]["error"]["approval_id"].startswith("apr_")
    assert order["content"][0]["text"].startswith("[approval_required]")
    assert api.effects == []


@pytest.mark.parametrize(("sdk", "era", "revision"), CLIENTS)
async def test_an_unknown_token_reaches_the_sdk_as_http_401(api: Api, sdk: str, era: str, revision: str) -> None:
    ran = await run_node("ts_client.mjs", sdk, era, f"{api.url}/mcp", env={"WARRANT_TOKEN": "wl_nope-nope-nope-nope"})
    assert ran.returncode == 2, ran.stdout + ran.stderr
    error = json.loads(ran.stdout)["error"]
    if era == "legacy":
        # The status and our body, reason included, reach the caller (as the SDK's generic HTTP error).
        assert error["status"] == 401
        assert "[unauthenticated] unknown lease token" in error["message"]
    else:
        # The 2.x SDK's version probe turns a 401 into its own authentication error; our body is dropped.
        assert error["code"] == "CLIENT_HTTP_AUTHENTICATION"
        assert "HTTP 401" in error["message"]
