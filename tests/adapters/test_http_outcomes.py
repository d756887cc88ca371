"""How an HTTP call ends: one test per row of the classification table (gateway/adapters/http/outcome.py)."""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
from collections.abc import AsyncIterator, Iterator

import anyio
import httpx
import pytest
import respx

from gateway.adapters import CallRequest, OutcomeKind
from gateway.adapters.http import adapter as http
from gateway.adapters.http.adapter import MAX_ATTEMPTS
from tests.adapters.http_world import DOCUMENT, KEY, SECRET, Crm, create, get_contact, log_call, mocked_crm

pytestmark = pytest.mark.anyio

CREATED = {"id": "c-1", "email": "a@acme.example", "cost": "0.05"}


@pytest.fixture
def crm(monkeypatch: pytest.MonkeyPatch) -> Iterator[Crm]:
    with mocked_crm(monkeypatch) as crm:
        yield crm


def _keys(route: respx.Route) -> list[str | None]:
    return [call.request.headers.get("Idempotency-Key") for call in route.calls]


# -- 2xx ------------------------------------------------------------------------------------------
async def test_a_2xx_with_its_receipt_id_succeeds_with_a_receipt_and_the_body(crm: Crm) -> None:
    body = json.dumps(CREATED).encode()
    crm.router.post("/contacts").respond(201, content=body, headers={"Content-Type": "application/json"})
    outcome = await crm.adapter().call(create())
    assert outcome.kind is OutcomeKind.SUCCEEDED
    assert outcome.receipt == {"id": "c-1", "status": 201, "digest": hashlib.sha256(body).hexdigest()}
    assert outcome.content == [{"type": "text", "text": body.decode()}]
    assert outcome.structured == CREATED


async def test_a_2xx_json_value_that_is_not_an_object_is_structured_as_result(crm: Crm) -> None:
    crm.router.get("/contacts/c-1").respond(200, json=["a", "b"])
    outcome = await crm.adapter().call(get_contact())
    assert outcome.kind is OutcomeKind.SUCCEEDED
    assert outcome.structured == {"result": ["a", "b"]}


async def test_a_2xx_write_whose_body_is_not_json_is_unknown_never_success(crm: Crm) -> None:
    crm.router.post("/contacts").respond(201, text="<html>created</html>")
    outcome = await crm.adapter().call(create())
    assert outcome.kind is OutcomeKind.UNKNOWN
    assert outcome.code == "outcome_unknown"
    assert outcome.receipt is not None and outcome.receipt["malformed"] is True and outcome.receipt["status"] == 201


async def test_a_2xx_write_without_its_receipt_id_is_unknown(crm: Crm) -> None:
    crm.router.post("/contacts").respond(200, json={"ok": True})
    outcome = await crm.adapter().call(create())
    assert outcome.kind is OutcomeKind.UNKNOWN
    assert outcome.receipt is not None and outcome.receipt["malformed"] is True


def _with_receipt_status(
    crm: Crm, tool: str, field: str = "status", succeeded: list[object] | None = None
) -> http.HttpAdapter:
    tools = {**DOCUMENT["tools"]}
    tools[tool] = {**tools[tool], "receipt_status": {"field": field, "succeeded": succeeded or ["sent"]}}
    return crm.adapter(tools=tools)


async def test_a_2xx_write_whose_status_says_it_failed_is_contradictory_and_unknown(crm: Crm) -> None:
    said = {"id": "c-1", "status": "failed", "error": {"type": "internal_error", "message": "boom"}}
    crm.router.post("/contacts").respond(201, json=said)
    outcome = await _with_receipt_status(crm, "create_contact").call(create())
    assert outcome.kind is OutcomeKind.UNKNOWN and outcome.code == "outcome_unknown"
    assert outcome.receipt is not None and outcome.receipt["contradictory"] is True
    assert outcome.receipt["status"] == 201 and "id" not in outcome.receipt
    assert outcome.message is not None and "contradictory response" in outcome.message and '"failed"' in outcome.message


