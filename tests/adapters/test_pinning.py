"""Tool pinning, through the gate and the operator API of a real gateway with the example server behind it."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import pytest
import uvicorn
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from gateway.adapters.mcp import McpAdapter
from gateway.app import create_app
from gateway.cli import main as cli
from gateway.clock import ManualClock
from gateway.config import load_settings
from gateway.mcp import WARRANT_TOOLS
from gateway.service import Gateway
from tests.adapters.conftest import SERVER, WAIT, Notebook, free_port, wait_until
from tests.contracts import contract
from tests.harness import eventually

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

KEYS = {"ops": "admin", "op": "operator"}
POLICY = """tools:
  files__read_note: {effect: read}
  files__write_note: {effect: write}
  files__archive_note: {effect: write}
  files__slow_write: {effect: write}
"""
CONTRACT: dict[str, Any] = contract(goal="Pin downstream tools", authority={"allow": ["files__*"]})


@dataclass
class Served:
    url: str
    app: Any
    notebook: Notebook

    @property
    def gateway(self) -> Gateway:
        gateway: Gateway = self.app.state.gateway
        return gateway

    @property
    def files(self) -> McpAdapter:
        [adapter] = [a for a in self.gateway.adapters if isinstance(a, McpAdapter)]
        return adapter

    def api(self, key: str) -> httpx.AsyncClient:
        return httpx.AsyncClient(base_url=self.url, headers={"Authorization": f"Bearer key-{key}"}, timeout=WAIT)

    async def lease(self) -> tuple[str, str]:
        async with self.api("ops") as api:
            run = (await api.post("/api/runs", json=CONTRACT)).json()
            grant = (await api.post(f"/api/runs/{run['run_id']}/lease", json={"worker": "w"})).json()
        return run["run_id"], grant["token"]

    async def call(self, token: str, tool: str, arguments: dict[str, Any]) -> Any:
        with anyio.fail_after(WAIT):
            return await self.gateway.gate.call(token, tool, arguments)

    async def changed_downstream(self, *, version: str | None = None, extra: str | None = None) -> None:
        if version is not None:
            (self.notebook.folder / "version").write_text(version)
        if extra is not None:
            (self.notebook.folder / "extra").write_text(extra)
        with anyio.fail_after(WAIT):
            await self.files.refresh()


@contextlib.asynccontextmanager
async def serving(
    tmp_path: Path, notebook: Notebook, extra_keys: tuple[str, ...] = (), **adapter: Any
) -> AsyncIterator[Served]:
    fields = {"name": "files", "kind": "mcp", "command": ["python", str(SERVER), *notebook.args()[1:]], **adapter}
    (tmp_path / "files.yaml").write_text(json.dumps(fields))
    (tmp_path / "policy.yaml").write_text(POLICY)
    keys = "\n".join(
        [f"  - {{name: {n}, tenant: acme, roles: [{r}], key_env: KEY_{n.upper()}}}" for n, r in KEYS.items()]
        + [f"  - {entry}" for entry in extra_keys]
    )
    config = tmp_path / "warrant.yaml"
    config.write_text(
        f"database: sqlite:///{tmp_path}/w.db\napi_keys:\n{keys}\nadapters: [files.yaml]\npolicies: [policy.yaml]\n"
    )
    names = [*KEYS, "globex", "root"]
    env = {f"KEY_{n.upper()}": f"key-{n}" for n in names} | {"WARRANT_LEDGER_KEY": "test-ledger-key"}
    app = create_app(load_settings(config, env), clock=ManualClock())
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on"))
    task = asyncio.create_task(server.serve())
    try:
        await eventually(lambda: server.started or task.done(), wait=WAIT, every=0.01)
        assert server.started, "the gateway did not start"
        yield Served(f"http://127.0.0.1:{port}", app, notebook)
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, WAIT)


async def front_tools(url: str, token: str) -> set[str]:
    """What `tools/list` at /mcp shows this run, through the official SDK client."""
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}) as http,
        Client(streamable_http_client(f"{url}/mcp", http_client=http), cache=None) as client,
    ):
        return {tool.name for tool in (await client.list_tools()).tools}


async def actions(served: Served, run_id: str) -> list[dict[str, Any]]:
    async with served.api("ops") as api:
        items: list[dict[str, Any]] = (await api.get(f"/api/runs/{run_id}/actions")).json()["items"]
        return items


async def test_a_changed_description_is_refused_until_an_admin_accepts_it(tmp_path: Path, notebook: Notebook) -> None:
    async with serving(tmp_path, notebook) as served:
        run_id, token = await served.lease()
        assert (await served.call(token, "files__write_note", {"title": "a", "body": "1"})).code is None
        assert len(notebook.effect_lines()) == 1

        await served.changed_downstream(version="now also emails the note to everyone")
        refused = await served.call(token, "files__write_note", {"title": "b", "body": "2"})
        assert refused.code == "tool_definition_changed"
        assert len(notebook.effect_lines()) == 1
        assert [(a["status"], a["code"]) for a in await actions(served, run_id)][-1] == (
            "rejected",
            "tool_definition_changed",
        )
        listed = await front_tools(served.url, token)
        assert "files__read_note" in listed and "files__write_note" not in listed

        async with served.api("ops") as admin, served.api("op") as operator:
            tools = {t["tool"]: t for t in (await admin.get("/api/tools")).json()["items"]}
            assert tools["files__write_note"]["pin"]["state"] == "changed"
            assert tools["files__read_note"]["pin"]["state"] == "pinned"
            [pending] = (await operator.get("/api/tools/pending")).json()["items"]
            assert pending["tool"] == "files__write_note" and pending["diff"]
            sha = pending["pin"]["definition_sha256"]
            assert sha != pending["pin"]["pinned_sha256"]

            answer = await operator.post("/api/tools/files__write_note/accept", json={"definition_sha256": sha})
            assert (answer.status_code, answer.json()["error"]["code"]) == (403, "forbidden")
            wrong = pending["pin"]["pinned_sha256"]
            answer = await admin.post("/api/tools/files__write_note/accept", json={"definition_sha256": wrong})
            assert (answer.status_code, answer.json()["error"]["code"]) == (409, "payload_mismatch")
            answer = await admin.post("/api/tools/files__write_note/accept", json={"definition_sha256": sha})
            assert answer.status_code == 200 and answer.json()["pin"]["state"] == "pinned"
            assert (await admin.get("/api/tools/pending")).json()["items"] == []

        assert (await served.call(token, "files__write_note", {"title": "b", "body": "2"})).code is None
        assert len(notebook.effect_lines()) == 2
        assert "files__write_note" in await front_tools(served.url, token)


async def test_with_two_tenants_only_a_gateway_admin_accepts_a_changed_definition(
    tmp_path: Path, notebook: Notebook
) -> None:
    others = (
        "{name: globex, tenant: globex, roles: [admin], key_env: KEY_GLOBEX}",
        "{name: root, tenant: acme, roles: [admin], key_env: KEY_ROOT, gateway_admin: true}",
    )
    async with serving(tmp_path, notebook, others) as served:
        _, token = await served.lease()
        await served.changed_downstream(version="now also emails the note to everyone")
        assert (await served.call(token, "files__write_note", {"title": "b", "body": "2"})).code == (
            "tool_definition_changed"
        )
        async with served.api("ops") as acme, served.api("globex") as globex, served.api("root") as root:
            [pending] = (await acme.get("/api/tools/pending")).json()["items"]
            sha = pending["pin"]["definition_sha256"]
            for tenant_admin in (acme, globex):  # each tenant's admin would decide for the other tenant too
                answer = await tenant_admin.post("/api/tools/files__write_note/accept", json={"definition_sha256": sha})
                assert (answer.status_code, answer.json()["error"]["code"]) == (403, "forbidden")
            assert (await acme.get("/api/tools/pending")).json()["items"] != []
            answer = await root.post("/api/tools/files__write_note/accept", json={"definition_sha256": sha})
            assert answer.status_code == 200 and answer.json()["pin"]["state"] == "pinned"
        assert (await served.call(token, "files__write_note", {"title": "b", "body": "2"})).code is None


async def test_a_manual_adapter_refuses_its_tools_until_each_is_accepted(tmp_path: Path, notebook: Notebook) -> None:
    async with serving(tmp_path, notebook, pin="manual") as served:
        _, token = await served.lease()
        assert (await served.call(token, "files__write_note", {"title": "a", "body": "1"})).code == (
            "tool_definition_changed"
        )
        assert notebook.effect_lines() == []
        assert await front_tools(served.url, token) == set(WARRANT_TOOLS)
        async with served.api("ops") as admin:
            pending = {p["tool"]: p for p in (await admin.get("/api/tools/pending")).json()["items"]}
            assert pending["files__write_note"]["pin"]["state"] == "new"
            sha = pending["files__write_note"]["pin"]["definition_sha256"]
            assert (await admin.post("/api/tools/files__write_note/accept", json={"definition_sha256": sha})).is_success
        assert (await served.call(token, "files__write_note", {"title": "a", "body": "1"})).code is None
        assert (await served.call(token, "files__read_note", {"title": "a"})).code == "tool_definition_changed"
        assert len(notebook.effect_lines()) == 1


async def test_a_tool_that_appears_later_is_refused_until_accepted(
    tmp_path: Path, notebook: Notebook, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    async with serving(tmp_path, notebook) as served:
        _, token = await served.lease()
        assert (await served.call(token, "files__archive_note", {"title": "a", "body": "1"})).code == "tool_not_found"
        await served.changed_downstream(extra="archive_note")
        assert (await served.call(token, "files__archive_note", {"title": "a", "body": "1"})).code == (
            "tool_definition_changed"
        )
        assert notebook.effect_lines() == []
        async with served.api("ops") as admin:
            [pending] = (await admin.get("/api/tools/pending")).json()["items"]
            assert (pending["tool"], pending["pin"]["state"], pending["pinned_definition"]) == (
                "files__archive_note",
                "new",
                None,
            )
        # The operator accepts with the CLI (a blocking HTTP client: in a thread, off this event loop).
        monkeypatch.setenv("WARRANT_API_KEY", "key-op")
        assert await anyio.to_thread.run_sync(cli, ["tools", "accept", "files__archive_note", "--url", served.url]) == 1
        monkeypatch.setenv("WARRANT_API_KEY", "key-ops")
        assert await anyio.to_thread.run_sync(cli, ["tools", "pending", "--url", served.url]) == 0
        assert "files__archive_note" in capsys.readouterr().out
        assert await anyio.to_thread.run_sync(cli, ["tools", "accept", "files__archive_note", "--url", served.url]) == 0
        capsys.readouterr()
        assert await anyio.to_thread.run_sync(cli, ["tools", "pending", "--url", served.url]) == 0
        assert "files__archive_note" not in capsys.readouterr().out
        assert (await served.call(token, "files__archive_note", {"title": "a", "body": "1"})).code is None
        assert len(notebook.effect_lines()) == 1


async def test_a_hard_cancel_of_a_downstream_write_in_flight_records_it_unknown(
    tmp_path: Path, notebook: Notebook
) -> None:
    async with serving(tmp_path, notebook) as served:
        run_id, token = await served.lease()
        call = asyncio.create_task(served.call(token, "files__slow_write", {"title": "a", "body": "1"}))
        await wait_until(lambda: bool(notebook.effect_lines()))  # appended its effect; waits to be released
        async with served.api("ops") as admin:
            answer = await admin.post(f"/api/runs/{run_id}/cancel", json={"reason": "stop", "hard": True})
            assert answer.is_success
        result = await call
        assert result.code == "outcome_unknown"
        assert [a["status"] for a in await actions(served, run_id)][-1] == "unknown"
