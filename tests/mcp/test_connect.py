"""`warrant connect`: each client's printed configuration, used exactly as printed.

The JSON configurations are parsed and then used by the official SDK client with exactly the
url and headers (Cursor, VS Code) or the command, args and env (Claude Desktop) they hold,
against a real gateway. Claude Code's line is split as a shell would and, where the `claude`
CLI is installed, run and listed by it.
"""

from __future__ import annotations

import json
import os
import shlex
import stat
import sys
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from tests.api.conftest import CONTRACT, Api

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]


async def connect(api: Api, cwd: Path, *args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    # No `warrant` on PATH: the printed command is then this Python running the worktree's CLI.
    path = os.pathsep.join(
        p for p in os.environ.get("PATH", "").split(os.pathsep) if not (Path(p) / "warrant").exists()
    )
    base = {k: v for k, v in os.environ.items() if not k.startswith("WARRANT_")}
    full = {**base, "PATH": path, "PYTHONPATH": str(ROOT), "WARRANT_API_KEY": "key-wrk", **(env or {})}
    with anyio.fail_after(30):
        done = await anyio.run_process(
            [sys.executable, "-m", "gateway.cli", "connect", "--url", api.url, *args], cwd=cwd, env=full, check=False
        )
    return done.returncode, done.stdout.decode(), done.stderr.decode()


async def use_http_entry(entry: dict[str, Any]) -> Any:
    async with httpx2.AsyncClient(headers=entry["headers"], timeout=10) as http:
        async with Client(streamable_http_client(entry["url"], http_client=http), cache=None) as client:
            return await client.call_tool("shop__find", {"q": "x"})


@pytest.mark.parametrize(("client", "top"), [("cursor", "mcpServers"), ("vscode", "servers")])
async def test_the_printed_http_configuration_connects_as_printed(
    api: Api, tmp_path: Path, client: str, top: str
) -> None:
    run_id = await api.new_run()
    status, out, _ = await connect(api, tmp_path, "--client", client, "--run", run_id)
    assert status == 0
    entry = json.loads(out)[top]["warrant"]
    assert entry["url"] == f"{api.url}/mcp/runs/{run_id}"
    assert entry["headers"] == {"Authorization": "Bearer key-wrk"}
    if client == "vscode":
        assert entry["type"] == "http"
    result = await use_http_entry(entry)
    assert result.is_error is False, result.content


async def test_the_printed_claude_desktop_configuration_runs_the_bridge_for_the_run(api: Api, tmp_path: Path) -> None:
    run_id = await api.new_run()
    status, out, _ = await connect(api, tmp_path, "--client", "claude-desktop", "--run", run_id)
    assert status == 0
    entry = json.loads(out)["mcpServers"]["warrant"]
    assert Path(entry["command"]).is_absolute()
    assert entry["args"][-4:] == ["--run", run_id, "--url", api.url]
    assert entry["env"] == {"WARRANT_API_KEY": "key-wrk", "WARRANT_URL": api.url}
    # The client's environment is its own: only what the entry sets (and this test's import path).
    params = StdioServerParameters(
        command=entry["command"], args=entry["args"], env={**entry["env"], "PYTHONPATH": str(ROOT)}
    )
    async with Client(params, cache=None) as client:
        result = await client.call_tool("shop__find", {"q": "x"})
    assert result.is_error is False, result.content
    async with api.client("op") as c:
        assert (await c.get(f"/api/runs/{run_id}")).json()["lease"]["epoch"] == 1


async def test_write_merges_the_entry_and_keeps_the_others(api: Api, tmp_path: Path) -> None:
    run_id = await api.new_run()
    target = tmp_path / ".cursor" / "mcp.json"
    target.parent.mkdir()
    target.write_text(json.dumps({"mcpServers": {"other": {"url": "http://x/mcp"}}, "theme": "dark"}))
    status, _, err = await connect(api, tmp_path, "--client", "cursor", "--run", run_id, "--write")
    assert status == 0, err
    data = json.loads(target.read_text())
    assert data["theme"] == "dark" and data["mcpServers"]["other"] == {"url": "http://x/mcp"}
    assert data["mcpServers"]["warrant"]["url"] == f"{api.url}/mcp/runs/{run_id}"
    assert stat.S_IMODE(target.stat().st_mode) == 0o600  # it holds the key
    assert (await use_http_entry(data["mcpServers"]["warrant"])).is_error is False


async def test_write_leaves_a_file_that_is_not_json_as_it_was(api: Api, tmp_path: Path) -> None:
    target = tmp_path / ".vscode" / "mcp.json"
    target.parent.mkdir()
    target.write_text("{ not json")
    status, _, err = await connect(api, tmp_path, "--client", "vscode", "--run", "run_x", "--write")
    assert status == 1 and "[unreadable]" in err
    assert target.read_text() == "{ not json"


async def test_a_contract_file_makes_the_run_first_with_the_operator_key(api: Api, tmp_path: Path) -> None:
    contract = tmp_path / "contract.json"
    contract.write_text(json.dumps(CONTRACT))
    status, out, err = await connect(
        api, tmp_path, "--client", "vscode", "--contract", str(contract), env={"WARRANT_ADMIN_KEY": "key-op"}
    )
    assert status == 0, err
    entry = json.loads(out)["servers"]["warrant"]
    run_id = entry["url"].rsplit("/", 1)[1]
    assert f"created {run_id}" in err
    assert (await use_http_entry(entry)).is_error is False
    status, _, err = await connect(api, tmp_path, "--client", "vscode", "--contract", str(contract))
    assert status == 1 and "WARRANT_ADMIN_KEY" in err


async def test_the_claude_code_line_is_the_claude_mcp_add_command(api: Api, tmp_path: Path) -> None:
    run_id = await api.new_run()
    status, out, _ = await connect(api, tmp_path, "--client", "claude-code", "--run", run_id, "--name", "acme")
    assert status == 0
    argv = shlex.split(out.strip())
    url = f"{api.url}/mcp/runs/{run_id}"
    assert argv == [
        "claude",
        "mcp",
        "add",
        "--transport",
        "http",
        "acme",
        url,
        "--header",
        "Authorization: Bearer key-wrk",
    ]
    # What Claude Code will send, sent by the SDK client: the same url and header.
    assert (await use_http_entry({"url": url, "headers": {"Authorization": "Bearer key-wrk"}})).is_error is False


# `claude mcp add` as printed, then `claude mcp list`, run by the pinned Claude Code CLI with its
# model API on loopback and every connection it makes checked: tests/interop/test_claude_code.py
# (test_warrant_connect_configures_claude_code_once_for_a_worker).