@pytest.mark.parametrize("body", [{"id": "c-1"}, {"id": "c-1", "status": None}, {"id": "c-1", "status": True}])
async def test_a_2xx_write_without_a_succeeded_status_is_never_success(crm: Crm, body: dict[str, object]) -> None:
    crm.router.post("/contacts").respond(201, json=body)
    adapter = _with_receipt_status(crm, "create_contact", succeeded=["sent", 1])
    outcome = await adapter.call(create())
    assert outcome.kind is OutcomeKind.UNKNOWN
    assert outcome.receipt is not None and outcome.receipt["contradictory"] is True


async def test_a_2xx_write_whose_nested_status_is_a_succeeded_value_succeeds(crm: Crm) -> None:
    crm.router.post("/contacts").respond(201, json={"id": "c-1", "delivery": {"state": 1}})
    outcome = await _with_receipt_status(crm, "create_contact", "delivery.state", ["sent", 1]).call(create())
    assert outcome.kind is OutcomeKind.SUCCEEDED
    assert outcome.receipt is not None and outcome.receipt["id"] == "c-1"


async def test_a_2xx_read_whose_status_contradicts_it_fails(crm: Crm) -> None:
    crm.router.get("/contacts/c-1").respond(200, json={"id": "c-1", "status": "failed"})
    outcome = await _with_receipt_status(crm, "get_contact", succeeded=["active"]).call(get_contact())
    assert outcome.kind is OutcomeKind.FAILED and outcome.code == "upstream_failed"
    assert outcome.message is not None and outcome.message.startswith("contradictory response")


async def test_a_lookup_answering_a_contradictory_body_proves_nothing(crm: Crm) -> None:
    crm.router.get(f"/contacts/by-key/{KEY}").respond(200, json={"id": "c-1", "status": "failed"})
    adapter = _with_receipt_status(crm, "create_contact")
    assert await adapter.lookup(create(), 0.0, 60.0) is None
    crm.router.get(f"/contacts/by-key/{KEY}").respond(200, json={"id": "c-1", "status": "sent"})
    found = await adapter.lookup(create(), 0.0, 60.0)
    assert found is not None and found.kind is OutcomeKind.SUCCEEDED and found.receipt is not None
    assert found.receipt["id"] == "c-1"


async def test_a_2xx_receipt_id_may_be_nested(crm: Crm) -> None:
    crm.router.post("/contacts").respond(201, json={"data": {"items": [{"id": 7}]}})
    adapter = crm.adapter()
    adapter._config.tools["create_contact"].receipt_id = "data.items.0.id"
    outcome = await adapter.call(create())
    assert outcome.kind is OutcomeKind.SUCCEEDED
    assert outcome.receipt is not None and outcome.receipt["id"] == 7


async def test_a_2xx_read_whose_body_is_not_json_fails(crm: Crm) -> None:
    crm.router.get("/contacts/c-1").respond(200, text="{not json")
    outcome = await crm.adapter().call(get_contact())
    assert (outcome.kind, outcome.code) == (OutcomeKind.FAILED, "upstream_failed")


async def test_a_2xx_with_nan_is_not_json(crm: Crm) -> None:
    crm.router.get("/contacts/c-1").respond(200, text='{"score": NaN}')
    outcome = await crm.adapter().call(get_contact())
    assert (outcome.kind, outcome.code) == (OutcomeKind.FAILED, "upstream_failed")


async def test_a_2xx_nested_past_the_json_parser_is_not_json(crm: Crm) -> None:
    # A hostile destination's answer: a RecursionError once escaped the adapter (tests/hostile/).
    deep = "[" * 100_000 + "]" * 100_000
    crm.router.get("/contacts/c-1").respond(200, text=deep, headers={"Content-Type": "application/json"})
    crm.router.post("/contacts").respond(201, text=deep, headers={"Content-Type": "application/json"})
    read, write = await crm.adapter().call(get_contact()), await crm.adapter().call(create())
    assert (read.kind, read.code) == (OutcomeKind.FAILED, "upstream_failed")
    assert (write.kind, write.code) == (OutcomeKind.UNKNOWN, "outcome_unknown")


