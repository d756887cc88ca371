"""The lean HTTP path of the downstream MCP adapter (gateway/adapters/mcp/lean_client.py).

Against the example server over streamable HTTP (stateless, JSON): calls take the lean path and
end as they do through the SDK client (an adapter with `lean_http: false`). Against in-process SDK
servers: the lean request carries what the SDK client sends; an answer in SSE is read, and the
calls after it go through the SDK client; a server that speaks only 2025-11-25 (sessions) keeps the
SDK client; a HEADER_MISMATCH hands the call to the SDK client, which re-lists and resends.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import anyio
import mcp.types as types
import pytest
import uvicorn
from mcp.server import Server, ServerRequestContext
from starlette.applications import Starlette
from starlette.responses import Response
from starlette.routing import Mount
from starlette.types import Receive, Scope, Send

from gateway.adapters import Outcome, OutcomeKind
from gateway.adapters.mcp import McpAdapter, McpAdapterConfig
from tests.adapters.conftest import WAIT, HttpServer, Notebook
from tests.adapters.test_mcp_adapter import request
from tests.harness import free_port

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


@contextlib.asynccontextmanager
async def adapter_for(url: str, **changes: Any) -> AsyncIterator[McpAdapter]:
    adapter = McpAdapter(McpAdapterConfig.model_validate({"name": "files", "url": url, "start_wait": WAIT} | changes))
    await adapter.start()
    try:
        yield adapter
    finally:
        await adapter.close()


def same_end(a: Outcome, b: Outcome) -> bool:
    return (a.kind, a.code, a.message, a.content, a.structured) == (b.kind, b.code, b.message, b.content, b.structured)


# -- the example server --------------------------------------------------------------------
@pytest.fixture(scope="module")
async def files_server(shared_notebook: Notebook) -> AsyncIterator[HttpServer]:
    server = HttpServer(shared_notebook)
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


@pytest.fixture(scope="module")
async def lean(files_server: HttpServer) -> AsyncIterator[McpAdapter]:
    async with adapter_for(files_server.url, timeout=5.0) as adapter:
        yield adapter


@pytest.fixture(scope="module")
async def sdk(files_server: HttpServer) -> AsyncIterator[McpAdapter]:
    async with adapter_for(files_server.url, timeout=5.0, lean_http=False) as adapter:
        yield adapter


async def test_a_json_downstream_gets_the_lean_path_and_writes_happen_once(
    lean: McpAdapter, sdk: McpAdapter, shared_notebook: Notebook
) -> None:
    assert lean.lean and not sdk.lean
    for _ in range(2):
        written = await lean.call(request("write_note", {"title": "l", "body": "b"}, write=True, key="wk_lean"))
        assert written.kind is OutcomeKind.SUCCEEDED
    [effect] = [e for e in shared_notebook.effect_lines() if e["key"] == "wk_lean"]
    assert written.receipt is not None and written.receipt["id"] == effect["id"]
    through_lean = await lean.call(request("read_note", {"title": "l"}, write=False))
    through_sdk = await sdk.call(request("read_note", {"title": "l"}, write=False))
    assert through_lean.kind is OutcomeKind.SUCCEEDED and same_end(through_lean, through_sdk)
    assert through_lean.receipt == through_sdk.receipt


@pytest.mark.parametrize(
    ("tool", "arguments", "write"),
    [
        ("fail", {"reason": "quota"}, True),  # isError
        ("read_note", {"title": "never written"}, False),  # isError from a read
        ("no_such_tool", {}, False),  # the server's own error for an unknown tool
        ("read_note", {"title": 5}, False),  # arguments the server's schema refuses
    ],
)
async def test_failures_end_the_same_through_both_paths(
    lean: McpAdapter, sdk: McpAdapter, tool: str, arguments: dict[str, Any], write: bool
) -> None:
    through_lean = await lean.call(request(tool, arguments, write=write, key=f"wk_l_{tool}"))
    through_sdk = await sdk.call(request(tool, arguments, write=write, key=f"wk_s_{tool}"))
    assert through_lean.kind is OutcomeKind.FAILED
    assert same_end(through_lean, through_sdk)


async def test_a_hanging_write_is_unknown_and_a_hanging_read_fails_unavailable(
    lean: McpAdapter, shared_notebook: Notebook
) -> None:
    with anyio.fail_after(WAIT):
        write = await lean.call(request("slow_write", {"title": "stuck", "body": "x"}, write=True, timeout=1.0))
        read = await lean.call(request("hang_read", {}, write=False, timeout=1.0))
    assert write.kind is OutcomeKind.UNKNOWN and write.code == "outcome_unknown"
    assert read.kind is OutcomeKind.FAILED and read.code == "upstream_unavailable"
    (shared_notebook.folder / "release").write_text("go")
    assert lean.lean  # a timeout costs the connection, not the path


async def test_a_cancelled_call_leaves_the_path_usable(lean: McpAdapter) -> None:
    task = asyncio.create_task(lean.call(request("hang_read", {}, write=False, timeout=60.0)))
    await asyncio.sleep(0.2)
    task.cancel()
    with anyio.fail_after(WAIT), pytest.raises(asyncio.CancelledError):
        await task
    read = await lean.call(request("read_note", {"title": "l"}, write=False))
    assert read.kind is OutcomeKind.SUCCEEDED


# -- in-process SDK servers ----------------------------------------------------------------
SCHEMA = {
    "type": "object",
    "properties": {"region": {"type": "string", "x-mcp-header": "Region"}, "n": {"type": "integer"}},
    "required": ["region"],
}


class Recorder:
    """A low-level SDK server with one tool, `echo`, that records what each call carried."""

    def __init__(self, schema: dict[str, Any] = SCHEMA) -> None:
        self.calls: list[dict[str, Any]] = []
        self.schema = schema
        self.notify = False  # send a notification first: an SSE-mode server then answers in SSE

        async def list_tools(ctx: ServerRequestContext[Any, Any], params: Any) -> types.ListToolsResult:
            return types.ListToolsResult(tools=[types.Tool(name="echo", input_schema=self.schema)])

        async def call_tool(
            ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
        ) -> types.CallToolResult:
            if self.notify:
                await ctx.session.send_notification(types.ToolListChangedNotification(), ctx.request_id)
            headers = ctx.request.headers if ctx.request is not None else {}
            self.calls.append(
                {
                    "arguments": params.arguments,
                    "meta": dict(ctx.meta or {}),
                    "headers": {k: v for k, v in headers.items() if k.startswith("mcp-") or k in ("accept",)},
                    "version": ctx.protocol_version,
                }
            )
            return types.CallToolResult(content=[types.TextContent(text="echoed")], structured_content={"ok": True})

        self.server: Server[Any] = Server("recorder", on_list_tools=list_tools, on_call_tool=call_tool)


def _legacy_only(app: Any) -> Any:
    """Answers every 2026-07-28 request 404 (no JSON-RPC body): the SDK client falls back to a session."""

    async def wrapped(scope: Scope, receive: Receive, send: Send) -> None:
        version = dict(scope.get("headers") or []).get(b"mcp-protocol-version", b"")
        if scope["type"] == "http" and version.startswith(b"2026"):
            await Response(status_code=404)(scope, receive, send)
            return
        await app(scope, receive, send)

    return wrapped


@contextlib.asynccontextmanager
async def serving(
    recorder: Recorder, *, stateless: bool, json_response: bool, legacy_only: bool = False
) -> AsyncIterator[str]:
    server = recorder.server
    mcp_app = server.streamable_http_app(stateless_http=stateless, json_response=json_response)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with server.session_manager.run():
            yield

    app: Any = Starlette(routes=[Mount("/", mcp_app)], lifespan=lifespan)
    if legacy_only:
        app = _legacy_only(app)
    port = free_port()
    uv = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on"))
    task = asyncio.create_task(uv.serve())
    with anyio.fail_after(WAIT):
        while not uv.started:
            assert not task.done(), "the test server did not start"
            await asyncio.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        uv.should_exit = True
        await asyncio.wait_for(task, WAIT)


async def test_the_lean_request_carries_what_the_sdk_client_sends() -> None:
    recorder = Recorder()
    arguments = {"region": "eu west", "n": 3}
    async with serving(recorder, stateless=True, json_response=True) as url:
        async with adapter_for(url) as lean, adapter_for(url, lean_http=False) as sdk:
            assert lean.lean and not sdk.lean
            for adapter in (lean, sdk):
                outcome = await adapter.call(request("echo", arguments, write=True, key="wk_same"))
                assert outcome.kind is OutcomeKind.SUCCEEDED and outcome.structured == {"ok": True}
    through_lean, through_sdk = recorder.calls
    assert through_lean == through_sdk
    assert through_lean["meta"]["warrant/idempotency_key"] == "wk_same"
    assert through_lean["headers"]["mcp-param-region"] == "eu west"
    assert through_lean["headers"]["mcp-name"] == "echo"


@pytest.mark.parametrize(("case", "json_response"), [("with sessions", True), ("with sessions and SSE", False)])
async def test_a_downstream_that_speaks_only_2025_11_25_keeps_the_sdk_client(case: str, json_response: bool) -> None:
    recorder = Recorder()
    async with (
        serving(recorder, stateless=False, json_response=json_response, legacy_only=True) as url,
        adapter_for(url) as adapter,
    ):
        assert not adapter.lean
        outcome = await adapter.call(request("echo", {"region": "eu"}, write=False))
    assert outcome.kind is OutcomeKind.SUCCEEDED and outcome.structured == {"ok": True}
    [seen] = recorder.calls
    assert seen["version"] == "2025-11-25"


async def test_an_answer_in_sse_is_read_and_later_calls_go_through_the_sdk_client() -> None:
    recorder = Recorder()
    async with serving(recorder, stateless=True, json_response=False) as url, adapter_for(url) as adapter:
        assert adapter.lean  # a 2026-07-28 server in SSE mode answers quick calls in JSON
        recorder.notify = True  # this call's answer is an event stream
        first = await adapter.call(request("echo", {"region": "eu"}, write=True, key="wk_sse"))
        assert not adapter.lean
        second = await adapter.call(request("echo", {"region": "eu"}, write=False))
    assert first.kind is OutcomeKind.SUCCEEDED and first.structured == {"ok": True}
    assert second.kind is OutcomeKind.SUCCEEDED
    assert len(recorder.calls) == 2


async def test_a_header_mismatch_sends_the_call_through_the_sdk_client_which_relists_and_resends() -> None:
    plain = {"type": "object", "properties": {"region": {"type": "string"}}}
    recorder = Recorder(schema=plain)
    async with serving(recorder, stateless=True, json_response=True) as url, adapter_for(url) as adapter:
        assert adapter.lean
        recorder.schema = SCHEMA  # now `region` must travel in Mcp-Param-Region too; the adapter listed it without
        outcome = await adapter.call(request("echo", {"region": "eu"}, write=True, key="wk_mismatch"))
        assert adapter.lean  # a refused request costs nothing but this call's detour
    assert outcome.kind is OutcomeKind.SUCCEEDED
    [seen] = recorder.calls  # executed once: the refused requests never reached the tool
    assert seen["headers"]["mcp-param-region"] == "eu"
