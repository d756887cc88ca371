"""A real `warrant serve` app under uvicorn on a loopback port, with a test adapter and two tenants."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import AsyncIterator, Coroutine, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn

from gateway.adapters import Adapter, PythonAdapter, ToolFailed
from gateway.app import create_app
from gateway.clock import ManualClock
from gateway.config import load_settings
from gateway.service import Gateway
from tests.contracts import contract
from tests.harness import eventually, eventually_sync, free_port

KEYS = {
    "ops": ("acme", "admin"),
    "op": ("acme", "operator"),
    "appr": ("acme", "approver"),
    "aud": ("acme", "auditor"),
    "wrk": ("acme", "worker"),
    "other": ("globex", "admin"),
}

CONTRACT: dict[str, Any] = contract()  # tests/contracts.py: the base contract is this one


@dataclass
class Api:
    url: str
    clock: ManualClock
    effects: list[dict[str, Any]]
    app: Any
    server: uvicorn.Server | None = None

    def client(self, key: str | None) -> httpx.AsyncClient:
        headers = {"Authorization": f"Bearer key-{key}"} if key else {}
        return httpx.AsyncClient(base_url=self.url, headers=headers, timeout=10)

    @property
    def gateway(self) -> Gateway:
        gateway: Gateway = self.app.state.gateway
        return gateway

    async def new_run(self, key: str = "op", **changes: Any) -> str:
        """A run of CONTRACT (with `changes`), created by `key`; its run_id."""
        async with self.client(key) as c:
            answer = await c.post("/api/runs", json={**CONTRACT, **changes})
        assert answer.status_code == 201, answer.text
        run_id: str = answer.json()["run_id"]
        return run_id

    async def lease_token(self, run_id: str, worker: str = "agent", *, takeover: bool = False) -> str:
        """A lease token for `run_id`, granted by the operator key."""
        async with self.client("op") as c:
            answer = await c.post(f"/api/runs/{run_id}/lease", json={"worker": worker, "takeover": takeover})
        assert answer.status_code == 201, answer.text
        token: str = answer.json()["token"]
        return token


def shop_adapter(effects: list[dict[str, Any]]) -> PythonAdapter:
    shop = PythonAdapter("shop")

    @shop.tool(input_schema={"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]})
    async def find(args: dict[str, Any], call: Any) -> dict[str, Any]:
        return {"hits": []}

    @shop.tool(input_schema={"type": "object", "properties": {"to": {"type": "string"}}, "required": ["to"]})
    async def order(args: dict[str, Any], call: Any) -> dict[str, Any]:
        effects.append(args)
        return {"id": f"order-{len(effects)}"}

    @shop.tool(input_schema={"type": "object", "properties": {"card": {"type": "string"}}, "required": ["card"]})
    async def charge(args: dict[str, Any], call: Any) -> dict[str, Any]:
        effects.append(args)
        if args["card"] == "lost":  # the request left, the answer did not come back: unknown
            raise ConnectionResetError("connection reset after the request was sent")
        if args["card"] == "revoked":  # the destination refuses the gateway's own credentials
            raise ToolFailed("401 from the processor", code="upstream_unauthorized")
        return {"id": f"charge-{len(effects)}"}

    return shop


def make_app(
    tmp_path: Path,
    extra: str = "",
    database: str | None = None,
    *,
    policy_extra: str = "",
    adapters: Sequence[Adapter] = (),
    clock: ManualClock | None = None,
    environ: Mapping[str, str] | None = None,
) -> tuple[Any, ManualClock, list[dict[str, Any]]]:
    """The app every API test serves: the shop adapter, its policies, the keys of `KEYS`; `extra`
    is more of warrant.yaml (top-level YAML); on a SQLite file in `tmp_path` unless `database`
    names another store; `policy_extra` more policy lines, `adapters` more adapters; time from
    `clock` (a new `ManualClock` when None); `environ` more environment variables (secrets)."""
    policy = tmp_path / "policy.yaml"
    policy.write_text(
        "tools:\n"
        "  shop__find: {effect: read}\n"
        "  shop__order: {effect: write, cost: {spend: '0.10'}, approval: {role: approver}}\n"
        "  shop__charge: {effect: write, cost: {spend: '0.20'}}\n" + policy_extra
    )
    keys = "\n".join(
        f"  - {{name: {name}, tenant: {tenant}, roles: [{role}], key_env: KEY_{name.upper()}}}"
        for name, (tenant, role) in KEYS.items()
    )
    config = tmp_path / "warrant.yaml"
    config.write_text(
        f"database: {database or f'sqlite:///{tmp_path}/w.db'}\napi_keys:\n{keys}\npolicies: [policy.yaml]\n{extra}"
    )
    env = {f"KEY_{name.upper()}": f"key-{name}" for name in KEYS} | {"WARRANT_LEDGER_KEY": "test-ledger-key"}
    settings = load_settings(config, env | dict(environ or {}))
    clock = clock or ManualClock()
    effects: list[dict[str, Any]] = []
    app = create_app(settings, clock=clock, extra_adapters=[shop_adapter(effects), *adapters])
    return app, clock, effects


@pytest.fixture
async def api(tmp_path: Path) -> AsyncIterator[Api]:
    async with serving_api(tmp_path) as served:
        yield served


@asynccontextmanager
async def serving_api(
    tmp_path: Path,
    extra: str = "",
    *,
    policy_extra: str = "",
    adapters: Sequence[Adapter] = (),
    database: str | None = None,
    clock: ManualClock | None = None,
    keep_alive: int = 5,
    environ: Mapping[str, str] | None = None,
    port: int | None = None,
) -> AsyncIterator[Api]:
    """`make_app(tmp_path, extra, ...)` under uvicorn on a free loopback port (or `port`), until the
    block ends; uvicorn closes a connection idle for `keep_alive` seconds (its default, 5)."""
    app, clock, effects = make_app(
        tmp_path, extra, database, policy_extra=policy_extra, adapters=adapters, clock=clock, environ=environ
    )
    port = port or free_port()
    config = uvicorn.Config(
        app, host="127.0.0.1", port=port, log_level="warning", lifespan="on", timeout_keep_alive=keep_alive
    )
    server = uvicorn.Server(config)
    import asyncio

    task = asyncio.create_task(server.serve())
    await eventually(lambda: server.started or task.done(), every=0.01)
    assert server.started, "uvicorn did not start"
    try:
        yield Api(f"http://127.0.0.1:{port}", clock, effects, app, server)
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, 10)


@dataclass
class ThreadedApi:
    """The same app served by uvicorn on a thread of its own, for synchronous clients (schemathesis)."""

    url: str
    app: Any
    server: uvicorn.Server
    loop: asyncio.AbstractEventLoop

    def run(self, coroutine: Coroutine[Any, Any, Any]) -> Any:
        """Run `coroutine` on the server's event loop (the gate and the store live there)."""
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(10)

    @property
    def gateway(self) -> Gateway:
        gateway: Gateway = self.app.state.gateway
        return gateway


@pytest.fixture(scope="module")
def threaded_api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ThreadedApi]:
    app, _, _ = make_app(tmp_path_factory.mktemp("threaded_api"))
    with threaded_serving(app) as served:
        yield served


@contextlib.contextmanager
def threaded_serving(app: Any) -> Iterator[ThreadedApi]:
    """`app` under uvicorn on a thread of its own, on a free loopback port."""
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on"))
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_until_complete, args=(server.serve(),), daemon=True)
    thread.start()
    eventually_sync(lambda: server.started or not thread.is_alive(), every=0.01)
    assert server.started, "uvicorn did not start"
    try:
        yield ThreadedApi(f"http://127.0.0.1:{port}", app, server, loop)
    finally:
        server.should_exit = True
        thread.join(10)
        assert not thread.is_alive(), "uvicorn did not stop"
        loop.close()
