"""Injected faults, through `/_admin/faults`: each mode, the countdown, matching, the admin API."""

from __future__ import annotations

import pytest

from examples.services.service import DIE_EXIT_CODE
from tests.services.conftest import Died, Svc

pytestmark = pytest.mark.anyio

ANA = {"email": "ana@acme.example"}
KEY = {"Idempotency-Key": "k1"}


async def test_delay_sleeps_for_the_given_seconds_then_handles_the_request(crm_svc: Svc) -> None:
    await crm_svc.fault(method="POST", path="/contacts", mode="delay", delay=2.5)
    response = await crm_svc.client.post("/contacts", json=ANA)
    assert response.status_code == 201
    assert crm_svc.sleeper.delays == [2.5]
    assert crm_svc.count("contacts") == 1


async def test_die_after_commit_exits_with_17_after_committing_the_effect_and_the_key(crm_svc: Svc) -> None:
    await crm_svc.fault(method="POST", path="/contacts", mode="die_after_commit")
    with pytest.raises(Died) as died:
        await crm_svc.client.post("/contacts", json=ANA, headers=KEY)
    assert died.value.code == DIE_EXIT_CODE
    assert crm_svc.count("contacts") == 1
    found = await crm_svc.client.get("/by-key/k1")
    assert found.status_code == 200
    assert crm_svc.rows("SELECT id FROM contacts") == [(found.json()["id"],)]


async def test_error_after_commit_answers_500_but_the_retry_replays_the_committed_result(crm_svc: Svc) -> None:
    await crm_svc.fault(method="POST", path="/contacts", mode="error_after_commit")
    failed = await crm_svc.client.post("/contacts", json=ANA, headers=KEY)
    assert failed.status_code == 500
    assert failed.json()["error"]["type"] == "internal_error"
    retried = await crm_svc.client.post("/contacts", json=ANA, headers=KEY)
    assert retried.status_code == 201
    assert retried.headers["Idempotent-Replayed"] == "true"
    assert crm_svc.count("contacts") == 1


@pytest.mark.parametrize(
    ("mode", "status", "type"), [("rate_limit", 429, "rate_limited"), ("unavailable", 503, "unavailable")]
)
async def test_refusing_modes_answer_with_retry_after_and_do_nothing(
    crm_svc: Svc, mode: str, status: int, type: str
) -> None:
    await crm_svc.fault(method="POST", path="/contacts", mode=mode, retry_after=7)
    refused = await crm_svc.client.post("/contacts", json=ANA, headers=KEY)
    assert refused.status_code == status
    assert refused.headers["Retry-After"] == "7"
    assert refused.json()["error"]["type"] == type
    assert crm_svc.count("contacts") == crm_svc.count("idempotency_keys") == 0
    retried = await crm_svc.client.post("/contacts", json=ANA, headers=KEY)
    assert retried.status_code == 201
    assert "Idempotent-Replayed" not in retried.headers


async def test_a_fault_counts_down_and_is_gone_when_used_up(crm_svc: Svc) -> None:
    await crm_svc.fault(method="GET", path="/contacts", mode="unavailable", times=2)
    statuses = [(await crm_svc.client.get("/contacts")).status_code for _ in range(3)]
    assert statuses == [503, 503, 200]
    assert (await crm_svc.client.get("/_admin/faults")).json() == {"items": []}


async def test_a_fault_without_times_lasts_until_cleared(crm_svc: Svc) -> None:
    await crm_svc.fault(method="*", path="/", mode="rate_limit", times=None)
    assert [(await crm_svc.client.get("/healthz")).status_code for _ in range(3)] == [429] * 3
    cleared = await crm_svc.client.delete("/_admin/faults")
    assert cleared.json() == {"cleared": 1}
    assert (await crm_svc.client.get("/healthz")).status_code == 200


