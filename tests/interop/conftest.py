"""Interop tests: MCP clients of other ecosystems (Node) against the real server on a loopback port.

`api` is the same real server as tests/api (adapter `shop`). `conformance_api` is one like it whose
only adapter holds the conformance suite's tools (tests/interop/conformance_tools.py), and
`bearer_proxy` puts a lease token on every request for clients that cannot send headers.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any, ClassVar

import httpx
import pytest
import uvicorn
from starlette.types import Receive, Scope, Send

from gateway.app import create_app
from gateway.clock import ManualClock
from gateway.config import load_settings
from tests.api.conftest import CONTRACT, KEYS, Api, api  # noqa: F401 - the same real server
from tests.harness import eventually, free_port
from tests.interop.conformance_tools import POLICY_YAML, TOOLS, ConformanceAdapter
from tests.interop.nodejs import require_node_modules


@pytest.fixture(scope="session", autouse=True)
def _node_modules() -> None:
    """No silent skip: without the pinned Node packages every interop test fails, saying how to install."""
    require_node_modules()


async def _serve(app: Any, port: int, lifespan: str = "on") -> Callable[[], Awaitable[None]]:
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan=lifespan))
    task = asyncio.create_task(server.serve())
    await eventually(lambda: server.started or task.done(), every=0.01)
    assert server.started, "uvicorn did not start"

    async def stop() -> None:
        server.should_exit = True
        await asyncio.wait_for(task, 10)

    return stop


@pytest.fixture
async def conformance_api(tmp_path: Path) -> AsyncIterator[Api]:
    """A real server whose only adapter is the conformance suite's tools, exposed under their bare names."""
    (tmp_path / "policy.yaml").write_text("tools:\n" + POLICY_YAML)
    keys = "\n".join(
        f"  - {{name: {name}, tenant: {tenant}, roles: [{role}], key_env: KEY_{name.upper()}}}"
        for name, (tenant, role) in KEYS.items()
    )
    config = tmp_path / "warrant.yaml"
    config.write_text(f"database: sqlite:///{tmp_path}/w.db\napi_keys:\n{keys}\npolicies: [policy.yaml]\n")
    env = {f"KEY_{name.upper()}": f"key-{name}" for name in KEYS} | {"WARRANT_LEDGER_KEY": "test-ledger-key"}
    clock = ManualClock()
    app = create_app(load_settings(config, env), clock=clock, extra_adapters=[ConformanceAdapter()])
    port = free_port()
    stop = await _serve(app, port)
    try:
        yield Api(f"http://127.0.0.1:{port}", clock, [], app)
    finally:
        await stop()


CONFORMANCE_AUTHORITY = {"allow": sorted(TOOLS)}


class BearerProxy:
    """ASGI: forwards every request to `upstream` unchanged, adding `Authorization: Bearer <token>`.

    The conformance suite's server mode takes a URL and no headers; Warrant needs a lease token on
    every request. Answers are buffered (Warrant answers JSON, not event streams).
    """

    HOP: ClassVar[set[bytes]] = {b"host", b"content-length", b"connection", b"transfer-encoding", b"keep-alive"}

    def __init__(self, upstream: str, token: str) -> None:
        self.upstream = upstream
        self.token = token
        self.client = httpx.AsyncClient(timeout=30)
        self.url = ""  # set once it listens
        self.protocol_versions: set[str] = set()  # MCP-Protocol-Version headers seen: which wire was spoken

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        assert scope["type"] == "http"
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        headers = [(k, v) for k, v in scope["headers"] if k.lower() not in self.HOP]
        self.protocol_versions.update(v.decode() for k, v in headers if k.lower() == b"mcp-protocol-version")
        if not any(k.lower() == b"authorization" for k, _ in headers):
            headers.append((b"authorization", f"Bearer {self.token}".encode()))
        url = self.upstream + scope["path"] + (f"?{scope['query_string'].decode()}" if scope["query_string"] else "")
        answer = await self.client.request(scope["method"], url, headers=headers, content=body)
        content = answer.content
        out = [
            (k.encode(), v.encode())
            for k, v in answer.headers.items()
            if k.lower().encode() not in self.HOP and k.lower() != "content-encoding"
        ]
        out.append((b"content-length", str(len(content)).encode()))
        await send({"type": "http.response.start", "status": answer.status_code, "headers": out})
        await send({"type": "http.response.body", "body": content})


@pytest.fixture
async def bearer_proxy() -> AsyncIterator[Callable[[str, str], Awaitable[BearerProxy]]]:
    """`await bearer_proxy(upstream, token)` -> a listening BearerProxy (`.url`); stopped after the test."""
    stops: list[Callable[[], Awaitable[None]]] = []
    proxies: list[BearerProxy] = []

    async def start(upstream: str, token: str) -> BearerProxy:
        proxy = BearerProxy(upstream, token)
        proxies.append(proxy)
        port = free_port()
        stops.append(await _serve(proxy, port, lifespan="off"))
        proxy.url = f"http://127.0.0.1:{port}"
        return proxy

    try:
        yield start
    finally:
        for stop in stops:
            await stop()
        for proxy in proxies:
            await proxy.client.aclose()


async def lease_token(server: Api, **changes: Any) -> str:
    """A new run (tests/api's contract with `changes`) and a lease on it: the agent's bearer token."""
    async with server.client("op") as c:
        created = await c.post("/api/runs", json={**CONTRACT, **changes})
        assert created.status_code == 201, created.text
        run_id = created.json()["run_id"]
        grant = await c.post(f"/api/runs/{run_id}/lease", json={"worker": "agent"})
        assert grant.status_code in (200, 201), grant.text
    token: str = grant.json()["token"]
    return token
