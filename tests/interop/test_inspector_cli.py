"""The MCP Inspector's CLI (`mcp-inspector --cli`) through Warrant's /mcp, on both protocol revisions.

`--protocol-era legacy` is the 2025-11-25 handshake; `modern` pins 2026-07-28 (no fallback: it
fails if the server does not offer it); `auto` probes with `server/discover`. The token goes in
with `--header`, as a user of the Inspector would pass it. HOME is the test's own folder: the
Inspector keeps a catalog and OAuth state under ~/.mcp-inspector.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import anyio
import pytest

from gateway.mcp import WARRANT_TOOLS
from tests.api.conftest import Api
from tests.interop.conftest import lease_token
from tests.interop.nodejs import INSPECTOR, Ran, run_node

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

ERAS = ["legacy", "modern", "auto"]
TOOLS = {"shop__find", "shop__order", "shop__charge", *WARRANT_TOOLS}

# Exit codes of the Inspector CLI (its --help): 3 authentication required, 5 a tool answered isError.
AUTH_REQUIRED = 3
TOOL_IS_ERROR = 5


async def inspector(home: Path, url: str, token: str | None, era: str, *method: str) -> Ran:
    await anyio.Path(home).mkdir(exist_ok=True)
    header = ["--header", f"Authorization: Bearer {token}"] if token else []
    return await run_node(
        INSPECTOR,
        "--cli",
        url,
        "--transport",
        "http",
        *header,
        "--protocol-era",
        era,
        "--format",
        "json",
        "--stored-auth-only",  # never start an interactive OAuth flow
        "--method",
        *method,
        env={"HOME": str(home), "MCP_AUTO_OPEN_ENABLED": "false"},
    )


@pytest.mark.parametrize("era", ERAS)
async def test_lists_and_calls_with_the_inspector_cli(api: Api, tmp_path: Path, era: str) -> None:
    token = await lease_token(api)
    url = f"{api.url}/mcp"

    # Two Inspector processes at once (a listing and a read do not interfere): half the wall time.
    listed_ran, find_ran = await asyncio.gather(
        inspector(tmp_path / "list", url, token, era, "tools/list"),
        inspector(
            tmp_path / "find",
            url,
            token,
            era,
            "tools/call",
            "--tool-name",
            "shop__find",
            "--tool-args-json",
            '{"q": "x"}',
        ),
    )
    listed, find = listed_ran.json()["result"], find_ran.json()["result"]
    assert {t["name"] for t in listed["tools"]} == TOOLS

    assert find["isError"] is False
    assert find["structuredContent"] == {"hits": []}
    assert find["_meta"]["warrant/action_id"].startswith("act_")
    assert find["_meta"]["warrant/replayed"] is False

    ran = await inspector(
        tmp_path,
        url,
        token,
        era,
        "tools/call",
        "--tool-name",
        "shop__order",
        "--tool-args-json",
        '{"to": "x@example.com"}',
    )
    # A waiting answer is not an error result (docs/decisions/0021-answers-a-model-can-act-on.md): the
    # Inspector prints it and exits 0, not TOOL_IS_ERROR.
    assert ran.returncode == 0, ran.stdout + ran.stderr
    order = json.loads(ran.stdout)["result"]
    assert order["isError"] is False and order["_meta"]["warrant/code"] == "approval_required"
    assert order["structuredContent"]["error"]["code"] == "approval_required"
    assert order["content"][0]["text"].startswith("[approval_required]")
    assert api.effects == []


@pytest.mark.parametrize("era", ["legacy", "modern"])
async def test_an_unknown_token_is_reported_as_authentication_required(api: Api, tmp_path: Path, era: str) -> None:
    ran = await inspector(tmp_path, f"{api.url}/mcp", "wl_nope-nope-nope-nope", era, "tools/list")
    assert ran.returncode == AUTH_REQUIRED, ran.stdout + ran.stderr
    error = json.loads(ran.stderr.strip().splitlines()[-1])["error"]
    assert error["code"] == "auth_required"
    if era == "legacy":
        assert "[unauthenticated] unknown lease token" in error["message"]
