"""`warrant stdio`: MCP on stdin/stdout for clients that launch a subprocess (Claude Desktop),
forwarded to a running `warrant serve` over streamable HTTP with the lease token from
`WARRANT_TOKEN`.

The bridge is thin on purpose: it never opens the store and decides nothing; the gateway at
`--url` does. Each forwarded request opens a short-lived SDK client on one shared HTTP
connection pool (the 2026-07-28 protocol has no handshake, so this costs no round trip): a
gateway that restarts, or is briefly unreachable, costs the calls made meanwhile and nothing
more, and no client object outlives the task that entered it (MCP-NOTES pitfalls 2 and 3).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any, cast

import httpx2
import mcp.types as types
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.server import Server, ServerRequestContext
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError

from gateway import __version__
from gateway.mcp_front import RESERVED_META_PREFIX, client_meta

log = logging.getLogger("warrant.stdio")

PROTOCOL = "2026-07-28"


@dataclass
class Upstream:
    url: str
    http: httpx2.AsyncClient

    @contextlib.asynccontextmanager
    async def client(self) -> AsyncIterator[Client]:
        transport = streamable_http_client(self.url, http_client=self.http, terminate_on_close=False)
        async with Client(transport, mode=PROTOCOL, cache=None, client_info=_INFO) as client:
            yield client


_INFO = types.Implementation(name="warrant-stdio", version=__version__)


def _unreachable(url: str) -> types.CallToolResult:
    error = {
        "code": "upstream_unavailable",
        "message": f"the Warrant gateway at {url} did not answer",
        "retryable": True,
    }
    return types.CallToolResult.model_validate(
        {
            "content": [{"type": "text", "text": f"[upstream_unavailable] {error['message']}"}],
            "structuredContent": {"error": error},
            "isError": True,
        }
    )


def _strip(result: types.CallToolResult) -> types.CallToolResult:
    if result.meta:
        kept = {k: v for k, v in result.meta.items() if not k.startswith(RESERVED_META_PREFIX)}
        result = result.model_copy(update={"meta": kept or None})
    return result


def build_bridge(url: str, token: str) -> Server[Upstream]:
    @contextlib.asynccontextmanager
    async def lifespan(_: Server[Upstream]) -> AsyncIterator[Upstream]:
        headers = {"Authorization": f"Bearer {token}"}
        timeout = httpx2.Timeout(30.0, read=300.0)
        async with httpx2.AsyncClient(headers=headers, timeout=timeout) as http:
            yield Upstream(url, http)

    async def list_tools(
        ctx: ServerRequestContext[Upstream, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        try:
            async with ctx.lifespan_context.client() as client:
                result = await client.list_tools()
        except MCPError:
            raise
        except Exception as exc:
            log.warning("tools/list through %s failed: %s", url, type(exc).__name__)
            raise MCPError(-32001, f"the Warrant gateway at {url} did not answer") from None
        return types.ListToolsResult(tools=result.tools)

    async def call_tool(
        ctx: ServerRequestContext[Upstream, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        meta = client_meta(ctx.meta)
        try:
            async with ctx.lifespan_context.client() as client:
                result = await client.call_tool(
                    params.name, params.arguments or {}, meta=cast(types.RequestParamsMeta, meta) if meta else None
                )
        except MCPError:
            raise
        except Exception as exc:
            log.warning("tools/call %s through %s failed: %s", params.name, url, type(exc).__name__)
            return _unreachable(url)
        return _strip(result)

    return Server(
        "warrant-stdio", version=__version__, lifespan=lifespan, on_list_tools=list_tools, on_call_tool=call_tool
    )


async def run_bridge(url: str, token: str) -> None:
    server = build_bridge(url, token)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())
