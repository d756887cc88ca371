"""The README's "Day one with Claude Code", step by step, as a test.

1. `make run`: the demo gateway exactly as make run starts it (gateway.cli.devrun, a real process on
   free ports, its state in real files), which prints the admin, approver and worker keys.
2. `source .warrant/dev.env`: the keys, WARRANT_URL and `warrant` on the PATH.
3. `warrant connect --client claude-code --contract ...`: the `claude mcp add` line, whose URL and
   header the agent uses as Claude Code would (the worker key on `/mcp/runs/{run_id}`).
4. The agent (the official MCP SDK client, scripted) lists its tools, reads, and asks to email an
   outside address: `approval_required`. Then it is silent for longer than the lease's TTL.
5. A person approves with the approver key make run printed, through the API (what the console's
   form posts); the agent checks `warrant_status`, sends the email with the same client and
   configuration, reads the outbox, is silent past the TTL again and still carries on.

Then Ctrl-C and `make run` again: the same keys, the approver's still valid. The demo contract is
the README's (examples/contracts/crm-demo.json) with a 2 s lease instead of 5 minutes, so the waits
past the TTL take seconds.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import shlex
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.e2e.demo import Demo, demo_folder, printed_key
from tests.e2e.serving import ROOT, code_of
from tests.harness import free_port

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

WAIT = 30.0  # seconds: the bound on each step's traffic
LEASE_TTL = 2.0  # seconds: the test contract's lease_ttl
EMAIL = {"to": "dana@partner.example", "subject": "Following up", "body": "Good to meet you at the conference."}


def day_one_contract(folder: Path) -> Path:
    contract = json.loads((ROOT / "examples" / "contracts" / "crm-demo.json").read_text())
    contract["lease_ttl"] = f"{LEASE_TTL:g}s"
    path = folder / "day-one.json"
    path.write_text(json.dumps(contract))
    return path


def claude_mcp_add(output: str) -> tuple[str, dict[str, str]]:
    """The URL and headers of the `claude mcp add --transport http NAME URL --header ...` line."""
    lines = [line for line in output.splitlines() if line.strip().startswith("claude mcp add")]
    assert len(lines) == 1, f"warrant connect printed no single `claude mcp add` line:\n{output}"
    words = shlex.split(lines[0])
    assert words[3:5] == ["--transport", "http"], words
    url = words[6]
    headers = {}
    for flag, value in itertools.pairwise(words):
        if flag == "--header":
            name, _, content = value.partition(":")
            headers[name.strip()] = content.strip()
    return url, headers


@contextlib.asynccontextmanager
async def claude_code(url: str, headers: dict[str, str]) -> AsyncIterator[Client]:
    """What Claude Code does with that configuration: MCP over streamable HTTP with those headers."""
    async with (
        httpx2.AsyncClient(headers=headers, timeout=WAIT) as http,
        Client(streamable_http_client(url, http_client=http), cache=None) as client,
    ):
        yield client


async def silent_past_the_lease() -> None:
    """The agent says nothing for longer than its lease's TTL: the point is the time passing."""
    await anyio.sleep(LEASE_TTL + 1.5)  # stays: the lease's TTL passes for real


def outbox(folder: Path) -> list[str]:
    """The demo mail service's own record of what it sent (its database file)."""
    with contextlib.closing(sqlite3.connect(folder / ".warrant" / "mail.db")) as conn:
        return [row[0] for row in conn.execute("SELECT to_address FROM messages ORDER BY created_at")]


async def approve_as(url: str, key: str, run_id: str) -> dict[str, Any]:
    async with httpx.AsyncClient(base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=WAIT) as api:
        listed = await api.get("/api/approvals", params={"status": "pending"})
        assert listed.status_code == 200, listed.text
        pending = [a for a in listed.json()["items"] if a["run_id"] == run_id]
        assert len(pending) == 1, pending
        approval = pending[0]
        assert approval["tool"] == "email__send"
        decided = await api.post(
            f"/api/approvals/{approval['approval_id']}/approve",
            json={"note": "dana is expecting it", "expected_sha256": approval["payload_sha256"]},
        )
        assert decided.status_code == 200, decided.text
        return dict(decided.json())


async def test_day_one_with_claude_code(tmp_path: Path) -> None:
    folder, crm_port, mail_port = demo_folder(tmp_path / "warrant")
    demo = Demo(folder, f"http://127.0.0.1:{free_port()}", crm_port, mail_port)
    contract = day_one_contract(folder)

    # 1. make run
    with demo.make_run("make-run-1.log") as (proc, printed):
        admin, approver = printed_key(printed, "admin"), printed_key(printed, "approver")
        # 2 and 3. source .warrant/dev.env; warrant connect
        connect = demo.shell(f"warrant connect --client claude-code --contract {contract}", WAIT)
        assert connect.returncode == 0, connect.stderr
        url, headers = claude_mcp_add(connect.stdout)
        assert headers == {"Authorization": f"Bearer {printed_key(printed, 'worker')}"}  # once per worker
        assert url.startswith(f"{demo.url}/mcp/runs/run_"), url
        run_id = url.rsplit("/", 1)[1]

        # 4 and 5. one agent session throughout, as a Claude Code session holds its MCP server
        with anyio.fail_after(3 * WAIT):
            async with claude_code(url, headers) as agent:
                names = {tool.name for tool in (await agent.list_tools()).tools}
                assert {"crm__search_contacts", "email__send", "warrant_status"} <= names
                assert code_of(await agent.call_tool("crm__search_contacts", {"q": "dana"})) is None
                asked = await agent.call_tool("email__send", EMAIL)
                assert code_of(asked) == "approval_required"
                assert outbox(folder) == []
                await silent_past_the_lease()

                decided = await approve_as(demo.url, approver, run_id)  # a person, after the TTL
                assert decided["status"] == "approved"
                assert code_of(await agent.call_tool("warrant_status", {})) is None
                sent = await agent.call_tool("email__send", EMAIL)
                assert code_of(sent) is None, sent
                assert code_of(await agent.call_tool("email__list_outbox", {"to": EMAIL["to"]})) is None
                assert outbox(folder) == [EMAIL["to"]]

                await silent_past_the_lease()
                made = await agent.call_tool("crm__create_contact", {"email": EMAIL["to"], "name": "Dana"})
                assert code_of(made) is None, made
        async with httpx.AsyncClient(base_url=demo.url, headers={"Authorization": f"Bearer {admin}"}) as api:
            assert (await api.get("/api/ledger/verify")).json()["ok"] is True
    assert proc.returncode == 0  # Ctrl-C drained and stopped it

    # make run again: the same keys, still valid
    with demo.make_run("make-run-2.log") as (_proc, printed):
        assert (printed_key(printed, "admin"), printed_key(printed, "approver")) == (admin, approver)
        async with httpx.AsyncClient(base_url=demo.url, headers={"Authorization": f"Bearer {approver}"}) as api:
            shown = await api.get(f"/api/approvals/{decided['approval_id']}")
            assert shown.status_code == 200, shown.text
            assert (shown.json()["run_id"], shown.json()["status"]) == (run_id, "used")
    assert outbox(folder) == [EMAIL["to"]]  # sent once, whatever the restarts
