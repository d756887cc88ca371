"""Hostile input at /mcp, against a real server: hypothesis-made requests of every wrong kind.

Malformed JSON, valid JSON of wrong shapes, JSON-RPC envelopes with wrong types for jsonrpc, id,
method and params, batches with duplicate ids, unicode edge cases (lone surrogates escaped in
JSON, NUL, bidi overrides, overlong names), wrong or missing Accept, Content-Type,
MCP-Protocol-Version and routing headers, with and without a valid lease token; then tools/call
through a valid lease on the real tools with fuzzed arguments, in both protocol eras; and a fixed
set of huge and deeply nested bodies. Every answer: a documented HTTP status, JSON-RPC (or empty
for 202), no stack trace and no secret, no 5xx without a logged reason. At the end nothing
recorded before is lost or changed and the ledger verifies (tests/hostile/checks.py).

A fixed number of examples, derandomized: the same requests on every run.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp_types import INTERNAL_ERROR

from gateway.errors import CALL_CODES
from gateway.mcp import WARRANT_TOOLS as GATEWAY_TOOLS
from tests.hostile.checks import SERVER_USES_RANDOM, answer_problems, lost_or_changed, record_of, server_error_problem
from tests.hostile.conftest import MCP_HEADERS, World

pytestmark = SERVER_USES_RANDOM

EXAMPLES = 200
FUZZ = settings(
    max_examples=EXAMPLES,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture],
)

# Statuses the front and the SDK answer with, each documented: 202 a notification or response
# accepted; 400 a parse or envelope error; 401 no or an unknown lease token; 404 a JSON-RPC
# method not found on the modern path; 406 Accept; 413 a body too large; 415 Content-Type;
# 421 a Host not allowed; 422 the SDK's header validation.
DOCUMENTED = {200, 202, 400, 401, 404, 405, 406, 413, 415, 421, 422}

REAL_TOOLS = ["shop__find", "shop__order", "shop__charge"]
WARRANT_TOOLS = list(GATEWAY_TOOLS)
ODD_TEXT = ["\u0000", "\u202e", "\u200b", "\ufeff", "\uffff", "\U0010ffff", "e\u0301", "\u2028", "\x7f", "🦀"]
ESCAPED_SURROGATES = ["\\ud800", "\\udfff", "a\\udc00b", "\\ud800\\u0041", "\\udbff\\udbff"]

text = st.text(max_size=24) | st.sampled_from(ODD_TEXT) | st.lists(st.sampled_from(ODD_TEXT), max_size=6).map("x".join)
names = (
    st.sampled_from(REAL_TOOLS + WARRANT_TOOLS) | text | st.builds(lambda n: "shop__" + "x" * n, st.integers(40, 5000))
)
scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | text
json_values = st.recursive(
    scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(text, inner, max_size=4), max_leaves=12
)
ids = (
    st.integers()
    | st.integers(min_value=2**63, max_value=2**80)
    | text
    | st.none()
    | st.floats(allow_nan=False)
    | st.booleans()
    | st.lists(scalars, max_size=2)
    | st.dictionaries(text, scalars, max_size=2)
)
methods = (
    st.sampled_from(["tools/call", "tools/list", "initialize", "server/discover", "ping", "resources/list"]) | text
)
params = json_values | st.fixed_dictionaries(
    {"name": names, "arguments": json_values}, optional={"_meta": json_values | st.just({"warrant/operation_id": "x"})}
)


@st.composite
def envelopes(draw: st.DrawFn) -> dict[str, Any]:
    message: dict[str, Any] = {}
    jsonrpc = draw(st.sampled_from(["2.0", "2.0", "2.0", "1.0", 2.0, None, "missing"]))
    if jsonrpc != "missing":
        message["jsonrpc"] = jsonrpc
    for key, values in (("id", ids), ("method", methods), ("params", params)):
        if draw(st.integers(0, 4)):  # present four times in five
            message[key] = draw(values)
    return message


def _call_raw(tool: str, arguments: bytes) -> bytes:
    """A tools/call whose arguments are raw JSON text (what json.dumps would not write)."""
    head = b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"' + tool.encode() + b'","arguments":'
    return head + arguments + b"}}"


def _escaped_surrogate_body(name: str, value: str) -> bytes:
    return _call_raw(name, b'{"q":"' + value.encode() + b'"}')


bodies = st.one_of(
    st.binary(max_size=64),
    st.text(max_size=64).map(str.encode),
    st.builds(lambda m, cut: json.dumps(m).encode()[:cut], envelopes(), st.integers(0, 60)),  # cut short
    json_values.map(lambda v: json.dumps(v).encode()),
    envelopes().map(lambda m: json.dumps(m).encode()),
    st.lists(envelopes(), min_size=1, max_size=4).map(lambda ms: json.dumps(ms).encode()),
    st.builds(lambda m, n: json.dumps([m] * n).encode(), envelopes(), st.integers(2, 4)),  # duplicate ids
    st.builds(
        _escaped_surrogate_body,
        st.sampled_from(["shop__find", "shop__\\ud800", "\\udfff"]),
        st.sampled_from(ESCAPED_SURROGATES),
    ),
)
accepts = st.sampled_from(
    [MCP_HEADERS["Accept"], "application/json", "text/event-stream", "*/*", None, "text/html", "application/json;q=0"]
)
content_types = st.sampled_from(
    ["application/json", None, "text/plain", "application/json; charset=latin-1", "application/x-www-form-urlencoded"]
)
versions = st.sampled_from([None, "2025-11-25", "2026-07-28", "2025-03-26", "1999-01-01", "garbage", ""])
auths = st.sampled_from(
    ["valid", None, "Bearer", "Bearer garbage", "Basic eA==", "Bearer " + "a" * 9000, "bearer valid"]
)


def check(world: World, response: httpx.Response, mark: int) -> None:
    problems = answer_problems(response, world.secrets)
    error = server_error_problem(response, world.log.since(mark))
    if error is not None:
        problems.append(error)
    if response.status_code not in DOCUMENTED and response.status_code < 500:
        problems.append(f"an undocumented status {response.status_code}")
    if response.headers.get("content-type", "").startswith("application/json"):
        problems += jsonrpc_problems(response)
    elif response.content and not 400 <= response.status_code < 500:
        problems.append("a body that is not JSON, not with an HTTP error")  # the SDK's 4xx answers are text
    assert not problems, f"{response.status_code} {response.content[:300]!r}: {problems}"


def jsonrpc_problems(response: httpx.Response) -> list[str]:
    """The answer is a JSON-RPC response (or a list of them): a result, or an error with a code."""
    try:
        body = response.json()
    except ValueError:
        return ["the body is not JSON"]
    messages = body if isinstance(body, list) else [body]
    problems = []
    for message in messages:
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            problems.append("not a JSON-RPC 2.0 message")
        elif "result" in message:
            continue
        elif not isinstance((error := message.get("error")), dict) or not isinstance(error.get("code"), int):
            problems.append("neither a result nor an error with an integer code")
        elif error["code"] == INTERNAL_ERROR:  # logged with a reference, but a bug of ours all the same
            problems.append(f"an internal error: {error.get('message')}")
    return problems


def post(world: World, body: bytes, headers: dict[str, str]) -> tuple[httpx.Response, int]:
    mark = world.log.mark()
    return world.http.post(f"{world.api.url}/mcp", content=body, headers=headers), mark


@given(body=bodies, accept=accepts, content_type=content_types, version=versions, auth=auths, route=st.booleans())
@FUZZ
def test_malformed_requests_are_answered_without_a_crash_a_trace_or_a_secret(
    world: World,
    body: bytes,
    accept: str | None,
    content_type: str | None,
    version: str | None,
    auth: str | None,
    route: bool,
) -> None:
    headers: dict[str, str] = {}
    if accept is not None:
        headers["Accept"] = accept
    if content_type is not None:
        headers["Content-Type"] = content_type
    if version is not None:
        headers["MCP-Protocol-Version"] = version
    if route:  # the modern era's routing headers, right or wrong
        headers["Mcp-Method"] = "tools/call"
        headers["Mcp-Name"] = "shop__find"
    if auth is not None:
        headers["Authorization"] = auth.replace("valid", world.token) if "valid" in auth else auth
    response, mark = post(world, body, headers)
    check(world, response, mark)


@given(tool=names, arguments=st.dictionaries(text, json_values, max_size=5), modern=st.booleans(), meta=st.booleans())
@FUZZ
def test_tool_calls_with_fuzzed_arguments_are_results_or_json_rpc_errors(
    world: World, tool: str, arguments: dict[str, Any], modern: bool, meta: bool
) -> None:
    params: dict[str, Any] = {"name": tool, "arguments": arguments}
    if meta:
        params["_meta"] = {"warrant/operation_id": f"fuzz-{len(json.dumps(arguments))}"}
    headers = {**MCP_HEADERS, "Authorization": f"Bearer {world.token}"}
    if modern:
        headers |= {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": _header_text(tool)}
        params.setdefault("_meta", {})["io.modelcontextprotocol/protocolVersion"] = "2026-07-28"
    body = json.dumps({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params}).encode()
    response, mark = post(world, body, headers)
    check(world, response, mark)
    message = response.json()
    if response.status_code == 200 and "result" in message and message["result"].get("isError"):
        code = message["result"]["structuredContent"]["error"]["code"]
        assert code in CALL_CODES, code


@given(arguments=st.dictionaries(text, json_values, max_size=5), tool=st.sampled_from(REAL_TOOLS + WARRANT_TOOLS))
@FUZZ
def test_a_known_tool_with_fuzzed_arguments_through_the_sdk_path(
    world: World, arguments: dict[str, Any], tool: str
) -> None:
    # `tools/list` first (the SDK's own path), then the call with an id the list used: a repeated id.
    headers = {**MCP_HEADERS, "Authorization": f"Bearer {world.token}"}
    for message in (
        {"jsonrpc": "2.0", "id": "dup", "method": "tools/list", "params": {}},
        {"jsonrpc": "2.0", "id": "dup", "method": "tools/call", "params": {"name": tool, "arguments": arguments}},
    ):
        response, mark = post(world, json.dumps(message).encode(), headers)
        check(world, response, mark)


def _header_text(value: str) -> str:
    """An HTTP header value httpx can send: printable ASCII (others replaced), no edge spaces."""
    return "".join(c if " " <= c <= "~" else "?" for c in value).strip() or "?"


DEEP = 100_000
FIXED: dict[str, bytes] = {
    "100k-deep array": b"[" * DEEP + b"]" * DEEP,
    "100k-deep arguments": _call_raw("shop__find", b'{"q":' + b"[" * DEEP + b"]" * DEEP + b"}"),
    "100k-deep objects": b'{"a":' * DEEP + b"1" + b"}" * DEEP,
    "1000-deep arguments": _call_raw("shop__charge", b'{"card":"x","n":' + b"[" * 1000 + b"]" * 1000 + b"}"),
    "a 3 MB string": _call_raw("shop__find", json.dumps({"q": "x" * 3_000_000}).encode()),
    "a 100k-character tool name": _call_raw("x" * 100_000, b"{}"),
    "100k arguments": _call_raw("shop__find", json.dumps({str(i): i for i in range(100_000)}).encode()),
    "a 5000-digit id": b'{"jsonrpc":"2.0","id":' + b"9" * 5000 + b',"method":"tools/list"}',
    "1000 duplicate ids": json.dumps([{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}] * 1000).encode(),
    "NaN and Infinity": _call_raw("shop__charge", b'{"card":NaN,"n":Infinity}'),
}


@pytest.mark.parametrize("name", list(FIXED))
def test_huge_and_deep_bodies_are_refused_cleanly(world: World, name: str) -> None:
    headers = {**MCP_HEADERS, "Authorization": f"Bearer {world.token}"}
    for version in (None, "2026-07-28"):
        response, mark = post(world, FIXED[name], headers | ({"MCP-Protocol-Version": version} if version else {}))
        check(world, response, mark)


def test_nothing_recorded_before_the_fuzzing_is_lost_or_changed(world: World) -> None:
    after = record_of(world.ops)
    assert lost_or_changed(world.before, after, world.ops) == []
    assert set(after.runs) == set(world.before.runs)  # /mcp creates no run
    assert len(after.actions) > len(world.before.actions)  # the fuzzers' calls were recorded too
