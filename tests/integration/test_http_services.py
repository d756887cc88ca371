"""The shipped CRM and mail adapters against the demo services as real processes on loopback.

Ground truth is read from the services' own SQLite files: whatever the gateway records, the
number of contacts and messages is what happened. The gateway runs in this process under
uvicorn (its operator API on a real socket) with a ManualClock, so reconciliation's timing rule
("a 404 proves nothing before one tool timeout has passed") is tested by moving the clock.
"""

from __future__ import annotations

import os
import re
import sqlite3
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from anyio.abc import Process

from gateway.app import create_app
from gateway.clock import ManualClock
from gateway.config import load_settings
from gateway.domain import OPERATION_ID_META
from gateway.gate import CallResult
from gateway.service import Gateway
from tests.contracts import contract
from tests.harness import free_port, uvicorn_serving

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
WAIT = 20.0
TOOL_TIMEOUT = 3  # seconds: the shipped adapters' 10, shortened so that a call retried to its bound stays quick
SECRETS = {"CRM_TOKEN": "it-crm-token", "EMAIL_TOKEN": "it-email-token"}
KEYS = {"ops": "acme", "rival": "globex"}
CONTRACT: dict[str, Any] = contract(
    goal="Exercise the HTTP adapters",
    lease_ttl="1h",
    budgets={"spend": "5.00", "writes": 20},
    authority={"allow": ["crm__*", "email__*"]},
)
ANA = {"email": "ana@lead.example", "name": "Ana"}
MAIL = {"to": "team@acme.example", "subject": "Leads", "body": "Three new leads."}


@dataclass
class Service:
    module: str
    token_env: str
    db: Path
    port: int
    log: Path
    process: Process | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def start(self) -> None:
        command = [sys.executable, "-m", f"examples.services.{self.module}", "--port", str(self.port)]
        with self.log.open("ab") as stderr:
            self.process = await anyio.open_process(
                [*command, "--db", str(self.db), "--token-env", self.token_env],
                cwd=ROOT,
                env={**os.environ, **SECRETS},
                stdin=subprocess.DEVNULL,
                stderr=stderr,
            )
        assert self.process.stdout is not None
        line = b""
        with anyio.fail_after(WAIT):
            while not line.endswith(b"\n"):
                try:
                    line += await self.process.stdout.receive()
                except anyio.EndOfStream:
                    raise AssertionError(f"{self.module} exited: {self.log.read_text()}") from None

    async def stop(self) -> None:
        if self.process is not None:
            if self.process.returncode is None:
                self.process.kill()
            with anyio.fail_after(WAIT):
                await self.process.aclose()

    async def exited(self) -> int:
        assert self.process is not None
        with anyio.fail_after(WAIT):
            return await self.process.wait()

    async def fault(self, **spec: Any) -> None:
        async with httpx.AsyncClient(base_url=self.url, timeout=WAIT) as client:
            assert (await client.post("/_admin/faults", json=spec)).status_code == 201

    def rows(self, sql: str, *args: Any) -> list[tuple[Any, ...]]:
        with sqlite3.connect(self.db) as conn:
            found = conn.execute(sql, args).fetchall()
        conn.close()
        return found


@dataclass
class World:
    crm: Service
    mail: Service
    url: str
    clock: ManualClock
    app: Any
    tokens: dict[str, str] = field(default_factory=dict)

    @property
    def gateway(self) -> Gateway:
        gateway: Gateway = self.app.state.gateway
        return gateway

    def api(self, key: str = "ops") -> httpx.AsyncClient:
        return httpx.AsyncClient(base_url=self.url, headers={"Authorization": f"Bearer key-{key}"}, timeout=WAIT)

    async def run(self, key: str = "ops") -> tuple[str, str]:
        """A new run and its lease: (run_id, token)."""
        async with self.api(key) as c:
            run = await c.post("/api/runs", json=CONTRACT)
            assert run.status_code == 201, run.text
            run_id = run.json()["run_id"]
            grant = await c.post(f"/api/runs/{run_id}/lease", json={"worker": "agent"})
            assert grant.status_code == 201, grant.text
        return run_id, grant.json()["token"]

    async def call(self, token: str, tool: str, args: dict[str, Any], operation_id: str | None = None) -> CallResult:
        meta = {OPERATION_ID_META: operation_id} if operation_id else None
        with anyio.fail_after(WAIT):
            return await self.gateway.gate.call(token, tool, args, meta)

    async def actions(self, run_id: str) -> list[dict[str, Any]]:
        """The run's admitted actions (refusals, recorded as `rejected`, left out)."""
        async with self.api() as c:
            items: list[dict[str, Any]] = (await c.get(f"/api/runs/{run_id}/actions")).json()["items"]
        return [a for a in items if a["status"] != "rejected"]

    async def reconcile(self, run_id: str, key: str = "ops") -> int:
        async with self.api(key) as c:
            r = await c.post(f"/api/runs/{run_id}/reconcile")
        assert r.status_code == 200, r.text
        settled: int = r.json()["settled"]
        return settled


