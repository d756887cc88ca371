"""Stripe-like idempotency keys, shown on the CRM's writes; the key row is the ground truth of
whether an effect happened."""

from __future__ import annotations

import anyio
import httpx
import pytest

from examples.services import crm
from examples.services.idempotency import KEY_RETENTION
from tests.services.conftest import WAIT, Svc

pytestmark = pytest.mark.anyio

ANA = {"email": "ana@acme.example", "name": "Ana"}


def key(value: str) -> dict[str, str]:
    return {"Idempotency-Key": value}


async def test_a_repeat_with_the_same_key_and_body_replays_the_stored_response_and_writes_once(crm_svc: Svc) -> None:
    first = await crm_svc.client.post("/contacts", json=ANA, headers=key("k1"))
    again = await crm_svc.client.post("/contacts", json={"name": "Ana", "email": "ana@acme.example"}, headers=key("k1"))
    assert first.status_code == again.status_code == 201
    assert again.content == first.content
    assert "Idempotent-Replayed" not in first.headers
    assert again.headers["Idempotent-Replayed"] == "true"
    assert crm_svc.count("contacts") == 1
    assert crm_svc.rows("SELECT state, status FROM idempotency_keys WHERE key = 'k1'") == [("done", 201)]


async def test_writes_without_a_key_each_happen(crm_svc: Svc) -> None:
    for _ in range(2):
        assert (await crm_svc.client.post("/contacts", json=ANA)).status_code == 201
    assert crm_svc.count("contacts") == 2
    assert crm_svc.count("idempotency_keys") == 0


async def test_the_same_key_with_another_body_or_path_is_refused_with_422_and_writes_nothing(crm_svc: Svc) -> None:
    created = await crm_svc.client.post("/contacts", json=ANA, headers=key("k1"))
    other_body = await crm_svc.client.post("/contacts", json={**ANA, "name": "Bob"}, headers=key("k1"))
    other_path = await crm_svc.client.post(f"/contacts/{created.json()['id']}/notes", json=ANA, headers=key("k1"))
    for refused in (other_body, other_path):
        assert refused.status_code == 422
        assert refused.json()["error"]["type"] == "idempotency_error"
    assert crm_svc.count("contacts") == 1
    assert crm_svc.count("notes") == 0


async def test_a_repeat_while_the_first_is_in_flight_is_refused_with_409(crm_svc: Svc) -> None:
    crm_svc.sleeper.hold = True
    await crm_svc.fault(method="POST", path="/contacts", mode="delay", delay=2.0)
    results: dict[str, httpx.Response] = {}

    async def first() -> None:
        results["first"] = await crm_svc.client.post("/contacts", json=ANA, headers=key("k1"))

    with anyio.fail_after(WAIT):
        async with anyio.create_task_group() as tg:
            tg.start_soon(first)
            await crm_svc.sleeper.entered.wait()  # the first has claimed the key and is delayed
            second = await crm_svc.client.post("/contacts", json=ANA, headers=key("k1"))
            lookup = await crm_svc.client.get("/by-key/k1")
            crm_svc.sleeper.release.set()
    assert second.status_code == lookup.status_code == 409
    assert second.json()["error"]["type"] == lookup.json()["error"]["type"] == "idempotency_in_flight"
    assert results["first"].status_code == 201
    assert crm_svc.sleeper.delays == [2.0]
    assert crm_svc.count("contacts") == 1


async def test_lookup_by_key_answers_the_stored_body_or_404(crm_svc: Svc) -> None:
    created = await crm_svc.client.post("/contacts", json=ANA, headers=key("k1"))
    found = await crm_svc.client.get("/by-key/k1")
    assert found.status_code == 200
    assert found.content == created.content
    assert found.json()["id"].startswith("ct_")
    missing = await crm_svc.client.get("/by-key/never-sent")
    assert missing.status_code == 404
    assert missing.json() == {"error": {"type": "not_found", "message": missing.json()["error"]["message"]}}


