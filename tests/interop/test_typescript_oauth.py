"""The official TypeScript SDK's OAuth client against a fresh gateway, only its /mcp URL configured,
and a person consenting in Chromium.

tests/interop/node/ts_oauth_client.mjs is the client (its protocol with this test is at its top):
an `OAuthClientProvider` in memory, its redirect URI a loopback listener of its own. The SDK finds
the authorization server from the 401 of /mcp (RFC 9728), registers (RFC 7591), asks for an
authorization; the test opens that URL in Chromium (tests/oauth/browser.py), signs in on the
console and allows the run; the browser lands on the script's listener, which hands the code to
`finishAuth`. Then the script lists and calls; past the access token's lifetime (3 s, on the
gateway's clock, which the test moves) its next call is answered 401 and the SDK refreshes by
itself (`oauth_refreshed`); after the run is cancelled the call is refused by the gate, and the
refresh the SDK tries once the access token lapses again is refused `invalid_grant`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import Browser

from tests.api.conftest import Api, serving_api
from tests.interop.nodejs import NodeSession, start_node
from tests.oauth.browser import Choice, chromium, consent

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

TTL = 3.0
OAUTH = f"oauth: {{access_token_ttl: {int(TTL)}s}}\n"
FIND = 'call:shop__find:{"q": "pens"}'


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    """Module-wide, so that one Chromium serves every test of the module."""
    return "asyncio"


@pytest.fixture(scope="module")
async def browser() -> AsyncIterator[Browser]:
    async with chromium() as launched:
        yield launched


@pytest.fixture
async def oauth_api(tmp_path: Path) -> AsyncIterator[Api]:
    async with serving_api(tmp_path, OAUTH) as served:
        yield served


async def events_of(api: Api, run_id: str) -> list[dict[str, Any]]:
    async with api.client("op") as c:
        answer = await c.get(f"/api/runs/{run_id}/events", params={"limit": 500})
    assert answer.status_code == 200, answer.text
    items: list[dict[str, Any]] = answer.json()["items"]
    return items


def http_lines(lines: list[dict[str, Any]]) -> list[tuple[str, int, str | None]]:
    return [(line["path"], line["status"], line.get("grant_type")) for line in lines if line.get("event") == "http"]


def token_refusals(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        line for line in lines if line.get("event") == "http" and line["path"] == "/token" and line["status"] >= 400
    ]


# (sdk, era, the token endpoint auth method it registers with, the revision it must end up speaking):
# the 1.x SDK as its own OAuth example registers, the 2.x one as a public client and, with its
# version probe, as a confidential one authenticating with HTTP Basic.
CLIENTS = [
    pytest.param("v1", "legacy", "client_secret_post", "2025-11-25", id="sdk1-client_secret_post"),
    pytest.param("v2", "modern", "none", "2026-07-28", id="sdk2-2026-07-28-public"),
    pytest.param("v2", "auto", "client_secret_basic", "2026-07-28", id="sdk2-auto-client_secret_basic"),
]


@pytest.mark.parametrize(("sdk", "era", "method", "revision"), CLIENTS)
async def test_typescript_sdk_signs_in_refreshes_and_is_stopped(
    oauth_api: Api, browser: Browser, sdk: str, era: str, method: str, revision: str
) -> None:
    run_id = await oauth_api.new_run()
    steps = ["list", FIND, "wait", FIND, "wait", FIND, "wait", FIND]
    script = await start_node("ts_oauth_client.mjs", sdk, era, method, f"{oauth_api.url}/mcp", *steps)
    try:
        await drive(oauth_api, browser, script, run_id, method, revision)
    except Exception as exc:
        await script.finish(time_limit=0)  # killed: it may be blocked in a `wait`
        raise AssertionError(f"{type(exc).__name__}: {exc}\n{script.story()}") from exc
    assert await script.finish() == 0, script.story()


async def drive(api: Api, browser: Browser, script: NodeSession, run_id: str, method: str, revision: str) -> None:
    # Sign-in: the SDK found everything from the URL and asks for an authorization.
    asked, before = await script.until("event", "authorize")
    discovery = http_lines(before)
    assert discovery[0][:2] == ("/mcp", 401), discovery
    assert ("/.well-known/oauth-protected-resource/mcp", 200, None) in discovery, discovery
    assert ("/.well-known/oauth-authorization-server", 200, None) in discovery, discovery
    (registered,) = [line for line in before if line.get("path") == "/register"]
    assert registered["status"] == 201, registered
    assert registered["token_endpoint_auth_method"] == method
    assert registered["client_secret"] is (method != "none")
    consented = await consent(browser, asked["url"], "key-op", Choice.run(run_id))
    assert consented.signed_in and consented.client_name.startswith("warrant interop")
    callback, _ = await script.until("event", "callback")
    assert callback["code"].startswith("wac_") and callback["code"] == consented.query["code"]
    connected, before = await script.until("event", "connected")
    assert ("/token", 200, "authorization_code") in http_lines(before)
    assert {line["client_auth"] for line in before if line.get("path") == "/token"} == {method}
    assert connected["protocolVersion"] == revision
    assert connected["serverInfo"]["name"] == "warrant"

    listed, _ = await script.until("step", "list")
    assert "shop__find" in listed["tools"]
    first, _ = await script.until("step", "call")
    assert first["isError"] is False, first
    assert first["meta"]["warrant/action_id"].startswith("act_")
    assert first["structuredContent"] == {"hits": []}

    # Past the access token's lifetime: 401, and the SDK refreshes by itself and calls again.
    await script.until("step", "wait")
    api.clock.advance(TTL + 1)
    script.send()
    second, before = await script.until("step", "call")
    assert second["isError"] is False, second
    assert second["meta"]["warrant/action_id"] != first["meta"]["warrant/action_id"]
    assert http_lines(before) == [("/mcp", 401, None), ("/token", 200, "refresh_token"), ("/mcp", 200, None)]
    assert [line["client_auth"] for line in before if line.get("path") == "/token"] == [method]
    assert [e for e in await events_of(api, run_id) if e["type"] == "oauth_refreshed"], "no oauth_refreshed event"

    # The run cancelled: the next call is refused by the gate, with the run's code.
    await script.until("step", "wait")
    async with api.client("op") as c:
        cancelled = await c.post(f"/api/runs/{run_id}/cancel", json={"reason": "the person stopped it"})
    assert cancelled.status_code == 200, cancelled.text
    script.send()
    third, before = await script.until("step", "call")
    assert third.get("code") == "run_cancelled", third
    assert third["isError"] is True, third
    assert not token_refusals(before)

    # The access token lapses again: the SDK's refresh is refused invalid_grant, and it asks for a
    # new authorization, which nobody gives; the call fails in the SDK.
    await script.until("step", "wait")
    api.clock.advance(TTL + 1)
    script.send()
    fourth, before = await script.until("step", "call")
    refusals = token_refusals(before)
    assert [(r["grant_type"], r["status"], r["error"]) for r in refusals] == [("refresh_token", 400, "invalid_grant")]
    assert f"run {run_id} is cancelled" in refusals[0]["error_description"]
    assert any(line.get("event") == "authorize" for line in before), before
    assert fourth["error"]["name"] == "UnauthorizedError", fourth
    await script.until("step", "done")
