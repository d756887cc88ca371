"""The public surfaces stay byte-for-byte what they were: `warrant --help` at every level, the
operator API's document (`/api/openapi.json`) and the demo's MCP `tools/list`.

Each is compared with a file beside this one, written by the code as it was before a change that
must not alter them (the reorganisation of issue 22). A change that means to alter a surface
regenerates the files (`WARRANT_UPDATE_SURFACES=1 pytest tests/surfaces`) and the diff shows it.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
from pathlib import Path

import httpx
import pytest

from tests.contracts import contract as base_contract

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
UPDATE = os.environ.get("WARRANT_UPDATE_SURFACES") == "1"


def _compare(name: str, text: str) -> None:
    path = HERE / name
    if UPDATE:
        path.write_text(text, encoding="utf-8")
    assert path.is_file(), f"{path} is missing: WARRANT_UPDATE_SURFACES=1 writes it"
    assert text == path.read_text(encoding="utf-8"), f"{name} changed (WARRANT_UPDATE_SURFACES=1 rewrites it)"


def _help_tree(parser: argparse.ArgumentParser) -> list[str]:
    pages = [f"$ {parser.prog} --help\n{parser.format_help()}"]
    for action in parser._actions:  # argparse keeps its subcommands here and nowhere public
        if isinstance(action, argparse._SubParsersAction):
            for sub in dict.fromkeys(action.choices.values()):  # aliases name one parser twice
                pages += _help_tree(sub)
    return pages


def test_the_cli_help_tree_is_unchanged(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "100")  # argparse wraps to the terminal's width
    from gateway.cli import parser

    _compare("cli_help.txt", "\n".join(_help_tree(parser())))


def test_the_operator_api_document_is_unchanged() -> None:
    from gateway.api import document

    _compare("openapi.json", json.dumps(document(), indent=1, ensure_ascii=False) + "\n")


@pytest.mark.anyio
async def test_the_demo_tools_list_is_unchanged(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The bundled warrant.yaml (its notebook, files over stdio, CRM and mail adapters and the default
    policy) served in this process: what an MCP client leasing a run of it lists."""
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    from gateway.app import create_app
    from gateway.config import load_settings
    from tests.harness import uvicorn_serving

    env = {**os.environ, "WARRANT_ADMIN_KEY": "surface-admin", "WARRANT_LEDGER_KEY": "surface-ledger"}
    for name in ("CRM_TOKEN", "EMAIL_TOKEN"):  # the HTTP adapters read theirs when loaded
        monkeypatch.setenv(name, "surface-token")
    settings = load_settings(ROOT / "warrant.yaml", env)
    settings = dataclasses.replace(settings, database=f"sqlite:///{tmp_path}/w.db")
    contract = base_contract(
        goal="List the demo's tools",
        expires_in="1h",
        lease_ttl="1h",
        budgets={"tool_calls": 10, "writes": 1, "active_seconds": 600},
        authority={"allow": ["*"]},
    )
    async with uvicorn_serving(create_app(settings)) as url:
        headers = {"Authorization": "Bearer surface-admin"}
        async with httpx.AsyncClient(base_url=url, headers=headers, timeout=20) as api:
            run = (await api.post("/api/runs", json=contract)).json()
            lease = await api.post(f"/api/runs/{run['run_id']}/lease", json={"worker": "surfaces"})
            token = lease.json()["token"]
        async with (
            httpx.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=20) as http,
            streamable_http_client(f"{url}/mcp", http_client=http) as (read, write, *_),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            listed = await session.list_tools()
    tools = [tool.model_dump(mode="json", by_alias=True, exclude_none=True) for tool in listed.tools]
    _compare("tools_list.json", json.dumps(tools, indent=1, ensure_ascii=False) + "\n")