async def test_a_204_succeeds_when_no_receipt_id_is_expected(crm: Crm) -> None:
    crm.router.post("/calls").respond(204)
    outcome = await crm.adapter().call(log_call())
    assert outcome.kind is OutcomeKind.SUCCEEDED
    assert outcome.structured == {"result": None}


async def test_a_204_to_a_write_that_should_name_its_object_is_unknown(crm: Crm) -> None:
    crm.router.post("/contacts").respond(204)
    outcome = await crm.adapter().call(create())
    assert outcome.kind is OutcomeKind.UNKNOWN


# -- 3xx, 4xx -------------------------------------------------------------------------------------
async def test_a_redirect_is_not_followed_and_a_redirected_write_is_unknown(crm: Crm) -> None:
    route = crm.router.post("/contacts").respond(303, headers={"Location": "/contacts/c-1"})
    outcome = await crm.adapter().call(create())
    assert outcome.kind is OutcomeKind.UNKNOWN
    assert route.call_count == 1


async def test_a_redirected_read_fails(crm: Crm) -> None:
    crm.router.get("/contacts/c-1").respond(301, headers={"Location": "http://elsewhere.test/"})
    outcome = await crm.adapter().call(get_contact())
    assert (outcome.kind, outcome.code) == (OutcomeKind.FAILED, "upstream_failed")


@pytest.mark.parametrize("status", [401, 403])
async def test_401_and_403_fail_unauthorized_without_a_retry(crm: Crm, status: int) -> None:
    route = crm.router.post("/contacts").respond(status, json={"error": {"type": "auth", "message": "bad token"}})
    outcome = await crm.adapter().call(create())
    assert (outcome.kind, outcome.code) == (OutcomeKind.FAILED, "upstream_unauthorized")
    assert route.call_count == 1


async def test_a_409_to_a_keyed_write_is_retried_with_the_same_key_until_it_is_done(crm: Crm) -> None:
    route = crm.router.post("/contacts")
    route.side_effect = [httpx.Response(409), httpx.Response(409), httpx.Response(201, json=CREATED)]
    outcome = await crm.adapter().call(create())
    assert outcome.kind is OutcomeKind.SUCCEEDED
    assert _keys(route) == [KEY, KEY, KEY]
    assert len(crm.ticks.waits) == 2


async def test_a_409_to_a_keyed_write_still_there_at_the_bound_is_unknown(crm: Crm) -> None:
    route = crm.router.post("/contacts").respond(409)
    outcome = await crm.adapter().call(create())
    assert (outcome.kind, outcome.code) == (OutcomeKind.UNKNOWN, "outcome_unknown")
    assert 1 < route.call_count <= MAX_ATTEMPTS


async def test_a_409_to_an_unkeyed_write_fails_without_a_retry(crm: Crm) -> None:
    route = crm.router.post("/calls").respond(409, json={"error": "conflict", "message": "already logged"})
    outcome = await crm.adapter().call(log_call())
    assert (outcome.kind, outcome.code) == (OutcomeKind.FAILED, "upstream_failed")
    assert route.call_count == 1


async def test_a_422_to_a_keyed_write_is_unknown_the_key_may_have_been_used(crm: Crm) -> None:
    route = crm.router.post("/contacts").respond(422, json={"error": "idempotency_key_reused"})
    outcome = await crm.adapter().call(create())
    assert outcome.kind is OutcomeKind.UNKNOWN
    assert route.call_count == 1


