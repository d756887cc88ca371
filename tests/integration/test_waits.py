"""Waits and signals end to end (docs/decisions/0027-waits.md): a served gateway (uvicorn on
loopback) on SQLite and on PostgreSQL, the official MCP SDK client as the agent, the operator API
over HTTP; the gateway is stopped and served again between the wait and the signal."""

from __future__ import annotations

import contextlib
import io
import json
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from gateway.app import create_app
from gateway.cli import main
from gateway.clock import ManualClock
from gateway.config import load_settings
from tests.contracts import DROP, contract
from tests.harness import uvicorn_serving
from tests.harness_postgres import fresh_database

pytestmark = pytest.mark.anyio

KEYS = {"op": ("acme", "operator"), "wrk": ("acme", "worker"), "aud": ("acme", "auditor")}
CONTRACT: dict[str, Any] = contract(goal="Quotes from three vendors", lease_ttl=DROP)


@dataclass
class Gateway:
    """A gateway's configuration, served as often as a test asks (one process at a time)."""

    config: Path
    clock: ManualClock

    @asynccontextmanager
    async def serving(self) -> AsyncIterator[str]:
        env = {f"KEY_{n.upper()}": f"key-{n}" for n in KEYS} | {"WARRANT_LEDGER_KEY": "test-ledger-key"}
        app = create_app(load_settings(self.config, env), clock=self.clock)
        async with uvicorn_serving(app) as url:
            yield url


@contextlib.contextmanager
def database(kind: str, tmp_path: Path) -> Iterator[str]:
    if kind == "sqlite":
        yield f"sqlite:///{tmp_path}/w.db"
    else:
        with fresh_database() as url:
            yield url


@pytest.fixture(params=["sqlite", "postgres"])
def gateway(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Gateway]:
    with database(request.param, tmp_path) as url:
        keys = "\n".join(
            f"  - {{name: {n}, tenant: {t}, roles: [{r}], key_env: KEY_{n.upper()}}}" for n, (t, r) in KEYS.items()
        )
        (tmp_path / "warrant.yaml").write_text(f"database: {url}\napi_keys:\n{keys}\nwatchdog: {{enabled: false}}\n")
        yield Gateway(tmp_path / "warrant.yaml", ManualClock())


def api(url: str, key: str) -> httpx.AsyncClient:
    return httpx.AsyncClient(base_url=url, headers={"Authorization": f"Bearer key-{key}"}, timeout=10)


@asynccontextmanager
async def agent(url: str, token: str) -> AsyncIterator[Client]:
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=10) as http:
        async with Client(streamable_http_client(f"{url}/mcp", http_client=http), cache=None) as c:
            yield c


async def call(c: Client, name: str, arguments: dict[str, Any]) -> tuple[bool, dict[str, Any]]:
    result = await c.call_tool(name, arguments)
    return result.is_error, result.structured_content or {}


async def start(url: str, worker: str = "agent") -> tuple[str, str]:
    async with api(url, "op") as c:
        r = await c.post("/api/runs", json=CONTRACT)
        assert r.status_code == 201, r.text
        run_id = r.json()["run_id"]
        grant = (await c.post(f"/api/runs/{run_id}/lease", json={"worker": worker})).json()
    return run_id, grant["token"]


async def status_of(url: str, run_id: str) -> str:
    async with api(url, "op") as c:
        status: str = (await c.get(f"/api/runs/{run_id}")).json()["status"]
    return status


WAIT = {"reason": "quotes from vendors", "until": "2d", "on_timeout": "fail", "wake_on": ["quotes.ready"]}


async def test_a_gateway_restarted_between_wait_and_signal_changes_nothing(gateway: Gateway) -> None:
    async with gateway.serving() as url:
        run_id, token = await start(url)
        async with agent(url, token) as c:
            err, body = await call(c, "warrant_wait", WAIT)
            assert not err, body
            assert body["wait"]["wake_on"] == ["quotes.ready"]
        assert await status_of(url, run_id) == "waiting"

    gateway.clock.advance(3600)  # an hour later (SQLite; PostgreSQL keeps its own clock), another process
    async with gateway.serving() as url:
        assert await status_of(url, run_id) == "waiting"
        signal = {"name": "quotes.ready", "payload": {"quotes": [12, 15, 11]}, "idempotency_key": "batch-1"}
        async with api(url, "op") as c:
            first = await c.post(f"/api/runs/{run_id}/signal", json=signal)
            again = await c.post(f"/api/runs/{run_id}/signal", json=signal)
        assert first.status_code == 200, first.text
        assert (first.json()["status"], first.json()["replayed"]) == ("running", False)
        assert first.json()["woke_wait_id"] == body["wait"]["wait_id"]
        assert again.json()["replayed"] and again.json()["signal_id"] == first.json()["signal_id"]
        async with agent(url, token) as c:
            err, status = await call(c, "warrant_status", {})
        assert not err and status["status"] == "running" and status["wait"] is None
        assert [(s["name"], s["payload"]) for s in status["signals"]] == [("quotes.ready", {"quotes": [12, 15, 11]})]
        async with api(url, "op") as c:
            events = (await c.get(f"/api/runs/{run_id}/events")).json()["items"]
        types = [e["type"] for e in events]
        assert types.count("signal_received") == 1 and types.count("wait_ended") == 1
        assert types.index("wait_started") < types.index("signal_received") < types.index("wait_ended")