def code_of(result: CallResult) -> str | None:
    return result.code  # a waiting answer (approval_required) is not an error result, and has its code


def adapter_copy(source: Path, target: Path, url: str) -> Path:
    """The shipped adapter document, pointed at the test's service, with a shorter timeout."""
    text = source.read_text()
    text = re.sub(r"^base_url: .*$", f"base_url: {url}", text, flags=re.M)
    text = re.sub(r"^(\s*)timeout: 10$", rf"\g<1>timeout: {TOOL_TIMEOUT}", text, flags=re.M)
    target.write_text(text)
    return target


@pytest.fixture
def secrets_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    yield


@pytest.fixture
async def world(tmp_path: Path, secrets_env: None) -> AsyncIterator[World]:
    crm = Service("crm", "CRM_TOKEN", tmp_path / "crm.db", free_port(), tmp_path / "crm.log")
    mail = Service("mail", "EMAIL_TOKEN", tmp_path / "mail.db", free_port(), tmp_path / "mail.log")
    await crm.start()
    await mail.start()
    crm_yaml = adapter_copy(ROOT / "adapters" / "crm.yaml", tmp_path / "crm.yaml", crm.url)
    mail_yaml = adapter_copy(ROOT / "adapters" / "email.yaml", tmp_path / "email.yaml", mail.url)
    keys = "\n".join(
        f"  - {{name: {name}, tenant: {tenant}, roles: [admin], key_env: KEY_{name.upper()}}}"
        for name, tenant in KEYS.items()
    )
    config = tmp_path / "warrant.yaml"
    config.write_text(
        f"database: sqlite:///{tmp_path}/w.db\napi_keys:\n{keys}\n"
        f"adapters: [{crm_yaml}, {mail_yaml}]\npolicies: [{ROOT / 'policies' / 'default.yaml'}]\n"
    )
    env = {f"KEY_{name.upper()}": f"key-{name}" for name in KEYS} | {"WARRANT_LEDGER_KEY": "it-ledger-key"}
    clock = ManualClock()
    app = create_app(load_settings(config, env), clock=clock)
    try:
        async with uvicorn_serving(app) as url:
            yield World(crm, mail, url, clock, app)
    finally:
        await crm.stop()
        await mail.stop()


async def test_a_create_whose_crm_dies_after_committing_reconciles_to_the_crms_contact_once(world: World) -> None:
    run_id, token = await world.run()
    await world.crm.fault(method="POST", path="/contacts", mode="die_after_commit")

    first = await world.call(token, "crm__create_contact", ANA)
    assert code_of(first) == "outcome_unknown"
    await world.crm.exited()
    [action] = await world.actions(run_id)
    assert action["status"] == "unknown"
    assert action["reserved"]["spend"] == "0.10"  # the policy's cost.max stays held

    assert code_of(await world.call(token, "crm__create_contact", ANA)) == "outcome_unknown"  # never blindly
    assert await world.reconcile(run_id) == 0  # the CRM is down: nothing is proven, it stays unknown
    async with world.api() as c:  # a terminal run still reconciles
        assert (await c.post(f"/api/runs/{run_id}/cancel", json={"reason": "test"})).status_code == 200

    await world.crm.start()
    assert await world.reconcile(run_id) == 1
    [contact_id] = [row[0] for row in world.crm.rows("SELECT id FROM contacts")]
    [action] = await world.actions(run_id)
    assert action["status"] == "succeeded"
    assert action["receipt"]["id"] == contact_id

    async with world.api() as c:
        run = (await c.get(f"/api/runs/{run_id}")).json()
    assert run["status"] == "cancelled"
    assert world.crm.rows("SELECT COUNT(*) FROM contacts") == [(1,)]


async def test_an_agents_retry_after_reconciliation_returns_the_recorded_contact(world: World) -> None:
    run_id, token = await world.run()
    await world.crm.fault(method="POST", path="/contacts", mode="die_after_commit")
    assert code_of(await world.call(token, "crm__create_contact", ANA)) == "outcome_unknown"
    await world.crm.exited()
    await world.crm.start()
    assert await world.reconcile(run_id) == 1

    retry = await world.call(token, "crm__create_contact", ANA)
    assert not retry.is_error
    assert retry.meta["warrant/replayed"] is True
    assert retry.content[0]["text"].startswith("not executed again")
    [contact_id] = [row[0] for row in world.crm.rows("SELECT id FROM contacts")]
    assert retry.structured is not None and retry.structured["id"] == contact_id
    assert world.crm.rows("SELECT COUNT(*) FROM contacts") == [(1,)]


