"""The failed end, end to end (issue 23, docs/decisions/0024-failed-end.md): a served gateway (uvicorn
on loopback), the official MCP SDK client as the worker, and a real webhook receiver on loopback.
A run whose verification fails under `completion.on_verification_failed: fail` ends `failed`, with
its `run_failed` ledger entry, and the signed `run_failed` alert arrives at the receiver; a serious
refusal reaches a receiver that takes that kind, and nothing of the call's arguments goes with it."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from gateway.app import create_app
from gateway.clock import ManualClock
from gateway.config import load_settings
from gateway.runtime.webhooks import SIGNATURE_HEADER, verify
from tests.contracts import DROP, contract
from tests.harness import eventually, uvicorn_serving

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[2]
SECRET = "whsec-failed-end"
KEYS = {"op": ("acme", "operator")}
CONTRACT: dict[str, Any] = contract(
    goal="An inventory the gateway verifies",
    lease_ttl=DROP,
    authority={"allow": ["notes__*"], "deny": ["notes__append"]},
    milestones=[{"id": "inventory", "checks": [{"artifact": "inventory"}]}],
    completion={"on_verification_failed": "fail"},
    escalation={"serious_refusals": ["forbidden"]},
)


@dataclass
class Receiver:
    """A webhook receiver on loopback: keeps each body it gets and whether its signature verified."""

    clock: ManualClock  # the gateway's: a delivery is signed at the gateway's time
    bodies: list[tuple[str, dict[str, Any], bool]] = field(default_factory=list)  # (hook, body, signed)

    async def receive(self, request: Request) -> Response:
        raw = await request.body()
        signed = verify(SECRET.encode(), raw, request.headers.get(SIGNATURE_HEADER, ""), self.clock.now())
        self.bodies.append((request.path_params["hook"], json.loads(raw), signed))
        return Response(status_code=204)

    def kinds(self, hook: str) -> list[str]:
        return [body["kind"] for name, body, _ in self.bodies if name == hook and body["kind"] != "heartbeat"]


@dataclass
class World:
    url: str
    receiver: Receiver

    def client(self, key: str) -> httpx.AsyncClient:
        return httpx.AsyncClient(base_url=self.url, headers={"Authorization": f"Bearer key-{key}"}, timeout=10)

    async def start(self) -> tuple[str, str]:
        async with self.client("op") as c:
            r = await c.post("/api/runs", json=CONTRACT)
            assert r.status_code == 201, r.text
            run_id = r.json()["run_id"]
            grant = (await c.post(f"/api/runs/{run_id}/lease", json={"worker": "agent"})).json()
        return run_id, grant["token"]


@pytest.fixture
async def world(tmp_path: Path) -> AsyncIterator[World]:
    clock = ManualClock()
    receiver = Receiver(clock)
    hooks = Starlette(routes=[Route("/hooks/{hook}", receiver.receive, methods=["POST"])])
    async with uvicorn_serving(hooks) as hooks_url:
        (tmp_path / "artifacts").mkdir()
        keys = "\n".join(
            f"  - {{name: {n}, tenant: {t}, roles: [{r}], key_env: KEY_{n.upper()}}}" for n, (t, r) in KEYS.items()
        )
        (tmp_path / "warrant.yaml").write_text(
            f"database: sqlite:///{tmp_path}/w.db\napi_keys:\n{keys}\nartifact_roots: [artifacts]\n"
            f"adapters: [{ROOT}/adapters/notes.yaml]\npolicies: [{ROOT}/policies/default.yaml]\n"
            "watchdog: {tick: 1s, heartbeat: 1h}\n"
            "webhooks:\n"
            f"  - {{name: failures, url: '{hooks_url}/hooks/failures', secret_env: HOOK_SECRET, "
            "events: [run_failed]}\n"
            f"  - {{name: refusals, url: '{hooks_url}/hooks/refusals', secret_env: HOOK_SECRET, "
            "events: [serious_refusal]}\n"
        )
        env = {f"KEY_{n.upper()}": f"key-{n}" for n in KEYS} | {
            "WARRANT_LEDGER_KEY": "test-ledger-key",
            "HOOK_SECRET": SECRET,
        }
        app = create_app(load_settings(tmp_path / "warrant.yaml", env), clock=clock)
        async with uvicorn_serving(app) as url:
            yield World(url, receiver)


@asynccontextmanager
async def worker(world: World, token: str) -> AsyncIterator[Client]:
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=10) as http:
        async with Client(streamable_http_client(f"{world.url}/mcp", http_client=http), cache=None) as c:
            yield c


async def call(c: Client, name: str, arguments: dict[str, Any]) -> tuple[bool, dict[str, Any], str]:
    result = await c.call_tool(name, arguments)
    text = result.content[0].text if result.content else ""  # type: ignore[union-attr]
    return result.is_error, result.structured_content or {}, text


async def test_a_run_that_fails_verification_under_fail_ends_failed_and_the_alert_reaches_the_receiver(
    world: World,
) -> None:
    run_id, token = await world.start()
    async with worker(world, token) as c:
        # The artifact the check reads is not there: the milestone fails, and with it the run.
        err, body, text = await call(c, "warrant_milestone", {"milestone_id": "inventory", "evidence": {}})
        assert not err and body["milestone"]["status"] == "failed"
        assert body["run_status"] == "failed" and "the run is failed" in text
        err, body, _ = await call(c, "warrant_status", {})
        assert err and body["error"]["code"] == "run_failed"

    async with world.client("op") as c:
        run = (await c.get(f"/api/runs/{run_id}")).json()
        events = (await c.get(f"/api/runs/{run_id}/events")).json()["items"]
    assert run["status"] == "failed"
    assert (run["status_cause"]["by"], run["status_cause"]["rule"]) == ("gateway", "completion.on_verification_failed")
    failed = [e for e in events if e["type"] == "run_failed"]
    assert [(e["data"]["previous"], e["data"]["milestone_id"]) for e in failed] == [("running", "inventory")]
    alert = next(e for e in events if e["type"] == "alert")
    assert alert["data"]["kind"] == "run_failed"

    await eventually(lambda: world.receiver.kinds("failures") == ["run_failed"])
    [(_, delivered, signed)] = [b for b in world.receiver.bodies if b[0] == "failures"]
    assert signed  # the Warrant-Signature verifies with the hook's secret
    # The body is the alert entry's envelope: the event id, and the alert's own id beside it.
    assert (delivered["id"], delivered["alert_id"], delivered["run_id"]) == (
        alert["id"],
        alert["data"]["alert_id"],
        run_id,
    )
    assert delivered["data"]["rule"] == "completion.on_verification_failed"
    assert world.receiver.kinds("refusals") == []  # that hook takes serious_refusal only


async def test_a_serious_refusal_reaches_the_receiver_that_takes_it_without_the_arguments(world: World) -> None:
    run_id, token = await world.start()
    async with worker(world, token) as c:
        err, body, _ = await call(c, "notes__append", {"title": "t", "body": "the password is hunter2"})
        assert err and body["error"]["code"] == "forbidden"
    await eventually(lambda: world.receiver.kinds("refusals") == ["serious_refusal"])
    [(_, delivered, signed)] = [b for b in world.receiver.bodies if b[0] == "refusals"]
    assert signed and delivered["run_id"] == run_id
    assert (delivered["data"]["code"], delivered["data"]["tool"]) == ("forbidden", "notes__append")
    assert "hunter2" not in json.dumps(delivered)
    assert world.receiver.kinds("failures") == []
