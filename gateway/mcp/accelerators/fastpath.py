"""The MCP front's fast path: a `tools/call` POST answered without the SDK's server machinery.

The SDK's streamable-HTTP server spends most of its time per request on machinery a stateless
JSON `tools/call` does not need: a transport and a dispatcher with anyio streams and tasks per
request (2025-11-25), Starlette `Request` objects, context and session objects, the middleware
chain. This path does the same checks and the same shaping with the SDK's own pure functions,
in the SDK's order, and writes the answer itself:

    both eras   Content-Type and Host/Origin (TransportSecurityMiddleware), Accept, body size,
                the JSON-RPC envelope, params validated for the version, CallToolRequestParams,
                the handler, the result shaped per version (serialize_server_result)
    2026-07-28  duplicated routing headers, the envelope ladder (classify_inbound_request),
                Mcp-Param-* headers against the tool's schema; resultType and the serverInfo
                stamp; JSON with the status table's code
    2025-11-25  (and earlier, or no MCP-Protocol-Version header) the legacy transport's
                parse (pydantic_core) and message validation; pydantic's JSON, status 200

Anything else (another method, a notification, a batch, a request any of those checks would
refuse, an oversized body) goes to the SDK app with its body replayed, so every error answer is
the SDK's own. Only a request that reached the handler is answered here, error or not. Not done
here: the SDK's OpenTelemetry middleware (its span), which is a no-op without a configured
tracer; the fast path is off when the server has other middleware or a cache hint for tools/call.
Pinned by tests/mcp/test_mcp_fastpath.py (the same bytes through both paths).
"""

from __future__ import annotations

import json
import logging
from collections import deque
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import mcp.types as types
import pydantic_core
from mcp.server import Server
from mcp.server.streamable_http import check_accept_headers
from mcp.server.transport_security import TransportSecurityMiddleware
from mcp.shared.exceptions import MCPError
from mcp.shared.inbound import (
    ERROR_CODE_HTTP_STATUS,
    MCP_PARAM_HEADER_PREFIX,
    MCP_PROTOCOL_VERSION_HEADER,
    InboundModernRoute,
    classify_inbound_request,
    find_duplicated_routing_header,
    find_invalid_x_mcp_header,
    validate_mcp_param_headers,
    x_mcp_header_map,
)
from mcp_types import (
    CORE_RESULT_TYPES,
    DEFAULT_NEGOTIATED_VERSION,
    INTERNAL_ERROR,
    SERVER_INFO_META_KEY,
    ErrorData,
    JSONRPCError,
    JSONRPCRequest,
    JSONRPCResponse,
    jsonrpc_message_adapter,
)
from mcp_types import methods as _methods
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from gateway import accelerators
from gateway.bounded import BoundedDict

log = logging.getLogger("warrant.mcp")
# The SDK's tracing middleware, a private name (gateway/accelerators.py): missing, the path is off.
_OTEL_MIDDLEWARE = accelerators.resolve(accelerators.OTEL_MIDDLEWARE)

# The handler answers with the result as `CallToolResult.model_dump(by_alias=True, mode="json",
# exclude_none=True)` would give it (gateway/mcp/server.py `result_body`), or raises MCPError.
Handler = Callable[[str, types.CallToolRequestParams, Mapping[str, Any] | None], Awaitable[dict[str, Any]]]
SchemaOf = Callable[[str], Mapping[str, Any] | None]
# The error for a handler's result that is not a valid CallToolResult (the tool's name given): what
# the SDK path's handler raises when it cannot validate the same result into the model.
Invalid = Callable[[str], MCPError]
_PARAM_PREFIX = MCP_PARAM_HEADER_PREFIX.lower()


class _Decline(Exception):
    """Not for the fast path: the SDK answers this request."""


