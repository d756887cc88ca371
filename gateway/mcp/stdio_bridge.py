"""`warrant stdio`: MCP on stdin/stdout for clients that launch a subprocess (Claude Desktop),
forwarded to a running `warrant serve` over streamable HTTP with the lease token from
`WARRANT_TOKEN`, or with `--run RUN` the lease the gateway holds for the worker key in
`WARRANT_API_KEY` (gateway/mcp/stdio_lease.py: checked before serving, renewed in the background,
and what ends the bridge instead of a retry).

The bridge is thin on purpose: it never opens the store and decides nothing; the gateway at
`--url` does. Each forwarded request opens a short-lived SDK client on one shared HTTP
connection pool (the 2026-07-28 protocol has no handshake, so this costs no round trip): a
gateway that restarts, or is briefly unreachable, costs the calls made meanwhile and nothing
more, and no client object outlives the task that entered it (MCP-NOTES pitfalls 2 and 3).
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any, cast

import anyio
import httpx2
import mcp.types as types
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.server import Server, ServerRequestContext
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError

from gateway import __version__
from gateway.errors import Code, ErrorBody
from gateway.mcp.server import RESERVED_META_PREFIX, client_meta
from gateway.mcp.stdio_lease import BridgeLease, Ended, Unreachable

log = logging.getLogger("warrant.stdio")

PROTOCOL = "2026-07-28"


UNAUTHENTICATED = -32001  # the front's JSON-RPC code for a 401


@dataclass
class Upstream:
    lease: BridgeLease
    http: httpx2.AsyncClient

    @contextlib.asynccontextmanager
    async def client(self) -> AsyncIterator[Client]:
        if self.lease.token is None:  # --run, and the gateway has not answered yet
            raise Unreachable("no lease yet")
        self.http.headers["Authorization"] = f"Bearer {self.lease.token}"
        transport = streamable_http_client(self.lease.mcp_url, http_client=self.http, terminate_on_close=False)
        async with Client(transport, mode=PROTOCOL, cache=None, client_info=_INFO) as client:
            yield client


_INFO = types.Implementation(name="warrant-stdio", version=__version__)


def _unreachable(url: str) -> types.CallToolResult:
    return _refused(ErrorBody(Code.UPSTREAM_UNAVAILABLE, f"the Warrant gateway at {url} did not answer"))


def _refused_auth(message: str) -> types.CallToolResult:
    return _refused(ErrorBody(Code.UNAUTHENTICATED, message))


def _refused(error: ErrorBody) -> types.CallToolResult:
    """The tool result of a refusal the bridge answers itself, shaped as the gateway's own."""
    return types.CallToolResult.model_validate(
        {
            "content": [{"type": "text", "text": f"[{error.code}] {error.message}"}],
            "structuredContent": {"error": error.to_dict()},
            "isError": True,
            "_meta": {"warrant/code": error.code},
        }
    )


def _strip(result: types.CallToolResult) -> types.CallToolResult:
    if result.meta:
        kept = {k: v for k, v in result.meta.items() if not k.startswith(RESERVED_META_PREFIX)}
        result = result.model_copy(update={"meta": kept or None})
    return result


def build_bridge(lease: BridgeLease, http: httpx2.AsyncClient) -> Server[Upstream]:
    url = lease.base_url

    @contextlib.asynccontextmanager
    async def lifespan(_: Server[Upstream]) -> AsyncIterator[Upstream]:
        yield Upstream(lease, http)

    async def list_tools(
        ctx: ServerRequestContext[Upstream, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        try:
            async with ctx.lifespan_context.client() as client:
                result = await client.list_tools()
        except MCPError as exc:
            if exc.error.code == UNAUTHENTICATED:
                lease.end(lease.unauthenticated(exc.error.message))
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
        except MCPError as exc:
            if exc.error.code == UNAUTHENTICATED:
                # Not "unavailable": no retry helps. Answered, then the bridge stops (stdio_lease.py).
                ended = lease.unauthenticated(exc.error.message)
                lease.end(ended)
                return _refused_auth(ended.message)
            raise
        except Exception as exc:
            log.warning("tools/call %s through %s failed: %s", params.name, url, type(exc).__name__)
            return _unreachable(url)
        lease.note_result(result.structured_content)
        return _strip(result)

    return Server(
        "warrant-stdio", version=__version__, lifespan=lifespan, on_list_tools=list_tools, on_call_tool=call_tool
    )


async def run_bridge(lease: BridgeLease) -> int:
    """Serve until the client closes stdin (0) or the lease ends the bridge (its message on
    stderr, its status)."""
    timeout = httpx2.Timeout(30.0, read=300.0)
    async with httpx2.AsyncClient(timeout=timeout) as http:
        try:
            await lease.establish(http)
        except Ended as refused:
            print(f"warrant stdio: {refused.message}", file=sys.stderr, flush=True)
            return refused.status
        except Unreachable as exc:
            log.warning("the gateway at %s did not answer (%s); serving, and trying again", lease.base_url, exc)
        server = build_bridge(lease, http)
        async with anyio.create_task_group() as tasks:

            async def serve() -> None:
                async with stdio_server() as (read, write):
                    await server.run(read, write, server.create_initialization_options())
                lease.end(Ended("", 0))  # the client closed stdin

            tasks.start_soon(serve)
            tasks.start_soon(lease.keep, http)
            ended = await lease.wait_ended()
            if ended.status == 0:
                tasks.cancel_scope.cancel()
                return 0
            await anyio.sleep(0.2)  # the answer that ended it reaches the client first
            print(f"warrant stdio: {ended.message}", file=sys.stderr, flush=True)
            sys.stdout.flush()
            # The SDK reads stdin in a worker thread that no cancellation interrupts: a bridge that
            # ends itself exits at once, with its status, instead of waiting for the client's next line.
            os._exit(ended.status)
    return 0
