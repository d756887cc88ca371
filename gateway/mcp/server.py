"""The MCP front: streamable HTTP at /mcp, stateless, every request authenticated by its lease token.

Both protocol eras are served by one low-level SDK `Server`: 2026-07-28 clients (no handshake,
`_meta` on every request) and 2025-11-25 clients (initialize, then calls), each POST standing
alone (stateless), so replicas need no sticky sessions.

Two planes (as the SDK does): a request without a valid lease token never reaches the MCP app
(HTTP 401 with a JSON body and `WWW-Authenticate`); a refused or failed call is a tool result
with `isError`, `[code] message` text and `structuredContent.error`, so the model can read why.
Nothing the front answers ever carries an exception's text or a stack trace.

A `tools/call` POST takes a fast path (gateway/mcp/accelerators/fastpath.py): the SDK's checks and shaping,
without its per-request transport machinery; every other request goes to the SDK app. The fast
path is an accelerator (gateway/accelerators.py `mcp_front`): with it off, the SDK app answers all.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import AsyncIterator, Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

import mcp.types as types
from mcp.server import Server, ServerRequestContext
from mcp.shared.exceptions import MCPError
from starlette.applications import Starlette
from starlette.types import ASGIApp, Receive, Scope, Send

from gateway import __version__, accelerators
from gateway.catalog.catalog import Catalog
from gateway.domain.leases import looks_like_token, token_hash
from gateway.errors import Refusal, Unauthenticated
from gateway.gate.pipeline import CallResult, Gate
from gateway.ids import new_id
from gateway.tools.calls import ToolCalls

if TYPE_CHECKING:
    from gateway.mcp.accelerators.fastpath import FastPath

log = logging.getLogger("warrant.mcp")
R = TypeVar("R")

RESERVED_META_PREFIX = "io.modelcontextprotocol/"
TOKEN_INFO = "warrant.token"
DEAD_TOKEN_META = "warrant/refusal"  # tools/list of a superseded, revoked or finished lease: its refusal

WARRANT_TOOLS: dict[str, types.Tool] = {
    "warrant_status": types.Tool(
        name="warrant_status",
        description="This run's state: status, lease, remaining budgets, pending approvals, the plan.",
        input_schema={"type": "object", "properties": {}, "additionalProperties": False},
        annotations=types.ToolAnnotations(read_only_hint=True),
    ),
    "warrant_propose": types.Tool(
        name="warrant_propose",
        description=(
            "Ask a human to approve one exact tool call before making it. Give the evidence and your "
            "rationale; then call the tool with exactly these arguments once it is approved."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "tool": {"type": "string"},
                "arguments": {"type": "object"},
                "evidence": {
                    "description": "What the approver should see: sources, quotes, links, prior results.",
                    "type": ["object", "array", "string"],
                },
                "rationale": {"type": "string"},
            },
            "required": ["tool", "arguments"],
            "additionalProperties": False,
        },
    ),
    "warrant_repeat": types.Tool(
        name="warrant_repeat",
        description=(
            "Deliberately repeat a write that already succeeded (an identical call is otherwise answered "
            "with the stored result and not executed again). Name the action and say why."
        ),
        input_schema={
            "type": "object",
            "properties": {"action_id": {"type": "string"}, "reason": {"type": "string", "minLength": 1}},
            "required": ["action_id", "reason"],
            "additionalProperties": False,
        },
    ),
    "warrant_compensate": types.Tool(
        name="warrant_compensate",
        description=(
            "Undo a write of this run that succeeded, with the compensating call the gateway's policy names "
            "for its tool (warrant_status lists the compensable effects and their compensating tools). "
            "Name the action and say why; asking twice makes one compensating call."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "action_id": {"type": "string"},
                "reason": {"type": "string", "minLength": 1, "maxLength": 512},
            },
            "required": ["action_id", "reason"],
            "additionalProperties": False,
        },
    ),
    "warrant_checkpoint": types.Tool(
        name="warrant_checkpoint",
        description=(
            "Save where the work stands, so that a replacement worker can go on: the artifacts made (with "
            "their sha256), the sources used (with their etag or sha256) and the next operation with its "
            "preconditions. Pass expected_version = the version you last saved or read (0 before the first); "
            "a stale version is refused checkpoint_conflict."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "expected_version": {"type": "integer", "minimum": 0},
                "artifacts": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "id": {"type": "string"},
                            "uri": {"type": "string"},
                            "version": {"type": "string"},
                            "sha256": {"type": "string"},
                        },
                        "required": ["id", "uri", "sha256"],
                    },
                },
                "sources": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "uri": {"type": "string"},
                            "etag": {"type": "string"},
                            "sha256": {"type": "string"},
                        },
                        "required": ["uri"],
                    },
                },
                "next_operation": {
                    "type": "object",
                    "description": "What to do next: {description, tool?, preconditions?}.",
                },
            },
            "required": ["expected_version"],
            "additionalProperties": False,
        },
    ),
    "warrant_milestone": types.Tool(
        name="warrant_milestone",
        description=(
            "Submit evidence for one of the contract's milestones. The gateway runs the milestone's checks "
            "itself (artifacts and their checksums, schemas, HTTP checks, validators, a named reviewer) and "
            "records it verified, failed or unverified with the reasons."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "milestone_id": {"type": "string"},
                "evidence": {
                    "type": "object",
                    "description": "{artifacts?: [{id, uri, sha256, version?}], sources?: [{uri, etag|sha256}], note?}",
                },
            },
            "required": ["milestone_id"],
            "additionalProperties": False,
        },
    ),
    "warrant_plan": types.Tool(
        name="warrant_plan",
        description=(
            "Record the run's plan: its tasks, what each depends on, the checks that complete it (as a "
            "milestone's, run by the gateway) and how many attempts it gets. Pass expected_version = the plan "
            "version you last read (0 before the first); a stale one is refused plan_conflict. A task is ready "
            "once every task it depends on is completed. Name a task in a tool call's _meta['warrant/task_id'] "
            "to count the call for it."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "expected_version": {"type": "integer", "minimum": 0},
                "tasks": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "id": {"type": "string"},
                            "title": {"type": "string"},
                            "depends_on": {"type": "array", "items": {"type": "string"}},
                            "completion": {
                                "type": "array",
                                "items": {"type": "object"},
                                "description": "checks: {artifact, sha256?, schema?}, {http: {...}}, {validator}",
                            },
                            "max_attempts": {"type": "integer", "minimum": 1},
                        },
                        "required": ["id", "title"],
                    },
                },
            },
            "required": ["expected_version", "tasks"],
            "additionalProperties": False,
        },
    ),
    "warrant_task": types.Tool(
        name="warrant_task",
        description=(
            "Move one task of the plan: running, blocked, waiting_for_approval, retrying, completed, failed, "
            "cancelled or compensated. completed runs the task's completion checks (output_ref: the artifact it "
            "made); if one fails the task stays running and the answer names it."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "task_id": {"type": "string"},
                "status": {
                    "type": "string",
                    "enum": [
                        "running",
                        "blocked",
                        "waiting_for_approval",
                        "retrying",
                        "completed",
                        "failed",
                        "cancelled",
                        "compensated",
                    ],
                },
                "output_ref": {
                    "type": "object",
                    "description": "{id, uri, sha256, version?}: the artifact the task produced",
                },
                "error": {"type": "string", "description": "what went wrong, for failed, retrying or blocked"},
            },
            "required": ["task_id", "status"],
            "additionalProperties": False,
        },
    ),
    "warrant_wait": types.Tool(
        name="warrant_wait",
        description=(
            "Wait for an outside event or a time: the run is waiting until a signal named in wake_on arrives "
            "(POST /api/runs/{id}/signal) or until passes, when on_timeout applies (resume: running again; "
            "pause: an operator decides; fail: the run fails). Meanwhile reads and the warrant_* tools work; "
            "warrant_status lists the signals received, with their payloads."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "reason": {"type": "string", "minLength": 1, "maxLength": 512},
                "until": {
                    "type": "string",
                    "description": "an RFC 3339 timestamp, or a duration from now (90s, 2h, 3d); at most 30 days "
                    "and never past the run's deadline",
                },
                "on_timeout": {"type": "string", "enum": ["resume", "pause", "fail"], "default": "resume"},
                "wake_on": {
                    "type": "array",
                    "maxItems": 16,
                    "items": {"type": "string", "pattern": "^[a-z0-9_.:-]{1,64}$"},
                    "description": "the signal names that end the wait",
                },
            },
            "required": ["reason", "until"],
            "additionalProperties": False,
        },
    ),
    "warrant_complete": types.Tool(
        name="warrant_complete",
        description=(
            "Ask to complete the run. The gateway decides: every required milestone verified and every "
            "uncertain action reconciled or acknowledged; otherwise it says what is missing."
        ),
        input_schema={
            "type": "object",
            "properties": {"summary": {"type": "string", "minLength": 1}},
            "required": ["summary"],
            "additionalProperties": False,
        },
    ),
}


def result_body(result: CallResult) -> dict[str, Any]:
    """A tools/call result as `CallToolResult.model_dump(by_alias=True, mode="json", exclude_none=True)`
    gives it: the SDK path validates it into the model (`to_mcp_result`); the fast path hands it to
    the SDK's `serialize_server_result` as it is, which shapes both alike (tests/mcp pin the bytes)."""
    body: dict[str, Any] = {"content": result.content, "isError": result.is_error, "resultType": "complete"}
    if result.structured is not None:
        body["structuredContent"] = result.structured
    if result.meta:
        body["_meta"] = {k: v for k, v in result.meta.items() if not k.startswith(RESERVED_META_PREFIX)}
    return body