async def test_a_422_to_a_read_fails(crm: Crm) -> None:
    crm.router.get("/contacts/c-1").respond(422, json={"detail": [{"msg": "bad id"}]})
    outcome = await crm.adapter().call(get_contact())
    assert (outcome.kind, outcome.code) == (OutcomeKind.FAILED, "upstream_failed")


async def test_a_429_read_waits_retry_after_then_succeeds(crm: Crm) -> None:
    route = crm.router.get("/contacts/c-1")
    route.side_effect = [httpx.Response(429, headers={"Retry-After": "2"}), httpx.Response(200, json=CREATED)]
    outcome = await crm.adapter().call(get_contact())
    assert outcome.kind is OutcomeKind.SUCCEEDED
    assert crm.ticks.waits == [2.0]


async def test_a_429_to_a_keyed_write_at_the_bound_fails_rate_limited(crm: Crm) -> None:
    route = crm.router.post("/contacts").respond(429, headers={"Retry-After": "0"})
    outcome = await crm.adapter().call(create())
    assert (outcome.kind, outcome.code) == (OutcomeKind.FAILED, "rate_limited")
    assert route.call_count == MAX_ATTEMPTS
    assert _keys(route) == [KEY] * MAX_ATTEMPTS


async def test_a_429_to_an_unkeyed_write_fails_rate_limited_without_a_retry(crm: Crm) -> None:
    route = crm.router.post("/calls").respond(429, headers={"Retry-After": "0"})
    outcome = await crm.adapter().call(log_call())
    assert (outcome.kind, outcome.code) == (OutcomeKind.FAILED, "rate_limited")
    assert route.call_count == 1


async def test_a_retry_after_beyond_the_deadline_is_not_waited(crm: Crm) -> None:
    route = crm.router.get("/contacts/c-1").respond(429, headers={"Retry-After": "60"})
    outcome = await crm.adapter().call(get_contact(timeout=10))
    assert (outcome.kind, outcome.code) == (OutcomeKind.FAILED, "rate_limited")
    assert route.call_count == 1 and crm.ticks.waits == []


async def test_a_retry_after_http_date_is_honoured(crm: Crm) -> None:
    route = crm.router.get("/contacts/c-1")
    past = "Wed, 21 Oct 2015 07:28:00 GMT"
    route.side_effect = [httpx.Response(503, headers={"Retry-After": past}), httpx.Response(200, json=CREATED)]
    outcome = await crm.adapter().call(get_contact())
    assert outcome.kind is OutcomeKind.SUCCEEDED
    assert crm.ticks.waits == [0.0]


async def test_another_4xx_fails_with_the_destinations_error_and_is_not_retried(crm: Crm) -> None:
    route = crm.router.post("/contacts").respond(400, json={"error": {"type": "invalid_email", "message": "no @"}})
    outcome = await crm.adapter().call(create())
    assert (outcome.kind, outcome.code) == (OutcomeKind.FAILED, "upstream_failed")
    assert outcome.message is not None and "invalid_email" in outcome.message and len(outcome.message) <= 300
    assert route.call_count == 1


async def test_a_404_to_a_read_fails(crm: Crm) -> None:
    crm.router.get("/contacts/c-9").respond(404, text="no such contact", headers={"Content-Type": "text/plain"})
    outcome = await crm.adapter().call(get_contact("c-9"))
    assert (outcome.kind, outcome.code) == (OutcomeKind.FAILED, "upstream_failed")


# -- 5xx ------------------------------------------------------------------------------------------
async def test_a_503_read_is_retried_then_fails_unavailable_at_the_bound(crm: Crm) -> None:
    route = crm.router.get("/contacts/c-1").respond(503)
    outcome = await crm.adapter().call(get_contact())
    assert (outcome.kind, outcome.code) == (OutcomeKind.FAILED, "upstream_unavailable")
    assert route.call_count > 1


