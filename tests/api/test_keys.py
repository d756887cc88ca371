"""API keys over the operator API: shown once, stored hashed, revoked at once, rotated with an overlap."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from gateway.domain import api_key_hash
from tests.api.conftest import Api
from tests.api.test_openapi import Conformance, fetch_document
from tests.api.test_operator_api import create_run, lease

pytestmark = pytest.mark.anyio


def with_key(api: Api, key: str) -> httpx.AsyncClient:
    return httpx.AsyncClient(base_url=api.url, headers={"Authorization": f"Bearer {key}"}, timeout=10)


async def create_key(api: Api, name: str = "ci", roles: list[str] | None = None, **extra: Any) -> dict[str, Any]:
    async with api.client("ops") as c:
        r = await c.post("/api/keys", json={"name": name, "roles": roles or ["operator"], **extra})
    assert r.status_code == 201, r.text
    body: dict[str, Any] = r.json()
    return body


async def status_with(api: Api, key: str) -> int:
    async with with_key(api, key) as c:
        return (await c.get("/api/runs")).status_code


async def test_a_created_key_is_shown_once_and_works_with_its_roles(api: Api) -> None:
    created = await create_key(api, "ci", ["auditor"], expires_in="90d")
    assert created["key"].startswith("wak_") and len(created["key"]) > 40
    assert created["key_id"].startswith("key_")
    assert (created["name"], created["tenant"], created["roles"], created["status"]) == (
        "ci",
        "acme",
        ["auditor"],
        "active",
    )
    assert created["created_by"] == "ops" and created["expires_at"] is not None
    async with with_key(api, created["key"]) as c:
        assert (await c.get("/api/runs")).status_code == 200
        refused = await c.post("/api/runs", json={})
    assert (refused.status_code, refused.json()["error"]["code"]) == (403, "forbidden")
    async with api.client("ops") as c:
        listed = (await c.get("/api/keys")).text
    assert created["key"] not in listed and api_key_hash(created["key"]) not in listed
    assert created["key_id"] in listed


def files_holding(folder: Path, secret: str) -> list[str]:
    return [p.name for p in folder.iterdir() if p.is_file() and secret.encode() in p.read_bytes()]


async def test_the_key_never_reaches_the_store_files(api: Api, tmp_path: Path) -> None:
    created = await create_key(api)
    await status_with(api, created["key"])
    assert files_holding(tmp_path, created["key"]) == []  # the database, its WAL, the config
    assert files_holding(tmp_path, api_key_hash(created["key"]))  # while its hash is there to be found


async def test_a_revoked_key_fails_on_its_next_request(api: Api) -> None:
    created = await create_key(api)
    assert await status_with(api, created["key"]) == 200
    async with api.client("ops") as c:
        r = await c.post(f"/api/keys/{created['key_id']}/revoke", json={"reason": "left the team"})
    assert r.status_code == 200, r.text
    assert (r.json()["status"], r.json()["revoked_by"]) == ("revoked", "ops")
    async with with_key(api, created["key"]) as c:
        refused = await c.get("/api/runs")
    assert (refused.status_code, refused.json()["error"]["code"]) == (401, "unauthenticated")


async def worker_lease(api: Api, key: str, run_id: str, worker: str = "w1") -> dict[str, Any]:
    async with with_key(api, key) as c:
        r = await c.post(f"/api/runs/{run_id}/lease", json={"worker": worker, "takeover": False})
    assert r.status_code == 201, r.text
    body: dict[str, Any] = r.json()
    return body


async def test_revoking_a_worker_key_ends_the_lease_it_granted_until_a_valid_key_grants_another(api: Api) -> None:
    run_id = (await create_run(api))["run_id"]
    worker = await create_key(api, "bot", ["worker"])
    grant = await worker_lease(api, worker["key"], run_id)
    gate = api.gateway.gate
    assert (await gate.call(grant["token"], "shop__charge", {"card": "first"})).code is None
    async with api.client("ops") as c:
        await c.post(f"/api/keys/{worker['key_id']}/revoke", json={"reason": "leaked"})

    refused = await gate.call(grant["token"], "shop__charge", {"card": "second"})
    assert refused.code == "lease_revoked"
    assert (await gate.call(grant["token"], "shop__find", {"q": "x"})).code == "lease_revoked"
    assert [e["card"] for e in api.effects] == ["first"]  # nothing reached the tool
    async with api.client(None) as c:
        renewed = await c.post("/api/leases/renew", headers={"Authorization": f"Bearer {grant['token']}"})
    assert (renewed.status_code, renewed.json()["error"]["code"]) == (409, "lease_revoked")
    async with api.client("aud") as c:
        shown = (await c.get(f"/api/runs/{run_id}")).json()["lease"]
        events = (await c.get(f"/api/runs/{run_id}/events")).json()["items"]
    assert shown["live"] is False and shown["revoked_at"] is not None
    [ended] = [e for e in events if e["type"] == "lease_revoked"]
    assert (ended["data"]["key_id"], ended["data"]["epoch"], ended["data"]["reason"]) == (
        worker["key_id"],
        grant["epoch"],
        "leaked",
    )

    # A revoked lease holds nothing: a valid key grants a new one without a takeover, and it works.
    again = await lease(api, run_id)
    assert (await gate.call(again["token"], "shop__charge", {"card": "second"})).code is None
    assert (await gate.call(grant["token"], "shop__find", {"q": "x"})).code == "lease_superseded"


async def test_revoking_a_key_leaves_the_leases_other_keys_granted(api: Api) -> None:
    taken_over = (await create_run(api))["run_id"]
    untouched = (await create_run(api))["run_id"]
    worker = await create_key(api, "bot", ["worker"])
    await worker_lease(api, worker["key"], taken_over)
    current = await lease(api, taken_over, worker="w2", takeover=True)  # granted by a bootstrap key now
    other = await lease(api, untouched)
    async with api.client("ops") as c:
        await c.post(f"/api/keys/{worker['key_id']}/revoke", json={})
    gate = api.gateway.gate
    assert (await gate.call(current["token"], "shop__find", {"q": "x"})).code is None
    assert (await gate.call(other["token"], "shop__find", {"q": "x"})).code is None


async def test_a_rotated_key_works_until_the_overlap_passes_and_the_new_one_after(api: Api) -> None:
    created = await create_key(api, expires_in="30d")
    api.clock.advance(86400)
    async with api.client("ops") as c:
        r = await c.post(f"/api/keys/{created['key_id']}/rotate", json={"overlap": "1h"})
    assert r.status_code == 201, r.text
    rotated = r.json()
    assert rotated["key"] != created["key"] and rotated["key"].startswith("wak_")
    assert (rotated["name"], rotated["roles"], rotated["rotated_from"]) == ("ci", ["operator"], created["key_id"])
    assert rotated["old_key"]["key_id"] == created["key_id"]
    assert rotated["old_key"]["rotated_to"] == rotated["key_id"]
    assert rotated["old_key"]["expires_at"] < rotated["expires_at"]  # the new key keeps the 30-day lifetime
    api.clock.advance(3599)
    assert await status_with(api, created["key"]) == 200
    assert await status_with(api, rotated["key"]) == 200
    api.clock.advance(1)
    assert await status_with(api, created["key"]) == 401
    assert await status_with(api, rotated["key"]) == 200
    async with api.client("ops") as c:
        again = await c.post(f"/api/keys/{created['key_id']}/rotate", json={"overlap": "1h"})
    assert (again.status_code, again.json()["error"]["code"]) == (409, "key_not_active")


async def test_an_expired_key_is_refused_and_listed_as_expired(api: Api) -> None:
    created = await create_key(api, expires_in="1h")
    api.clock.advance(3600)
    assert await status_with(api, created["key"]) == 401
    async with api.client("ops") as c:
        items = (await c.get("/api/keys")).json()["items"]
    assert [k["status"] for k in items if k["key_id"] == created["key_id"]] == ["expired"]


async def test_bootstrap_keys_are_listed_read_only(api: Api) -> None:
    async with api.client("ops") as c:
        items = (await c.get("/api/keys")).json()["items"]
        config = [k for k in items if k["source"] == "config"]
        assert {k["name"] for k in config} == {"ops", "op", "appr", "aud", "wrk"}  # acme's only
        ops = next(k for k in config if k["name"] == "ops")
        for verb, body in (("revoke", {}), ("rotate", {"overlap": "1h"})):
            r = await c.post(f"/api/keys/{ops['key_id']}/{verb}", json=body)
            assert (r.status_code, r.json()["error"]["code"]) == (409, "key_in_config"), verb
    async with api.client("other") as c:
        r = await c.post(f"/api/keys/{ops['key_id']}/revoke", json={})
    assert r.status_code == 404  # another tenant's bootstrap key is not even named
    assert await status_with(api, "key-ops") == 200


async def test_a_key_is_made_in_the_admins_own_tenant_only(api: Api) -> None:
    async with api.client("ops") as c:
        other = await c.post("/api/keys", json={"name": "x", "roles": ["admin"], "tenant": "globex"})
        own = await c.post("/api/keys", json={"name": "x", "roles": ["admin"], "tenant": "acme"})
    assert (other.status_code, other.json()["error"]["code"]) == (422, "tenant_mismatch")
    assert (own.status_code, own.json()["tenant"]) == (201, "acme")


async def test_a_name_has_one_valid_key_and_bootstrap_names_are_taken(api: Api) -> None:
    await create_key(api, "ci")
    async with api.client("ops") as c:
        twice = await c.post("/api/keys", json={"name": "ci", "roles": ["operator"]})
        bootstrap = await c.post("/api/keys", json={"name": "appr", "roles": ["approver"]})
        bad = await c.post("/api/keys", json={"name": "has space", "roles": ["chef"], "expires_in": "soon"})
    assert (twice.status_code, twice.json()["error"]["code"]) == (409, "key_name_taken")
    assert (bootstrap.status_code, bootstrap.json()["error"]["code"]) == (409, "key_name_taken")
    assert bad.status_code == 422
    assert {p["field"] for p in bad.json()["error"]["problems"]} >= {"name", "roles.0"}


async def test_a_rotated_principal_still_may_not_decide_what_it_asked_for(api: Api) -> None:
    created = await create_key(api, "lead", ["operator", "approver"])
    run = await create_run(api)
    async with with_key(api, created["key"]) as c:
        grant = (await c.post(f"/api/runs/{run['run_id']}/lease", json={"worker": "w1"})).json()
    result = await api.gateway.gate.call(grant["token"], "shop__order", {"to": "bob@example.com"})
    assert result.structured is not None
    approval_id = result.structured["error"]["approval_id"]
    async with api.client("ops") as c:
        rotated = (await c.post(f"/api/keys/{created['key_id']}/rotate", json={"overlap": "0s"})).json()
    assert await status_with(api, created["key"]) == 401  # no overlap: the old key is dead at once
    async with with_key(api, rotated["key"]) as c:
        r = await c.post(f"/api/approvals/{approval_id}/approve", json={})
    assert (r.status_code, r.json()["error"]["code"]) == (403, "forbidden")


async def test_every_change_to_the_keys_is_recorded(api: Api) -> None:
    created = await create_key(api)
    async with api.client("ops") as c:
        rotated = (await c.post(f"/api/keys/{created['key_id']}/rotate", json={"overlap": "5m"})).json()
        await c.post(f"/api/keys/{rotated['key_id']}/revoke", json={"reason": "leaked"})
        r = await c.get("/api/keys/events")
    events = r.json()["items"]
    assert [(e["type"], e["key_id"], e["by"]) for e in events] == [
        ("key_created", created["key_id"], "ops"),
        ("key_rotated", created["key_id"], "ops"),
        ("key_created", rotated["key_id"], "ops"),
        ("key_revoked", rotated["key_id"], "ops"),
    ]
    assert events[3]["data"]["reason"] == "leaked"
    assert created["key"] not in r.text and rotated["key"] not in r.text


async def test_the_keys_views_conform_to_the_document(api: Api) -> None:
    conformance = Conformance(await fetch_document(api))
    check = conformance.check
    created = await create_key(api, expires_in="1d")
    check("POST", "/api/keys", 201, created)
    async with api.client("ops") as c:
        rotated = await c.post(f"/api/keys/{created['key_id']}/rotate", json={"overlap": "1h"})
        check("POST", "/api/keys/{key_id}/rotate", 201, rotated.json())
        revoked = await c.post(f"/api/keys/{rotated.json()['key_id']}/revoke", json={"reason": "done"})
        check("POST", "/api/keys/{key_id}/revoke", 200, revoked.json())
        check("GET", "/api/keys", 200, (await c.get("/api/keys")).json())
        check("GET", "/api/keys/events", 200, (await c.get("/api/keys/events")).json())
        taken = await c.post("/api/keys", json={"name": "ops", "roles": ["admin"]})
        check("POST", "/api/keys", 409, taken.json())
    assert {"KeyCreated", "KeyRotated", "KeyView", "KeyPage", "KeyEventPage"} <= conformance.checked
