"""The front's fast path for `tools/call` answers exactly as the SDK's server does, in both eras.

Each request is sent twice to the same real server: through the fast path, then with it switched
off (the SDK's streamable-HTTP app answers). Status, content type and body bytes must agree, once
the values that differ between two calls (action ids, remaining budgets) are masked. Anything the
fast path does not serve (malformed, other methods, notifications) must be the SDK's own answer.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.inbound import validate_mcp_param_headers
from mcp_types import JSONRPCResponse
from mcp_types.methods import serialize_server_result
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS
from starlette.datastructures import Headers
from starlette.responses import Response
from starlette.routing import Route

from gateway.gate import BodyCap, CallResult
from gateway.mcp import LeaseTokenGuard, result_body, to_mcp_result
from gateway.mcp.accelerators import FastPath
from gateway.mcp.accelerators.fastpath import _modern_response
from gateway.oauth import OAuthResource
from tests.api.conftest import CONTRACT, Api

pytestmark = pytest.mark.anyio

MODERN = "2026-07-28"
LEGACY = "2025-11-25"
ENVELOPE = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"},
}
VARYING = [
    (re.compile(rb'"act_[0-9A-Za-z]+"'), b'"act_X"'),
    (re.compile(rb'"warrant/budget_remaining":\{[^}]*\}'), b'"warrant/budget_remaining":{}'),
]


def fast_path(api: Api) -> FastPath:
    route = next(r for r in api.app.routes if isinstance(r, Route) and r.path == "/mcp")
    cap = route.app
    assert isinstance(cap, BodyCap)  # gateway/gate/limits.py, in front of the guard
    guard = cap.app
    if isinstance(guard, OAuthResource):  # MCP authorization (gateway/oauth/), around the lease-token guard
        guard = guard.app
    assert isinstance(guard, LeaseTokenGuard) and guard.fast is not None
    return guard.fast


@contextmanager
def sdk_only(api: Api) -> Iterator[None]:
    fast = fast_path(api)
    fast.enabled = False
    try:
        yield
    finally:
        fast.enabled = True


async def start(api: Api, **changes: Any) -> str:
    async with api.client("op") as c:
        run = (await c.post("/api/runs", json={**CONTRACT, **changes})).json()
        grant = (await c.post(f"/api/runs/{run['run_id']}/lease", json={"worker": "agent"})).json()
    token: str = grant["token"]
    return token


def call(name: str, arguments: Any, era: str, request_id: Any = 7) -> tuple[dict[str, str], bytes]:
    """A tools/call as the SDK client of `era` sends it: headers and body."""
    headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
    params: dict[str, Any] = {"name": name, "arguments": arguments}
    if era == MODERN:
        headers |= {"mcp-protocol-version": MODERN, "mcp-method": "tools/call", "mcp-name": name}
        params["_meta"] = ENVELOPE
    else:
        headers["mcp-protocol-version"] = era
    return headers, json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}).encode()


async def both_ways(
    api: Api, token: str, headers: dict[str, str], body: bytes
) -> tuple[httpx.Response, httpx.Response]:
    """The same request through the fast path, then through the SDK app; and whether the fast path answered."""
    async with httpx.AsyncClient(base_url=api.url, headers={"Authorization": f"Bearer {token}"}, timeout=10) as c:
        fast = await c.post("/mcp", content=body, headers=headers)
        with sdk_only(api):
            sdk = await c.post("/mcp", content=body, headers=headers)
    return fast, sdk


def masked(response: httpx.Response) -> tuple[int, str | None, bytes]:
    body = response.content
    for pattern, replacement in VARYING:
        body = pattern.sub(replacement, body)
    return response.status_code, response.headers.get("content-type"), body


CASES = [
    ("a permitted read", "shop__find", {"q": "x"}),
    ("a refusal", "shop__order", {"to": "x@example.com"}),
    ("an adapter's failure", "shop__charge", {"card": "revoked"}),
    ("an unknown tool", "shop__nothing", {}),
    ("invalid arguments", "shop__find", {"q": 1}),
    ("a gateway tool", "warrant_status", {}),
    ("non-ASCII text", "shop__find", {"q": "naïve ☃"}),
]


@pytest.mark.parametrize("era", [MODERN, LEGACY, "2025-03-26"])
@pytest.mark.parametrize(("case", "tool", "arguments"), CASES, ids=[c[0] for c in CASES])
async def test_a_call_answers_byte_for_byte_as_the_sdk_does(
    api: Api, era: str, case: str, tool: str, arguments: dict[str, Any]
) -> None:
    token = await start(api, authority={"allow": ["shop__find", "shop__charge"]})
    fast = fast_path(api)
    before = fast.answered
    fast_answer, sdk_answer = await both_ways(api, token, *call(tool, arguments, era))
    assert fast.answered == before + 1
    assert masked(fast_answer) == masked(sdk_answer)
    assert fast_answer.status_code == 200 and "result" in fast_answer.json()


async def test_a_call_without_a_protocol_version_header_answers_as_the_sdk_does(api: Api) -> None:
    token = await start(api)
    headers, body = call("shop__find", {"q": "x"}, LEGACY, request_id="req-1")
    del headers["mcp-protocol-version"]
    fast_answer, sdk_answer = await both_ways(api, token, headers, body)
    assert masked(fast_answer) == masked(sdk_answer)


async def test_an_mcp_param_header_no_schema_declares_is_ignored_as_the_sdk_ignores_it(api: Api) -> None:
    token = await start(api)
    headers, body = call("shop__find", {"q": "x"}, MODERN)
    fast = fast_path(api)
    before = fast.answered
    fast_answer, sdk_answer = await both_ways(api, token, headers | {"mcp-param-q": "y"}, body)
    assert fast.answered == before + 1
    assert masked(fast_answer) == masked(sdk_answer)


def _malformed() -> list[tuple[str, dict[str, str], bytes]]:
    cases: list[tuple[str, dict[str, str], bytes]] = []
    for era in (MODERN, LEGACY):
        headers, body = call("shop__find", {"q": "x"}, era)
        decoded = json.loads(body)
        cases += [
            (f"{era} not JSON", headers, b"{nope"),
            (f"{era} a batch", headers, json.dumps([decoded]).encode()),
            (f"{era} a notification", headers, json.dumps({k: v for k, v in decoded.items() if k != "id"}).encode()),
            (f"{era} arguments not an object", headers, body.replace(b'{"q": "x"}', b'"x"')),
            (f"{era} no name", headers, body.replace(b'"name": "shop__find", ', b"")),
            (f"{era} id null", headers, body.replace(b'"id": 7', b'"id": null')),
            (f"{era} another method", headers, body.replace(b'"tools/call"', b'"tools/list"')),
            (f"{era} wrong content type", headers | {"content-type": "text/plain"}, body),
            (f"{era} JSON not accepted", headers | {"accept": "text/event-stream"}, body),
        ]
    headers, body = call("shop__find", {"q": "x"}, MODERN)
    no_envelope = json.dumps({**json.loads(body), "params": {"name": "shop__find", "arguments": {"q": "x"}}})
    cases += [
        ("modern Mcp-Name mismatch", headers | {"mcp-name": "shop__order"}, body),
        ("modern Mcp-Method mismatch", headers | {"mcp-method": "tools/list"}, body),
        ("modern no envelope", headers, no_envelope.encode()),
        ("modern unsupported version", headers | {"mcp-protocol-version": "2099-01-01"}, body),
    ]
    return cases


MALFORMED = _malformed()


@pytest.mark.parametrize(("case", "headers", "body"), MALFORMED, ids=[c[0] for c in MALFORMED])
async def test_a_request_the_fast_path_does_not_serve_gets_the_sdks_own_answer(
    api: Api, case: str, headers: dict[str, str], body: bytes
) -> None:
    token = await start(api)
    fast = fast_path(api)
    before = fast.answered
    fast_answer, sdk_answer = await both_ways(api, token, headers, body)
    assert fast.answered == before
    assert masked(fast_answer) == masked(sdk_answer)


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_the_official_client_s_calls_take_the_fast_path_in_both_eras(api: Api, mode: str) -> None:
    token = await start(api)
    fast = fast_path(api)
    before = fast.answered
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=10) as http,
        Client(streamable_http_client(f"{api.url}/mcp", http_client=http), mode=mode, cache=None) as client,
    ):
        found = await client.call_tool("shop__find", {"q": "x"})
        refused = await client.call_tool("shop__nothing", {})
    assert fast.answered == before + 2
    assert found.is_error is False and found.structured_content == {"hits": []}
    assert found.meta is not None and found.meta["warrant/action_id"].startswith("act_")
    assert refused.is_error is True and refused.structured_content is not None
    assert refused.structured_content["error"]["code"] == "tool_not_found"


async def test_a_failing_check_of_the_fast_path_leaves_the_request_to_the_sdk(
    api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    token = await start(api)
    fast = fast_path(api)

    def broken(*args: Any) -> Any:
        raise RuntimeError("a bug in a check")

    monkeypatch.setattr(fast, "_modern", broken)
    before = fast.answered
    headers, body = call("shop__find", {"q": "x"}, MODERN)
    async with httpx.AsyncClient(base_url=api.url, headers={"Authorization": f"Bearer {token}"}, timeout=10) as c:
        answer = await c.post("/mcp", content=body, headers=headers)
    assert fast.answered == before
    assert answer.status_code == 200 and answer.json()["result"]["structuredContent"] == {"hits": []}


_BLOCKS: list[dict[str, Any]] = [
    {"type": "text", "text": "hi"},
    {"type": "text", "text": "hi", "annotations": {"audience": ["user"], "priority": 0.5}, "_meta": {"k": 1}},
    {"type": "text", "text": "x", "extra": 1},
    {"type": "image", "data": "aGk=", "mimeType": "image/png"},
    {"type": "audio", "data": "aGk=", "mimeType": "audio/wav"},
    {"type": "resource_link", "uri": "file:///x", "name": "x", "mimeType": "text/plain", "size": 3, "title": "X"},
    {"type": "resource", "resource": {"uri": "file:///x", "text": "t", "mimeType": "text/plain"}},
    {"type": "resource", "resource": {"uri": "file:///x", "blob": "aGk="}},
]
_METAS: list[dict[str, Any]] = [
    {},
    {"warrant/action_id": "act_1", "warrant/replayed": False, "warrant/budget_remaining": {"spend": "1.00"}},
    {"io.modelcontextprotocol/serverInfo": {"name": "x"}, "k": None},
]


@pytest.mark.parametrize("version", [*MODERN_PROTOCOL_VERSIONS, *HANDSHAKE_PROTOCOL_VERSIONS])
def test_the_fast_path_s_result_body_shapes_as_the_sdk_s_result_model_does(version: str) -> None:
    # The fast path hands `result_body` to the SDK's shaping as it is; the SDK path validates it
    # into CallToolResult first (`to_mcp_result`). Every block kind, structured content with
    # nulls, reserved and own _meta keys, errors: both shape to the same dict.
    cases = 0
    for block in _BLOCKS:
        for structured in (None, {"a": None, "b": [1, None]}, {"id": 3}):
            for meta in _METAS:
                for is_error in (False, True):
                    result = CallResult(content=[block], structured=structured, meta=meta, is_error=is_error)
                    dumped = to_mcp_result(result).model_dump(by_alias=True, mode="json", exclude_none=True)
                    assert serialize_server_result("tools/call", version, result_body(result)) == (
                        serialize_server_result("tools/call", version, dumped)
                    )
                    cases += 1
    assert cases == 144


_ANNOTATED = {
    "type": "object",
    "properties": {"region": {"type": "string", "x-mcp-header": "Region"}, "q": {"type": "string"}},
}
_INVALID = {"type": "object", "properties": {"region": {"type": "object", "x-mcp-header": "Region"}}}
_PLAIN = {"type": "object", "properties": {"region": {"type": "string"}}}


@pytest.mark.parametrize("schema", [_ANNOTATED, _INVALID, _PLAIN], ids=["annotated", "invalid", "plain"])
async def test_the_param_header_check_agrees_with_the_sdk_s_on_every_call_of_a_schema(
    api: Api, schema: dict[str, Any]
) -> None:
    # The fast path remembers per schema whether it has annotations the SDK would compare: the
    # answer must stay the SDK's for the first call of a schema and the ones after it.
    fast = fast_path(api)
    original = fast.input_schema
    fast.input_schema = lambda name: schema
    try:
        for arguments, sent in [
            ({"region": "eu", "q": "x"}, {"mcp-param-region": "eu"}),
            ({"region": "eu", "q": "x"}, {"mcp-param-region": "us"}),
            ({"region": "eu"}, {}),
            ({"q": "x"}, {"mcp-param-region": "eu"}),
            ({"region": "eu"}, {"mcp-param-region": "eu"}),
        ]:
            headers = Headers(headers=sent)
            expected = validate_mcp_param_headers(schema, arguments, headers) is not None
            for _ in range(2):
                assert fast._param_headers_mismatch({"name": "t", "arguments": arguments}, headers) is expected
    finally:
        fast.input_schema = original


@pytest.mark.parametrize("request_id", [7, "req-1"])
def test_a_modern_answer_is_written_as_the_sdk_s_model_and_response_write_it(request_id: Any) -> None:
    # The fast path writes a modern success without JSONRPCResponse and Starlette's Response:
    # same status, same header order, same bytes, nulls and non-ASCII inside the result included.
    result = {
        "content": [{"type": "text", "text": "naïve ☃"}],
        "structuredContent": {"a": None, "b": [None, 1.5, {"c": None}], "d": 10**20},
        "isError": False,
        "resultType": "complete",
        "_meta": {"warrant/action_id": "act_1", "k": None},
    }
    status, headers, body = _modern_response(request_id, result, None)
    model = JSONRPCResponse(jsonrpc="2.0", id=request_id, result=result)
    sdk = Response(
        json.dumps(model.model_dump(mode="json", by_alias=True, exclude_none=True), separators=(",", ":")),
        status_code=200,
        media_type="application/json",
    )
    assert (status, headers, body) == (sdk.status_code, sdk.raw_headers, sdk.body)
