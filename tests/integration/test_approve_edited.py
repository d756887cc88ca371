"""An approver edits the payload, end to end (docs/decisions/0032-approve-edited.md): the demo mail
service as a real process on loopback, a served gateway (uvicorn, the shipped email adapter and
default policy), the official MCP SDK client as the agent, and the operator API as the approver.

Ground truth is the mail service's own SQLite file: the message sent is the EDITED one, exactly once.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from gateway.app import create_app
from gateway.clock import ManualClock
from gateway.config import load_settings
from tests.contracts import contract
from tests.harness import free_port, uvicorn_serving
from tests.integration.test_http_services import SECRETS, Service, adapter_copy

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
KEYS = {"ops": "operator", "ana": "approver"}
CONTRACT: dict[str, Any] = contract(
    goal="Mail a partner the offer",
    lease_ttl="1h",
    budgets={"spend": "5.00", "writes": 20},
    authority={"allow": ["email__*"], "constraints": {"email__send": "!args.to.endsWith('@rival.example')"}},
)
PROPOSED = {"to": "bob@partner.example", "subject": "Offer", "body": "We can do 10% off."}
EDITED = {"to": "carol@partner.example", "subject": "Offer", "body": "We can do 5% off; Bob has left."}


@dataclass
class World:
    mail: Service
    url: str

    def api(self, key: str) -> httpx.AsyncClient:
        return httpx.AsyncClient(base_url=self.url, headers={"Authorization": f"Bearer key-{key}"}, timeout=20)

    async def run(self) -> tuple[str, str]:
        async with self.api("ops") as c:
            r = await c.post("/api/runs", json=CONTRACT)
            assert r.status_code == 201, r.text
            run_id = r.json()["run_id"]
            grant = (await c.post(f"/api/runs/{run_id}/lease", json={"worker": "agent"})).json()
        return run_id, grant["token"]

    @asynccontextmanager
    async def agent(self, token: str) -> AsyncIterator[Client]:
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=20) as http:
            async with Client(streamable_http_client(f"{self.url}/mcp", http_client=http), cache=None) as c:
                yield c

    def sent(self) -> list[tuple[Any, ...]]:
        return self.mail.rows("SELECT to_address, subject, body FROM messages ORDER BY created_at")


@pytest.fixture
async def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[World]:
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    mail = Service("mail", "EMAIL_TOKEN", tmp_path / "mail.db", free_port(), tmp_path / "mail.log")
    await mail.start()
    mail_yaml = adapter_copy(ROOT / "adapters" / "email.yaml", tmp_path / "email.yaml", mail.url)
    keys = "\n".join(
        f"  - {{name: {name}, tenant: acme, roles: [{role}], key_env: KEY_{name.upper()}}}"
        for name, role in KEYS.items()
    )
    config = tmp_path / "warrant.yaml"
    config.write_text(
        f"database: sqlite:///{tmp_path}/w.db\napi_keys:\n{keys}\n"
        f"adapters: [{mail_yaml}]\npolicies: [{ROOT / 'policies' / 'default.yaml'}]\n"
    )
    env = {f"KEY_{name.upper()}": f"key-{name}" for name in KEYS} | {"WARRANT_LEDGER_KEY": "it-ledger-key"}
    app = create_app(load_settings(config, env), clock=ManualClock())
    try:
        async with uvicorn_serving(app) as url:
            yield World(mail, url)
    finally:
        await mail.stop()


def error_of(result: Any) -> dict[str, Any]:
    error: dict[str, Any] = (result.structured_content or {})["error"]
    return error


async def test_the_agent_is_told_the_edited_arguments_and_the_edit_is_sent_once(world: World) -> None:
    _, token = await world.run()
    async with world.agent(token) as agent:
        asked = error_of(await agent.call_tool("email__send", PROPOSED))
        assert asked["code"] == "approval_required"
        approval_id = asked["approval_id"]

        async with world.api("ana") as c:
            r = await c.post(
                f"/api/approvals/{approval_id}/approve",
                json={"arguments": EDITED, "expected_sha256": asked["payload_sha256"], "note": "to Carol, at 5%"},
            )
        assert r.status_code == 200, r.text
        shown = r.json()
        assert shown["status"] == "approved" and shown["payload"] == EDITED
        assert shown["proposed_sha256"] == asked["payload_sha256"] != shown["payload_sha256"]
        assert shown["edit"]["proposed_payload"] == PROPOSED
        assert {c["path"] for c in shown["edit"]["changes"]} == {"/to", "/body"}

        # The agent calls again with what it proposed: told the exact approved arguments, nothing sent.
        again = await agent.call_tool("email__send", PROPOSED)
        told = error_of(again)
        assert told["code"] == "approval_edited" and told["arguments"] == EDITED
        assert world.sent() == []
        status = (await agent.call_tool("warrant_status", {})).structured_content or {}
        assert [d["arguments"] for d in status["decided_approvals"]] == [EDITED]

        # It resends them verbatim: the approved call, once.
        done = await agent.call_tool("email__send", told["arguments"])
        assert not done.is_error, done
        replay = await agent.call_tool("email__send", told["arguments"])
        assert not replay.is_error
    assert world.sent() == [(EDITED["to"], EDITED["subject"], EDITED["body"])]
    async with world.api("ana") as c:
        used = (await c.get(f"/api/approvals/{approval_id}")).json()
    assert used["status"] == "used" and used["edit"]["proposed_sha256"] == asked["payload_sha256"]


async def test_an_edit_outside_the_runs_authority_is_refused_and_nothing_is_sent(world: World) -> None:
    _, token = await world.run()
    async with world.agent(token) as agent:
        asked = error_of(await agent.call_tool("email__send", PROPOSED))
        async with world.api("ana") as c:
            rival = {**PROPOSED, "to": "eve@rival.example"}
            r = await c.post(f"/api/approvals/{asked['approval_id']}/approve", json={"arguments": rival})
            assert r.status_code == 422
            error = r.json()["error"]
            assert (error["code"], error["constraint"]) == ("edit_outside_authority", "constraint_violated")
            r = await c.post(f"/api/approvals/{asked['approval_id']}/approve", json={"arguments": {"to": 5}})
            assert r.status_code == 422 and r.json()["error"]["constraint"] == "invalid_arguments"
            still = (await c.get(f"/api/approvals/{asked['approval_id']}")).json()
        assert (still["status"], still["proposed_sha256"]) == ("pending", None)
        assert error_of(await agent.call_tool("email__send", PROPOSED))["code"] == "approval_required"
    assert world.sent() == []


async def test_a_denial_message_is_read_by_the_model(world: World) -> None:
    _, token = await world.run()
    message = "Bob left the partner company; write to partners@partner.example instead."
    async with world.agent(token) as agent:
        asked = error_of(await agent.call_tool("email__send", PROPOSED))
        async with world.api("ana") as c:
            bad = await c.post(f"/api/approvals/{asked['approval_id']}/deny", json={"note": "no\x1b[2Jway"})
            assert bad.status_code == 422  # a control character: refused, nothing decided
            r = await c.post(f"/api/approvals/{asked['approval_id']}/deny", json={"note": message})
            assert r.status_code == 200, r.text
            edit_on_deny = await c.post(f"/api/approvals/{asked['approval_id']}/deny", json={"arguments": EDITED})
            assert edit_on_deny.status_code in (409, 422)
        again = await agent.call_tool("email__send", PROPOSED)
        denied = error_of(again)
        assert denied["code"] == "approval_denied" and denied["note"] == message
        assert message in again.content[0].text  # type: ignore[union-attr]
        status = (await agent.call_tool("warrant_status", {})).structured_content or {}
        assert [d["message"] for d in status["decided_approvals"]] == [message]
    assert world.sent() == []
