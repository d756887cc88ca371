"""One case's world: its own demo CRM and mail service, its own store, its own gateway process.

Everything is a real process on loopback, started from the checkout (`examples/services/` and
`python -m gateway.cli serve`), with data in a folder of its own. The gateway can be started with
failpoints armed, killed with SIGKILL, and started again on the same store; the services can be
stopped, started again (on the same port and data) and told to answer with faults.

A world of two replicas (`World(..., replicas=2, postgres=SERVER)`) runs two `warrant serve`
processes, each with its own port, configuration and log, on one PostgreSQL database of its own
(gateway/drill/postgres.py): created when the world starts, dropped when it ends. Every gateway
method takes `replica=` (0 is A, 1 is B; 0 by default), and an agent is pointed at another
replica with `agent.via(world.urls[1])`: its lease token is good on both.

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

from gateway.drill import postgres as pg
from gateway.yamlfile import read_yaml

ROOT = Path(__file__).resolve().parents[2]
WAIT = 30.0  # seconds: the bound on any one start, stop or request of the drill
# seconds: the bound on a gateway's start. Importing the gateway takes 1 s of CPU; on two cores
# shared with a benchmark and other drills (load 8-12) two replicas starting at once took 15-30 s,
# and with six starting at once (two drills of three two-replica worlds) one took 50 s. The
# runner lets only a few start at a time (`starting`), so that the bound is on one start's own time.
START_WAIT = 60.0
TENANT = "drill"
ROLES = ("admin", "operator", "approver", "auditor")
TOOL_TIMEOUT = 2.0  # seconds: the demo adapters' bound on a write (a hang becomes `unknown` this soon)

POLICY = """# The drill's policy: the demo tools, with approvals where DRILL.md needs them.
currency: USD
tools:
  crm__search_contacts: {effect: read}
  crm__get_contact: {effect: read}
  crm__list_deals: {effect: read}
  crm__create_contact:
    effect: write
    cost: {spend: "0.05", max: "0.10"}
    compensate: {tool: crm__delete_contact, arguments: {contact_id: receipt.id}}
  crm__delete_contact: {effect: write, cost: {spend: "0.01"}}
  crm__update_contact: {effect: write, cost: {spend: "0.02"}}
  # Retried by the gate (the retry storm case, docs/retries.md): a keyed write, so a 503 is retried too.
  crm__add_note:
    effect: write
    cost: {spend: "0.01"}
    retries: {max_attempts: 3, backoff: {initial: 0.05, max: 0.2, multiplier: 2, jitter: true}}
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

    @property
    def bearer(self) -> dict[str, str]:
        """The lease token as an Authorization header (for POST /api/leases/renew)."""
        return {"Authorization": f"Bearer {self.token}"}

    def via(self, url: str) -> Agent:
        """The same worker (the same lease token) calling through another replica."""
        return Agent(url, self.token)

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
        elif isinstance((result.meta or {}).get("warrant/code"), str):
            code = (result.meta or {})["warrant/code"]  # a waiting answer: not executed, not an error result
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


class Replica:
    """One `warrant serve` process of a world: its own port, configuration file and log, on the
    world's store. `clock_offset_s` makes its clock wrong (the drill's `clock_offset_s`); a case
    sets it before the replica starts."""

    def __init__(self, folder: Path, name: str) -> None:
        self.name = name  # "gateway" when the world has one; "gateway-a", "gateway-b" otherwise
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = folder / f"{name}.log"
        self.config = folder / ("warrant.yaml" if name == "gateway" else f"warrant-{name[-1]}.yaml")
        self.process: subprocess.Popen[bytes] | None = None
        self.starts = 0
        self.clock_offset_s = 0.0
        self.process_ids: list[str] = []  # the store's process id of each start, oldest first

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None


