"""End to end over HTTP APIs: `warrant serve` as a real process with the shipped CRM and mail
adapters and the shipped default policy, the demo services as real processes, and the official
MCP SDK client over streamable HTTP. Ground truth is the services' own databases."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import mcp.types as types
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.e2e.serving import clean_environ, run_with_lease, warrant_serve
from tests.e2e.test_mcp_end_to_end import code_of
from tests.harness import free_port
from tests.integration.test_http_services import SECRETS, Service, adapter_copy

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
WAIT = 20.0
KEYS = {"op": "operator", "appr": "approver"}
CONTRACT: dict[str, Any] = json.loads((ROOT / "examples" / "contracts" / "crm-demo.json").read_text())


@dataclass
class Gateway:
    url: str
    crm: Service
    mail: Service

    def api(self, key: str) -> httpx.AsyncClient:
        return httpx.AsyncClient(base_url=self.url, headers={"Authorization": f"Bearer key-{key}"}, timeout=WAIT)

    async def lease(self) -> tuple[str, str]:
        async with self.api("op") as api:
            return await run_with_lease(api, CONTRACT)


@pytest.fixture
async def services(tmp_path: Path) -> AsyncIterator[tuple[Service, Service]]:
    crm = Service("crm", "CRM_TOKEN", tmp_path / "crm.db", free_port(), tmp_path / "crm.log")
    mail = Service("mail", "EMAIL_TOKEN", tmp_path / "mail.db", free_port(), tmp_path / "mail.log")
    await crm.start()
    await mail.start()
    try:
        yield crm, mail
    finally:
        await crm.stop()
        await mail.stop()


@pytest.fixture
def gateway(tmp_path: Path, services: tuple[Service, Service]) -> Iterator[Gateway]:
    crm, mail = services
    adapters = [
        adapter_copy(ROOT / "adapters" / "crm.yaml", tmp_path / "crm.yaml", crm.url),
        adapter_copy(ROOT / "adapters" / "email.yaml", tmp_path / "email.yaml", mail.url),
    ]
    port = free_port()
    keys = "\n".join(
        f"  - {{name: {n}, tenant: acme, roles: [{r}], key_env: KEY_{n.upper()}}}" for n, r in KEYS.items()
    )
    config = tmp_path / "warrant.yaml"
    config.write_text(
        f"database: sqlite:///{tmp_path}/w.db\nlisten: {{host: 127.0.0.1, port: {port}}}\napi_keys:\n{keys}\n"
        f"adapters: [{', '.join(map(str, adapters))}]\npolicies: [{ROOT / 'policies' / 'default.yaml'}]\n"
    )
    env = clean_environ() | SECRETS | {"WARRANT_LEDGER_KEY": "e2e"} | {f"KEY_{n.upper()}": f"key-{n}" for n in KEYS}
    log = tmp_path / "serve.log"
    url = f"http://127.0.0.1:{port}"
    with warrant_serve(config, url, env, log, WAIT):
        yield Gateway(url, crm, mail)
    assert "it-crm-token" not in log.read_text()  # secrets never reach the log


async def test_an_agent_creates_a_contact_once_and_sends_an_approved_email_once(gateway: Gateway) -> None:
    run_id, token = await gateway.lease()
    contact = {"email": "lead@prospect.example", "name": "Lee"}
    mail = {"to": "lee@prospect.example", "subject": "Hello", "body": "Nice to meet you."}
    with anyio.fail_after(WAIT):
        async with (
            httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=WAIT) as http,
            Client(streamable_http_client(f"{gateway.url}/mcp", http_client=http), cache=None) as client,
        ):
            names = {tool.name for tool in (await client.list_tools()).tools}
            assert {"crm__create_contact", "crm__search_contacts", "email__send"} <= names
            assert "crm__update_contact" not in names  # the contract denies it

            created = await client.call_tool("crm__create_contact", contact)
            assert code_of(created) is None, created
            again = await client.call_tool("crm__create_contact", contact)
            found = await client.call_tool("crm__search_contacts", {"email": contact["email"]})

            asked = await client.call_tool("email__send", mail)  # outside @acme.example: a person decides
            assert code_of(asked) == "approval_required"
            assert gateway.mail.rows("SELECT COUNT(*) FROM messages") == [(0,)]
            assert asked.structured_content is not None
            error = asked.structured_content["error"]
            async with gateway.api("appr") as approver:
                decided = await approver.post(
                    f"/api/approvals/{error['approval_id']}/approve",
                    json={"note": "ok", "expected_sha256": error["payload_sha256"]},
                )
                assert decided.status_code == 200, decided.text
            sent = await client.call_tool("email__send", mail)
            resent = await client.call_tool("email__send", mail)

    assert created.structured_content is not None and again.meta is not None
    [(contact_id,)] = gateway.crm.rows("SELECT id FROM contacts")
    assert created.structured_content["id"] == contact_id
    assert again.meta["warrant/replayed"] is True
    assert found.structured_content is not None
    assert [c["id"] for c in found.structured_content["items"]] == [contact_id]

    assert code_of(sent) is None and resent.meta is not None and resent.meta["warrant/replayed"] is True
    assert isinstance(resent.content[0], types.TextContent)
    assert resent.content[0].text.startswith("not executed again")
    assert gateway.mail.rows("SELECT to_address FROM messages") == [(mail["to"],)]

    async with gateway.api("op") as api:
        actions = (await api.get(f"/api/runs/{run_id}/actions")).json()["items"]
        run = (await api.get(f"/api/runs/{run_id}")).json()
    writes = [a for a in actions if a["effect"] == "write" and a["status"] == "succeeded"]
    assert sorted(a["tool"] for a in writes) == ["crm__create_contact", "email__send"]
    assert all(a["idempotency_key"].startswith("wk_") for a in writes)
    assert run["budgets"]["spend"]["spent"] == "0.06"  # 0.05 for the contact, 0.01 the mail service charged
