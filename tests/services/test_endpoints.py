"""The CRM's and the mail sender's operations, auth and error shapes, in process."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from starlette.applications import Starlette

from examples.services import crm, mail
from tests.services.conftest import AUTH, Svc, open_service

pytestmark = pytest.mark.anyio


async def test_crm_contacts_are_created_found_searched_and_updated(crm_svc: Svc) -> None:
    ana = (await crm_svc.client.post("/contacts", json={"email": "ana@acme.example", "name": "Ana"})).json()
    bob = (await crm_svc.client.post("/contacts", json={"email": "bob@globex.example", "company": "Globex"})).json()
    assert ana["id"].startswith("ct_") and ana["company"] is None and ana["created_at"].endswith("Z")
    assert (await crm_svc.client.get(f"/contacts/{ana['id']}")).json() == ana
    by_text = (await crm_svc.client.get("/contacts", params={"q": "GLOBEX"})).json()["items"]
    by_email = (await crm_svc.client.get("/contacts", params={"email": "ana@acme.example"})).json()["items"]
    everyone = (await crm_svc.client.get("/contacts", params={"limit": 1})).json()["items"]
    assert [c["id"] for c in by_text] == [bob["id"]]
    assert [c["id"] for c in by_email] == [ana["id"]]
    assert [c["id"] for c in everyone] == [ana["id"]]
    updated = await crm_svc.client.patch(f"/contacts/{ana['id']}", json={"company": "Acme"})
    assert updated.json() == {**ana, "company": "Acme"}
    assert crm_svc.rows("SELECT company FROM contacts WHERE id = ?", ana["id"]) == [("Acme",)]


async def test_crm_deals_and_notes_belong_to_an_existing_contact(crm_svc: Svc) -> None:
    ana = (await crm_svc.client.post("/contacts", json={"email": "ana@acme.example"})).json()
    deal = await crm_svc.client.post("/deals", json={"contact_id": ana["id"], "title": "Pilot", "amount": "1200.00"})
    note = await crm_svc.client.post(f"/contacts/{ana['id']}/notes", json={"text": "met at the fair"})
    assert deal.status_code == note.status_code == 201
    assert deal.json()["id"].startswith("dl_") and deal.json()["amount"] == "1200.00"
    assert note.json()["id"].startswith("nt_") and note.json()["contact_id"] == ana["id"]
    listed = (await crm_svc.client.get("/deals", params={"contact_id": ana["id"]})).json()["items"]
    assert listed == [deal.json()]
    assert (await crm_svc.client.get("/deals", params={"contact_id": "ct_other"})).json() == {"items": []}
    orphan_note = await crm_svc.client.post("/contacts/ct_nope/notes", json={"text": "x"})
    assert orphan_note.status_code == 404
    assert crm_svc.count("deals") == crm_svc.count("notes") == 1


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("POST", "/contacts", {"email": "a@b.example", "extra": 1}),
        ("POST", "/deals", {"contact_id": "ct_x", "title": "T", "amount": 12.5}),
        ("POST", "/deals", {"contact_id": "ct_x", "title": "T", "amount": "12,50"}),
        ("PATCH", "/contacts/ct_x", {}),
        ("POST", "/contacts", ["not", "an", "object"]),
        ("GET", "/contacts?limit=0", None),
        ("GET", "/contacts?limit=ten", None),
    ],
)
async def test_crm_refuses_malformed_requests_with_400(crm_svc: Svc, method: str, path: str, body: object) -> None:
    response = await crm_svc.client.request(method, path, json=body)
    assert response.status_code == 400
    assert response.json()["error"]["type"] == "invalid_request"


async def test_unknown_things_are_json_404s(crm_svc: Svc) -> None:
    for path in ("/contacts/ct_nope", "/nowhere"):
        response = await crm_svc.client.get(path)
        assert response.status_code == 404
        assert response.json()["error"]["type"] == "not_found"
    wrong_method = await crm_svc.client.put("/contacts", json={})
    assert wrong_method.status_code == 405
    assert wrong_method.json()["error"]["type"] == "method_not_allowed"


async def test_mail_sends_with_a_cost_and_lists_the_outbox(mail_svc: Svc) -> None:
    sent = await mail_svc.client.post("/messages", json={"to": "ana@acme.example", "subject": "Hi", "body": "Hello"})
    assert sent.status_code == 201
    message = sent.json()
    assert message["id"].startswith("msg_")
    assert {k: message[k] for k in ("to", "subject", "status", "cost")} == {
        "to": "ana@acme.example", "subject": "Hi", "status": "sent", "cost": "0.01",
    }  # fmt: skip
    await mail_svc.client.post("/messages", json={"to": "bob@globex.example", "subject": "Yo"})
    outbox = (await mail_svc.client.get("/messages", params={"to": "ana@acme.example"})).json()["items"]
    assert outbox == [message]
    assert (await mail_svc.client.get(f"/messages/{message['id']}")).json() == message
    assert (await mail_svc.client.get("/messages/msg_nope")).status_code == 404
    assert mail_svc.rows("SELECT to_address, cost FROM messages ORDER BY rowid") == [
        ("ana@acme.example", "0.01"),
        ("bob@globex.example", "0.01"),
    ]


async def test_mail_sends_once_per_idempotency_key(mail_svc: Svc) -> None:
    body, headers = {"to": "ana@acme.example", "subject": "Hi"}, {"Idempotency-Key": "m1"}
    first = await mail_svc.client.post("/messages", json=body, headers=headers)
    again = await mail_svc.client.post("/messages", json=body, headers=headers)
    assert again.headers["Idempotent-Replayed"] == "true"
    assert (await mail_svc.client.get("/by-key/m1")).json()["id"] == first.json()["id"] == again.json()["id"]
    assert mail_svc.count("messages") == 1


@pytest.mark.parametrize("create_app", [crm.create_app, mail.create_app])
async def test_a_token_is_needed_except_for_health_openapi_and_admin(
    tmp_path: Path, create_app: Callable[..., Starlette]
) -> None:
    svc = await open_service(create_app, tmp_path / "svc.db")
    client = svc.client
    client.headers.pop("Authorization")
    async with client:
        missing = await client.get("/by-key/k1")
        wrong = await client.get("/by-key/k1", headers={"Authorization": "Bearer wrong"})
        assert (missing.status_code, wrong.status_code) == (401, 403)
        assert (missing.json()["error"]["type"], wrong.json()["error"]["type"]) == ("unauthorized", "forbidden")
        assert missing.headers["WWW-Authenticate"] == "Bearer"
        for path in ("/healthz", "/openapi.json", "/_admin/faults"):
            assert (await client.get(path)).status_code == 200
        assert (await client.get("/by-key/k1", headers=AUTH)).status_code == 404  # past auth


async def test_without_a_token_configured_everything_is_open(tmp_path: Path) -> None:
    svc = await open_service(crm.create_app, tmp_path / "crm.db", token=None)
    async with svc.client:
        assert (await svc.client.post("/contacts", json={"email": "a@b.example"})).status_code == 201
