"""A served gateway (uvicorn on loopback, the bundled notes adapter and default policy) whose
`webhooks:` point at a real receiver on loopback, and the official MCP SDK client as its worker:
what the end-to-end alert tests (the failed end, approvals that reach people) share."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import httpx2
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
from tests.harness import uvicorn_serving

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Delivered:
    hook: str
    body: dict[str, Any]
    signed: bool  # its signature verified with the hook's secret at the gateway's time
    raw: bytes


@dataclass
class Receiver:
    """A webhook receiver on loopback (`/hooks/{hook}`): keeps every delivery but heartbeats."""

    secret: str
    clock: ManualClock  # the gateway's: a delivery is signed at the gateway's time
    bodies: list[Delivered] = field(default_factory=list)

    async def receive(self, request: Request) -> Response:
        raw = await request.body()
        signed = verify(self.secret.encode(), raw, request.headers.get(SIGNATURE_HEADER, ""), self.clock.now())
        body = json.loads(raw)
        if body.get("kind") != "heartbeat":
            self.bodies.append(Delivered(request.path_params["hook"], body, signed, raw))
        return Response(status_code=204)

    def delivered(self, hook: str) -> list[Delivered]:
        return [d for d in self.bodies if d.hook == hook]

    def kinds(self, hook: str) -> list[str]:
        return [d.body["kind"] for d in self.delivered(hook)]


@dataclass
class Served:
    url: str
    receiver: Receiver

    def client(self, key: str) -> httpx.AsyncClient:
        return httpx.AsyncClient(base_url=self.url, headers={"Authorization": f"Bearer key-{key}"}, timeout=10)

    async def start(self, contract: Mapping[str, Any], worker: str = "agent") -> tuple[str, str]:
        """A run of `contract` created by key `op`, and its worker's lease token."""
        async with self.client("op") as c:
            r = await c.post("/api/runs", json=contract)
            assert r.status_code == 201, r.text
            run_id = r.json()["run_id"]
            grant = (await c.post(f"/api/runs/{run_id}/lease", json={"worker": worker})).json()
        return run_id, grant["token"]


@asynccontextmanager
async def serving_with_hooks(
    tmp_path: Path,
    *,
    keys: Mapping[str, tuple[str, str]],  # name: (tenant, role); each key's secret is key-<name>
    hooks: Mapping[str, Sequence[str]],  # hook name: its `events:`
    secret: str,
    extra: str = "",  # more warrant.yaml lines
) -> AsyncIterator[Served]:
    clock = ManualClock()
    receiver = Receiver(secret, clock)
    app_of_hooks = Starlette(routes=[Route("/hooks/{hook}", receiver.receive, methods=["POST"])])
    async with uvicorn_serving(app_of_hooks) as hooks_url:
        (tmp_path / "artifacts").mkdir(exist_ok=True)
        listed = "\n".join(
            f"  - {{name: {n}, tenant: {t}, roles: [{r}], key_env: KEY_{n.upper()}}}" for n, (t, r) in keys.items()
        )
        webhooks = "".join(
            f"  - {{name: {name}, url: '{hooks_url}/hooks/{name}', secret_env: HOOK_SECRET, "
            f"events: [{', '.join(events)}]}}\n"
            for name, events in hooks.items()
        )
        (tmp_path / "warrant.yaml").write_text(
            f"database: sqlite:///{tmp_path}/w.db\napi_keys:\n{listed}\nartifact_roots: [artifacts]\n"
            f"adapters: [{ROOT}/adapters/notes.yaml]\npolicies: [{ROOT}/policies/default.yaml]\n"
            f"{extra}watchdog: {{tick: 1s, heartbeat: 1h}}\nwebhooks:\n{webhooks}"
        )
        env = {f"KEY_{n.upper()}": f"key-{n}" for n in keys} | {
            "WARRANT_LEDGER_KEY": "test-ledger-key",
            "HOOK_SECRET": secret,
        }
        app = create_app(load_settings(tmp_path / "warrant.yaml", env), clock=clock)
        async with uvicorn_serving(app) as url:
            yield Served(url, receiver)


@asynccontextmanager
async def worker(served: Served, token: str) -> AsyncIterator[Client]:
    """The official MCP SDK client, holding `token`."""
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=10) as http:
        async with Client(streamable_http_client(f"{served.url}/mcp", http_client=http), cache=None) as c:
            yield c
