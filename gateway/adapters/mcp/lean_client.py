"""The lean path for `tools/call` to a downstream MCP server over streamable HTTP.

Used only for a downstream that speaks the 2026-07-28 protocol (no session, by definition) and
answered a probe (`tools/list`, sent this way once per connection of the SDK client) with
`200 application/json` and no `Mcp-Session-Id`, while the `mcp_client` accelerator is on
(gateway/accelerators.py: its switch and the SDK range). Then a call is one POST on a kept-alive
connection (gateway/adapters/http/http11.py; httpx2 with `http11` off) carrying what the SDK
client would send (the `_meta` envelope, `MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`,
`Mcp-Param-*`), and its answer is read as the SDK client reads it: the same status and
content-type rules, the same version check of the result, the same output-schema check
(`ClientSession.validate_tool_result`). Everything else (listing, sessions, the 2025-11-25 era,
notifications) stays on the SDK client, which also takes a call over when the server says the
request was not processed and the SDK would handle it differently (406/415: it wants other
headers; HEADER_MISMATCH: it re-lists, then resends).

Failures come back as the `MCPError` codes the SDK would raise, so McpAdapter classifies them
exactly as before: nothing sent is CONNECTION_CLOSED with the idempotency key remembered as
unsent; no answer in time is REQUEST_TIMEOUT; a connection lost after sending is CONNECTION_CLOSED.
"""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Mapping
from typing import Any, ClassVar, Protocol, cast

import mcp.types as types
from mcp import Client, MCPError
from mcp.shared.inbound import (
    MCP_METHOD_HEADER,
    MCP_NAME_HEADER,
    MCP_PROTOCOL_VERSION_HEADER,
    encode_header_value,
    find_invalid_x_mcp_header,
    mcp_param_headers,
    x_mcp_header_map,
)
from mcp_types import (
    CLIENT_CAPABILITIES_META_KEY,
    CLIENT_INFO_META_KEY,
    HEADER_MISMATCH,
    PROTOCOL_VERSION_META_KEY,
)
from mcp_types.methods import SERVER_RESULTS
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from opentelemetry import context as otel_context
from opentelemetry.propagate import inject
from opentelemetry.trace import SpanKind, get_tracer
from pydantic import TypeAdapter

from gateway.adapters.http.http11 import Answer, Lost, Unsent
from gateway.bounded import BoundedSet
from gateway.observe import tracing

_tracer = get_tracer("mcp-python-sdk")  # the SDK client's tracer name: one trace either path
log = logging.getLogger("warrant.adapters.mcp")

ACCEPT = "application/json, text/event-stream"  # what the SDK client sends
_NOT_HERE = frozenset({406, 415})  # the server wants another request shape; nothing was processed


class Fallback(Exception):
    """The server did not process the request; the SDK client should send it instead."""


class Pool(Protocol):
    """Where the POSTs go: `Http11Pool` (the `http11` accelerator) or `HttpxPool` (httpx2)."""

    async def post(self, body: bytes, headers: list[tuple[str, str]], within: float) -> Answer:
        """Raises: ValueError (nothing sent), Unsent, TimeoutError, Lost."""
        ...

    async def aclose(self) -> None: ...