class World:
    """The processes of one case, in `folder`; `async with` starts the services (and, with two
    replicas, creates the PostgreSQL database) and stops everything (and drops it)."""

    def __init__(
        self,
        folder: Path,
        *,
        sabotage: tuple[str, ...] = (),
        watchdog: Mapping[str, Any] | None = None,
        replicas: int = 1,
        postgres: str | None = None,
        starting: asyncio.Semaphore | None = None,
    ):
        if replicas > 1 and not postgres:
            raise DrillError("two gateway replicas need a PostgreSQL server (warrant drill --postgres URL)")
        self.folder = folder
        self.sabotage = sabotage
        self.starting = starting  # shared by the worlds of one drill: gateways starting at once
        self.watchdog = dict(watchdog or {"tick": "1s", "heartbeat": "60s", "reconcile_every": "1h"})
        self.keys = {role: f"wk-drill-{role}-" + secrets.token_urlsafe(16) for role in ROLES}
        self.ledger_key = secrets.token_urlsafe(32)
        self.crm = Service("crm", folder, "CRM_TOKEN")
        self.mail = Service("mail", folder, "EMAIL_TOKEN")
        names = ["gateway"] if replicas == 1 else [f"gateway-{chr(ord('a') + i)}" for i in range(replicas)]
        self.replicas = [Replica(folder, name) for name in names]
        self.postgres = postgres if replicas > 1 else None  # the server; the world's database is made on it
        self.database = f"sqlite:///{folder / 'warrant.db'}"  # the store's URL (a PostgreSQL one once made)
        self.keep_store = False  # dump a PostgreSQL store into the folder before it is dropped (a failed case)
        self.tool_timeout = TOOL_TIMEOUT  # a case may set its own before it starts the gateway
        self.artifacts = folder / "artifacts"  # the gateway's artifact_roots: evidence it may read
        self.webhooks: list[dict[str, Any]] = []  # {url, events?}: receivers of the watchdog's alerts
        self.webhook_secret = secrets.token_urlsafe(24)  # each signs with it (DRILL_WEBHOOK_SECRET)

    # The first (or only) replica, by the names single-gateway cases use.
    @property
    def url(self) -> str:
        return self.replicas[0].url

    @property
    def urls(self) -> list[str]:
        return [r.url for r in self.replicas]

    @property
    def gateway(self) -> subprocess.Popen[bytes] | None:
        return self.replicas[0].process

    @property
    def gateway_log(self) -> Path:
        return self.replicas[0].log

    @property
    def starts(self) -> int:
        return sum(r.starts for r in self.replicas)

    async def __aenter__(self) -> World:
        self.folder.mkdir(parents=True, exist_ok=True)
        self.artifacts.mkdir(exist_ok=True)
        try:
            if self.postgres:
                self.database = await asyncio.to_thread(pg.create_database, self.postgres)
                (self.folder / "database.txt").write_text(pg.redact(self.database) + "\n")
            await asyncio.gather(self.crm.start(), self.mail.start())
        except BaseException:
            await self.__aexit__()
            raise
        return self

    async def __aexit__(self, *exc: object) -> None:
        try:
            await asyncio.gather(*(stop_process(r.process) for r in self.replicas if r.process is not None))
            for replica in self.replicas:
                replica.process = None
            await asyncio.gather(self.crm.stop(), self.mail.stop())
        finally:
            if self.postgres and pg.is_drill_database(self.database):
                if self.keep_store:
                    await asyncio.to_thread(pg.dump, self.database, self.folder / "store.sql")
                await asyncio.to_thread(pg.drop_database, self.database)

    # -- the gateway ---------------------------------------------------------------------------
    def _config(self, replica: Replica, failpoints: Mapping[str, Mapping[str, Any]]) -> Path:
        for service, name in ((self.crm, "crm"), (self.mail, "email")):
            adapter = read_yaml(ROOT / "adapters" / f"{name}.yaml")
            adapter["base_url"] = service.url
            adapter["timeout"] = self.tool_timeout
            for tool in adapter["tools"].values():
                if "timeout" in tool:
                    tool["timeout"] = self.tool_timeout
            (self.folder / f"{name}.yaml").write_text(json.dumps(adapter, indent=1))
        (self.folder / "policy.yaml").write_text(POLICY)
        drill: dict[str, Any] = {"failpoints": dict(failpoints), "sabotage": list(self.sabotage)}
        if replica.clock_offset_s:
            drill["clock_offset_s"] = replica.clock_offset_s
        config = {
            "database": self.database,
            "listen": {"host": "127.0.0.1", "port": replica.port},
            "api_keys": [
                {"name": role, "tenant": TENANT, "roles": [role], "key_env": f"DRILL_KEY_{role.upper()}"}
                for role in ROLES
            ],
            "adapters": ["crm.yaml", "email.yaml"],
            "policies": ["policy.yaml"],
            "watchdog": self.watchdog,
            "webhooks": [{"secret_env": "DRILL_WEBHOOK_SECRET", **hook} for hook in self.webhooks],
            "artifact_roots": [self.artifacts.name],
            "drill": drill,
        }
        replica.config.write_text(json.dumps(config, indent=1))
        return replica.config

    def _env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("WARRANT_", "OTEL_", "DRILL_"))}
        env.update({f"DRILL_KEY_{role.upper()}": key for role, key in self.keys.items()})
        env["WARRANT_LEDGER_KEY"] = self.ledger_key
        env["CRM_TOKEN"] = self.crm.token
        env["EMAIL_TOKEN"] = self.mail.token
        env["DRILL_WEBHOOK_SECRET"] = self.webhook_secret
        return env

    async def start_gateway(
        self, failpoints: Mapping[str, Mapping[str, Any]] | None = None, *, replica: int = 0
    ) -> None:
        """Start `warrant serve` (this replica) on this world's store, with these failpoints armed,
        and wait for /healthz."""
        gateway = self.replicas[replica]
        if gateway.running:
            raise DrillError(f"{gateway.name} is already running")
        config = self._config(gateway, failpoints or {})
        gateway.starts += 1
        async with self.starting or contextlib.nullcontext():
            with gateway.log.open("ab") as sink:
                sink.write(f"--- start {gateway.starts} (failpoints: {sorted(failpoints or {})})\n".encode())
                sink.flush()
                command = [sys.executable, "-m", "gateway.cli", "serve", "--config", str(config)]
                gateway.process = subprocess.Popen(
                    [*command, "--log-level", "warning"],
                    cwd=ROOT,
                    env=self._env(),
                    stdin=subprocess.DEVNULL,
                    stdout=sink,
                    stderr=subprocess.STDOUT,
                )
            health = await wait_healthy(gateway.url, gateway.process, gateway.log, START_WAIT)
        gateway.process_ids.append(str(health.get("process_id", "")))

    async def start_replicas(self, failpoints: Mapping[int, Mapping[str, Mapping[str, Any]]] | None = None) -> None:
        """Start every replica at once, each with its own failpoints (by index) armed."""
        points = failpoints or {}
        await asyncio.gather(*(self.start_gateway(points.get(i), replica=i) for i in range(len(self.replicas))))

    async def kill_gateway(self, *, replica: int = 0) -> None:
        """SIGKILL, as a crash: nothing runs on the way out."""
        gateway = self.replicas[replica]
        if gateway.process is not None:
            if gateway.process.poll() is None:
                gateway.process.send_signal(signal.SIGKILL)
            await asyncio.to_thread(gateway.process.wait, WAIT)
            gateway.process = None

    async def died_at(self, failpoint: str, wait: float = WAIT, *, replica: int = 0) -> bool:
        """Wait until the gateway (this replica) is gone; whether it died by SIGKILL at `failpoint`."""
        gateway = self.replicas[replica]
        if gateway.process is None:
            return False
        try:
            code = await asyncio.to_thread(gateway.process.wait, wait)
        except subprocess.TimeoutExpired:
            return False
        gateway.process = None
        return code == -signal.SIGKILL and f"warrant failpoint {failpoint} fired" in gateway.log.read_text()

    async def restart(self, failpoints: Mapping[str, Mapping[str, Any]] | None = None, *, replica: int = 0) -> None:
        await self.kill_gateway(replica=replica)
        await self.start_gateway(failpoints, replica=replica)

    # -- operators ------------------------------------------------------------------------------
    @contextlib.asynccontextmanager
    async def api(self, role: str = "operator", *, replica: int = 0) -> AsyncIterator[httpx.AsyncClient]:
        headers = {"Authorization": f"Bearer {self.keys[role]}"}
        async with httpx.AsyncClient(base_url=self.replicas[replica].url, headers=headers, timeout=WAIT) as http:
            yield http

    async def request(
        self, method: str, path: str, role: str = "operator", *, replica: int = 0, **kwargs: Any
    ) -> httpx.Response:
        async with self.api(role, replica=replica) as http:
            return await http.request(method, path, **kwargs)

    async def ok(self, method: str, path: str, role: str = "operator", *, replica: int = 0, **kwargs: Any) -> Any:
        """A request that must succeed: its JSON body (DrillError otherwise)."""
        answer = await self.request(method, path, role, replica=replica, **kwargs)
        if answer.status_code >= 300:
            raise DrillError(f"{method} {path} answered {answer.status_code}: {answer.text[:500]}")
        return answer.json() if answer.content else None

    async def create_run(self, *, replica: int = 0, **overrides: Any) -> str:
        contract = {**CONTRACT, **overrides}
        created = await self.ok("POST", "/api/runs", json=contract, replica=replica)
        run_id: str = created["run_id"]
        return run_id

    async def lease(self, run_id: str, worker: str = "worker-1", *, takeover: bool = False, replica: int = 0) -> Agent:
        """A lease granted through this replica: an agent that calls through it."""
        body = {"worker": worker, "takeover": takeover}
        grant = await self.ok("POST", f"/api/runs/{run_id}/lease", json=body, replica=replica)
        return Agent(self.replicas[replica].url, grant["token"])

    async def start_run(self, worker: str = "worker-1", *, replica: int = 0, **overrides: Any) -> tuple[str, Agent]:
        run_id = await self.create_run(replica=replica, **overrides)
        return run_id, await self.lease(run_id, worker, replica=replica)

    async def _all(self, path: str, limit: int, replica: int = 0) -> list[dict[str, Any]]:
        """Every item of a paginated list the auditor may read, following `next_cursor`."""
        items: list[dict[str, Any]] = []
        cursor: str | None = None
        while True:
            params = {"limit": str(limit), **({"cursor": cursor} if cursor else {})}
            page = await self.ok("GET", path, "auditor", params=params, replica=replica)
            items += page["items"]
            cursor = page.get("next_cursor")
            if not cursor:
                return items

    async def actions(self, run_id: str, *, replica: int = 0) -> list[dict[str, Any]]:
        return await self._all(f"/api/runs/{run_id}/actions", 500, replica)

    async def events(self, run_id: str, *, replica: int = 0) -> list[dict[str, Any]]:
        """The run's history, oldest first."""
        return await self._all(f"/api/runs/{run_id}/events", 1000, replica)

    async def run(self, run_id: str, *, replica: int = 0) -> dict[str, Any]:
        run: dict[str, Any] = await self.ok("GET", f"/api/runs/{run_id}", "auditor", replica=replica)
        return run

    async def runs(self, *, replica: int = 0) -> list[dict[str, Any]]:
        return await self._all("/api/runs", 200, replica)

    async def approvals(self, run_id: str, status: str = "pending", *, replica: int = 0) -> list[dict[str, Any]]:
        params = {"status": status, "run_id": run_id}
        page = await self.ok("GET", "/api/approvals", "approver", params=params, replica=replica)
        return list(page["items"])

    async def approve(self, approval_id: str, *, replica: int = 0) -> Any:
        return await self.ok(
            "POST", f"/api/approvals/{approval_id}/approve", "approver", json={"note": "drill"}, replica=replica
        )


async def wait_healthy(url: str, process: subprocess.Popen[bytes], log: Path, bound: float = WAIT) -> dict[str, Any]:
    """Wait (at most `bound` seconds) until `url` answers /healthz 200: its body."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + bound
    async with httpx.AsyncClient(timeout=1) as http:
        while True:
            if process.poll() is not None:
                raise DrillError(f"{url}: the process exited {process.returncode}:\n{log.read_text()[-2000:]}")
            if loop.time() > deadline:
                raise DrillError(f"{url}: no answer on /healthz within {bound:g} s:\n{log.read_text()[-2000:]}")
            with contextlib.suppress(httpx.TransportError):
                answer = await http.get(f"{url}/healthz")
                if answer.status_code == 200:
                    try:
                        body = answer.json()
                    except ValueError:
                        return {}
                    return body if isinstance(body, dict) else {}
            await asyncio.sleep(0.05)


async def stop_process(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            await asyncio.to_thread(process.wait, 10)
        except subprocess.TimeoutExpired:
            process.kill()
            await asyncio.to_thread(process.wait, 10)