class FastPath:
    """Answers `tools/call` POSTs to /mcp for a stateless, JSON-answering SDK server."""

    def __init__(
        self, server: Server[Any], handler: Handler, input_schema: SchemaOf, invalid: Invalid | None = None
    ) -> None:
        manager = server.session_manager
        self.server = server
        self.handler = handler
        self.invalid = invalid or _invalid_result
        self.input_schema = input_schema
        self.security = TransportSecurityMiddleware(manager.security_settings)
        self.max_body = manager.max_request_body_size
        self.answered = 0  # requests this path answered (tests, metrics)
        self._annotated: BoundedDict[int, tuple[Mapping[str, Any], bool]] = BoundedDict(1024)
        otel = _OTEL_MIDDLEWARE
        only_otel = isinstance(otel, type) and all(isinstance(m, otel) for m in server.middleware)
        self.enabled = (
            manager.stateless
            and manager.json_response
            and only_otel
            and server.cache_hints.get("tools/call") is None
            and server.get_request_handler("tools/call") is not None
        )
        if not self.enabled:
            log.info("the MCP fast path is off: the server's set-up is not the one it mirrors")

    async def serve(self, scope: Scope, receive: Receive, send: Send, token: str, app: ASGIApp) -> None:
        """Answer a POST to /mcp, or hand it to `app` (the SDK's) with its body replayed."""
        headers = Headers(scope=scope)
        declared = headers.get("content-length")
        if not self.enabled or (declared is not None and declared.isdigit() and int(declared) > self.max_body):
            await app(scope, receive, send)
            return
        body, replay = await self._read(receive)
        if body is not None:
            try:
                response = await self._answer(scope, headers, body, token)
            except _Decline:
                pass
            else:
                self.answered += 1
                await _write(send, *response)
                return
        await app(scope, replay, send)

    async def _read(self, receive: Receive) -> tuple[bytes | None, Receive]:
        """The whole body (None: too large, or the client went away) and a `receive` that replays it."""
        chunks: list[bytes] = []
        size = 0
        complete = False
        trailing: Message | None = None
        while True:
            message = await receive()
            if message["type"] != "http.request":
                trailing = message
                break
            chunk = message.get("body", b"")
            chunks.append(chunk)
            size += len(chunk)
            if size > self.max_body:
                break
            if not message.get("more_body", False):
                complete = True
                break
        body = b"".join(chunks)
        cached: deque[Message] = deque([{"type": "http.request", "body": body, "more_body": not complete}])
        if trailing is not None:
            cached.append(trailing)

        async def replay() -> Message:
            return cached.popleft() if cached else await receive()

        return (body if complete else None), replay

    async def _answer(self, scope: Scope, headers: Headers, body: bytes, token: str) -> _Answer:
        """The response to a `tools/call` the SDK would hand to its handler. Raises: _Decline."""
        try:
            request_id, version, meta, typed = await self._prepare(scope, headers, body)
        except _Decline:
            raise
        except Exception:
            # A bug of this path's checks: the SDK answers instead (nothing has been done yet).
            log.exception("tools/call fast path: a check failed; the SDK answers this request")
            raise _Decline from None
        try:
            result: dict[str, Any] | None = self._shape(await self.handler(token, typed, meta), version)
            error = None
        except _Invalid:
            result, error = None, self.invalid(typed.name).error
        except Exception as exc:
            result, error = None, exc.error if isinstance(exc, MCPError) else _internal(exc)
        if version in MODERN_PROTOCOL_VERSIONS:
            return _modern_response(request_id, result, error)
        return _legacy_response(request_id, result, error)

    async def _prepare(
        self, scope: Scope, headers: Headers, body: bytes
    ) -> tuple[types.RequestId, str, Mapping[str, Any] | None, types.CallToolRequestParams]:
        """The request's id, version, `_meta` and typed params, checked as the SDK checks them.

        Raises: _Decline."""
        shim: Any = _HeadersOnly(headers)
        if await self.security.validate_request(shim, is_post=True) is not None:
            raise _Decline
        has_json, _ = check_accept_headers(shim)
        if not has_json:
            raise _Decline
        version = headers.get(MCP_PROTOCOL_VERSION_HEADER)
        if version is not None and version not in HANDSHAKE_PROTOCOL_VERSIONS:
            request_id, params, version = self._modern(scope, headers, body)
        else:
            request_id, params = self._legacy(headers, body)
            version = version or DEFAULT_NEGOTIATED_VERSION
        try:
            _methods.validate_client_request("tools/call", version, params)
            typed = types.CallToolRequestParams.model_validate(params, by_name=False)
        except (KeyError, ValidationError):
            raise _Decline from None
        # As the SDK's runner lifts `_meta` (RequestParams' own field, validated with the rest).
        return request_id, version, typed.meta, typed

    def _modern(self, scope: Scope, headers: Headers, body: bytes) -> tuple[types.RequestId, dict[str, Any], str]:
        """As `handle_modern_request` up to dispatch. Raises: _Decline."""
        try:
            decoded = json.loads(body)
        except (ValueError, RecursionError):
            raise _Decline from None
        if not isinstance(decoded, dict) or "id" not in decoded:
            raise _Decline
        try:
            request = JSONRPCRequest.model_validate(decoded)
        except ValidationError:
            raise _Decline from None
        if request.method != "tools/call":
            raise _Decline
        raw = [(name.decode("latin-1"), value.decode("latin-1")) for name, value in scope["headers"]]
        if find_duplicated_routing_header(raw) is not None:
            raise _Decline
        verdict = classify_inbound_request(decoded, headers=dict(headers))
        if not isinstance(verdict, InboundModernRoute):
            raise _Decline
        params = request.params or {}
        if self._param_headers_mismatch(params, headers):
            raise _Decline
        return request.id, params, verdict.protocol_version

    def _param_headers_mismatch(self, params: Mapping[str, Any], headers: Headers) -> bool:
        """As the SDK's `_mcp_param_rejection` with `get_tool_input_schema` set."""
        name, arguments = params.get("name"), params.get("arguments")
        if not isinstance(name, str) or (arguments is not None and not isinstance(arguments, Mapping)):
            return False
        if not arguments and not any(key.startswith(_PARAM_PREFIX) for key in headers.keys()):
            return False
        try:
            schema = self.input_schema(name)
        except Exception:
            return True  # the SDK logs and skips; let it
        if schema is None or not self._annotates(schema):
            return False  # validate_mcp_param_headers would find nothing to compare
        return validate_mcp_param_headers(schema, arguments or {}, headers) is not None

    def _annotates(self, schema: Mapping[str, Any]) -> bool:
        """Whether `schema` is one whose `x-mcp-header` annotations the SDK checks: valid, with some.

        Remembered per schema object (a tool's schema is not changed in place; a new listing
        brings new objects), so the schema is not walked on every call."""
        seen = self._annotated.get(id(schema))
        if seen is not None and seen[0] is schema:
            return seen[1]
        annotates = find_invalid_x_mcp_header(schema) is None and bool(x_mcp_header_map(schema))
        self._annotated.put(id(schema), (schema, annotates))
        return annotates

    def _legacy(self, headers: Headers, body: bytes) -> tuple[types.RequestId, dict[str, Any]]:
        """As the stateless `StreamableHTTPServerTransport` POST handling up to dispatch. Raises: _Decline."""
        content_type = headers.get("content-type", "")
        if not any(part.strip() == "application/json" for part in content_type.split(";")[0].split(",")):
            raise _Decline
        try:
            message = jsonrpc_message_adapter.validate_python(pydantic_core.from_json(body), by_name=False)
        except (ValueError, ValidationError):
            raise _Decline from None
        if not isinstance(message, JSONRPCRequest) or message.method != "tools/call":
            raise _Decline
        return message.id, message.params or {}

    def _shape(self, dumped: dict[str, Any], version: str) -> dict[str, Any]:
        """As `ServerRunner._serialize` for a tools/call result (`dumped`: the result model's dump).

        Raises: _Invalid when `dumped` is not a valid CallToolResult, which the SDK path's handler
        finds before the SDK shapes anything (the 2026-07-28 surface is a union: an invalid
        CallToolResult may pass as another member, which has no `content`)."""
        modern = version in MODERN_PROTOCOL_VERSIONS
        result_type = dumped.get("resultType")
        if not modern or not isinstance(result_type, str) or result_type in CORE_RESULT_TYPES:
            try:
                shaped = _methods.serialize_server_result("tools/call", version, dumped)
            except ValidationError:
                raise _Invalid from None
            if "content" in dumped and "content" not in shaped:
                raise _Invalid
            dumped = shaped
        if not modern:
            return dumped
        if dumped.get("resultType") is None:
            dumped["resultType"] = "complete"
        meta = dumped.get("_meta")
        if meta is None:
            dumped["_meta"] = {SERVER_INFO_META_KEY: self.server.server_info_stamp}
        elif isinstance(meta, dict) and meta.get(SERVER_INFO_META_KEY) is None:
            dumped["_meta"] = {**meta, SERVER_INFO_META_KEY: self.server.server_info_stamp}
        return dumped


