"""End to end, everything a real process: `warrant serve` on a loopback port, the example notebook
(examples/mcp_files_server.py) behind it as its downstream MCP server over stdio, appending every
side effect it performs to its effects file, and the official MCP SDK client in front of it, over
streamable HTTP in both protocol eras (`auto`: 2026-07-28, `legacy`: 2025-11-25 sessions) and
through `warrant stdio` (a subprocess bridge holding the lease token from WARRANT_TOKEN).

One gateway serves the whole module; each test makes its own run (its own lease, its own
operation ids) and compares the effects file before and after. Codes are asserted, never message
text (the replay note "not executed again" is the one piece of text the design makes stable).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import mcp.types as types
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from tests.adapters.conftest import Notebook, free_port, wait_until
from tests.contracts import contract
from tests.e2e.serving import code_of, warrant_serve
from tests.harness import eventually

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
WAIT = 20.0  # seconds: the bound on each test's MCP and API traffic, and on every process start or stop
TRANSPORTS = ["auto", "legacy", "stdio"]
KEYS = {"ops": "admin", "op": "operator", "appr": "approver"}
POLICY = """currency: USD
tools:
  files__read_note: {effect: read}
  files__write_note: {effect: write, cost: {spend: "0.01"}}
  files__slow_write: {effect: write, cost: {spend: "0.01"}}
