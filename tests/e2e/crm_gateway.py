"""A real `warrant serve` in front of the demo CRM (a real process too), for the shutdown and backup
tests: its configuration, an operator's API, an agent over the official MCP SDK client, and the
store's rows read from its file."""

from __future__ import annotations

import contextlib
import re
import sqlite3
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx

from gateway.clock import SystemClock
from gateway.store.factory import open_store
from tests.contracts import contract
from tests.e2e.serving import ROOT, clean_environ, run_with_lease, warrant_serve
from tests.harness import eventually, free_port
from tests.integration.test_http_services import SECRETS, Service, adapter_copy

WAIT = 20.0  # seconds: the bound on every start, stop and call here
LEDGER_KEY = "shutdown-e2e-ledger-key"
CONTRACT: dict[str, Any] = contract(
    goal="Keep the CRM",
    lease_ttl="1h",
    budgets={"spend": "5.00", "writes": 50},
    authority={"allow": ["crm__*"]},
)


@dataclass
class Gateway:
    """One gateway's configuration (its store `db`); `serve()` runs it."""

    folder: Path
    url: str
    config: Path
    db: Path

    @property
    def env(self) -> dict[str, str]:
        return clean_environ() | SECRETS | {"WARRANT_LEDGER_KEY": LEDGER_KEY, "KEY_OPS": "key-ops"}

    def serve(self, log: str = "serve.log") -> contextlib.AbstractContextManager[subprocess.Popen[bytes]]:
        return warrant_serve(self.config, self.url, self.env, self.folder / log, WAIT)

    def api(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(base_url=self.url, headers={"Authorization": "Bearer key-ops"}, timeout=WAIT)

    async def lease(self) -> tuple[str, str]:
        """A new run and its lease: (run_id, token)."""
        async with self.api() as api:
            return await run_with_lease(api, CONTRACT)

    async def wait_admitted(self, run_id: str) -> str:
        """Until the run has a write admitted and not settled (bounded); its action id."""
        async with self.api() as api:

            async def admitted() -> list[str]:
                items = (await api.get(f"/api/runs/{run_id}/actions")).json()["items"]
                return [str(a["action_id"]) for a in items if a["status"] == "admitted"]

            return (await eventually(admitted, wait=WAIT, every=0.02))[0]

    def actions(self) -> dict[str, tuple[str, str | None]]:
        """Every write in the store's file, read directly: action id -> (status, reason)."""
        with contextlib.closing(sqlite3.connect(self.db)) as conn:
            rows = conn.execute("SELECT action_id, status, reason FROM actions WHERE effect = 'write'").fetchall()
        return {action_id: (status, reason) for action_id, status, reason in rows}

    def warrant(self, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        """`warrant ARGS` as a process (offline commands: no server needed)."""
        return subprocess.run(
            [sys.executable, "-m", "gateway.cli", *args],
            env=env or self.env,
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=WAIT,
            check=False,
        )

    async def verify(self) -> dict[str, Any]:
        """The store's ledger verified in this process (what `warrant ledger verify` reports)."""
        async with open_store(f"sqlite:///{self.db}", clock=SystemClock(), ledger_key=LEDGER_KEY.encode()) as store:
            return (await store.verify_ledger()).as_dict()


def gateway(folder: Path, crm: Service, *, grace: float = 20.0, db: str = "w.db", timeout: int = 60) -> Gateway:
    """A configuration in `folder`: the shipped CRM adapter pointed at `crm` with the tools'
    `timeout` (long: a write held at the CRM stays in flight), an operator key."""
    folder.mkdir(parents=True, exist_ok=True)
    adapter = adapter_copy(ROOT / "adapters" / "crm.yaml", folder / "crm.yaml", crm.url)
    adapter.write_text(re.sub(r"^(\s*)timeout: \d+$", rf"\g<1>timeout: {timeout}", adapter.read_text(), flags=re.M))
    port = free_port()
    config = folder / "warrant.yaml"
    config.write_text(
        f"database: sqlite:///{folder / db}\nlisten: {{host: 127.0.0.1, port: {port}}}\n"
        "api_keys:\n  - {name: ops, tenant: acme, roles: [admin], key_env: KEY_OPS}\n"
        f"adapters: [{adapter}]\npolicies: [{ROOT / 'policies' / 'default.yaml'}]\n"
        f"shutdown_grace: {grace}\n"
    )
    return Gateway(folder, f"http://127.0.0.1:{port}", config, folder / db)


async def exited(proc: subprocess.Popen[bytes], within: float) -> int:
    """The process's exit status; the test fails when it runs longer than `within` seconds."""
    try:
        return await anyio.to_thread.run_sync(proc.wait, within)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"the gateway did not exit within {within} s") from None