class LeanCaller:
    """`tools/call` for one published SDK client whose downstream answered the probe in JSON."""

    fallback: ClassVar[type[Fallback]] = Fallback  # for a caller that imports this module lazily

    def __init__(
        self,
        client: Client,
        pool: Pool,
        version: str,
        client_info: Mapping[str, Any],
        unsent: BoundedSet[str],
    ) -> None:
        self.client = client
        self.pool = pool
        self.version = version
        self._envelope = {
            PROTOCOL_VERSION_META_KEY: version,
            CLIENT_INFO_META_KEY: dict(client_info),
            # The adapter's client registers no sampling, elicitation or roots callbacks.
            CLIENT_CAPABILITIES_META_KEY: types.ClientCapabilities().model_dump(
                by_alias=True, mode="json", exclude_none=True
            ),
        }
        self._param_headers: dict[str, dict[tuple[str, ...], str]] = {}
        self._unsent = unsent
        self._next_id = 0
        self.enabled = True

    def learn(self, tools: list[types.Tool]) -> None:
        """The `x-mcp-header` maps of a fresh listing (the SDK client drops tools whose maps are invalid)."""
        self._param_headers = {
            t.name: x_mcp_header_map(t.input_schema) for t in tools if find_invalid_x_mcp_header(t.input_schema) is None
        }

    async def probe(self, within: float) -> bool:
        """Whether the downstream answers this path in plain JSON, statelessly (one `tools/list`)."""
        try:
            _, answer = await self._post("tools/list", {}, None, within)
        except (Unsent, Lost, TimeoutError, OSError, Fallback):
            return False
        if answer.status != 200 or "mcp-session-id" in answer.headers or not _is_json(answer):
            return False
        try:
            reply = json.loads(answer.body)
        except (ValueError, RecursionError):  # nested past the parser's depth: not JSON
            return False
        return isinstance(reply, dict) and isinstance(reply.get("result"), dict)

    async def call_tool(
        self, name: str, arguments: dict[str, Any], meta: dict[str, Any] | None, within: float
    ) -> types.CallToolResult:
        """One `tools/call`, its answer checked as the SDK client checks it.

        Raises:
            MCPError: as the SDK client would (CONNECTION_CLOSED, REQUEST_TIMEOUT, the server's error).
            Fallback: not processed; send it with the SDK client.
            Exception: a result the SDK would not accept (pydantic.ValidationError, RuntimeError).
        """
        try:
            request_id, answer = await self._post("tools/call", {"name": name, "arguments": arguments}, meta, within)
        except Unsent:
            key = (meta or {}).get("warrant/idempotency_key")
            if isinstance(key, str):
                self._unsent.add(key)
            raise MCPError(types.CONNECTION_CLOSED, "could not connect") from None
        except TimeoutError:
            raise MCPError(types.REQUEST_TIMEOUT, f"no answer within {within:g} s") from None
        except Lost as exc:
            raise MCPError(types.CONNECTION_CLOSED, f"connection lost: {exc}") from None
        raw = self._result(answer, request_id)
        result = self._validate(raw)
        if not result.is_error:
            await self.client.session.validate_tool_result(name, result)
        return result

    async def _post(
        self, method: str, params: dict[str, Any], meta: dict[str, Any] | None, within: float
    ) -> tuple[int, Answer]:
        self._next_id += 1
        request_id = self._next_id
        params["_meta"] = {**(meta or {}), **self._envelope}
        # The SDK client's span and W3C trace context in `_meta` (SEP-414): a no-op without tracing.
        if not tracing.enabled() and not otel_context.get_current():
            # No tracer and no trace to carry on: the span would be invalid and inject write nothing.
            return await self._send(method, request_id, params, within)
        target = params.get("name")
        span_name = f"MCP send {method}{f' {target}' if isinstance(target, str) else ''}"
        attributes = {"mcp.method.name": method, "jsonrpc.request.id": str(request_id)}
        with _tracer.start_as_current_span(span_name, kind=SpanKind.CLIENT, attributes=attributes):
            inject(params["_meta"])
            return await self._send(method, request_id, params, within)

    async def _send(self, method: str, request_id: int, params: dict[str, Any], within: float) -> tuple[int, Answer]:
        message = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
        headers = [
            ("content-type", "application/json"),
            ("accept", ACCEPT),
            (MCP_PROTOCOL_VERSION_HEADER, self.version),
            (MCP_METHOD_HEADER, method),
        ]
        if method == "tools/call":
            headers.append((MCP_NAME_HEADER, encode_header_value(params["name"])))
            header_map = self._param_headers.get(params["name"])
            if header_map:
                headers.extend(mcp_param_headers(header_map, params["arguments"]).items())
        try:
            body = json.dumps(message, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()
            return request_id, await self.pool.post(body, headers, within)
        except ValueError as exc:  # a value or header this path cannot write: nothing was sent
            raise Fallback(str(exc)) from None

    def _result(self, answer: Answer, request_id: int) -> dict[str, Any]:
        """The JSON-RPC result of an answer, or the MCPError the SDK client would raise for it."""
        status = answer.status
        if status in _NOT_HERE:
            self.enabled = False
            raise Fallback(f"HTTP {status}")
        if status == 202:
            raise MCPError(types.INVALID_REQUEST, "server answered a request with 202 Accepted")
        if 300 <= status < 400:
            raise MCPError(types.INVALID_REQUEST, f"redirect (HTTP {status}) not followed")
        if status >= 400:
            error = _error_of(answer) if _is_json(answer) else None
            if error is not None and error.code == HEADER_MISMATCH:
                raise Fallback("header mismatch")  # the SDK client re-lists the tool and resends once
            if error is not None:
                raise error
            if status == 404:
                raise MCPError(types.METHOD_NOT_FOUND, "Not Found")
            raise MCPError(types.INTERNAL_ERROR, "Server returned an error response")
        content_type = answer.headers.get("content-type", "").lower()
        if content_type.startswith("text/event-stream"):
            # A server in SSE mode after all: read this answer, use the SDK client from now on.
            self.enabled = False
            reply = _sse_reply(answer.body, request_id)
        elif content_type.startswith("application/json"):
            try:
                reply = json.loads(answer.body)
            except (ValueError, RecursionError):
                raise MCPError(types.PARSE_ERROR, "Failed to parse JSON response") from None
        else:
            raise MCPError(types.INVALID_REQUEST, f"Unexpected content type: {content_type}")
        if not isinstance(reply, dict) or reply.get("jsonrpc") != "2.0":
            raise MCPError(types.PARSE_ERROR, "Failed to parse JSON response")
        if reply.get("id") != request_id and not ("error" in reply and reply.get("id") is None):
            raise MCPError(types.PARSE_ERROR, "Failed to parse JSON response")
        if "error" in reply:
            error = _as_error(reply["error"])
            if error.code == HEADER_MISMATCH:
                raise Fallback("header mismatch")
            raise error
        result = reply.get("result")
        if not isinstance(result, dict):
            raise MCPError(types.PARSE_ERROR, "Failed to parse JSON response")
        return result

    def _validate(self, raw: dict[str, Any]) -> types.CallToolResult:
        """As `ClientSession.send_request` does for tools/call, for a client that claims no result shapes."""
        ttl = raw.get("ttlMs")
        if isinstance(ttl, int | float) and not isinstance(ttl, bool) and ttl < 0:
            raw["ttlMs"] = 0
        surface = _result_surface(self.version)
        if surface is not None:
            surface.validate_python(raw, by_name=False)  # as validate_server_result, without its dump
        if raw.get("resultType", "complete") != "complete":
            # input_required (or a claimed shape): this adapter's client can answer none of them.
            raise RuntimeError(f"unsupported resultType {raw.get('resultType')!r}")
        return types.CallToolResult.model_validate(raw, by_name=False)


@functools.cache
def _result_surface(version: str) -> TypeAdapter[Any] | None:
    """The `tools/call` result's shape in `version` (`validate_server_result`'s), or None: not checked."""
    target = SERVER_RESULTS.get(("tools/call", version))
    return None if target is None else TypeAdapter(cast(Any, target))  # a model or a union of models


def lean_version(client: Client) -> str | None:
    """The protocol version for the lean path: a modern one (no session), else None."""
    version = client.session.protocol_version
    return version if version in MODERN_PROTOCOL_VERSIONS else None


def _is_json(answer: Answer) -> bool:
    return answer.headers.get("content-type", "").lower().startswith("application/json")


def _error_of(answer: Answer) -> MCPError | None:
    try:
        reply = json.loads(answer.body)
    except (ValueError, RecursionError):
        return None
    if isinstance(reply, dict) and isinstance(reply.get("error"), dict):
        return _as_error(reply["error"])
    return None


def _as_error(error: Any) -> MCPError:
    try:
        data = types.ErrorData.model_validate(error)
    except Exception:
        return MCPError(types.PARSE_ERROR, "Failed to parse JSON response")
    return MCPError(data.code, data.message, data.data)


def _sse_reply(body: bytes, request_id: int) -> Any:
    """The JSON-RPC reply to `request_id` among an SSE body's events (notifications are skipped)."""
    data: list[str] = []
    for line in [*body.decode("utf-8", errors="replace").splitlines(), ""]:
        if line.startswith("data:"):
            value = line[5:]
            data.append(value[1:] if value.startswith(" ") else value)
        elif not line and data:
            try:
                message = json.loads("\n".join(data))
            except (ValueError, RecursionError):
                message = None
            data = []
            if isinstance(message, dict) and message.get("id") == request_id:
                return message
    raise MCPError(types.CONNECTION_CLOSED, "SSE stream ended without a response")