async def test_a_superseded_workers_wait_and_bad_waits_are_refused_with_their_codes(gateway: Gateway) -> None:
    async with gateway.serving() as url:
        run_id, token = await start(url)
        async with agent(url, token) as c:
            for bad, field in [({**WAIT, "until": "31d"}, "until"), ({**WAIT, "wake_on": ["Bad!"]}, "wake_on")]:
                err, body = await call(c, "warrant_wait", bad)
                assert err and (body["error"]["code"], body["error"]["field"]) == ("wait_invalid", field)
        async with api(url, "op") as c:
            r = await c.post(f"/api/runs/{run_id}/lease", json={"worker": "agent-2", "takeover": True})
            assert r.status_code == 201, r.text
        async with agent(url, token) as c:
            err, body = await call(c, "warrant_wait", WAIT)
        assert err and body["error"]["code"] == "lease_superseded"
        assert await status_of(url, run_id) == "running"


async def test_the_signal_route_takes_operator_and_worker_keys_and_bounds_the_payload(gateway: Gateway) -> None:
    async with gateway.serving() as url:
        run_id, _ = await start(url)
        route = f"/api/runs/{run_id}/signal"
        async with api(url, "wrk") as c:
            r = await c.post(route, json={"name": "note", "payload": "hi", "idempotency_key": "w1"})
            assert (r.status_code, r.json()["status"]) == (200, "running")
            big = await c.post(route, json={"name": "note", "payload": "x" * 17000, "idempotency_key": "w2"})
            assert (big.status_code, big.json()["error"]["code"]) == (422, "signal_invalid")
            bad = await c.post(route, json={"name": "Note", "idempotency_key": "w3"})
            assert (bad.status_code, bad.json()["error"]["code"]) == (422, "invalid_request")
            other = await c.post(route, json={"name": "note", "payload": "changed", "idempotency_key": "w1"})
            assert (other.status_code, other.json()["error"]["code"]) == (409, "idempotency_conflict")
        async with api(url, "aud") as c:
            r = await c.post(route, json={"name": "note", "idempotency_key": "a1"})
            assert (r.status_code, r.json()["error"]["code"]) == (403, "forbidden")


async def test_the_cli_signal_wakes_a_waiting_run_once_per_key(
    gateway: Gateway, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WARRANT_API_KEY", "key-op")
    async with gateway.serving() as url:
        run_id, token = await start(url)
        async with agent(url, token) as c:
            err, body = await call(c, "warrant_wait", WAIT)
            assert not err, body

        argv = ["runs", "signal", run_id, "quotes.ready", "--payload", '{"quotes": [1]}', "--key", "k-1", "--url", url]
        code, out = await warrant(argv)
        assert code == 0 and "the run is running" in out and body["wait"]["wait_id"] in out
        code, out = await warrant([*argv, "--json"])
        assert code == 0 and json.loads(out)["replayed"] is True
        code, _ = await warrant(["runs", "signal", run_id, "note", "--payload", "{not json", "--url", url])
        assert code == 1


async def warrant(argv: list[str]) -> tuple[int, str]:
    """The CLI against the served gateway, on a thread (its client is synchronous)."""
    out = io.StringIO()

    def run() -> int:
        with contextlib.redirect_stdout(out):
            return main(argv)

    code = await anyio.to_thread.run_sync(run)
    return code, out.getvalue()


async def alert_kinds(url: str, run_id: str) -> list[str]:
    async with api(url, "op") as c:
        events = (await c.get(f"/api/runs/{run_id}/events", params={"limit": "500"})).json()["items"]
    return [e["data"]["kind"] for e in events if e["type"] == "alert"]


async def test_a_wait_longer_than_the_lease_raises_no_lease_missed_and_the_same_token_goes_on(
    gateway: Gateway,
) -> None:
    # The watchdog on, ticking every second; a 2 s lease; time passes for both stores (SQLite reads
    # the test's clock, PostgreSQL its own): the clock is moved and the test sleeps as long.
    text = gateway.config.read_text().replace("watchdog: {enabled: false}", "watchdog: {tick: 1s, heartbeat: 1h}")
    gateway.config.write_text(text)
    short = {**CONTRACT, "lease_ttl": "2s"}
    async with gateway.serving() as url:
        async with api(url, "op") as c:
            ids = []
            for worker in ("waiter", "silent"):
                r = await c.post("/api/runs", json=short)
                assert r.status_code == 201, r.text
                run_id = r.json()["run_id"]
                grant = (await c.post(f"/api/runs/{run_id}/lease", json={"worker": worker})).json()
                ids.append((run_id, grant["token"]))
        (waiting, token), (silent, _) = ids
        async with agent(url, token) as client:
            err, body = await call(client, "warrant_wait", {**WAIT, "until": "1h"})
            assert not err, body
        for _ in range(6):  # 6 s: three times the lease's TTL, six ticks
            gateway.clock.advance(1)
            await anyio.sleep(1)
        # The silent worker of a running run is missed (the watchdog did look); the waiting one is not.
        assert await alert_kinds(url, silent) == ["lease_missed"]
        assert await alert_kinds(url, waiting) == []
        signal = {"name": "quotes.ready", "payload": {"quotes": [1]}, "idempotency_key": "late"}
        async with api(url, "op") as c:
            r = await c.post(f"/api/runs/{waiting}/signal", json=signal)
        assert r.json()["status"] == "running", r.text
        async with agent(url, token) as client:
            err, status = await call(client, "warrant_status", {})
        assert not err and status["status"] == "running"
        assert await alert_kinds(url, waiting) == []