async def test_a_fault_matches_its_method_and_its_path_as_a_prefix_by_segment(crm_svc: Svc) -> None:
    contact = (await crm_svc.client.post("/contacts", json=ANA)).json()
    await crm_svc.fault(method="post", path="/contacts", mode="unavailable", times=None)
    assert (await crm_svc.client.get("/contacts")).status_code == 200  # another method
    assert (
        await crm_svc.client.post("/deals", json={"contact_id": contact["id"], "title": "T", "amount": "1"})
    ).status_code == 201
    note = await crm_svc.client.post(f"/contacts/{contact['id']}/notes", json={"text": "hi"})
    assert note.status_code == 503  # below /contacts
    await crm_svc.client.delete("/_admin/faults")
    await crm_svc.fault(method="POST", path="/contact", mode="unavailable")
    assert (await crm_svc.client.post("/contacts", json=ANA)).status_code == 201  # not a segment prefix


async def test_the_admin_api_lists_faults_with_their_defaults_and_refuses_bad_ones(crm_svc: Svc) -> None:
    created = await crm_svc.fault(method="POST", path="/contacts", mode="delay")
    listed = (await crm_svc.client.get("/_admin/faults")).json()["items"]
    assert listed == [created]
    assert {k: created[k] for k in ("method", "path", "mode", "times", "delay", "retry_after")} == {
        "method": "POST", "path": "/contacts", "mode": "delay", "times": 1, "delay": 1.0, "retry_after": 1,
    }  # fmt: skip
    for bad in ({"method": "POST", "path": "/contacts", "mode": "explode"}, {"method": "POST", "mode": "delay"}):
        refused = await crm_svc.client.post("/_admin/faults", json=bad)
        assert refused.status_code == 400
        assert refused.json()["error"]["type"] == "invalid_request"


async def test_malformed_commits_then_answers_its_success_status_with_half_a_body(crm_svc: Svc) -> None:
    await crm_svc.fault(method="POST", path="/contacts", mode="malformed")
    spoiled = await crm_svc.client.post("/contacts", json=ANA, headers=KEY)
    assert spoiled.status_code == 201
    with pytest.raises(ValueError):
        spoiled.json()
    assert crm_svc.count("contacts") == 1
    stored = await crm_svc.client.get("/by-key/k1")  # the key keeps the true answer
    assert stored.status_code == 200
    assert spoiled.content == stored.content[: len(stored.content) // 2]
    assert crm_svc.rows("SELECT id FROM contacts") == [(stored.json()["id"],)]


async def test_partial_commits_then_answers_without_the_id(crm_svc: Svc) -> None:
    await crm_svc.fault(method="POST", path="/contacts", mode="partial")
    spoiled = await crm_svc.client.post("/contacts", json=ANA, headers=KEY)
    assert spoiled.status_code == 201
    assert "id" not in spoiled.json() and spoiled.json()["email"] == ANA["email"]
    assert crm_svc.count("contacts") == 1
    retried = await crm_svc.client.post("/contacts", json=ANA, headers=KEY)
    assert retried.headers["Idempotent-Replayed"] == "true"
    assert crm_svc.rows("SELECT id FROM contacts") == [(retried.json()["id"],)]


async def test_contradictory_commits_then_answers_success_saying_failed(mail_svc: Svc) -> None:
    message = {"to": "bo@acme.example", "subject": "Hi"}
    await mail_svc.fault(method="POST", path="/messages", mode="contradictory")
    spoiled = await mail_svc.client.post("/messages", json=message, headers=KEY)
    assert spoiled.status_code == 201
    body = spoiled.json()
    assert body["status"] == "failed" and body["error"]["type"] == "internal_error"
    assert mail_svc.rows("SELECT status FROM messages") == [("sent",)]
    stored = (await mail_svc.client.get("/by-key/k1")).json()
    assert stored["status"] == "sent" and stored["id"] == body["id"] and "error" not in stored


async def test_a_spoiling_fault_spoils_a_read_and_passes_a_failure_through(crm_svc: Svc) -> None:
    await crm_svc.fault(method="GET", path="/contacts", mode="malformed", times=2)
    read = await crm_svc.client.get("/contacts")
    assert read.status_code == 200 and read.content == b'{"item'
    missing = await crm_svc.client.get("/contacts/ct_nope")  # a 404 is answered as it was
    assert missing.status_code == 404 and missing.json()["error"]["type"] == "not_found"
