"""The adapter's credential never enters an outcome (receipt, content, structured, message) or a
log record, whatever the destination answers, even when it echoes the credential back."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from gateway.adapters import CallRequest, Outcome
from tests.adapters.http_world import KEY, SECRET, Crm, create, get_contact, log_call, mocked_crm

pytestmark = pytest.mark.anyio

ECHO = {"error": {"type": "auth", "message": f"token Bearer {SECRET} rejected"}, "seen": {"Authorization": SECRET}}
LONG = "x" * 260 + f" Bearer {SECRET} " + "y" * 50  # the secret straddles the message's cut

CASES: dict[str, tuple[CallRequest, list[Any]]] = {
    "2xx echoing it": (create(), [httpx.Response(201, json={"id": "c-1", "headers": {"Authorization": SECRET}})]),
    "2xx naming the object by it": (create(), [httpx.Response(201, json={"id": SECRET})]),
    "2xx with it as the cost": (create(), [httpx.Response(201, json={"id": "c-1", "cost": SECRET})]),
    "2xx not json": (create(), [httpx.Response(201, text=f"created for {SECRET}")]),
    "2xx read echoing it": (get_contact(), [httpx.Response(200, json=[SECRET])]),
    "204": (log_call(), [httpx.Response(204)]),
    "302 to it": (create(), [httpx.Response(302, headers={"Location": f"http://x.test/?t={SECRET}"})]),
    "401": (create(), [httpx.Response(401, json=ECHO)]),
    "403": (get_contact(), [httpx.Response(403, json=ECHO)]),
    "400 json": (create(), [httpx.Response(400, json=ECHO)]),
    "400 text at the cut": (create(), [httpx.Response(400, text=LONG, headers={"Content-Type": "text/plain"})]),
    "404 read": (get_contact(), [httpx.Response(404, text=SECRET, headers={"Content-Type": "text/plain"})]),
    "409 keyed": (create(), [httpx.Response(409, json=ECHO)] * 6),
    "409 unkeyed": (log_call(), [httpx.Response(409, json=ECHO)]),
    "422 keyed": (create(), [httpx.Response(422, json=ECHO)]),
    "429 keyed": (create(), [httpx.Response(429, json=ECHO, headers={"Retry-After": "0"})] * 6),
    "429 unkeyed": (log_call(), [httpx.Response(429, json=ECHO)]),
    "503 read": (get_contact(), [httpx.Response(503, json=ECHO)] * 6),
    "503 unkeyed": (log_call(), [httpx.Response(503, json=ECHO)]),
    "500 write": (create(), [httpx.Response(500, json=ECHO)]),
    "read timeout": (create(), [httpx.ReadTimeout(f"timed out sending {SECRET}")]),
    "connect error": (create(), [httpx.ConnectError(f"refused {SECRET}")] * 6),
    "reset on a read": (get_contact(), [httpx.RemoteProtocolError(f"reset {SECRET}")] * 6),
}


@pytest.fixture
def crm(monkeypatch: pytest.MonkeyPatch) -> Iterator[Crm]:
    with mocked_crm(monkeypatch) as crm:
        yield crm


def _assert_clean(outcome: Outcome | None, caplog: pytest.LogCaptureFixture) -> None:
    assert SECRET not in repr(outcome)
    assert SECRET[:8] not in repr(outcome)  # nor a cut-off piece of it
    for record in caplog.records:
        assert SECRET not in record.getMessage()
        assert SECRET not in repr(record.args) and SECRET not in str(record.exc_info)


@pytest.mark.parametrize("case", CASES)
async def test_the_credential_never_leaves_in_an_outcome_or_a_log(
    crm: Crm, caplog: pytest.LogCaptureFixture, case: str
) -> None:
    request, answers = CASES[case]
    crm.router.route().mock(side_effect=answers)
    caplog.set_level(logging.DEBUG)
    outcome = await crm.adapter().call(request)
    _assert_clean(outcome, caplog)


@pytest.mark.parametrize(
    "answer",
    [
        httpx.Response(200, json={"id": SECRET, "echo": SECRET}),
        httpx.Response(404, text=SECRET),
        httpx.Response(500, json=ECHO),
        httpx.ConnectError(SECRET),
    ],
)
async def test_the_credential_never_leaves_in_a_lookup(crm: Crm, caplog: pytest.LogCaptureFixture, answer: Any) -> None:
    crm.router.get(f"/contacts/by-key/{KEY}").mock(side_effect=[answer])
    caplog.set_level(logging.DEBUG)
    outcome = await crm.adapter().lookup(create(), 0.0, 60.0)
    _assert_clean(outcome, caplog)


async def test_the_credential_is_sent_to_the_destination(crm: Crm) -> None:
    route = crm.router.post("/contacts").respond(201, json={"id": SECRET})
    outcome = await crm.adapter().call(create())
    assert route.calls[0].request.headers["Authorization"] == f"Bearer {SECRET}"
    assert outcome.receipt is not None and outcome.receipt["id"] == "[redacted]"