async def test_a_503_to_an_unkeyed_write_is_unknown_without_a_retry(crm: Crm) -> None:
    route = crm.router.post("/calls").respond(503, headers={"Retry-After": "0"})
    outcome = await crm.adapter().call(log_call())
    assert outcome.kind is OutcomeKind.UNKNOWN
    assert route.call_count == 1


async def test_a_503_to_a_keyed_write_is_retried_and_unknown_at_the_bound(crm: Crm) -> None:
    route = crm.router.post("/contacts").respond(503, headers={"Retry-After": "0"})
    outcome = await crm.adapter().call(create())
    assert outcome.kind is OutcomeKind.UNKNOWN
    assert route.call_count == MAX_ATTEMPTS


async def test_a_503_then_a_success_for_a_keyed_write_succeeds(crm: Crm) -> None:
    route = crm.router.post("/contacts")
    route.side_effect = [httpx.Response(503), httpx.Response(201, json=CREATED)]
    outcome = await crm.adapter().call(create())
    assert outcome.kind is OutcomeKind.SUCCEEDED


@pytest.mark.parametrize("request_", [create(), log_call()], ids=["keyed", "unkeyed"])
async def test_a_500_to_a_write_is_unknown_and_never_retried(crm: Crm, request_: object) -> None:
    contacts, calls = crm.router.post("/contacts").respond(500), crm.router.post("/calls").respond(500)
    outcome = await crm.adapter().call(request_)  # type: ignore[arg-type]
    assert (outcome.kind, outcome.code) == (OutcomeKind.UNKNOWN, "outcome_unknown")
    assert contacts.call_count + calls.call_count == 1


async def test_a_502_read_is_retried_and_then_succeeds(crm: Crm) -> None:
    route = crm.router.get("/contacts/c-1")
    route.side_effect = [httpx.Response(502), httpx.Response(200, json=CREATED)]
    outcome = await crm.adapter().call(get_contact())
    assert outcome.kind is OutcomeKind.SUCCEEDED
    assert len(crm.ticks.waits) == 1


# -- no answer ------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "error", [httpx.ReadTimeout("slow"), httpx.RemoteProtocolError("reset"), httpx.ReadError("reset")]
)
async def test_a_write_without_a_complete_answer_is_unknown_and_never_retried(crm: Crm, error: Exception) -> None:
    route = crm.router.post("/contacts").mock(side_effect=error)
    outcome = await crm.adapter().call(create())
    assert (outcome.kind, outcome.code) == (OutcomeKind.UNKNOWN, "outcome_unknown")
    assert route.call_count == 1


async def test_a_read_timeout_on_a_read_is_retried(crm: Crm) -> None:
    route = crm.router.get("/contacts/c-1")
    route.side_effect = [httpx.ReadTimeout("slow"), httpx.Response(200, json=CREATED)]
    outcome = await crm.adapter().call(get_contact())
    assert outcome.kind is OutcomeKind.SUCCEEDED


async def test_a_read_that_never_answers_fails_unavailable(crm: Crm) -> None:
    crm.router.get("/contacts/c-1").mock(side_effect=httpx.ReadTimeout("slow"))
    outcome = await crm.adapter().call(get_contact())
    assert (outcome.kind, outcome.code) == (OutcomeKind.FAILED, "upstream_unavailable")


@pytest.mark.parametrize("error", [httpx.ConnectError("refused"), httpx.ConnectTimeout("no route")])
async def test_a_write_that_could_not_connect_is_not_sent(crm: Crm, error: Exception) -> None:
    route = crm.router.post("/contacts").mock(side_effect=error)
    outcome = await crm.adapter().call(create())
    assert (outcome.kind, outcome.code) == (OutcomeKind.NOT_SENT, "upstream_unavailable")
    assert route.call_count > 1  # nothing left, so it was safe to try again


async def test_a_write_that_connects_on_a_later_attempt_succeeds(crm: Crm) -> None:
    route = crm.router.post("/calls")
    route.side_effect = [httpx.ConnectError("refused"), httpx.Response(201, json={"id": "call-1"})]
    outcome = await crm.adapter().call(log_call())
    assert outcome.kind is OutcomeKind.SUCCEEDED


