"""The front's fast path for `tools/call` answers exactly as the SDK's server does, in both eras.

Each request is sent twice to the same real server: through the fast path, then with it switched
off (the SDK's streamable-HTTP app answers). Status, content type and body bytes must agree, once
the values that differ between two calls (action ids, remaining budgets, error references) are
masked. Every content block kind and every error path (a tool's error, the gate's refusals, the
JSON-RPC errors, a downstream failure, an oversized result) is compared in both protocol eras.
Anything the fast path does not serve (malformed, other methods, notifications) must be the SDK's
own answer. With the `mcp_front` accelerator off (its switch, or an SDK outside its range:
gateway/accelerators.py) the SDK app answers everything, the same.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

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

from gateway import accelerators
from gateway.adapters import NotSent, Outcome, OutcomeKind, PythonAdapter, ToolFailed
from gateway.gate import BodyCap, CallResult
from gateway.mcp import LeaseTokenGuard, result_body, to_mcp_result
from gateway.oauth import OAuthResource
from tests.api.conftest import CONTRACT, Api, serving_api

if TYPE_CHECKING:
    from gateway.mcp.accelerators import FastPath

pytestmark = [pytest.mark.anyio, pytest.mark.differential]
# The fast path serves where the installed SDK is within its declared range (make test-newest-sdk
# may install one outside it: then the SDK app answers both ways, and the fence said so).
FAST = accelerators.default().on(accelerators.MCP_FRONT)

MODERN = "2026-07-28"
LEGACY = "2025-11-25"
ENVELOPE = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"},
}
VARYING = [
    (re.compile(rb'"act_[0-9A-Za-z]+"'), b'"act_X"'),
    (re.compile(rb"act_[0-9A-Za-z]{8,}"), b"act_X"),
    (re.compile(rb'"warrant/budget_remaining":\{[^}]*\}'), b'"warrant/budget_remaining":{}'),
    (re.compile(rb"reference err_[0-9A-Za-z]+"), b"reference err_X"),
]


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"  # module scope: the block kinds' server serves every case of the module


def guard_of(api: Api) -> LeaseTokenGuard:
    route = next(r for r in api.app.routes if isinstance(r, Route) and r.path == "/mcp")
    cap = route.app
    assert isinstance(cap, BodyCap)  # gateway/gate/limits.py, in front of the guard
    guard = cap.app
    if isinstance(guard, OAuthResource):  # MCP authorization (gateway/oauth/), around the lease-token guard
        guard = guard.app
    assert isinstance(guard, LeaseTokenGuard)
    return guard


class _Off:
    """Stands in for a fast path that is not there (the accelerator is off): it answers nothing."""

    answered = 0
    enabled = False


def fast_path(api: Api) -> FastPath:
    fast = guard_of(api).fast
    if fast is None:
        assert not FAST  # only where the fence turned the fast path off
        off: Any = _Off()
        return off
    assert FAST
    return fast


def counted(n: int) -> int:
    """What `FastPath.answered` grows by for `n` calls it serves: nothing when it is off."""
    return n if FAST else 0


@contextmanager
def sdk_only(api: Api) -> Iterator[None]:
    fast = fast_path(api)
    before = fast.enabled
    fast.enabled = False
    try:
        yield
    finally:
        fast.enabled = before


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
    assert fast.answered == before + counted(1)
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
    assert fast.answered == before + counted(1)
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
    assert fast.answered == before + counted(2)
    assert found.is_error is False and found.structured_content == {"hits": []}
    assert found.meta is not None and found.meta["warrant/action_id"].startswith("act_")
    assert refused.is_error is True and refused.structured_content is not None
    assert refused.structured_content["error"]["code"] == "tool_not_found"


@pytest.mark.skipif(not FAST, reason="the fast path is off for the installed SDK")
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
    if not FAST:
        pytest.skip("the fast path is off for the installed SDK")
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
    from gateway.mcp.accelerators.fastpath import _modern_response

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


# -- every block kind and every error path, in both eras -------------------------------------------
ERAS = [MODERN, LEGACY]
CAP = 4096  # limits.max_tool_result of the blocks server: a bigger result is withheld
BLOCKS: dict[str, list[dict[str, Any]]] = {
    "text": [{"type": "text", "text": 'naïve ☃ \u2028 "quoted" \\ </script>'}],
    "text with annotations": [
        {"type": "text", "text": "hi", "annotations": {"audience": ["user"], "priority": 0.5}, "_meta": {"k": None}}
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
STRUCTURED = {"a": None, "b": [1, 2.5, None, {"c": "ü"}], "d": 2**53 - 1, "e": True}


def blocks_adapter() -> PythonAdapter:
    """Tools answering each block kind, structured content, a tool error, downstream failures, a big result."""
    blocks = PythonAdapter("blocks")
    kind = {"type": "object", "properties": {"kind": {"type": "string"}}, "required": ["kind"]}

    @blocks.tool(input_schema=kind)
    async def give(args: dict[str, Any], call: Any) -> Outcome:
        return Outcome(OutcomeKind.SUCCEEDED, content=BLOCKS[args["kind"]], receipt={"id": "r-1"})

    @blocks.tool(input_schema={"type": "object"})
    async def structured(args: dict[str, Any], call: Any) -> Any:
        return STRUCTURED

    @blocks.tool(input_schema=kind)
    async def fail(args: dict[str, Any], call: Any) -> Any:
        if args["kind"] == "tool error":
            raise ToolFailed("the processor said no: ☹")
        if args["kind"] == "unavailable":
            raise NotSent("the destination is down")
        raise ConnectionResetError("reset after sending")  # a write: its outcome is unknown

    @blocks.tool(input_schema={"type": "object"})
    async def big(args: dict[str, Any], call: Any) -> str:
        return "x" * (2 * CAP)

    @blocks.tool(input_schema={"type": "object"})
    async def secret(args: dict[str, Any], call: Any) -> str:
        return "never called: no contract allows it"

    return blocks


BLOCK_POLICIES = (
    "  blocks__give: {effect: read}\n"
    "  blocks__structured: {effect: read}\n"
    "  blocks__fail: {effect: write}\n"
    "  blocks__big: {effect: read}\n"
    "  blocks__secret: {effect: read}\n"
    "  blocks__ask: {effect: write, approval: {role: approver}}\n"
)


# A module's server lives long and leaves unknown actions behind (the "lost" cases): no watchdog
# ticks, lookups or alerts while it serves and stops (none of this module's subject).
QUIET = "watchdog: {enabled: false}\n"


@pytest.fixture(scope="module")
async def api(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Api]:
    """One real server for the module (each test starts runs of its own): the shop's tools and the blocks'."""
    async with serving_api(
        tmp_path_factory.mktemp("api"),
        f"limits: {{max_tool_result: {CAP}}}\n{QUIET}",
        policy_extra=BLOCK_POLICIES,
        adapters=[blocks_adapter()],
    ) as served:
        yield served


@pytest.fixture(scope="module")
def blocks_api(api: Api) -> Api:
    return api


ALLOWED = {"allow": ["shop__*", "blocks__give", "blocks__structured", "blocks__fail", "blocks__big"]}
MATRIX: list[tuple[str, str, dict[str, Any]]] = [
    *((f"block: {kind}", "blocks__give", {"kind": kind}) for kind in BLOCKS),
    ("structured content", "blocks__structured", {}),
    ("tool error", "blocks__fail", {"kind": "tool error"}),
    ("downstream unavailable", "blocks__fail", {"kind": "unavailable"}),
    ("downstream lost: outcome unknown", "blocks__fail", {"kind": "lost"}),
    ("oversized result", "blocks__big", {}),
    ("gate refusal: not permitted", "blocks__secret", {}),
    ("gate refusal: invalid arguments", "blocks__give", {"kind": 7}),
    ("gate refusal: unknown tool", "blocks__nothing", {}),
    ("gate refusal: unknown gateway tool", "warrant_nothing", {}),
]


async def fresh_both_ways(api: Api, headers: dict[str, str], body: bytes) -> tuple[httpx.Response, httpx.Response]:
    """As `both_ways`, each path in a run of its own (a write is never a replay of the other path's)."""
    answers = []
    for sdk in (False, True):
        token = await start(api, authority=ALLOWED)
        async with httpx.AsyncClient(base_url=api.url, headers={"Authorization": f"Bearer {token}"}, timeout=10) as c:
            if sdk:
                with sdk_only(api):
                    answers.append(await c.post("/mcp", content=body, headers=headers))
            else:
                answers.append(await c.post("/mcp", content=body, headers=headers))
    return answers[0], answers[1]


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize(("case", "tool", "arguments"), MATRIX, ids=[c[0] for c in MATRIX])
async def test_every_block_kind_and_error_path_answers_byte_for_byte_as_the_sdk_does(
    blocks_api: Api, era: str, case: str, tool: str, arguments: dict[str, Any]
) -> None:
    fast = fast_path(blocks_api)
    before = fast.answered
    fast_answer, sdk_answer = await fresh_both_ways(blocks_api, *call(tool, arguments, era))
    assert fast.answered == before + counted(1)
    assert masked(fast_answer) == masked(sdk_answer)
    result = fast_answer.json()["result"]
    if case.startswith("block: "):
        sent = BLOCKS[case.removeprefix("block: ")]  # as the SDK dumps them: nulls left out
        assert result["isError"] is False and [b["type"] for b in result["content"]] == [b["type"] for b in sent]
    elif case == "structured content":
        assert result["structuredContent"] == STRUCTURED
    else:
        assert result["isError"] is True and result["structuredContent"]["error"]["code"]


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("failure", ["a bug of the gateway", "an invalid result"])
async def test_a_json_rpc_error_of_the_handler_answers_as_the_sdk_does(
    blocks_api: Api, era: str, failure: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    gate = blocks_api.gateway.gate
    call_gate = gate.call

    async def broken(token: str | None, name: str, arguments: Any, meta: Any) -> CallResult:
        if failure == "an invalid result":
            return CallResult(content=[{"type": "no such kind"}])  # neither path may send it
        raise RuntimeError("a bug")

    monkeypatch.setattr(gate, "call", broken)
    fast = fast_path(blocks_api)
    before = fast.answered
    with caplog.at_level(logging.CRITICAL):  # each path logs the failure; not this test's subject
        fast_answer, sdk_answer = await fresh_both_ways(blocks_api, *call("blocks__give", {"kind": "text"}, era))
    monkeypatch.setattr(gate, "call", call_gate)
    assert fast.answered == before + counted(1)
    assert masked(fast_answer) == masked(sdk_answer)
    error = fast_answer.json()["error"]
    assert error["code"] == -32603 and "Traceback" not in error["message"] and "a bug" not in error["message"]


# -- the switch ----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
async def front_off_api(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Api]:
    async with serving_api(
        tmp_path_factory.mktemp("front-off"),
        f"limits: {{max_tool_result: {CAP}}}\naccelerators: {{mcp_front: false}}\n{QUIET}",
        policy_extra=BLOCK_POLICIES,
        adapters=[blocks_adapter()],
    ) as served:
        yield served


async def test_with_the_switch_off_the_front_has_no_fast_path(front_off_api: Api) -> None:
    assert guard_of(front_off_api).fast is None
    assert front_off_api.app.state.accelerators.off["mcp_front"] == "switched off in warrant.yaml"


SWITCH_CASES = [
    "block: every kind at once",
    "structured content",
    "tool error",
    "downstream lost: outcome unknown",
    "oversized result",
    "gate refusal: not permitted",
]


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize(
    ("case", "tool", "arguments"),
    [c for c in MATRIX if c[0] in SWITCH_CASES],
    ids=SWITCH_CASES,
)
async def test_with_the_switch_off_the_sdk_app_serves_and_answers_the_same(
    blocks_api: Api, front_off_api: Api, era: str, case: str, tool: str, arguments: dict[str, Any]
) -> None:
    answers = []
    for api in (blocks_api, front_off_api):
        token = await start(api, authority=ALLOWED)
        headers, body = call(tool, arguments, era)
        async with httpx.AsyncClient(base_url=api.url, headers={"Authorization": f"Bearer {token}"}, timeout=10) as c:
            answers.append(await c.post("/mcp", content=body, headers=headers))
    on, off = answers
    assert masked(on) == masked(off)


async def test_an_sdk_outside_the_range_leaves_the_front_to_the_sdk_app_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    installed = accelerators.installed_version
    monkeypatch.setattr(accelerators, "installed_version", lambda p: "2.99.0" if p == "mcp" else installed(p))
    headers, body = call("blocks__give", {"kind": "every kind at once"}, MODERN)
    with caplog.at_level(logging.WARNING, "warrant.accelerators"):
        async with serving_api(tmp_path, adapters=[blocks_adapter()], policy_extra=BLOCK_POLICIES) as api:
            assert guard_of(api).fast is None
            token = await start(api, authority=ALLOWED)
            async with httpx.AsyncClient(base_url=api.url, headers={"Authorization": f"Bearer {token}"}) as c:
                answer = await c.post("/mcp", content=body, headers=headers)
    assert answer.status_code == 200
    assert [b["type"] for b in answer.json()["result"]["content"]] == [b["type"] for b in BLOCKS["every kind at once"]]
    [warning] = [r.getMessage() for r in caplog.records if "mcp_front" in r.getMessage()]
    assert "mcp 2.99.0 is installed" in warning and "(mcp>=" in warning