"""
CONTRACT: dict[str, Any] = contract(goal="Keep the notebook", budgets={"writes": 20}, authority={"allow": ["files__*"]})


@dataclass
class Served:
    """A running `warrant serve` and the notebook behind it."""

    url: str
    notebook: Notebook
    log: Path

    def api(self, key: str) -> httpx.AsyncClient:
        return httpx.AsyncClient(base_url=self.url, headers={"Authorization": f"Bearer key-{key}"}, timeout=WAIT)

    async def start(self, worker: str = "agent-1", **contract: Any) -> tuple[str, str]:
        """A new run (created by the operator key) and its first lease token."""
        async with self.api("op") as api:
            created = await api.post("/api/runs", json={**CONTRACT, **contract})
            assert created.status_code == 201, created.text
            run_id: str = created.json()["run_id"]
            grant = await api.post(f"/api/runs/{run_id}/lease", json={"worker": worker})
            assert grant.status_code == 201, grant.text
            return run_id, grant.json()["token"]

    def effects(self) -> list[dict[str, Any]]:
        return self.notebook.effect_lines()

    @contextlib.asynccontextmanager
    async def connect(self, token: str, transport: str) -> AsyncIterator[Client]:
        """The official SDK client: over streamable HTTP (`auto`, `legacy`) or through `warrant stdio`."""
        if transport == "stdio":
            bridge = StdioServerParameters(
                command=sys.executable,
                args=["-m", "gateway.cli", "stdio", "--url", self.url],
                env={**os.environ, "WARRANT_TOKEN": token},
                cwd=str(ROOT),
            )
            async with Client(bridge, mode="auto", cache=None) as client:
                yield client
            return
        async with (
            httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=WAIT) as http,
            Client(streamable_http_client(f"{self.url}/mcp", http_client=http), mode=transport, cache=None) as client,
        ):
            yield client


async def tool_names(client: Client) -> set[str]:
    return {tool.name for tool in (await client.list_tools()).tools}


def _alive(pid: int, marker: str) -> bool:
    """Whether `pid` is still a process of ours (its command line names `marker`)."""
    try:
        return marker in Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    except OSError:
        return False


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    tmp = tmp_path_factory.mktemp("e2e")
    notebook = Notebook(tmp / "notebook")
    notebook.folder.mkdir()
    adapter = {
        "name": "files",
        "kind": "mcp",
        "command": [sys.executable, *notebook.args()],
        "pin": "first_use",
        "timeout": 15,
        "start_wait": 15,
        "refresh_every": 0.25,  # the notebook announces no change: the gateway lists its tools again this often
    }
    (tmp / "files.yaml").write_text(json.dumps(adapter))
    (tmp / "policy.yaml").write_text(POLICY)
    port = free_port()
    keys = "\n".join(
        f"  - {{name: {n}, tenant: acme, roles: [{r}], key_env: E2E_KEY_{n.upper()}}}" for n, r in KEYS.items()
    )
    config = tmp / "warrant.yaml"
    config.write_text(
        f"database: sqlite:///{tmp}/w.db\nlisten: {{host: 127.0.0.1, port: {port}}}\n"
        f"api_keys:\n{keys}\nadapters: [files.yaml]\npolicies: [policy.yaml]\n"
    )
    env = {**os.environ, "WARRANT_LEDGER_KEY": "e2e-ledger-key"} | {f"E2E_KEY_{n.upper()}": f"key-{n}" for n in KEYS}
    env.pop("WARRANT_TOKEN", None)
    log = tmp / "serve.log"
    url = f"http://127.0.0.1:{port}"
    try:
        # bounded: the gateway starts its downstream child and waits for its first listing
        with warrant_serve(config, url, env, log, WAIT):
            try:
                yield Served(url, notebook, log)
            finally:
                (notebook.folder / "release").write_text("go")  # a slow_write a failed test left blocked ends now
    finally:
        pid_file = notebook.folder / "pid"
        if pid_file.exists():  # the gateway stops its child; a crash of the gateway may leave it behind
            pid = int(pid_file.read_text())
            if _alive(pid, "mcp_files_server"):
                os.kill(pid, signal.SIGKILL)


# -- 1 ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_permitted_call_passes_and_its_effect_happens_exactly_once(served: Served, transport: str) -> None:
    _, token = await served.start()
    before = served.effects()
    title = f"permitted-{transport}"
    with anyio.fail_after(WAIT):
        async with served.connect(token, transport) as client:
            assert {"files__read_note", "files__write_note", "warrant_status"} <= await tool_names(client)
            written = await client.call_tool("files__write_note", {"title": title, "body": "hello"})
            read = await client.call_tool("files__read_note", {"title": title})
    assert code_of(written) is None, written
    assert written.meta is not None and written.meta["warrant/replayed"] is False
    assert written.meta["warrant/action_id"].startswith("act_")
    assert code_of(read) is None and read.structured_content is not None
    assert read.structured_content["body"] == "hello"
    new = served.effects()[len(before) :]
    assert [(e["tool"], e["title"]) for e in new] == [("write_note", title)]
    # The downstream got the gateway's own idempotency key, never the agent's lease token.
    assert new[0]["key"].startswith("wk_")
    assert token not in served.notebook.effects.read_text()


# -- 2 ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_forbidden_tool_is_not_listed_and_is_refused_if_called(served: Served, transport: str) -> None:
    _, token = await served.start(authority={"allow": ["files__*"], "deny": ["files__write_note"]})
    before = served.effects()
    with anyio.fail_after(WAIT):
        async with served.connect(token, transport) as client:
            names = await tool_names(client)
            refused = await client.call_tool("files__write_note", {"title": f"forbidden-{transport}", "body": "x"})
    assert "files__write_note" not in names and "files__read_note" in names
    assert code_of(refused) == "forbidden"
    assert served.effects() == before


# -- 3 ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_after_a_takeover_the_old_token_is_refused_lease_superseded(served: Served, transport: str) -> None:
    run_id, old = await served.start(worker="agent-1")
    with anyio.fail_after(WAIT):
        async with served.connect(old, transport) as client:
            first = await client.call_tool("files__write_note", {"title": f"takeover-{transport}-1", "body": "x"})
            assert code_of(first) is None, first
            before = served.effects()
            async with served.api("op") as api:
                grant = await api.post(f"/api/runs/{run_id}/lease", json={"worker": "agent-2", "takeover": True})
            assert grant.status_code == 201, grant.text
            new = grant.json()["token"]
            write = await client.call_tool("files__write_note", {"title": f"takeover-{transport}-2", "body": "x"})
            read = await client.call_tool("files__read_note", {"title": f"takeover-{transport}-1"})
        assert code_of(write) == "lease_superseded"
        assert code_of(read) == "lease_superseded"
        assert served.effects() == before
        # The new holder carries on (over HTTP whatever the transport: one bridge process per test is enough).
        async with served.connect(new, "auto") as client:
            taken_over = await client.call_tool("files__write_note", {"title": f"takeover-{transport}-2", "body": "x"})
    assert code_of(taken_over) is None, taken_over
    assert [e["title"] for e in served.effects()[len(before) :]] == [f"takeover-{transport}-2"]


# -- 4 ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_after_cancel_every_call_is_refused_run_cancelled(served: Served, transport: str) -> None:
    run_id, token = await served.start()
    with anyio.fail_after(WAIT):
        async with served.connect(token, transport) as client:
            status = await client.call_tool("warrant_status", {})
            assert code_of(status) is None and status.structured_content is not None
            assert status.structured_content["status"] == "running"
            async with served.api("op") as api:
                cancelled = await api.post(f"/api/runs/{run_id}/cancel", json={"reason": "the job is off"})
            assert cancelled.status_code == 200 and cancelled.json()["status"] == "cancelled"
            before = served.effects()
            calls: list[tuple[str, dict[str, Any]]] = [
                ("files__write_note", {"title": f"cancelled-{transport}", "body": "x"}),
                ("files__slow_write", {"title": f"cancelled-{transport}", "body": "x"}),
                ("files__read_note", {"title": "nothing yet"}),
                ("files__no_such_tool", {}),
                ("warrant_propose", {"tool": "files__write_note", "arguments": {"title": "t", "body": "b"}}),
                ("warrant_repeat", {"action_id": "act_whatever", "reason": "again"}),
            ]
            codes = {name: code_of(await client.call_tool(name, arguments)) for name, arguments in calls}
    assert codes == dict.fromkeys(codes, "run_cancelled")
    assert served.effects() == before


# -- 5 ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_write_in_flight_during_a_soft_cancel_settles_with_its_real_outcome(
    served: Served, transport: str
) -> None:
    run_id, token = await served.start()
    release = served.notebook.folder / "release"
    assert not release.exists()
    before = served.effects()
    title = f"in-flight-{transport}"
    results: list[types.CallToolResult] = []
    try:
        with anyio.fail_after(WAIT):
            async with served.connect(token, transport) as client, anyio.create_task_group() as group:

                async def slow_write() -> None:
                    results.append(await client.call_tool("files__slow_write", {"title": title, "body": "x"}))

                group.start_soon(slow_write)
                # The notebook performs the effect, then blocks until released.
                await wait_until(lambda: len(served.effects()) == len(before) + 1)
                async with served.api("op") as api:
                    cancelled = await api.post(f"/api/runs/{run_id}/cancel", json={"reason": "stop", "hard": False})
                assert cancelled.status_code == 200 and cancelled.json()["status"] == "cancelled"
                assert not results  # still blocked downstream
                # Anything new is refused while that write is still in flight.
                refused = await client.call_tool("files__write_note", {"title": f"{title}-2", "body": "x"})
                assert code_of(refused) == "run_cancelled"
                release.write_text("go")
    finally:
        release.unlink(missing_ok=True)
    [result] = results
    assert code_of(result) is None, result
    assert result.meta is not None
    action_id = result.meta["warrant/action_id"]
    assert [(e["tool"], e["title"]) for e in served.effects()[len(before) :]] == [("slow_write", title)]
    async with served.api("op") as api:
        actions = (await api.get(f"/api/runs/{run_id}/actions")).json()["items"]
        events = (await api.get(f"/api/runs/{run_id}/events")).json()["items"]
    assert {a["action_id"]: a["status"] for a in actions}[action_id] == "succeeded"
    after_cancel = [e for e in events if e["type"] == "effect_after_cancel"]
    assert [e["data"]["action_id"] for e in after_cancel] == [action_id]


# -- 6 ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_an_approval_gated_call_passes_once_after_approval_and_is_not_executed_again(
    served: Served, transport: str
) -> None:
    run_id, token = await served.start(approvals=[{"tool": "files__write_note", "role": "approver"}])
    arguments = {"title": f"gated-{transport}", "body": "only with a human's yes"}
    before = served.effects()
    with anyio.fail_after(WAIT):
        async with served.connect(token, transport) as client:
            asked = await client.call_tool("files__write_note", arguments)
            assert code_of(asked) == "approval_required"
            assert served.effects() == before
            assert asked.structured_content is not None
            error = asked.structured_content["error"]
            async with served.api("appr") as approver:
                listed = await approver.get("/api/approvals", params={"status": "pending", "run_id": run_id})
                [pending] = listed.json()["items"]
                assert (pending["approval_id"], pending["payload"]) == (error["approval_id"], arguments)
                assert pending["payload_sha256"] == error["payload_sha256"]
                decided = await approver.post(
                    f"/api/approvals/{error['approval_id']}/approve",
                    json={"note": "fine", "expected_sha256": pending["payload_sha256"]},
                )
            assert decided.status_code == 200 and decided.json()["status"] == "approved", decided.text
            passed = await client.call_tool("files__write_note", arguments)
            assert code_of(passed) is None, passed
            after = served.effects()
            again = await client.call_tool("files__write_note", arguments)
    assert [(e["tool"], e["title"]) for e in after[len(before) :]] == [("write_note", arguments["title"])]
    assert passed.meta is not None and passed.meta["warrant/replayed"] is False
    assert code_of(again) is None and again.meta is not None
    assert again.meta["warrant/replayed"] is True
    assert again.meta["warrant/action_id"] == passed.meta["warrant/action_id"]
    assert isinstance(again.content[0], types.TextContent)
    assert again.content[0].text.startswith("not executed again")
    assert served.effects() == after


# -- 7 ---------------------------------------------------------------------------------------
async def pending_definition(served: Served, tool: str) -> dict[str, Any]:
    """The definition of `tool` waiting for an admin, once the gateway has listed the changed one."""
    found: list[dict[str, Any]] = []

    async def listed() -> bool:
        async with served.api("ops") as admin:
            items = (await admin.get("/api/tools/pending")).json()["items"]
        found[:] = [item for item in items if item["tool"] == tool]
        return bool(found)

    await eventually(listed, wait=WAIT)  # the gateway lists the notebook's tools every 0.25 s
    return found[0]


async def accept_all_pending(served: Served) -> None:
    """Leave no definition waiting for the next test, whatever happened in this one."""
    async with served.api("ops") as admin:
        for item in (await admin.get("/api/tools/pending")).json()["items"]:
            sha = item["pin"]["definition_sha256"]
            await admin.post(f"/api/tools/{item['tool']}/accept", json={"definition_sha256": sha})


@pytest.mark.parametrize(("transport", "accept_with"), [("auto", "api"), ("legacy", "cli"), ("stdio", "api")])
async def test_a_changed_tool_definition_is_refused_until_an_admin_accepts_it(
    served: Served, transport: str, accept_with: str
) -> None:
    _, token = await served.start()
    version = served.notebook.folder / "version"
    try:
        with anyio.fail_after(WAIT):
            async with served.connect(token, transport) as client:
                first = await client.call_tool("files__write_note", {"title": f"pinned-{transport}", "body": "x"})
                assert code_of(first) is None, first

                version.write_text(f"changed for {transport}: it now also mails every note to everyone")
                pending = await pending_definition(served, "files__write_note")
                assert pending["pin"]["state"] == "changed"
                before = served.effects()
                arguments = {"title": f"changed-{transport}", "body": "x"}
                refused = await client.call_tool("files__write_note", arguments)
                assert code_of(refused) == "tool_definition_changed"
                assert served.effects() == before
                names = await tool_names(client)
                assert "files__write_note" not in names and "files__read_note" in names

                if accept_with == "api":
                    async with served.api("ops") as admin:
                        answer = await admin.post(
                            "/api/tools/files__write_note/accept",
                            json={"definition_sha256": pending["pin"]["definition_sha256"]},
                        )
                    assert answer.status_code == 200 and answer.json()["pin"]["state"] == "pinned", answer.text
                else:
                    command = ["tools", "accept", "files__write_note", "--url", served.url]
                    cli = await anyio.run_process(
                        [sys.executable, "-m", "gateway.cli", *command],
                        env={**os.environ, "WARRANT_API_KEY": "key-ops"},
                        cwd=ROOT,
                        check=False,
                    )
                    assert cli.returncode == 0, cli.stderr.decode()

                passed = await client.call_tool("files__write_note", arguments)
                assert code_of(passed) is None, passed
                assert "files__write_note" in await tool_names(client)
        assert [e["title"] for e in served.effects()[len(before) :]] == [arguments["title"]]
    finally:
        await accept_all_pending(served)