async def test_a_read_that_never_connects_is_not_sent(crm: Crm) -> None:
    crm.router.get("/contacts/c-1").mock(side_effect=httpx.ConnectError("refused"))
    outcome = await crm.adapter().call(get_contact())
    assert (outcome.kind, outcome.code) == (OutcomeKind.NOT_SENT, "upstream_unavailable")


async def test_a_write_that_may_have_acted_stays_unknown_whatever_follows(crm: Crm) -> None:
    route = crm.router.post("/contacts")
    route.side_effect = [httpx.Response(409), httpx.ConnectError("refused"), httpx.Response(400, json={})]
    outcome = await crm.adapter().call(create())
    assert outcome.kind is OutcomeKind.UNKNOWN
    assert route.call_count == 3


async def test_a_write_refused_then_not_reached_is_failed_not_not_sent(crm: Crm) -> None:
    route = crm.router.post("/contacts")
    route.side_effect = [httpx.Response(429, headers={"Retry-After": "0"})] + [httpx.ConnectError("x")] * 10
    outcome = await crm.adapter().call(create())
    assert outcome.kind is OutcomeKind.FAILED  # a request did reach it: "not sent" would be untrue


# -- the bound ------------------------------------------------------------------------------------
async def test_every_retry_ends_within_the_calls_timeout(crm: Crm) -> None:
    crm.router.post("/contacts").respond(409, headers={"Retry-After": "3"})
    start = crm.ticks.now
    outcome = await crm.adapter().call(create(timeout=10))
    assert outcome.kind is OutcomeKind.UNKNOWN
    assert crm.ticks.now - start < 10
    assert crm.ticks.waits == [3.0, 3.0]  # a third wait would pass the deadline


async def test_each_attempt_is_given_only_the_time_that_remains(crm: Crm) -> None:
    route = crm.router.get("/contacts/c-1")
    route.side_effect = [httpx.Response(503, headers={"Retry-After": "4"}), httpx.Response(200, json=CREATED)]
    await crm.adapter().call(get_contact(timeout=10))
    first, second = (call.request.extensions["timeout"]["read"] for call in route.calls)
    assert first == pytest.approx(9.0) and second == pytest.approx(5.0)


async def test_a_body_that_never_finishes_is_cut_at_the_calls_bound_and_a_write_is_unknown(crm: Crm) -> None:
    async def forever(request: httpx.Request) -> httpx.Response:
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    crm.router.post("/contacts").mock(side_effect=forever)
    with anyio.fail_after(5):
        outcome = await crm.adapter().call(create(timeout=0.2))
    assert (outcome.kind, outcome.code) == (OutcomeKind.UNKNOWN, "outcome_unknown")


@pytest.mark.parametrize("request_", [create(), get_contact()])
async def test_a_2xx_body_past_the_cap_is_a_success_with_its_body_withheld(
    crm: Crm, monkeypatch: pytest.MonkeyPatch, request_: CallRequest
) -> None:
    # The destination did it (2xx): a write stays a success; the gate answers payload_too_large
    # (a read fails there). Nothing of the body is passed on.
    monkeypatch.setattr(http, "MAX_BODY", 64)
    crm.router.route().respond(200, json={"id": "c-1", "padding": "x" * 100})
    outcome = await crm.adapter().call(request_)
    assert outcome.kind is OutcomeKind.SUCCEEDED
    assert outcome.withheld is not None and outcome.withheld > 64
    assert (outcome.content, outcome.structured) == ([], None)
    assert outcome.receipt is not None and outcome.receipt["withheld"] is True


