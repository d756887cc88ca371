"""The browser tests' world: a real `warrant serve`, Debian's Chromium driven by Playwright, and the API and
the agent beside it.

The gateway serves the shipped demo notebook adapter (`adapters/notes.yaml`) and the shipped policy
(`policies/default.yaml`: `notes__send` outside acme.example needs an approver). Its keys: an admin and an
operator of tenant acme, an approver of acme, and an approver and an admin of another tenant (globex) who
must see none of acme's runs (the approver for want of the role, the admin for want of the tenant).
Chromium is the system's (`/usr/bin/chromium`, or WARRANT_CHROMIUM); Playwright only drives it through
`executable_path` and never downloads a browser.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx
import mcp.types as types
import pytest
from mcp import Client
from playwright.async_api import Page

from tests.contracts import contract as base_contract
from tests.e2e.serving import ROOT, clean_environ, code_of, mcp_agent, warrant_serve
from tests.harness import free_port

WAIT = 20.0  # seconds: the bound on every process start, API call and tool call
PAGE_WAIT = 10_000  # milliseconds: Playwright's bound on each navigation and expectation
CHROMIUM = "/usr/bin/chromium"
APT = "apt-get install -y chromium"
# name: (tenant, roles). The secret of key NAME is `key-NAME`.
KEYS = {
    "admin": ("acme", "admin"),
    "op": ("acme", "operator"),
    "appr": ("acme", "approver"),
    "globex": ("globex", "approver"),
    "globex-admin": ("globex", "admin"),
}
# Flags as the machine's own check started Chromium: without the background-networking ones, Chromium's
# connections to Google's hosts are refused by a closed network, many at a time, at every start.
CHROMIUM_ARGS = [
    "--no-sandbox",  # CI runs as root, where Chromium's sandbox will not start
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def contract(goal: str = "Collect vendor notes and send one to a partner") -> dict[str, Any]:
    return base_contract(goal=goal, authority={"allow": ["notes__*"]}, milestones=[{"id": "notes"}])


def chromium_executable() -> str:
    """The system Chromium, or the test fails naming the apt command (skipped with WARRANT_SKIP_BROWSER=1)."""
    path = os.environ.get("WARRANT_CHROMIUM", CHROMIUM)
    if Path(path).is_file() and os.access(path, os.X_OK):
        return path
    found = shutil.which("chromium")
    if found and "WARRANT_CHROMIUM" not in os.environ:
        return found
    message = f"the browser tests need Debian's Chromium at {path}: `{APT}` (or WARRANT_SKIP_BROWSER=1 to skip them)"
    if os.environ.get("WARRANT_SKIP_BROWSER") == "1":
        pytest.skip(message)
    pytest.fail(message, pytrace=False)


@dataclass
class Served:
    """A running `warrant serve` and the ways to drive it beside the browser."""

    url: str
    tmp: Path

    def api(self, key: str) -> httpx.AsyncClient:
        """The operator API as key `key-KEY`."""
        return httpx.AsyncClient(base_url=self.url, headers={"Authorization": f"Bearer key-{key}"}, timeout=WAIT)

    async def create_run(self, goal: str = "Collect vendor notes and send one to a partner", key: str = "op") -> str:
        async with self.api(key) as api:
            created = await api.post("/api/runs", json=contract(goal))
        assert created.status_code == 201, created.text
        run_id: str = created.json()["run_id"]
        return run_id

    async def lease(self, run_id: str, worker: str = "agent-1", key: str = "op") -> str:
        """A lease on the run: the token the agent calls with."""
        async with self.api(key) as api:
            granted = await api.post(f"/api/runs/{run_id}/lease", json={"worker": worker})
        assert granted.status_code == 201, granted.text
        token: str = granted.json()["token"]
        return token

    async def run(self, run_id: str, key: str = "op") -> dict[str, Any]:
        async with self.api(key) as api:
            shown = await api.get(f"/api/runs/{run_id}")
        assert shown.status_code == 200, shown.text
        view: dict[str, Any] = shown.json()
        return view

    def agent(self, token: str) -> contextlib.AbstractAsyncContextManager[Client]:
        """The official MCP SDK client over streamable HTTP, holding the run's lease token."""
        return mcp_agent(self.url, token, WAIT)

    async def call(self, token: str, tool: str, arguments: dict[str, Any]) -> types.CallToolResult:
        """One tool call as the agent, bounded by WAIT."""
        with anyio.fail_after(WAIT):
            async with self.agent(token) as client:
                return await client.call_tool(tool, arguments)


def env_name(key: str) -> str:
    return key.upper().replace("-", "_")


@contextlib.contextmanager
def serve(
    tmp: Path, adapters: Sequence[Path] = (), policies: Sequence[Path] = (), *, extra: str = "", wait: float = WAIT
) -> Iterator[Served]:
    """`warrant serve` on a free loopback port with KEYS, until the block ends; ADAPTERS and POLICIES beside the
    shipped notebook's; `extra` more of warrant.yaml (top-level YAML); `wait` the bound on its start."""
    port = free_port()
    keys = "\n".join(
        f"  - {{name: {name}, tenant: {tenant}, roles: [{role}], key_env: BROWSER_KEY_{env_name(name)}}}"
        for name, (tenant, role) in KEYS.items()
    )
    config = tmp / "warrant.yaml"
    config.write_text(
        f"database: sqlite:///{tmp}/w.db\nlisten: {{host: 127.0.0.1, port: {port}}}\napi_keys:\n{keys}\n"
        f"adapters: [{', '.join(str(p) for p in [ROOT / 'adapters' / 'notes.yaml', *adapters])}]\n"
        f"policies: [{', '.join(str(p) for p in [ROOT / 'policies' / 'default.yaml', *policies])}]\n{extra}"
    )
    env = clean_environ() | {"WARRANT_LEDGER_KEY": "browser-ledger-key"}
    env |= {f"BROWSER_KEY_{env_name(name)}": f"key-{name}" for name in KEYS}
    url = f"http://127.0.0.1:{port}"
    with warrant_serve(config, url, env, tmp / "serve.log", wait):
        yield Served(url, tmp)


async def sign_in(page: Page, served: Served, key: str) -> None:
    """Sign in through the console's form as a person does: the key typed, the button pressed."""
    await page.goto(f"{served.url}/console/login")
    await page.get_by_label("API key").fill(f"key-{key}")
    await page.get_by_role("button", name="Sign in").click()
    await page.wait_for_url(re.compile(re.escape(served.url) + "/console/(runs|approvals)$"))  # an approver's inbox


async def pending_approval(served: Served, token: str, to: str = "bob@partner.example") -> tuple[str, dict[str, Any]]:
    """The agent appends a note and asks to send it outside acme.example, which the shipped policy sends to an
    approver: the pending approval's id and the exact arguments (the agent retries with these)."""
    appended = await served.call(token, "notes__append", {"title": "vendors", "body": "three of them"})
    assert code_of(appended) is None and appended.structured_content is not None, appended
    arguments = {"note_id": appended.structured_content["id"], "to": to}
    asked = await served.call(token, "notes__send", arguments)
    assert code_of(asked) == "approval_required" and asked.structured_content is not None, asked
    approval_id: str = asked.structured_content["error"]["approval_id"]
    return approval_id, arguments