class _Invalid(Exception):
    """The handler's result is not a valid CallToolResult."""


def _invalid_result(name: str) -> MCPError:
    # The SDK's own answer to a handler's invalid result (ServerRunner._serialize).
    log.error("handler for 'tools/call' returned an invalid result")
    return MCPError(INTERNAL_ERROR, "Handler returned an invalid result")


class _HeadersOnly:
    """What TransportSecurityMiddleware and check_accept_headers read of a request: its headers."""

    def __init__(self, headers: Headers) -> None:
        self.headers = headers


def _internal(exc: Exception) -> ErrorData:
    # Not reached (the handler answers every exception with an MCPError); never the exception's text.
    log.error("tools/call fast path: %s", type(exc).__name__)
    return ErrorData(code=INTERNAL_ERROR, message="Internal server error")


# An answer as Starlette's `Response` would send it: status, raw headers (in its order), body.
_Answer = tuple[int, list[tuple[bytes, bytes]], bytes]


async def _write(send: Send, status: int, headers: list[tuple[bytes, bytes]], body: bytes) -> None:
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def _modern_response(request_id: types.RequestId, result: dict[str, Any] | None, error: ErrorData | None) -> _Answer:
    """As `_streamable_http_modern._write` (a JSON `Response`)."""
    if error is not None:
        status = ERROR_CODE_HTTP_STATUS.get(error.code, 200)
        message = JSONRPCError(jsonrpc="2.0", id=request_id, error=error)
        body = message.model_dump(mode="json", by_alias=True, exclude_none=True)
    else:
        # JSONRPCResponse's dump of a JSON-mode result (serialize_server_result's, plus the
        # stamps) is the result itself: its `result` is a plain dict, which exclude_none does not
        # reach into (pinned by tests/mcp/test_mcp_fastpath.py).
        status = 200
        body = {"jsonrpc": "2.0", "id": request_id, "result": result or {}}
    encoded = json.dumps(body, separators=(",", ":")).encode()
    return status, [(b"content-length", str(len(encoded)).encode()), (b"content-type", b"application/json")], encoded


def _legacy_response(request_id: types.RequestId, result: dict[str, Any] | None, error: ErrorData | None) -> _Answer:
    """As `StreamableHTTPServerTransport._create_json_response` without a session."""
    if error is not None:
        message: JSONRPCResponse | JSONRPCError = JSONRPCError(jsonrpc="2.0", id=request_id, error=error)
    else:
        message = JSONRPCResponse(jsonrpc="2.0", id=request_id, result=result or {})
    encoded = message.model_dump_json(by_alias=True, exclude_unset=True).encode()
    return 200, [(b"content-type", b"application/json"), (b"content-length", str(len(encoded)).encode())], encoded
