"""The drain's front (gateway/runtime/shutdown.py `DrainGuard`), as ASGI: before a drain everything passes;
while draining `/healthz` says so, writes outside `/mcp` are refused 503 `draining` with
Retry-After, and reads and MCP (whose new calls the gate refuses) still pass."""

from __future__ import annotations

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from gateway.gate.in_flight import InFlight
from gateway.runtime import Drain, DrainGuard
from gateway.runtime.shutdown import RETRY_AFTER_S

pytestmark = pytest.mark.anyio


async def passed(request: Request) -> Response:
    return JSONResponse({"passed": request.url.path})


def client(drain: Drain) -> httpx.AsyncClient:
    app = Starlette(routes=[Route("/{path:path}", passed, methods=["GET", "POST", "DELETE"])])
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=DrainGuard(app, drain)), base_url="http://gw")


async def test_before_a_drain_everything_passes() -> None:
    async with client(Drain(InFlight())) as http:
        for method, path in [("GET", "/healthz"), ("POST", "/api/runs"), ("POST", "/mcp")]:
            answer = await http.request(method, path)
            assert answer.json() == {"passed": path}


async def test_while_draining_healthz_says_so_and_writes_outside_mcp_are_refused() -> None:
    drain = Drain(InFlight())
    drain.begin()
    async with client(drain) as http:
        health = await http.get("/healthz")
        refused = [await http.post("/api/runs"), await http.delete("/api/keys/k"), await http.post("/console/x")]
        through = [await http.get("/api/runs"), await http.post("/mcp"), await http.get("/mcp")]
    assert health.status_code == 503 and health.json()["status"] == "draining"
    for answer in refused:
        assert answer.status_code == 503
        assert answer.headers["Retry-After"] == str(RETRY_AFTER_S)
        assert answer.json()["error"]["code"] == "draining" and answer.json()["error"]["retryable"] is True
    assert [answer.status_code for answer in through] == [200, 200, 200]
