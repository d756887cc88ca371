"""Approvals that reach people, end to end (issue 24, docs/decisions/0029-approvals-reach.md): a served
gateway (uvicorn on loopback), the official MCP SDK client as the worker, and a real webhook receiver
on loopback subscribed by the issue's name `approval_required`. Each approval asked for reaches it
once, signed, with a console link under `oauth.public_url` and never the payload."""

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
SECRET = "whsec-approvals-reach"
PUBLIC = "https://warrant.acme.example"
KEYS = {"op": ("acme", "operator"), "ana": ("acme", "approver")}
CONTRACT: dict[str, Any] = contract(
    goal="Mail two partners",
    lease_ttl=DROP,
    authority={"allow": ["notes__*"]},
)


@dataclass
class Receiver:
    clock: ManualClock
    bodies: list[tuple[dict[str, Any], bool, bytes]] = field(default_factory=list)

    async def receive(self, request: Request) -> Response:
        raw = await request.body()
        signed = verify(SECRET.encode(), raw, request.headers.get(SIGNATURE_HEADER, ""), self.clock.now())
        body = json.loads(raw)
        if body.get("kind") != "heartbeat":
            self.bodies.append((body, signed, raw))
        return Response(status_code=204)


@dataclass
class World:
    url: str
    receiver: Receiver

    def client(self, key: str) -> httpx.AsyncClient:
        return httpx.AsyncClient(base_url=self.url, headers={"Authorization": f"Bearer key-{key}"}, timeout=10)


@pytest.fixture
async def world(tmp_path: Path) -> AsyncIterator[World]:
    clock = ManualClock()
    receiver = Receiver(clock)
    hooks = Starlette(routes=[Route("/hooks/people", receiver.receive, methods=["POST"])])
    async with uvicorn_serving(hooks) as hooks_url:
        keys = "\n".join(
            f"  - {{name: {n}, tenant: {t}, roles: [{r}], key_env: KEY_{n.upper()}}}" for n, (t, r) in KEYS.items()
        )
        (tmp_path / "warrant.yaml").write_text(
            f"database: sqlite:///{tmp_path}/w.db\napi_keys:\n{keys}\n"
            f"adapters: [{ROOT}/adapters/notes.yaml]\npolicies: [{ROOT}/policies/default.yaml]\n"
            f"oauth: {{public_url: '{PUBLIC}'}}\n"
            "watchdog: {tick: 1s, heartbeat: 1h}\n"
            "webhooks:\n"
            f"  - {{name: people, url: '{hooks_url}/hooks/people', secret_env: HOOK_SECRET, "
            "events: [approval_required]}\n"
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


async def test_each_approval_reaches_the_webhook_once_with_its_link_and_without_the_payload(world: World) -> None:
    async with world.client("op") as c:
        r = await c.post("/api/runs", json=CONTRACT)
        assert r.status_code == 201, r.text
        run_id = r.json()["run_id"]
        token = (await c.post(f"/api/runs/{run_id}/lease", json={"worker": "agent"})).json()["token"]
    asked = []
    async with worker(world, token) as mcp:
        for to in ("bo@partner.example", "cy@partner.example"):
            args = {"note_id": "note-HUNTER2", "to": to}
            result = await mcp.call_tool("notes__send", args)
            error = (result.structured_content or {})["error"]
            assert error["code"] == "approval_required"
            asked.append(error["approval_id"])
    assert len(set(asked)) == 2  # the second proposal replaced the first: two approvals

    await eventually(lambda: len(world.receiver.bodies) == 2)
    for (body, signed, raw), approval_id in zip(world.receiver.bodies, asked, strict=True):
        assert signed and body["kind"] == "approval_requested" and body["run_id"] == run_id
        data = body["data"]
        assert (data["approval_id"], data["tool"], data["blocks_run"]) == (approval_id, "notes__send", True)
        assert data["link"] == f"{PUBLIC}/console/approvals/{approval_id}"
        assert len(data["payload_sha256"]) == 64 and data["decide_by"] and data["destination"]
        assert b"HUNTER2" not in raw and b"partner.example" not in raw
    async with world.client("op") as c:
        events = (await c.get(f"/api/runs/{run_id}/events")).json()["items"]
    assert [e["data"]["approval_id"] for e in events if e["type"] == "approval_requested"] == asked
    async with world.client("ana") as c:
        shown = (await c.get(f"/api/approvals/{asked[1]}")).json()
    assert (shown["blocks_run"], shown["approvers"], shown["escalate_at"]) == (True, None, None)
    assert shown["destination"] == body["data"]["destination"]


async def test_a_contract_may_not_unblock_the_run_where_the_policy_blocks_it(world: World) -> None:
    unblocking = contract(
        goal="Mail partners without waiting",
        lease_ttl=DROP,
        authority={"allow": ["notes__*"]},
        approvals=[{"tool": "notes__send", "blocks_run": False}],
    )
    async with world.client("op") as c:
        r = await c.post("/api/runs", json=unblocking)
    assert r.status_code == 422 and r.json()["error"]["code"] == "approval_looser_than_policy"
    [problem] = r.json()["error"]["problems"]
    assert (problem["field"], problem["policy"], problem["contract"]) == ("approvals.0.blocks_run", True, False)
