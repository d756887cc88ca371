"""`HttpAdapter.lookup`: a 2xx naming the object proves it happened; a 404 proves it did not only
between one tool timeout after dispatch and `key_retention`; everything else cannot tell."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from gateway.adapters import CallRequest, OutcomeKind
from tests.adapters.http_world import KEY, Crm, create, get_contact, log_call, mocked_crm

pytestmark = pytest.mark.anyio

DISPATCHED = 1_800_000_000.0
TIMEOUT = 10  # create_contact's
RETENTION = 24 * 3600
BY_KEY = f"/contacts/by-key/{KEY}"


@pytest.fixture
def crm(monkeypatch: pytest.MonkeyPatch) -> Iterator[Crm]:
    with mocked_crm(monkeypatch) as crm:
        yield crm


async def test_a_2xx_naming_the_object_proves_it_happened(crm: Crm) -> None:
    route = crm.router.get(BY_KEY).respond(200, json={"id": "c-1", "email": "a@acme.example"})
    outcome = await crm.adapter().lookup(create(), DISPATCHED, DISPATCHED + 1)
    assert outcome is not None and outcome.kind is OutcomeKind.SUCCEEDED
    assert outcome.receipt is not None and outcome.receipt["id"] == "c-1" and outcome.receipt["status"] == 200
    assert outcome.structured == {"id": "c-1", "email": "a@acme.example"}
    assert route.call_count == 1


async def test_a_2xx_without_the_receipt_id_cannot_tell(crm: Crm) -> None:
    crm.router.get(BY_KEY).respond(200, json={"status": "pending"})
    assert await crm.adapter().lookup(create(), DISPATCHED, DISPATCHED + 60) is None


async def test_a_2xx_that_is_not_json_cannot_tell(crm: Crm) -> None:
    crm.router.get(BY_KEY).respond(200, text="ok")
    assert await crm.adapter().lookup(create(), DISPATCHED, DISPATCHED + 60) is None


@pytest.mark.parametrize("elapsed", [TIMEOUT, 60, RETENTION])
async def test_a_404_after_the_timeout_and_within_retention_proves_it_did_not_happen(crm: Crm, elapsed: float) -> None:
    crm.router.get(BY_KEY).respond(404)
    outcome = await crm.adapter().lookup(create(), DISPATCHED, DISPATCHED + elapsed)
    assert outcome is not None and (outcome.kind, outcome.code) == (OutcomeKind.FAILED, "upstream_failed")


async def test_a_404_before_the_tool_timeout_has_passed_cannot_tell(crm: Crm) -> None:
    crm.router.get(BY_KEY).respond(404)
    assert await crm.adapter().lookup(create(), DISPATCHED, DISPATCHED + TIMEOUT - 0.5) is None


async def test_a_404_after_the_key_was_forgotten_cannot_tell(crm: Crm) -> None:
    crm.router.get(BY_KEY).respond(404)
    assert await crm.adapter().lookup(create(), DISPATCHED, DISPATCHED + RETENTION + 1) is None


@pytest.mark.parametrize("status", [400, 401, 409, 410, 429, 500, 503, 302])
async def test_any_other_status_cannot_tell(crm: Crm, status: int) -> None:
    crm.router.get(BY_KEY).respond(status)
    assert await crm.adapter().lookup(create(), DISPATCHED, DISPATCHED + 60) is None


@pytest.mark.parametrize("error", [httpx.ConnectError("refused"), httpx.ReadTimeout("slow")])
async def test_a_network_error_cannot_tell(crm: Crm, error: Exception) -> None:
    crm.router.get(BY_KEY).mock(side_effect=error)
    assert await crm.adapter().lookup(create(), DISPATCHED, DISPATCHED + 60) is None


async def test_a_tool_without_lookup_cannot_tell(crm: Crm) -> None:
    route = crm.router.route().respond(404)
    adapter = crm.adapter()
    assert await adapter.lookup(log_call(), DISPATCHED, DISPATCHED + 60) is None
    assert await adapter.lookup(get_contact(), DISPATCHED, DISPATCHED + 60) is None
    assert route.call_count == 0


async def test_a_call_without_an_idempotency_key_cannot_tell(crm: Crm) -> None:
    route = crm.router.route().respond(404)
    assert await crm.adapter().lookup(create(key=None), DISPATCHED, DISPATCHED + 60) is None
    assert route.call_count == 0


async def test_a_lookup_path_may_take_arguments_and_a_query(crm: Crm) -> None:
    tools = {
        "create_contact": {
            "description": "Create a contact.",
            "method": "POST",
            "path": "/lists/{list_id}/contacts",
            "idempotency_header": "Idempotency-Key",
            "receipt_id": "id",
            "lookup": {"path": "/lists/{list_id}/contacts", "query": ["email", "idempotency_key"]},
        }
    }
    route = crm.router.get("/lists/l%201/contacts", params={"email": "a@acme.example", "idempotency_key": KEY})
    route.respond(200, json={"id": "c-1"})
    request = CallRequest("create_contact", {"list_id": "l 1", "email": "a@acme.example"}, "r", "a", KEY, 10)
    outcome = await crm.adapter(tools=tools).lookup(request, DISPATCHED, DISPATCHED + 60)
    assert outcome is not None and outcome.kind is OutcomeKind.SUCCEEDED