async def test_a_refused_write_releases_its_key_so_a_corrected_retry_runs(crm_svc: Svc) -> None:
    deal = {"contact_id": "ct_nope", "title": "T", "amount": "1.00"}
    bad = await crm_svc.client.post("/deals", json=deal, headers=key("k1"))
    assert bad.status_code == 404
    assert (await crm_svc.client.get("/by-key/k1")).status_code == 404
    assert crm_svc.count("idempotency_keys") == 0
    invalid = await crm_svc.client.post("/contacts", json={"name": "no email"}, headers=key("k2"))
    assert invalid.status_code == 400
    assert invalid.json()["error"]["type"] == "invalid_request"
    retried = await crm_svc.client.post("/contacts", json=ANA, headers=key("k2"))
    assert retried.status_code == 201
    assert "Idempotent-Replayed" not in retried.headers


async def test_keys_are_forgotten_after_24_hours(crm_svc: Svc) -> None:
    await crm_svc.client.post("/contacts", json=ANA, headers=key("k1"))
    crm_svc.clock.advance(KEY_RETENTION + 1)
    assert (await crm_svc.client.get("/by-key/k1")).status_code == 404
    again = await crm_svc.client.post("/contacts", json={**ANA, "name": "Later"}, headers=key("k1"))
    assert again.status_code == 201
    assert crm_svc.count("contacts") == 2
    assert crm_svc.count("idempotency_keys") == 1


async def test_patch_takes_a_key_too(crm_svc: Svc) -> None:
    contact = (await crm_svc.client.post("/contacts", json=ANA)).json()
    path = f"/contacts/{contact['id']}"
    first = await crm_svc.client.patch(path, json={"company": "Acme"}, headers=key("p1"))
    again = await crm_svc.client.patch(path, json={"company": "Acme"}, headers=key("p1"))
    assert first.status_code == again.status_code == 200
    assert again.headers["Idempotent-Replayed"] == "true"
    assert (await crm_svc.client.get("/by-key/p1")).json()["company"] == "Acme"


@pytest.mark.parametrize("body", [b'{"email": NaN}', b'{"email": "a@b.example", "n": 18014398509481985}', b"{"])
async def test_a_body_without_a_canonical_json_form_is_refused_with_400_and_claims_nothing(
    crm_svc: Svc, body: bytes
) -> None:
    response = await crm_svc.client.post("/contacts", content=body, headers=key("k1"))
    assert response.status_code == 400
    assert response.json()["error"]["type"] == "invalid_request"
    assert crm_svc.count("idempotency_keys") == 0


@pytest.mark.parametrize("value", ["", "k" * 256])
async def test_a_key_must_have_1_to_255_characters(crm_svc: Svc, value: str) -> None:
    response = await crm_svc.client.post("/contacts", json=ANA, headers=key(value))
    assert response.status_code == 400
    assert crm_svc.count("contacts") == 0


async def test_a_restart_releases_keys_left_in_flight_and_keeps_done_ones(crm_svc: Svc) -> None:
    await crm_svc.client.post("/contacts", json=ANA, headers=key("done"))
    crm_svc.rows(
        "INSERT INTO idempotency_keys (key, method, path, request_sha256, state, created_at)"
        " VALUES ('orphan', 'POST', '/contacts', 'x', 'in_flight', ?)",
        crm_svc.clock.now(),
    )
    crm.create_app(crm_svc.db, None)  # what a restarted process does first
    assert crm_svc.rows("SELECT key, state FROM idempotency_keys") == [("done", "done")]


async def test_concurrent_requests_with_one_key_write_once_and_others_all_succeed(crm_svc: Svc) -> None:
    statuses: list[tuple[int, str | None]] = []

    async def post(headers: dict[str, str]) -> None:
        response = await crm_svc.client.post("/contacts", json=ANA, headers=headers)
        statuses.append((response.status_code, response.headers.get("Idempotent-Replayed")))

    with anyio.fail_after(WAIT):
        async with anyio.create_task_group() as tg:
            for n in range(20):
                tg.start_soon(post, key("same"))
                tg.start_soon(post, key(f"own-{n}"))
    assert statuses.count((201, None)) == 21  # the first with "same", and each "own-n"
    assert all(status in ((201, "true"), (409, None)) for status in statuses if status != (201, None))
    assert crm_svc.count("contacts") == 21
