"""One case's world: its own demo CRM and mail service, its own store, its own gateway process.

Everything is a real process on loopback, started from the checkout (`examples/services/` and
`python -m gateway.cli serve`), with data in a folder of its own. The gateway can be started with
failpoints armed, killed with SIGKILL, and started again on the same store; the services can be
stopped, started again (on the same port and data) and told to answer with faults.

The agent speaks MCP through the official SDK client; operators and auditors use the HTTP API.
Ground truth is read from the services' own SQLite files, never from the gateway.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import secrets
import signal
import socket
import sqlite3
import subprocess
import sys
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import httpx2

from gateway.yamlfile import read_yaml

ROOT = Path(__file__).resolve().parents[2]
WAIT = 30.0  # seconds: the bound on any one start, stop or request of the drill
TENANT = "drill"
ROLES = ("admin", "operator", "approver", "auditor")
TOOL_TIMEOUT = 2.0  # seconds: the demo adapters' bound on a write (a hang becomes `unknown` this soon)

POLICY = """# The drill's policy: the demo tools, with approvals where DRILL.md needs them.
currency: USD
tools:
  crm__search_contacts: {effect: read}
  crm__get_contact: {effect: read}
  crm__list_deals: {effect: read}
  crm__create_contact: {effect: write, cost: {spend: "0.05", max: "0.10"}}
  crm__update_contact: {effect: write, cost: {spend: "0.02"}}
  crm__add_note: {effect: write, cost: {spend: "0.01"}}
  crm__create_deal:
    effect: write
    cost: {spend: "0.05"}
    approval: {role: approver, decide_within: 4h, valid_for: 1h, on_expiry: pause}
  email__list_outbox: {effect: read}
  email__get_message: {effect: read}
  email__send:
    effect: write
    cost: {spend: "0.01", max: "0.05"}
    approval: {role: approver, decide_within: 4h, valid_for: 1h, on_expiry: pause,
               when: "!args.to.endsWith('@acme.example')"}
"""

CONTRACT: dict[str, Any] = {
    "goal": "Drill: add leads to the CRM and write to them",
    "spec_version": "v1",
    "owner": "drill@acme.example",
    "expires_in": "2h",
    "lease_ttl": "5m",
    "budgets": {"spend": "5.00", "tool_calls": 300, "writes": 100, "active_seconds": 7200},
    "authority": {"allow": ["crm__*", "email__*"]},
}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class DrillError(Exception):
    """The drill's own machinery failed (a process would not start, say): not a verdict on a case."""


@dataclass
class Reply:
    """One tool call as the agent saw it: `code` None when it succeeded, `transport` when no answer came."""

    code: str | None
    structured: dict[str, Any] | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    text: str = ""

    @property
    def ok(self) -> bool:
        return self.code is None

    @property
    def action_id(self) -> str | None:
        value = self.meta.get("warrant/action_id")
        if value is None and self.structured and isinstance(self.structured.get("error"), dict):
            value = self.structured["error"].get("action_id")
        return value if isinstance(value, str) else None

    @property
    def replayed(self) -> bool:
        return bool(self.meta.get("warrant/replayed"))

    @property
    def error(self) -> dict[str, Any]:
        if self.structured and isinstance(self.structured.get("error"), dict):
            return dict(self.structured["error"])
        return {}


class Agent:
    """A worker holding one lease token, calling tools through the official MCP SDK client.

    Each call opens its own client: a call that outlives its gateway (a SIGKILL) fails alone.
    """

    def __init__(self, url: str, token: str) -> None:
        self.url = url
        self.token = token

    async def call(
        self, tool: str, arguments: Mapping[str, Any], *, operation_id: str | None = None, bound: float = WAIT
    ) -> Reply:
        from mcp import Client
        from mcp.client.streamable_http import streamable_http_client

        meta: Any = {"warrant/operation_id": operation_id} if operation_id else None
        try:
            with anyio_timeout(bound):
                async with (
                    httpx2.AsyncClient(headers={"Authorization": f"Bearer {self.token}"}, timeout=bound) as http,
                    Client(streamable_http_client(f"{self.url}/mcp", http_client=http), cache=None) as client,
                ):
                    result = await client.call_tool(tool, dict(arguments), meta=meta)
        except BaseException as exc:  # an ExceptionGroup from the SDK's task group, a timeout, a reset
            if isinstance(exc, asyncio.CancelledError | KeyboardInterrupt):
                raise
            return Reply("transport", text=f"{type(exc).__name__}: {exc}"[:300])
        structured = result.structured_content
        text = " ".join(getattr(c, "text", "") for c in result.content)
        code = None
        if result.is_error:
            error = (structured or {}).get("error")
            code = error.get("code") if isinstance(error, dict) else "error"
        return Reply(code, structured, dict(result.meta or {}), text)


