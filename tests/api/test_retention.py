"""Retention through a real server (docs/retention.md): an expired operation id refused over MCP with
nothing dispatched, the scheduled purge after the clock moves, the purge on request (API and CLI),
the ledger verifying after each, and what an agent gets when it replays a purged result."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult

from gateway.cli import main
from gateway.domain import OPERATION_ID_META
from tests.api.conftest import Api, serving_api
from tests.api.test_operator_api import create_run, lease
from tests.e2e.serving import code_of

pytestmark = pytest.mark.anyio

HOUR = 3600.0
RETENTION = "retention: {idempotency: 1h, payload_bodies: 1d, purge_every: 1h}\nwatchdog: {enabled: false}\n"


@pytest.fixture
async def api(tmp_path: Path) -> AsyncIterator[Api]:
    async with serving_api(tmp_path, RETENTION) as served:
        yield served


async def call(api: Api, token: str, tool: str, arguments: dict[str, Any], operation_id: str) -> CallToolResult:
    """One tools/call over streamable HTTP with the official MCP client, as an agent makes it."""
    with anyio.fail_after(10):
        async with (
            httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=10) as http,
            Client(streamable_http_client(f"{api.url}/mcp", http_client=http), mode="auto", cache=None) as client,
        ):
            return await client.call_tool(tool, arguments, meta={OPERATION_ID_META: operation_id})


async def get(api: Api, path: str, key: str = "aud") -> Any:
    async with api.client(key) as c:
        r = await c.get(path)
    assert r.status_code == 200, r.text
    return r.json()


async def purge(api: Api, body: dict[str, Any], key: str = "ops") -> httpx2.Response | Any:
    async with api.client(key) as c:
        return await c.post("/api/ledger/purge", json=body)


async def charged(api: Api, card: str = "4242") -> tuple[dict[str, Any], str, CallToolResult]:
    """A run, its lease, and one charge of `card` that succeeded: (run, token, result)."""
    run = await create_run(api)
    token = (await lease(api, run["run_id"]))["token"]
    result = await call(api, token, "shop__charge", {"card": card}, f"charge-{card}")
    assert code_of(result) is None
    return run, token, result


async def test_an_expired_operation_id_is_refused_and_nothing_is_dispatched(api: Api) -> None:
    run, token, first = await charged(api)
    assert first.meta is not None
    replay = await call(api, token, "shop__charge", {"card": "4242"}, "charge-4242")
    assert replay.meta is not None and replay.meta["warrant/replayed"] is True

    api.clock.advance(HOUR)
    token = (await lease(api, run["run_id"], takeover=True))["token"]  # the first lease lapsed meanwhile
    refused = await call(api, token, "shop__charge", {"card": "4242"}, "charge-4242")
    assert code_of(refused) == "idempotency_expired"
    assert refused.structured_content is not None
    assert refused.structured_content["error"]["action_id"] == first.meta["warrant/action_id"]
    assert api.effects == [{"card": "4242"}]  # dispatched once, at the first call
    actions = (await get(api, f"/api/runs/{run['run_id']}/actions"))["items"]
    assert [(a["status"], a["code"]) for a in actions][-1] == ("rejected", "idempotency_expired")
    assert (await get(api, "/api/ledger/verify"))["ok"] is True


async def test_the_scheduled_purge_takes_bodies_once_they_are_due_and_the_ledger_still_verifies(api: Api) -> None:
    run, _, _ = await charged(api)
    watchdog = api.gateway.watchdog
    assert watchdog is not None
    before = await watchdog.tick()
    assert before.purged is not None and before.purged.actions == 0  # settled, not due yet

    api.clock.advance(25 * HOUR)
    tick = await watchdog.tick()
    assert tick.purged is not None and (tick.purged.actions, tick.purged.purged) == (1, 2)  # payload and result
    events = (await get(api, f"/api/runs/{run['run_id']}/events"))["items"]
    assert events[-1]["type"] == "bodies_purged" and events[-1]["data"]["by"] == "retention"
    assert (await get(api, "/api/ledger/verify"))["ok"] is True
    assert (await watchdog.tick()).purged is None  # purge_every has not passed since


async def test_a_purge_on_request_is_admin_only_scoped_recorded_and_the_ledger_still_verifies(api: Api) -> None:
    run, _, _ = await charged(api)
    other, _, _ = await charged(api, "5555")
    assert (await purge(api, {"run_id": run["run_id"]}, key="op")).status_code == 403
    assert (await purge(api, {"run_id": run["run_id"]}, key="other")).status_code == 404
    unscoped = await purge(api, {})
    assert unscoped.status_code == 422 and unscoped.json()["error"]["code"] == "invalid_request"
    assert (await purge(api, {"before": "yesterday"})).status_code == 422

    done = await purge(api, {"run_id": run["run_id"], "reason": "customer asked"})
    assert done.status_code == 200, done.text
    assert done.json() == {
        "actions": 1, "purged": 2, "kept": 0, "signals": 0, "runs": [run["run_id"]], "more": False
    }  # fmt: skip
    events = (await get(api, f"/api/runs/{run['run_id']}/events"))["items"]
    assert (events[-1]["type"], events[-1]["data"]["by"], events[-1]["data"]["reason"]) == (
        "bodies_purged",
        "ops",
        "customer asked",
    )
    assert (await get(api, f"/api/runs/{other['run_id']}/events"))["items"][-1]["type"] != "bodies_purged"
    assert (await get(api, "/api/ledger/verify"))["ok"] is True


async def test_warrant_ledger_purge_purges_over_the_api(
    api: Api, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    run, _, _ = await charged(api)
    monkeypatch.setenv("WARRANT_API_KEY", "key-ops")
    capsys.readouterr()
    code = await anyio.to_thread.run_sync(main, ["ledger", "purge", "--run", run["run_id"], "--url", api.url])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert out.startswith("purged 2 bodies of 1 settled actions")
    code = await anyio.to_thread.run_sync(main, ["ledger", "purge", "--url", api.url])
    assert code == 1 and "[invalid_request]" in capsys.readouterr().err


async def test_a_replay_of_a_purged_result_says_it_was_purged_and_carries_the_receipt(api: Api) -> None:
    run, token, first = await charged(api)
    assert (await purge(api, {"run_id": run["run_id"]})).status_code == 200
    replay = await call(api, token, "shop__charge", {"card": "4242"}, "charge-4242")
    assert code_of(replay) is None and replay.meta is not None and first.meta is not None
    assert replay.meta["warrant/replayed"] is True and replay.meta["warrant/result_purged"] is True
    assert replay.meta["warrant/receipt"]["id"] == "charge-1"
    assert replay.content[0].type == "text" and "purged" in replay.content[0].text
    assert api.effects == [{"card": "4242"}]