async def test_an_email_answered_500_after_committing_is_sent_once(world: World) -> None:
    run_id, token = await world.run()
    await world.mail.fault(method="POST", path="/messages", mode="error_after_commit")

    first = await world.call(token, "email__send", MAIL)
    assert code_of(first) == "outcome_unknown"
    assert code_of(await world.call(token, "email__send", MAIL)) == "outcome_unknown"
    assert world.mail.rows("SELECT COUNT(*) FROM messages") == [(1,)]

    async with world.api() as c:  # resume reconciles first; a run that never paused is reconciled on demand
        assert (await c.post(f"/api/runs/{run_id}/pause", json={})).status_code == 200
        assert (await c.post(f"/api/runs/{run_id}/resume", json={})).status_code == 200
    [action] = await world.actions(run_id)
    [(message_id,)] = world.mail.rows("SELECT id FROM messages")
    assert (action["status"], action["receipt"]["id"]) == ("succeeded", message_id)
    assert action["actual_spend"] == "0.01"  # the cost the service reported, not the policy's estimate

    again = await world.call(token, "email__send", MAIL)
    assert again.meta["warrant/replayed"] is True
    assert world.mail.rows("SELECT COUNT(*) FROM messages") == [(1,)]


async def test_a_changed_body_under_the_same_operation_id_is_refused(world: World) -> None:
    _, token = await world.run()
    done = await world.call(token, "crm__create_contact", ANA, operation_id="lead-7")
    assert not done.is_error
    changed = await world.call(token, "crm__create_contact", {**ANA, "name": "Anna"}, operation_id="lead-7")
    assert code_of(changed) == "idempotency_conflict"
    assert world.crm.rows("SELECT name FROM contacts") == [("Ana",)]


async def test_two_tenants_with_the_same_operation_id_get_two_contacts(world: World) -> None:
    _, acme = await world.run("ops")
    _, globex = await world.run("rival")
    one = await world.call(acme, "crm__create_contact", ANA, operation_id="import-1")
    two = await world.call(globex, "crm__create_contact", ANA, operation_id="import-1")
    assert not one.is_error and not two.is_error
    assert two.meta["warrant/replayed"] is False
    ids = [row[0] for row in world.crm.rows("SELECT id FROM contacts ORDER BY rowid")]
    assert len(ids) == 2
    assert {one.structured["id"], two.structured["id"]} == set(ids)  # type: ignore[index]
    keys = world.crm.rows("SELECT key FROM idempotency_keys")
    assert len({k for (k,) in keys}) == 2 and all(k.startswith("wk_") for (k,) in keys)


async def test_a_rate_limited_write_is_retried_after_retry_after_and_done_once(world: World) -> None:
    _, token = await world.run()
    await world.crm.fault(method="POST", path="/contacts", mode="rate_limit", retry_after=0, times=2)
    result = await world.call(token, "crm__create_contact", ANA)
    assert not result.is_error
    assert world.crm.rows("SELECT COUNT(*) FROM contacts") == [(1,)]


async def test_a_lookup_404_proves_not_done_only_after_one_timeout(world: World) -> None:
    run_id, token = await world.run()
    # The CRM answers 503 until the call's bound: the write stays unknown, though nothing was done.
    await world.crm.fault(method="POST", path="/contacts", mode="unavailable", retry_after=0, times=None)
    assert code_of(await world.call(token, "crm__create_contact", ANA)) == "outcome_unknown"
    async with httpx.AsyncClient(base_url=world.crm.url, timeout=WAIT) as client:
        await client.delete("/_admin/faults")

    assert await world.reconcile(run_id) == 0  # asked too early: a 404 proves nothing yet
    assert [a["status"] for a in await world.actions(run_id)] == ["unknown"]
    world.clock.advance(TOOL_TIMEOUT + 1)
    assert await world.reconcile(run_id) == 1
    [action] = await world.actions(run_id)
    assert action["status"] == "failed"
    async with world.api() as c:
        spend = (await c.get(f"/api/runs/{run_id}")).json()["budgets"]["spend"]
    assert spend["reserved"] == "0.00" and spend["spent"] == "0.00"

    again = await world.call(token, "crm__create_contact", ANA)  # not done, so it may be done now
    assert not again.is_error and again.meta["warrant/replayed"] is False
    assert world.crm.rows("SELECT COUNT(*) FROM contacts") == [(1,)]


async def test_a_lookup_past_the_key_retention_leaves_the_action_unknown(world: World) -> None:
    run_id, token = await world.run()
    await world.crm.fault(method="POST", path="/contacts", mode="unavailable", retry_after=0, times=None)
    assert code_of(await world.call(token, "crm__create_contact", ANA)) == "outcome_unknown"
    world.clock.advance(25 * 3600)  # the CRM keeps keys for 24 h: its 404 no longer proves anything
    async with httpx.AsyncClient(base_url=world.crm.url, timeout=WAIT) as client:
        await client.delete("/_admin/faults")
    assert await world.reconcile(run_id) == 0
    assert [a["status"] for a in await world.actions(run_id)] == ["unknown"]