@contextlib.contextmanager
def anyio_timeout(seconds: float) -> Any:
    import anyio

    with anyio.fail_after(seconds) as scope:
        yield scope


class Service:
    """A demo service process (`examples/services/<module>.py`) on a fixed port with its own data."""

    def __init__(self, module: str, folder: Path, token_env: str) -> None:
        self.module = module
        self.db = folder / f"{module}.db"
        self.log = folder / f"{module}.log"
        self.token_env = token_env
        self.token = f"drill-{module}-" + secrets.token_urlsafe(12)
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def start(self, token: str | None = None) -> None:
        token = token or self.token
        command = [sys.executable, "-m", f"examples.services.{self.module}", "--port", str(self.port)]
        command += ["--db", str(self.db), "--token-env", self.token_env]
        env = {**os.environ, self.token_env: token}
        with self.log.open("ab") as sink:
            self.process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=sink, stderr=subprocess.STDOUT)
        await wait_healthy(self.url, self.process, self.log)

    async def stop(self) -> None:
        if self.process is not None:
            await stop_process(self.process)
            self.process = None

    async def fault(self, **spec: Any) -> None:
        async with httpx.AsyncClient(base_url=self.url, timeout=WAIT) as http:
            answer = await http.post("/_admin/faults", json=spec)
            if answer.status_code >= 300:
                raise DrillError(f"{self.module}: the fault was refused: {answer.text}")

    async def clear_faults(self) -> None:
        async with httpx.AsyncClient(base_url=self.url, timeout=WAIT) as http:
            await http.delete("/_admin/faults")

    def rows(self, table: str, where: str = "1", params: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
        """Ground truth: rows of the service's own database (read-only)."""
        with contextlib.closing(sqlite3.connect(f"file:{self.db}?mode=ro", uri=True, timeout=10)) as conn:
            conn.row_factory = sqlite3.Row
            return [dict(r) for r in conn.execute(f"SELECT * FROM {table} WHERE {where}", params)]


class World:
    """The processes of one case, in `folder`; `async with` starts the services and stops everything."""

    def __init__(self, folder: Path, *, sabotage: tuple[str, ...] = (), watchdog: Mapping[str, Any] | None = None):
        self.folder = folder
        self.sabotage = sabotage
        self.watchdog = dict(watchdog or {"tick": "1s", "heartbeat": "60s", "reconcile_every": "1h"})
        self.keys = {role: f"wk-drill-{role}-" + secrets.token_urlsafe(16) for role in ROLES}
        self.ledger_key = secrets.token_urlsafe(32)
        self.crm = Service("crm", folder, "CRM_TOKEN")
        self.mail = Service("mail", folder, "EMAIL_TOKEN")
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.gateway: subprocess.Popen[bytes] | None = None
        self.gateway_log = folder / "gateway.log"
        self.tool_timeout = TOOL_TIMEOUT  # a case may set its own before it starts the gateway
        self.starts = 0
        self.artifacts = folder / "artifacts"  # the gateway's artifact_roots: evidence it may read
        self.webhooks: list[dict[str, Any]] = []  # {url, events?}: receivers of the watchdog's alerts
        self.webhook_secret = secrets.token_urlsafe(24)  # each signs with it (DRILL_WEBHOOK_SECRET)

    async def __aenter__(self) -> World:
        self.folder.mkdir(parents=True, exist_ok=True)
        self.artifacts.mkdir(exist_ok=True)
        await asyncio.gather(self.crm.start(), self.mail.start())
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self.gateway is not None:
            await stop_process(self.gateway)
            self.gateway = None
        await asyncio.gather(self.crm.stop(), self.mail.stop())

    # -- the gateway ---------------------------------------------------------------------------
    def _config(self, failpoints: Mapping[str, Mapping[str, Any]]) -> Path:
        for service, name in ((self.crm, "crm"), (self.mail, "email")):
            adapter = read_yaml(ROOT / "adapters" / f"{name}.yaml")
            adapter["base_url"] = service.url
            adapter["timeout"] = self.tool_timeout
            for tool in adapter["tools"].values():
                if "timeout" in tool:
                    tool["timeout"] = self.tool_timeout
            (self.folder / f"{name}.yaml").write_text(json.dumps(adapter, indent=1))
        (self.folder / "policy.yaml").write_text(POLICY)
        config = {
            "database": f"sqlite:///{self.folder / 'warrant.db'}",
            "listen": {"host": "127.0.0.1", "port": self.port},
            "api_keys": [
                {"name": role, "tenant": TENANT, "roles": [role], "key_env": f"DRILL_KEY_{role.upper()}"}
                for role in ROLES
            ],
            "adapters": ["crm.yaml", "email.yaml"],
            "policies": ["policy.yaml"],
            "watchdog": self.watchdog,
            "webhooks": [{"secret_env": "DRILL_WEBHOOK_SECRET", **hook} for hook in self.webhooks],
            "artifact_roots": [self.artifacts.name],
            "drill": {"failpoints": dict(failpoints), "sabotage": list(self.sabotage)},
        }
        path = self.folder / "warrant.yaml"
        path.write_text(json.dumps(config, indent=1))
        return path

    def _env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("WARRANT_", "OTEL_", "DRILL_"))}
        env.update({f"DRILL_KEY_{role.upper()}": key for role, key in self.keys.items()})
        env["WARRANT_LEDGER_KEY"] = self.ledger_key
        env["CRM_TOKEN"] = self.crm.token
        env["EMAIL_TOKEN"] = self.mail.token
        env["DRILL_WEBHOOK_SECRET"] = self.webhook_secret
        return env

    async def start_gateway(self, failpoints: Mapping[str, Mapping[str, Any]] | None = None) -> None:
        """Start `warrant serve` on this world's store (with these failpoints armed) and wait for /healthz."""
        if self.gateway is not None and self.gateway.poll() is None:
            raise DrillError("the gateway is already running")
        config = self._config(failpoints or {})
        self.starts += 1
        with self.gateway_log.open("ab") as sink:
            sink.write(f"--- start {self.starts} (failpoints: {sorted(failpoints or {})})\n".encode())
            sink.flush()
            command = [sys.executable, "-m", "gateway.cli", "serve", "--config", str(config), "--log-level", "warning"]
            self.gateway = subprocess.Popen(
                command, cwd=ROOT, env=self._env(), stdin=subprocess.DEVNULL, stdout=sink, stderr=subprocess.STDOUT
            )
        await wait_healthy(self.url, self.gateway, self.gateway_log)

    async def kill_gateway(self) -> None:
        """SIGKILL, as a crash: nothing runs on the way out."""
        if self.gateway is not None:
            if self.gateway.poll() is None:
                self.gateway.send_signal(signal.SIGKILL)
            await asyncio.to_thread(self.gateway.wait, WAIT)
            self.gateway = None

    async def died_at(self, failpoint: str, wait: float = WAIT) -> bool:
        """Wait until the gateway is gone; whether it died by SIGKILL at `failpoint`."""
        if self.gateway is None:
            return False
        try:
            code = await asyncio.to_thread(self.gateway.wait, wait)
        except subprocess.TimeoutExpired:
            return False
        self.gateway = None
        return code == -signal.SIGKILL and f"warrant failpoint {failpoint} fired" in self.gateway_log.read_text()

    async def restart(self, failpoints: Mapping[str, Mapping[str, Any]] | None = None) -> None:
        await self.kill_gateway()
        await self.start_gateway(failpoints)

    # -- operators ------------------------------------------------------------------------------
    @contextlib.asynccontextmanager
    async def api(self, role: str = "operator") -> AsyncIterator[httpx.AsyncClient]:
        headers = {"Authorization": f"Bearer {self.keys[role]}"}
        async with httpx.AsyncClient(base_url=self.url, headers=headers, timeout=WAIT) as http:
            yield http

    async def request(self, method: str, path: str, role: str = "operator", **kwargs: Any) -> httpx.Response:
        async with self.api(role) as http:
            return await http.request(method, path, **kwargs)

    async def ok(self, method: str, path: str, role: str = "operator", **kwargs: Any) -> Any:
        """A request that must succeed: its JSON body (DrillError otherwise)."""
        answer = await self.request(method, path, role, **kwargs)
        if answer.status_code >= 300:
            raise DrillError(f"{method} {path} answered {answer.status_code}: {answer.text[:500]}")
        return answer.json() if answer.content else None

    async def create_run(self, **overrides: Any) -> str:
        contract = {**CONTRACT, **overrides}
        created = await self.ok("POST", "/api/runs", json=contract)
        run_id: str = created["run_id"]
        return run_id

    async def lease(self, run_id: str, worker: str = "worker-1", *, takeover: bool = False) -> Agent:
        grant = await self.ok("POST", f"/api/runs/{run_id}/lease", json={"worker": worker, "takeover": takeover})
        return Agent(self.url, grant["token"])

    async def start_run(self, worker: str = "worker-1", **overrides: Any) -> tuple[str, Agent]:
        run_id = await self.create_run(**overrides)
        return run_id, await self.lease(run_id, worker)

    async def _all(self, path: str, limit: int) -> list[dict[str, Any]]:
        """Every item of a paginated list the auditor may read, following `next_cursor`."""
        items: list[dict[str, Any]] = []
        cursor: str | None = None
        while True:
            params = {"limit": str(limit), **({"cursor": cursor} if cursor else {})}
            page = await self.ok("GET", path, "auditor", params=params)
            items += page["items"]
            cursor = page.get("next_cursor")
            if not cursor:
                return items

    async def actions(self, run_id: str) -> list[dict[str, Any]]:
        return await self._all(f"/api/runs/{run_id}/actions", 500)

    async def events(self, run_id: str) -> list[dict[str, Any]]:
        """The run's history, oldest first."""
        return await self._all(f"/api/runs/{run_id}/events", 1000)

    async def run(self, run_id: str) -> dict[str, Any]:
        run: dict[str, Any] = await self.ok("GET", f"/api/runs/{run_id}", "auditor")
        return run

    async def runs(self) -> list[dict[str, Any]]:
        return await self._all("/api/runs", 200)

    async def approvals(self, run_id: str, status: str = "pending") -> list[dict[str, Any]]:
        page = await self.ok("GET", "/api/approvals", "approver", params={"status": status, "run_id": run_id})
        return list(page["items"])

    async def approve(self, approval_id: str) -> Any:
        return await self.ok("POST", f"/api/approvals/{approval_id}/approve", "approver", json={"note": "drill"})


async def wait_healthy(url: str, process: subprocess.Popen[bytes], log: Path) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + WAIT
    async with httpx.AsyncClient(timeout=1) as http:
        while True:
            if process.poll() is not None:
                raise DrillError(f"{url}: the process exited {process.returncode}:\n{log.read_text()[-2000:]}")
            if loop.time() > deadline:
                raise DrillError(f"{url}: no answer on /healthz within {WAIT:g} s:\n{log.read_text()[-2000:]}")
            with contextlib.suppress(httpx.TransportError):
                if (await http.get(f"{url}/healthz")).status_code == 200:
                    return
            await asyncio.sleep(0.05)


async def stop_process(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            await asyncio.to_thread(process.wait, 10)
        except subprocess.TimeoutExpired:
            process.kill()
            await asyncio.to_thread(process.wait, 10)