async def test_the_adapter_stops_reading_at_the_gateways_cap(crm: Crm) -> None:
    sent: list[int] = []

    async def endless() -> AsyncIterator[bytes]:
        for _ in range(4000):  # 4 MB, if anyone read it all
            sent.append(1)
            yield b"x" * 1000

    crm.router.route().mock(return_value=httpx.Response(200, content=endless()))
    adapter = crm.adapter()
    adapter.max_result_bytes = 1000
    outcome = await adapter.call(get_contact())
    assert outcome.withheld is not None and 1000 < outcome.withheld <= 2000
    assert len(sent) < 10


async def test_an_unknown_charset_is_read_as_utf8(crm: Crm) -> None:
    body = json.dumps(CREATED).encode()
    crm.router.get("/contacts/c-1").respond(
        200, content=body, headers={"Content-Type": "application/json; charset=nope"}
    )
    outcome = await crm.adapter().call(get_contact())
    assert outcome.kind is OutcomeKind.SUCCEEDED


# -- cost -----------------------------------------------------------------------------------------
@pytest.mark.parametrize(("cost", "reported"), [("0.05", "0.05"), (0.05, "0.05"), (3, "3"), ("12.500", "12.500")])
async def test_the_reported_cost_is_a_decimal_string(crm: Crm, cost: object, reported: str) -> None:
    crm.router.post("/contacts").respond(201, json={"id": "c-1", "cost": cost})
    outcome = await crm.adapter().call(create())
    assert outcome.reported_cost == reported


@pytest.mark.parametrize("cost", ["-1", "abc", "1e3", True, {"amount": 1}, -0.5, "NaN"])
async def test_a_malformed_cost_is_ignored_with_a_warning(
    crm: Crm, caplog: pytest.LogCaptureFixture, cost: object
) -> None:
    crm.router.post("/contacts").respond(201, json={"id": "c-1", "cost": cost})
    with caplog.at_level(logging.WARNING, logger="warrant.adapters.http"):
        outcome = await crm.adapter().call(create())
    assert outcome.kind is OutcomeKind.SUCCEEDED and outcome.reported_cost is None
    assert any(r.levelno == logging.WARNING for r in caplog.records)


async def test_no_cost_field_means_no_reported_cost(crm: Crm) -> None:
    crm.router.post("/contacts").respond(201, json={"id": "c-1"})
    outcome = await crm.adapter().call(create())
    assert outcome.kind is OutcomeKind.SUCCEEDED and outcome.reported_cost is None


# -- what is sent ---------------------------------------------------------------------------------
async def test_only_configured_headers_the_user_agent_and_the_key_are_sent(crm: Crm) -> None:
    route = crm.router.post("/contacts").respond(201, json=CREATED)
    await crm.adapter().call(create())
    headers = route.calls[0].request.headers
    assert headers["Authorization"] == f"Bearer {SECRET}"
    assert headers["User-Agent"] == "warrant-gateway"
    assert headers["Idempotency-Key"] == KEY
    assert set(headers) == {
        "host", "accept", "accept-encoding", "connection", "user-agent", "authorization",
        "idempotency-key", "content-length", "content-type",
    }  # fmt: skip


async def test_arguments_the_path_cannot_take_stop_the_call_before_anything_is_sent(crm: Crm) -> None:
    route = crm.router.get(url__regex=r".*").respond(200, json={})
    adapter = crm.adapter()
    for contact_id in ("..", "", None):
        outcome = await adapter.call(get_contact(contact_id))  # type: ignore[arg-type]
        assert (outcome.kind, outcome.code) == (OutcomeKind.NOT_SENT, "invalid_arguments")
    assert route.call_count == 0


async def test_the_client_is_made_once_and_closed(crm: Crm) -> None:
    crm.router.get("/contacts/c-1").respond(200, json=CREATED)
    adapter = crm.adapter()
    await adapter.start()
    client = adapter._client
    assert client is not None
    await adapter.call(get_contact())
    assert adapter._client is client
    await adapter.close()
    assert client.is_closed and adapter._client is None
