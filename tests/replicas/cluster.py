"""Two `warrant serve` replicas on one fresh PostgreSQL database, the demo CRM and mail service behind both.

Everything is a real process on loopback: the services (`examples/services/`, started by the drill's
`Service`), the replicas (`python -m gateway.cli serve`, same configuration but the port and, when a
test asks, a wrong clock or armed failpoints). Agents speak MCP through the official SDK client (the
drill's `Agent`), operators the HTTP API. Ground truth: the services' own SQLite files
(`Service.rows`) and the store's own tables (`Cluster.sql`), never a replica's answer alone.

`open_cluster(folder, ...)` starts it all and stops it all, also when the test fails; the `cluster`
fixture (conftest.py) is the default configuration.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import secrets
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import psycopg
from psycopg.rows import dict_row

from gateway.drill import Agent, Service
from gateway.drill.world import free_port, stop_process
from gateway.yamlfile import read_yaml
from tests.contracts import contract
from tests.harness import eventually
from tests.harness_postgres import fresh_database

ROOT = Path(__file__).resolve().parents[2]
WAIT = 30.0  # seconds: the bound on any one stop or request
# seconds: the bound on a replica's start. Two replicas importing the gateway at once on these two
# cores took 5-6 s idle and 15-25 s beside other suites.
START_WAIT = 60.0
TENANT = "acme"
ROLES = ("admin", "operator", "approver", "auditor")
TOOL_TIMEOUT = 5.0  # seconds: the demo adapters' bound on a call (a test's held write fits inside it)
WEBHOOK_SECRET_ENV = "REPLICAS_WEBHOOK_SECRET"
# The watchdog ticks every second but leaves unknown actions to the tests (they reconcile on purpose).
WATCHDOG = {"tick": "1s", "heartbeat": "1h", "reconcile_every": "1h"}

CONTRACT: dict[str, Any] = contract(
    goal="Replicas: add leads to the CRM and write to them",
    owner="ops@acme.example",
    expires_in="2h",
    budgets={"spend": "50.00", "tool_calls": 1000, "writes": 500},
    authority={"allow": ["crm__*", "email__*"]},
)


def seqs(history: list[dict[str, Any]], type: str, **data: Any) -> list[int]:
    """The seqs of the entries of `history` (a run's ledger, `Cluster.ledger`) of this `type` whose
    data holds every key of `data` with that value, in the ledger's order."""
    return [
        entry["seq"]
        for entry in history
        if entry["type"] == type and all(entry["data"].get(key) == value for key, value in data.items())
    ]


@dataclass
class Replica:
    """One `warrant serve` of the cluster: its port, configuration and log stay across restarts."""

    name: str
    config: Path
    log: Path
    env: dict[str, str]
    keys: Mapping[str, str]
    port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None
    starts: int = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def start(self) -> None:
        """Start it on the cluster's database and wait for /healthz."""
        if self.process is not None and self.process.poll() is None:
            raise RuntimeError(f"replica {self.name} is already running")
        process = self.process = self._spawn()

        async def healthy() -> bool:
            if process.poll() is not None:  # not an assertion: `eventually` would ask again until its end
                raise RuntimeError(f"{self.name} exited {process.returncode}:\n{self.log.read_text()[-3000:]}")
            with contextlib.suppress(httpx.TransportError):
                async with httpx.AsyncClient(timeout=2) as http:
                    return (await http.get(f"{self.url}/healthz")).status_code == 200
            return False

        try:
            await eventually(healthy, wait=START_WAIT, every=0.05)
        except AssertionError:
            raise AssertionError(f"{self.name} did not answer /healthz:\n{self.log.read_text()[-3000:]}") from None

    def _spawn(self) -> subprocess.Popen[bytes]:
        self.starts += 1
        with self.log.open("ab") as sink:
            sink.write(f"--- start {self.starts}\n".encode())
            sink.flush()
            command = [sys.executable, "-m", "gateway.cli", "serve", "--config", str(self.config)]
            return subprocess.Popen(
                [*command, "--log-level", "warning"],
                cwd=ROOT,
                env=self.env,
                stdin=subprocess.DEVNULL,
                stdout=sink,
                stderr=subprocess.STDOUT,
            )

    async def kill(self) -> None:
        """SIGKILL, as a crash: nothing runs on the way out."""
        if self.process is not None:
            if self.process.poll() is None:
                self.process.send_signal(signal.SIGKILL)
            await asyncio.to_thread(self.process.wait, WAIT)
            self.process = None

    async def stop(self) -> None:
        if self.process is not None:
            await stop_process(self.process)
            self.process = None

    @contextlib.asynccontextmanager
    async def api(self, role: str = "operator") -> AsyncIterator[httpx.AsyncClient]:
        headers = {"Authorization": f"Bearer {self.keys[role]}"}
        async with httpx.AsyncClient(base_url=self.url, headers=headers, timeout=WAIT) as http:
            yield http

    async def request(self, method: str, path: str, role: str = "operator", **kwargs: Any) -> httpx.Response:
        async with self.api(role) as http:
            return await http.request(method, path, **kwargs)

    async def ok(self, method: str, path: str, role: str = "operator", **kwargs: Any) -> Any:
        """A request that must succeed: its JSON body (the test fails otherwise)."""
        answer = await self.request(method, path, role, **kwargs)
        assert answer.status_code < 300, f"{self.name}: {method} {path} answered {answer.status_code}: {answer.text}"
        return answer.json() if answer.content else None

    async def process_id(self) -> str:
        """The store's id of the process serving now (what actions record as their dispatcher)."""
        health = await self.ok("GET", "/healthz")
        return str(health["process_id"])

    async def create_run(self, **overrides: Any) -> str:
        created = await self.ok("POST", "/api/runs", json={**CONTRACT, **overrides})
        run_id: str = created["run_id"]
        return run_id

    async def lease(
        self, run_id: str, worker: str = "worker-1", *, takeover: bool = False
    ) -> tuple[Agent, dict[str, Any]]:
        """A lease granted through this replica: an agent holding its token (it may call either replica
        with `agent.url` changed or `Cluster.agent`), and the grant."""
        grant: dict[str, Any] = await self.ok(
            "POST", f"/api/runs/{run_id}/lease", json={"worker": worker, "takeover": takeover}
        )
        return Agent(self.url, grant["token"]), grant

    def agent(self, token: str) -> Agent:
        """An agent calling through this replica with a lease token (granted through either)."""
        return Agent(self.url, token)


@dataclass
class Cluster:
    database: str
    folder: Path
    crm: Service
    mail: Service
    a: Replica
    b: Replica
    webhook_secret: str

    @property
    def replicas(self) -> tuple[Replica, Replica]:
        return (self.a, self.b)

    def sql(self, statement: str, params: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
        """Ground truth: rows read from the store's own tables, outside every replica (`%s` placeholders)."""
        with psycopg.connect(self.database, row_factory=dict_row, autocommit=True) as conn:
            cursor = conn.execute(statement.encode(), params)
            return cursor.fetchall() if cursor.description else []

    async def ledger(self, run_id: str, via: Replica | None = None) -> list[dict[str, Any]]:
        """The run's ledger, every entry in seq order, as the events API of `via` (A by default)
        shows it to an auditor. Ordering facts come from here: one sequence for the run whichever
        replica wrote the entry, where the replicas' and the test's clocks order nothing."""
        page = await (via or self.a).ok("GET", f"/api/runs/{run_id}/events", "auditor", params={"limit": "1000"})
        history: list[dict[str, Any]] = page["items"]
        assert [entry["seq"] for entry in history] == list(range(1, len(history) + 1)), "a page, not the whole ledger"
        return history

    async def start_run(
        self, via: Replica | None = None, worker: str = "worker-1", **overrides: Any
    ) -> tuple[str, str]:
        """A run created and leased through `via` (A by default): its id and the lease token."""
        replica = via or self.a
        run_id = await replica.create_run(**overrides)
        _, grant = await replica.lease(run_id, worker)
        return run_id, str(grant["token"])


def _adapters(folder: Path, crm: Service, mail: Service, tool_timeout: float) -> list[str]:
    """The repository's adapters/crm.yaml and email.yaml, pointed at this cluster's services."""
    paths = []
    for service, name in ((crm, "crm"), (mail, "email")):
        adapter = read_yaml(ROOT / "adapters" / f"{name}.yaml")
        adapter["base_url"] = service.url
        adapter["timeout"] = tool_timeout
        for tool in adapter["tools"].values():
            if "timeout" in tool:
                tool["timeout"] = tool_timeout
        path = folder / f"{name}.yaml"
        path.write_text(json.dumps(adapter, indent=1))
        paths.append(str(path))
    return paths


@contextlib.asynccontextmanager
async def open_cluster(
    folder: Path,
    *,
    watchdog: Mapping[str, Any] | None = None,
    webhooks: list[dict[str, Any]] | None = None,
    drill: Mapping[str, Mapping[str, Any]] | None = None,
    tool_timeout: float = TOOL_TIMEOUT,
    policies: list[Path] | None = None,
    webhook_secret: str | None = None,
) -> AsyncIterator[Cluster]:
    """`folder` (it exists: a test's tmp_path) holds the configurations, logs and the services' data.

    A fresh database, both services and both replicas running; all stopped (and the database
    dropped) when the block ends.

    `watchdog` is both replicas' `watchdog:` section; `webhooks` their receivers (each signs with
    `webhook_secret`, a random one by default); `drill` a replica's own `drill:` section by name,
    e.g. `{"b": {"clock_offset_s": 600}}`: the one way the replicas' configurations differ, besides
    the port.
    """
    keys = {role: f"wk-replicas-{role}-" + secrets.token_urlsafe(12) for role in ROLES}
    webhook_secret = webhook_secret or secrets.token_urlsafe(24)
    crm = Service("crm", folder, "CRM_TOKEN")
    mail = Service("mail", folder, "EMAIL_TOKEN")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("WARRANT_", "OTEL_"))}
    env |= {f"REPLICAS_KEY_{role.upper()}": key for role, key in keys.items()}
    env |= {
        "WARRANT_LEDGER_KEY": secrets.token_urlsafe(32),
        "CRM_TOKEN": crm.token,
        "EMAIL_TOKEN": mail.token,
        WEBHOOK_SECRET_ENV: webhook_secret,
    }
    replicas: list[Replica] = []
    with fresh_database() as database:
        try:
            adapters = _adapters(folder, crm, mail, tool_timeout)
            for name in ("a", "b"):
                replica = Replica(name, folder / f"{name}.yaml", folder / f"{name}.log", env, keys)
                config: dict[str, Any] = {
                    "database": database,
                    "listen": {"host": "127.0.0.1", "port": replica.port},
                    "api_keys": [
                        {"name": role, "tenant": TENANT, "roles": [role], "key_env": f"REPLICAS_KEY_{role.upper()}"}
                        for role in ROLES
                    ],
                    "adapters": adapters,
                    "policies": [str(p) for p in policies or [ROOT / "policies" / "default.yaml"]],
                    "watchdog": dict(watchdog or WATCHDOG),
                    "webhooks": [{"secret_env": WEBHOOK_SECRET_ENV, **hook} for hook in webhooks or []],
                    "drill": dict((drill or {}).get(name, {})),
                }
                replica.config.write_text(json.dumps(config, indent=1))
                replicas.append(replica)
            # All four at once (an HTTP adapter reaches its service only when called): half the wait.
            await asyncio.gather(crm.start(), mail.start(), *(replica.start() for replica in replicas))
            yield Cluster(database, folder, crm, mail, replicas[0], replicas[1], webhook_secret)
        finally:
            await asyncio.gather(*(replica.stop() for replica in replicas), crm.stop(), mail.stop())