def to_mcp_result(result: CallResult) -> types.CallToolResult:
    return types.CallToolResult.model_validate(result_body(result))


def client_meta(meta: Mapping[str, Any] | None) -> dict[str, Any]:
    """The client's own `_meta` keys, without the protocol's reserved stamps."""
    return {k: v for k, v in (meta or {}).items() if not k.startswith(RESERVED_META_PREFIX)}


def _token_of(ctx: ServerRequestContext[Any, Any]) -> str | None:
    request = ctx.request
    if request is None:
        return None
    header: str = request.headers.get("authorization", "")
    scheme, _, value = header.partition(" ")
    return value.strip() if scheme.lower() == "bearer" else None


def build_mcp_server(calls_of: Callable[[], ToolCalls], catalog: Catalog) -> Server[Any]:
    """The low-level server. `calls_of` returns the tool calls (and their gate) built in the app's lifespan."""

    async def list_tools(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        gate = calls_of().gate
        try:
            info = await gate.authenticate(_token_of(ctx))
        except Unauthenticated as exc:
            raise MCPError(-32001, exc.message) from None
        dead = await gate.dead(_token_of(ctx))
        if dead is not None:
            # Nothing of the run is listed, and the refusal rides in `_meta`. Not a JSON-RPC error:
            # the SDK's client lists the tools again after a call to check its result, so an error
            # here would turn the dead token's last answer (its refusal, or warrant_complete's
            # success) into an exception in the agent's client.
            return types.ListToolsResult(tools=[], _meta={DEAD_TOKEN_META: dead.to_dict()})
        terms = gate.terms_of(info.run)
        tools = []
        for spec in catalog:
            if spec.policy is None or not terms.allows(spec.name):
                continue
            annotations = types.ToolAnnotations(read_only_hint=not spec.is_write)
            tools.append(
                types.Tool(
                    name=spec.name,
                    description=spec.definition.description
                    or f"{spec.tool}, served by the {spec.adapter.name} adapter.",
                    input_schema=spec.definition.input_schema,
                    output_schema=spec.definition.output_schema,
                    annotations=annotations,
                )
            )
        return types.ListToolsResult(tools=[*tools, *WARRANT_TOOLS.values()])

    async def call_tool(
        ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        return await answer_call(calls_of(), _token_of(ctx), params, ctx.meta)

    return Server(
        "warrant",
        version=__version__,
        instructions=(
            "Every call goes through Warrant's gate. A refused call's text begins with [code]; "
            "warrant_status shows the run's state, budgets and pending approvals."
        ),
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        get_tool_input_schema=input_schema_of(catalog),
    )


def input_schema_of(catalog: Catalog) -> Callable[[str], Mapping[str, Any] | None]:
    """A tool's input schema by its exposed name (for the SDK's `Mcp-Param-*` header checks)."""

    def input_schema(name: str) -> Mapping[str, Any] | None:
        if name in WARRANT_TOOLS:
            return WARRANT_TOOLS[name].input_schema
        spec = catalog.get(name)
        return spec.definition.input_schema if spec is not None else None

    return input_schema


async def answer_call(
    calls: ToolCalls, token: str | None, params: types.CallToolRequestParams, meta: Mapping[str, Any] | None
) -> types.CallToolResult:
    """One `tools/call` as a tool result. Raises: MCPError (-32001 unauthenticated, -32603 a bug of ours)."""
    return await _answer(calls, token, params, meta, to_mcp_result)


async def answer_body(
    calls: ToolCalls, token: str | None, params: types.CallToolRequestParams, meta: Mapping[str, Any] | None
) -> dict[str, Any]:
    """`answer_call`'s result as `result_body` gives it (the fast path's). Raises: as `answer_call`."""
    return await _answer(calls, token, params, meta, result_body)


async def _answer(
    calls: ToolCalls,
    token: str | None,
    params: types.CallToolRequestParams,
    meta: Mapping[str, Any] | None,
    shape: Callable[[CallResult], R],
) -> R:
    try:
        return shape(await calls.call(token, params.name, params.arguments or {}, client_meta(meta)))
    except Unauthenticated as exc:
        raise MCPError(-32001, exc.message) from None
    except Refusal as refusal:
        # Raised from inside a store transaction that would record it (docs/limits.md, "What a
        # refusal records"): answered as any refusal, nothing written.
        return shape(CallResult.refused(refusal))
    except Exception:
        # A bug of ours: logged with a reference, answered without any of its text.
        reference = new_id("err")
        log.exception("tools/call %s failed (reference %s)", params.name, reference)
        raise MCPError(-32603, f"internal error in the gateway (reference {reference})") from None


def fast_path(
    server: Server[Any], calls_of: Callable[[], ToolCalls], catalog: Catalog, *, on: bool | None = None
) -> FastPath | None:
    """The fast path for `tools/call`, for a server whose streamable HTTP app is already made.

    None (the SDK app answers every request) when the `mcp_front` accelerator is off: `on`, else
    as gateway/accelerators.py decides for the installed SDK."""
    if not (accelerators.default().on(accelerators.MCP_FRONT) if on is None else on):
        return None
    try:
        from gateway.mcp.accelerators.fastpath import FastPath
    except ImportError as exc:  # a name it takes from the SDK moved: the SDK app answers
        accelerators.gone(accelerators.MCP_FRONT, exc)
        return None

    async def handler(
        token: str, params: types.CallToolRequestParams, meta: Mapping[str, Any] | None
    ) -> dict[str, Any]:
        return await answer_body(calls_of(), token, params, meta)

    return FastPath(server, handler, input_schema_of(catalog), invalid_result)


def invalid_result(name: str) -> MCPError:
    """What `answer_call` raises for a result it cannot validate into a CallToolResult (a bug of
    ours, or of an in-process tool's content): the fast path, which validates it only while the
    SDK shapes it, answers the same."""
    reference = new_id("err")
    log.error("tools/call %s failed (reference %s): its result is not a valid CallToolResult", name, reference)
    return MCPError(-32603, f"internal error in the gateway (reference {reference})")


class LeaseTokenGuard:
    """ASGI wrapper for /mcp: no lease token, or an unknown one, is HTTP 401 before any MCP handling.

    Whether a token is known is the gate's to answer (`Gate.knows`), from its one cache of lease
    tokens: only a token not seen before costs a store read. That read would also wait for the
    previous call's lazy settle to commit on its own (`Database.read`), where the gate's admit
    would have carried it in its own batch.
    """

    def __init__(self, app: ASGIApp, gate_of: Callable[[], Gate], fast: FastPath | None = None) -> None:
        self.app = app
        self.gate_of = gate_of
        self.fast = fast

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if scope["method"] != "POST":
            # Stateless: no server-to-client stream (GET) and no session to end (DELETE).
            await _respond(send, 405, {"error": "only POST is served at /mcp"}, [(b"allow", b"POST")])
            return
        headers = dict(scope.get("headers") or [])
        raw = headers.get(b"authorization", b"").decode("latin-1")
        scheme, _, token = raw.partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            # RFC 6750 3.1: no error code when the request carried no credentials.
            await _unauthorized(send, "a lease token is required: Authorization: Bearer <lease token>", b"")
            return
        if not looks_like_token(token) or not await self.gate_of().knows(token_hash(token)):
            await _unauthorized(send, "unknown lease token", b', error="invalid_token"')
            return
        if self.fast is not None:
            await self.fast.serve(scope, receive, send, token, self.app)
        else:
            await self.app(scope, receive, send)


async def _unauthorized(send: Send, message: str, error: bytes) -> None:
    body = {"jsonrpc": "2.0", "id": None, "error": {"code": -32001, "message": f"[unauthenticated] {message}"}}
    await _respond(send, 401, body, [(b"www-authenticate", b'Bearer realm="warrant"' + error)])


async def _respond(send: Send, status: int, body: dict[str, Any], headers: list[tuple[bytes, bytes]]) -> None:
    data = json.dumps(body).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(data)).encode()),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": data})


@contextlib.asynccontextmanager
async def running(server: Server[Any]) -> AsyncIterator[None]:
    """The session manager's task group, for the host app's lifespan."""
    async with server.session_manager.run():
        yield


def mcp_app(server: Server[Any], host: str, max_body: int | None = None) -> Starlette:
    """`max_body`: the SDK's own cap on a body (its default when None); gateway/gate/limits.py's
    BodyCap answers an over-cap body first, so the SDK's must not be the smaller."""
    from mcp.server.transport_security import TransportSecuritySettings

    security = None
    if host not in ("127.0.0.1", "localhost", "::1"):
        # Behind a proxy or on a public interface the operator's TLS terminator decides hosts.
        security = TransportSecuritySettings(enable_dns_rebinding_protection=False)
    extra: dict[str, Any] = {} if max_body is None else {"max_request_body_size": max_body}
    return server.streamable_http_app(
        streamable_http_path="/mcp",
        stateless_http=True,
        json_response=True,
        transport_security=security,
        host=host,
        **extra,
    )
