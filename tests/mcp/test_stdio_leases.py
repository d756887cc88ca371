"""`warrant stdio` as a good citizen: real subprocesses, a real gateway, the official SDK client.

A bad token stops the bridge with a message (never "unavailable"); a gateway that is down is
`upstream_unavailable`, retryable; the bridge renews its lease in the background, and with
`--run` holds the worker key's lease itself and stops when someone else takes it over.
Time is the gateway's injected clock, moved by hand; a wait is bounded, never a bare sleep.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import MCPError

from tests.api.conftest import Api
from tests.harness import eventually, free_port

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

SHORT = {"lease_ttl": "20s"}


def bridge_params(url: str, env: dict[str, str], *args: str) -> StdioServerParameters:
    clean = {k: v for k, v in os.environ.items() if k not in ("WARRANT_TOKEN", "WARRANT_API_KEY", "WARRANT_URL")}
    return StdioServerParameters(
        command=sys.executable, args=["-m", "gateway.cli", "stdio", "--url", url, *args], env={**clean, **env}
    )


@asynccontextmanager
async def bridged(params: StdioServerParameters, errlog: Path, mode: str = "legacy") -> AsyncIterator[Client]:
    with errlog.open("w") as err:
        async with Client(stdio_client(params, errlog=err), mode=mode, cache=None) as client:
            yield client


async def lease_of(api: Api, run_id: str) -> dict[str, Any]:
    async with api.client("op") as c:
        lease: dict[str, Any] = (await c.get(f"/api/runs/{run_id}")).json()["lease"]
    return lease


async def idle(api: Api, run_id: str, seconds: float, step: float = 5.0) -> None:
    """Move the gateway's clock by `seconds`, a step at a time, each step only once the bridge
    has renewed past it (its renewals are the only traffic meanwhile)."""
    moved = 0.0
    while moved < seconds:
        api.clock.advance(step)
        moved += step

        async def renewed_past() -> bool:
            expires = (await lease_of(api, run_id)).get("expires_at")
            return expires is not None and _epoch(expires) > api.clock.now() + 10

        await eventually(renewed_past, wait=10)


def _epoch(iso: str) -> float:
    from datetime import datetime

    return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()


def code_of(result: Any) -> str | None:
    """The refusal code (None: it succeeded); a waiting answer is no error, its `_meta` names it."""
    code: str | None = (result.meta or {}).get("warrant/code")
    return code


async def run_bridge_once(url: str, env: dict[str, str], *args: str) -> tuple[int, str, str]:
    """The bridge as a bare process given one initialize and one tools/call: exit status, stdout, stderr."""
    lines = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "0"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "shop__find", "arguments": {"q": "x"}}},
    ]
    params = bridge_params(url, env, *args)
    with anyio.fail_after(30):
        done = await anyio.run_process(
            [params.command, *params.args],
            input="".join(json.dumps(line) + "\n" for line in lines).encode(),
            env=params.env,
            check=False,
        )
    return done.returncode, done.stdout.decode(), done.stderr.decode()


# -- a bad token is not a gateway that is down ------------------------------------------------
async def test_a_bad_token_stops_the_bridge_with_a_clear_message(api: Api) -> None:
    status, out, err = await run_bridge_once(api.url, {"WARRANT_TOKEN": "wl_" + "x" * 40})
    assert status == 2
    assert "refused this lease token" in err and "WARRANT_TOKEN" in err
    assert "upstream_unavailable" not in out and "retryable" not in out


async def test_a_bad_worker_key_stops_the_bridge_with_a_clear_message(api: Api) -> None:
    run_id = await api.new_run()
    status, out, err = await run_bridge_once(api.url, {"WARRANT_API_KEY": "key-nobody"}, "--run", run_id)
    assert status == 2
    assert "refused this API key" in err
    assert "upstream_unavailable" not in out


async def test_a_gateway_that_is_down_is_unavailable_and_retryable(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    async with bridged(bridge_params(url, {"WARRANT_TOKEN": "wl_" + "y" * 40}), tmp_path / "err") as client:
        result = await client.call_tool("shop__find", {"q": "x"})
        with pytest.raises(MCPError):
            await client.list_tools()
    assert code_of(result) == "upstream_unavailable"
    assert result.structured_content is not None and result.structured_content["error"]["retryable"] is True


# -- renewal while connected -------------------------------------------------------------------
async def test_a_bridge_idle_past_the_ttl_carries_on_with_the_same_token(api: Api, tmp_path: Path) -> None:
    run_id = await api.new_run(**SHORT)
    token = await api.lease_token(run_id)
    params = bridge_params(api.url, {"WARRANT_TOKEN": token}, "--renew-every", "0.2")
    async with bridged(params, tmp_path / "err") as client:
        await idle(api, run_id, 30)
        result = await client.call_tool("shop__find", {"q": "x"})
    assert result.is_error is False, result.content
    assert (await lease_of(api, run_id))["epoch"] == 1


async def test_an_approval_decided_after_the_ttl_is_usable_through_the_bridge(api: Api, tmp_path: Path) -> None:
    run_id = await api.new_run(**SHORT)
    token = await api.lease_token(run_id)
    params = bridge_params(api.url, {"WARRANT_TOKEN": token}, "--renew-every", "0.2")
    async with bridged(params, tmp_path / "err") as client:
        asked = await client.call_tool("shop__order", {"to": "bob@example.com"})
        assert code_of(asked) == "approval_required"
        approval = asked.structured_content["error"]["approval_id"]  # type: ignore[index]
        await idle(api, run_id, 30)
        async with api.client("appr") as c:
            decided = await c.post(f"/api/approvals/{approval}/approve", json={"note": "ok"})
        assert decided.status_code == 200, decided.text
        done = await client.call_tool("shop__order", {"to": "bob@example.com"})
    assert done.is_error is False, done.content
    assert api.effects == [{"to": "bob@example.com"}]


async def test_after_an_idle_expiry_a_takeover_kills_the_bridges_token(api: Api, tmp_path: Path) -> None:
    run_id = await api.new_run(**SHORT)
    token = await api.lease_token(run_id)
    params = bridge_params(api.url, {"WARRANT_TOKEN": token}, "--renew-every", "3600")  # renews nothing here
    async with bridged(params, tmp_path / "err") as client:
        api.clock.advance(30)
        await api.lease_token(run_id, "agent-2")  # expired: no takeover needed, the epoch moves on
        late = await client.call_tool("shop__charge", {"card": "visa"})
    assert code_of(late) == "lease_superseded"
    assert api.effects == []


# -- --run: the worker key's own lease -----------------------------------------------------------
async def test_stdio_run_acquires_and_renews_the_worker_keys_lease(api: Api, tmp_path: Path) -> None:
    run_id = await api.new_run(**SHORT)
    params = bridge_params(
        api.url, {"WARRANT_API_KEY": "key-wrk"}, "--run", run_id, "--worker", "laptop", "--renew-every", "0.2"
    )
    async with bridged(params, tmp_path / "err", mode="auto") as client:
        first = await client.call_tool("shop__find", {"q": "x"})
        await idle(api, run_id, 30)
        again = await client.call_tool("shop__find", {"q": "y"})
    lease = await lease_of(api, run_id)
    assert first.is_error is False and again.is_error is False, (first.content, again.content)
    assert lease["worker"] == "laptop" and lease["epoch"] == 1


async def test_stdio_run_restarted_finds_its_own_lease_not_a_held_one(api: Api, tmp_path: Path) -> None:
    run_id = await api.new_run()
    params = bridge_params(api.url, {"WARRANT_API_KEY": "key-wrk"}, "--run", run_id)
    for attempt in range(2):
        async with bridged(params, tmp_path / f"err{attempt}") as client:
            result = await client.call_tool("shop__find", {"q": "x"})
        assert result.is_error is False, result.content
    assert (await lease_of(api, run_id))["epoch"] == 1


async def test_a_takeover_stops_stdio_run_with_a_clear_message(api: Api, tmp_path: Path) -> None:
    run_id = await api.new_run()
    errlog = tmp_path / "err"
    params = bridge_params(api.url, {"WARRANT_API_KEY": "key-wrk"}, "--run", run_id, "--renew-every", "0.2")
    async with bridged(params, errlog) as client:
        assert (await client.call_tool("shop__find", {"q": "x"})).is_error is False
        await api.lease_token(run_id, "agent-2", takeover=True)
        await eventually(lambda: "taken over" in errlog.read_text(), wait=10)  # another process writes it
        with pytest.raises(Exception):  # noqa: B017 - the bridge is gone: whatever the transport raises
            await client.call_tool("shop__charge", {"card": "visa"})
    assert api.effects == []
    # Started again, it does not take the run back: it stops at once, saying why.
    status, out, err = await run_bridge_once(api.url, {"WARRANT_API_KEY": "key-wrk"}, "--run", run_id)
    assert status == 3 and "taken over" in err
    assert "upstream_unavailable" not in out


async def test_stdio_run_on_a_run_another_worker_holds_stops_naming_it(api: Api) -> None:
    run_id = await api.new_run()
    await api.lease_token(run_id, "someone-else")
    status, _, err = await run_bridge_once(api.url, {"WARRANT_API_KEY": "key-wrk"}, "--run", run_id)
    assert status == 3 and "someone-else" in err
