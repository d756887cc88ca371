"""The lean HTTP path of the downstream MCP adapter (gateway/adapters/mcp/lean_client.py).

Against the example server over streamable HTTP (stateless, JSON): calls take the lean path and
end as they do through the SDK client (an adapter with `lean_http: false`). Against in-process SDK
servers: the lean request carries what the SDK client sends; an answer in SSE is read, and the
calls after it go through the SDK client; a server that speaks only 2025-11-25 (sessions) keeps the
SDK client; a HEADER_MISMATCH hands the call to the SDK client, which re-lists and resends.

The differential matrix (the last section): every content block kind, structured content and
every error path (a tool error, JSON-RPC errors, a result the SDK refuses, downstream failures, an
oversized result), in both protocol eras, end the same three ways: lean over http11, lean over
httpx2 (`http11` off) and through the SDK client (`mcp_client` off: gateway/accelerators.py).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio
import mcp.types as types
import pytest
import uvicorn
from mcp import MCPError
from mcp.server import Server, ServerRequestContext
from starlette.applications import Starlette
from starlette.responses import JSONResponse, Response
from starlette.routing import Mount
from starlette.types import Receive, Scope, Send

from gateway import accelerators
from gateway.adapters import Outcome, OutcomeKind
from gateway.adapters.http import Http11Pool, HttpxPool
from gateway.adapters.mcp import McpAdapter, McpAdapterConfig
from tests.adapters.conftest import WAIT, HttpServer, Notebook
from tests.adapters.test_mcp_adapter import request
from tests.harness import eventually, free_port

pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.differential]
# The lean path serves where the installed SDK is within its declared range (make test-newest-sdk
# may install one outside it: then every adapter here uses the SDK client, and must end the same).
LEAN = accelerators.default().on(accelerators.MCP_CLIENT)


@contextlib.asynccontextmanager
async def adapter_for(
    url: str, fence: accelerators.Accelerators | None = None, **changes: Any
) -> AsyncIterator[McpAdapter]:
    config = McpAdapterConfig.model_validate({"name": "files", "url": url, "start_wait": WAIT} | changes)
    adapter = McpAdapter(config, accelerators=fence)
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
    assert lean.lean is LEAN and not sdk.lean
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
    assert lean.lean is LEAN  # a timeout costs the connection, not the path


async def test_a_cancelled_call_leaves_the_path_usable(lean: McpAdapter, shared_notebook: Notebook) -> None:
    # Its own note: under xdist this test may run on a worker the first test never reached.
    written = await lean.call(request("write_note", {"title": "c", "body": "b"}, write=True, key="wk_cancel"))
    assert written.kind is OutcomeKind.SUCCEEDED
    hooks = shared_notebook.folder / "hooks.log"

    def started() -> int:
        return hooks.read_text().splitlines().count("hang_read started") if hooks.exists() else 0

    before = started()
    task = asyncio.create_task(lean.call(request("hang_read", {}, write=False, timeout=60.0)))
    await eventually(lambda: started() > before)  # the read is in flight at the server: cancel it now
    task.cancel()
    with anyio.fail_after(WAIT), pytest.raises(asyncio.CancelledError):
        await task
    read = await lean.call(request("read_note", {"title": "c"}, write=False))
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
    recorder: Recorder | Blocks,
    *,
    stateless: bool,
    json_response: bool,
    legacy_only: bool = False,
    wrap: Callable[[Any], Any] | None = None,
) -> AsyncIterator[str]:
    server = recorder.server
    mcp_app = server.streamable_http_app(stateless_http=stateless, json_response=json_response)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with server.session_manager.run():
            yield

    app: Any = Starlette(routes=[Mount("/", mcp_app)], lifespan=lifespan)
    if wrap is not None:
        app = wrap(app)
    if legacy_only:
        app = _legacy_only(app)
    port = free_port()
    uv = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on"))
    task = asyncio.create_task(uv.serve())
    await eventually(lambda: uv.started or task.done(), wait=WAIT, every=0.01)
    assert uv.started, "the test server did not start"
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
            assert lean.lean is LEAN and not sdk.lean
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
    if not LEAN:
        pytest.skip("the lean path is off for the installed SDK")
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
        assert adapter.lean is LEAN
        recorder.schema = SCHEMA  # now `region` must travel in Mcp-Param-Region too; the adapter listed it without
        outcome = await adapter.call(request("echo", {"region": "eu"}, write=True, key="wk_mismatch"))
        assert adapter.lean is LEAN  # a refused request costs nothing but this call's detour
    assert outcome.kind is OutcomeKind.SUCCEEDED
    [seen] = recorder.calls  # executed once: the refused requests never reached the tool
    assert seen["headers"]["mcp-param-region"] == "eu"


# -- the differential matrix: every block kind and error path, both eras, three ways -------------
BLOCKS: dict[str, list[dict[str, Any]]] = {
    "text": [{"type": "text", "text": 'naïve ☃ \u2028 "quoted" \\ </script>'}],
    "text with annotations": [
        {"type": "text", "text": "hi", "annotations": {"audience": ["user"], "priority": 0.5}, "_meta": {"k": 1}}
    ],
    "image": [{"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}],
    "audio": [{"type": "audio", "data": "UklGRg==", "mimeType": "audio/wav"}],
    "resource link": [
        {"type": "resource_link", "uri": "file:///notes/a.txt", "name": "a", "mimeType": "text/plain", "size": 3}
    ],
    "embedded text resource": [
        {"type": "resource", "resource": {"uri": "file:///notes/a.txt", "mimeType": "text/plain", "text": "é"}}
    ],
    "embedded blob resource": [{"type": "resource", "resource": {"uri": "file:///a.bin", "blob": "AAEC"}}],
    "no content": [],
}
BLOCKS["every kind at once"] = [block for blocks in BLOCKS.values() for block in blocks]
STRUCTURED = {"id": "n-1", "a": None, "b": [1, 2.5, None, {"c": "ü"}], "e": True}
BIG = 3 * 1024 * 1024  # bytes of text: an answer far over one read, framed by content-length
KIND = {"type": "object", "properties": {"kind": {"type": "string"}}, "required": ["kind"]}
TYPED = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
FAULTS = ("fault:http500", "fault:json500", "fault:cut")


class Blocks:
    """A low-level SDK server whose tool `give` answers by its `kind`: a block kind, or an error path."""

    def __init__(self) -> None:
        async def list_tools(ctx: ServerRequestContext[Any, Any], params: Any) -> types.ListToolsResult:
            return types.ListToolsResult(
                tools=[
                    types.Tool(name="give", input_schema=KIND),
                    types.Tool(name="typed", input_schema=KIND, output_schema=TYPED),
                ]
            )

        async def call_tool(
            ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
        ) -> types.CallToolResult:
            kind = (params.arguments or {}).get("kind")
            if params.name == "typed":  # "1": valid structured content; anything else breaks the output schema
                n: Any = 1 if kind == "1" else kind
                return types.CallToolResult(content=[types.TextContent(text="typed")], structured_content={"n": n})
            if params.name != "give":
                raise MCPError(types.INVALID_PARAMS, f"Unknown tool: {params.name}")
            if kind in BLOCKS:
                return types.CallToolResult.model_validate({"content": BLOCKS[kind]})
            if kind == "structured":
                return types.CallToolResult(
                    content=[types.TextContent(text="{}")], structured_content=STRUCTURED, meta={"own": "kept"}
                )
            if kind == "tool error":
                return types.CallToolResult(content=[types.TextContent(text="the processor said no: ☹")], is_error=True)
            if kind == "invalid params":
                raise MCPError(types.INVALID_PARAMS, "the kind is not one of these")
            if kind == "server error":
                raise MCPError(-32050, "the server's own error", {"detail": 1})
            if kind == "crash":
                raise RuntimeError("a bug of the downstream")
            if kind == "big":
                return types.CallToolResult(content=[types.TextContent(text="x" * BIG)])
            raise MCPError(types.INVALID_PARAMS, f"no kind {kind!r}")

        self.server: Server[Any] = Server("blocks", on_list_tools=list_tools, on_call_tool=call_tool)


def _faulty(app: Any) -> Any:
    """Answers a POST whose body names a fault with it (a plain 500, a JSON-RPC error in a 500, an
    answer cut short); every other request reaches the SDK server, its body replayed."""

    async def wrapped(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await app(scope, receive, send)
            return
        body, more = b"", True
        while more:
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
        fault = next((f for f in FAULTS if f.encode() in body), None)
        if fault == "fault:http500":
            await Response("the downstream broke", status_code=500)(scope, receive, send)
        elif fault == "fault:json500":
            error = {"jsonrpc": "2.0", "id": None, "error": {"code": -32603, "message": "the downstream broke"}}
            await JSONResponse(error, status_code=500)(scope, receive, send)
        elif fault == "fault:cut":
            start = {"type": "http.response.start", "status": 200}
            await send(start | {"headers": [(b"content-type", b"application/json"), (b"content-length", b"500")]})
            await send({"type": "http.response.body", "body": b'{"jsonrpc":"2.0",', "more_body": True})
            # returns without ending the answer: the server closes the connection
        else:
            replayed = [{"type": "http.request", "body": body, "more_body": False}]

            async def replay() -> Any:
                return replayed.pop() if replayed else await receive()

            await app(scope, replay, send)

    return wrapped


MODERN_ERA, LEGACY_ERA = "2026-07-28", "2025-11-25"
PATHS = {
    "lean over http11": None,  # every switch on (as the installed versions allow)
    "lean over httpx2": {"http11": False},
    "the SDK client": {"mcp_client": False},
}


@pytest.fixture(scope="module")
async def blocks_adapters() -> AsyncIterator[dict[tuple[str, str], McpAdapter]]:
    """For each era, a Blocks server (behind the fault wrapper) and an adapter per path to it."""
    blocks = {era: Blocks() for era in (MODERN_ERA, LEGACY_ERA)}
    async with contextlib.AsyncExitStack() as stack:
        adapters: dict[tuple[str, str], McpAdapter] = {}
        for era, server in blocks.items():
            legacy = era == LEGACY_ERA
            url = await stack.enter_async_context(
                serving(server, stateless=not legacy, json_response=True, legacy_only=legacy, wrap=_faulty)
            )
            for path, switches in PATHS.items():
                fence = None if switches is None else accelerators.settle(switches)
                adapters[(era, path)] = await stack.enter_async_context(adapter_for(url, fence, timeout=10.0))
        yield adapters


MATRIX: list[tuple[str, str, dict[str, Any], bool]] = [
    *((f"block: {kind}", "give", {"kind": kind}, False) for kind in BLOCKS),
    ("structured content", "give", {"kind": "structured"}, False),
    ("structured content its output schema allows", "typed", {"kind": "1"}, False),
    ("oversized result", "give", {"kind": "big"}, False),
    ("tool error", "give", {"kind": "tool error"}, True),
    ("JSON-RPC error: invalid params", "give", {"kind": "invalid params"}, True),
    ("JSON-RPC error: unknown tool", "nothing", {"kind": "text"}, True),
    ("JSON-RPC error: the server's own code", "give", {"kind": "server error"}, True),
    ("JSON-RPC error: the server's bug", "give", {"kind": "crash"}, True),
    ("a result its output schema refuses", "typed", {"kind": "one"}, True),
    ("downstream failure: HTTP 500", "give", {"kind": "fault:http500"}, True),
    ("downstream failure: JSON-RPC error in a 500", "give", {"kind": "fault:json500"}, True),
    ("downstream failure: answer cut short, a write", "give", {"kind": "fault:cut"}, True),
    ("downstream failure: answer cut short, a read", "give", {"kind": "fault:cut"}, False),
]


@pytest.mark.parametrize("era", [MODERN_ERA, LEGACY_ERA])
@pytest.mark.parametrize(("case", "tool", "arguments", "write"), MATRIX, ids=[c[0] for c in MATRIX])
async def test_every_block_kind_and_error_path_ends_the_same_through_every_path(
    blocks_adapters: dict[tuple[str, str], McpAdapter], era: str, case: str, tool: str, arguments: Any, write: bool
) -> None:
    ends: dict[str, Outcome] = {}
    for path in PATHS:
        adapter = blocks_adapters[(era, path)]
        lean = LEAN and era == MODERN_ERA and path != "the SDK client"
        assert adapter.lean is lean
        if lean:
            assert isinstance(adapter._pool, HttpxPool if path == "lean over httpx2" else Http11Pool)
        with anyio.fail_after(WAIT):
            ends[path] = await adapter.call(request(tool, arguments, write=write, timeout=5.0, key=f"wk_{path}"))
    reference = ends["the SDK client"]
    for path, outcome in ends.items():
        assert same_end(outcome, reference), path
        assert outcome.receipt == reference.receipt, path
    if case.startswith("block: "):
        assert reference.kind is OutcomeKind.SUCCEEDED
        assert [b["type"] for b in reference.content] == [b["type"] for b in BLOCKS[case.removeprefix("block: ")]]
    elif case == "oversized result":
        assert reference.kind is OutcomeKind.SUCCEEDED and len(reference.content[0]["text"]) == BIG
    elif case.startswith("structured"):
        assert reference.kind is OutcomeKind.SUCCEEDED and reference.structured
    else:
        assert reference.kind is not OutcomeKind.SUCCEEDED
