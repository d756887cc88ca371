"""Regressions of what the fuzzers found at the operator API and /mcp, on both stores.

A NUL (U+0000) made PostgreSQL refuse the statement (its text columns cannot hold one): 503
`store_unavailable` at the API, -32603 at /mcp, where SQLite stored it. A body nested past the
JSON parser's depth was a 500 with a RecursionError in the log.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest

from tests.api.conftest import CONTRACT, make_app
from tests.harness import uvicorn_serving
from tests.harness_postgres import fresh_database
from tests.hostile.conftest import MCP_HEADERS

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def database(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path_factory.mktemp('hostile_api')}/w.db"
        return
    with fresh_database() as url:
        yield url


@pytest.fixture
async def ops(database: str, tmp_path: Path) -> AsyncIterator[httpx.AsyncClient]:
    app, _, _ = make_app(tmp_path, database=database)
    async with (
        uvicorn_serving(app) as url,
        httpx.AsyncClient(base_url=url, headers={"Authorization": "Bearer key-ops"}, timeout=10) as client,
    ):
        yield client


async def test_a_nul_in_operator_input_is_refused_422_and_changes_nothing(ops: httpx.AsyncClient) -> None:
    run_id = (await ops.post("/api/runs", json=CONTRACT)).json()["run_id"]
    refused = [
        await ops.post(f"/api/runs/{run_id}/pause", json={"reason": "a\u0000b"}),
        await ops.post(f"/api/runs/{run_id}/lease", json={"worker": "w\u0000"}),
        await ops.post("/api/runs", json={**CONTRACT, "goal": "\u0000"}),
        await ops.post(f"/api/runs/{run_id}/cancel", json={"reason": "x", "\u0000": 1}),
        await ops.get("/api/runs/run%00x"),
        await ops.get("/api/runs", params={"status": "running\u0000"}),
    ]
    assert [(r.status_code, r.json()["error"]["code"]) for r in refused] == [(422, "invalid_request")] * len(refused)
    run = (await ops.get(f"/api/runs/{run_id}")).json()
    assert (run["status"], run["lease"]["worker"]) == ("running", None)
    assert (await ops.post(f"/api/runs/{run_id}/pause", json={"reason": "a b"})).status_code == 200


async def test_a_nul_in_a_tool_name_is_refused_tool_not_found_and_recorded_escaped(ops: httpx.AsyncClient) -> None:
    run_id = (await ops.post("/api/runs", json=CONTRACT)).json()["run_id"]
    token = (await ops.post(f"/api/runs/{run_id}/lease", json={"worker": "w"})).json()["token"]
    answers = []
    for name, arguments in [("shop__find\u0000", {"q": "x"}), ("warrant_propose", {"tool": "\u0000", "arguments": {}})]:
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name, "arguments": arguments}}
        response = await ops.post("/mcp", json=body, headers={**MCP_HEADERS, "Authorization": f"Bearer {token}"})
        answers.append(response.json()["result"]["structuredContent"]["error"]["code"])
    assert answers == ["tool_not_found", "tool_not_found"]
    actions = (await ops.get(f"/api/runs/{run_id}/actions")).json()["items"]
    assert sorted(a["tool"] for a in actions) == ["\\u0000", "shop__find\\u0000"]
    assert (await ops.get("/api/ledger/verify")).json()["ok"] is True


async def test_a_body_nested_past_the_json_parser_is_400_invalid_json(ops: httpx.AsyncClient) -> None:
    deep = b"[" * 100_000 + b"]" * 100_000
    response = await ops.post("/api/runs", content=deep, headers={"Content-Type": "application/json"})
    assert (response.status_code, response.json()["error"]["code"]) == (400, "invalid_json")
