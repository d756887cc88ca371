"""GET /api/runs/{id}/connections and POST .../connections/{grant_id}/revoke against a real gateway,
with clients signed in through the consent page and their codes exchanged over HTTP."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.api.conftest import Api, serving_api
from tests.api.test_openapi import Conformance, fetch_document
from tests.harness import Backend
from tests.oauth.conftest import OAUTH, Connected, connect_client, mcp_status, refresh, write_templates

pytestmark = pytest.mark.anyio


async def connections(api: Api, run_id: str, key: str = "op") -> list[dict[str, Any]]:
    async with api.client(key) as c:
        r = await c.get(f"/api/runs/{run_id}/connections")
    assert r.status_code == 200, r.text
    items: list[dict[str, Any]] = r.json()["items"]
    return items


async def disconnect(api: Api, run_id: str, grant_id: str, body: Any, key: str = "op") -> Any:
    async with api.client(key) as c:
        return await c.post(f"/api/runs/{run_id}/connections/{grant_id}/revoke", json=body)


async def acquire(api: Api, run_id: str, worker: str) -> Any:
    async with api.client("op") as c:
        return await c.post(f"/api/runs/{run_id}/lease", json={"worker": worker})


async def events_of(api: Api, run_id: str, kind: str) -> list[dict[str, Any]]:
    found = await api.gateway.store.list_events("acme", run_id, limit=1000)
    return [e.data for e in found if e.type == kind]


@pytest.fixture
async def either_store(tmp_path: Path, backend: Backend) -> AsyncIterator[Api]:
    """`oauth_api` on SQLite, then on PostgreSQL (the session's database, emptied)."""
    write_templates(tmp_path)
    async with serving_api(tmp_path, OAUTH, database=getattr(backend, "url", None)) as served:
        yield served


async def test_a_connected_client_is_listed_active_and_disconnecting_ends_everything_it_held(
    either_store: Api,
) -> None:
    oauth_api = either_store
    run_id = await oauth_api.new_run()
    connected = await connect_client(oauth_api, run_id, name="Claude on Ana's laptop")
    [shown] = await connections(oauth_api, run_id, key="aud")  # runs.read: an auditor sees it too
    assert shown["grant_id"] == connected.grant_id
    assert shown["client_id"] == connected.client_id
    assert (shown["client_name"], shown["granted_by"], shown["status"]) == ("Claude on Ana's laptop", "op", "active")
    assert shown["reason"] is None and shown["revoked_at"] is None and shown["refreshed_at"] is None
    run = await oauth_api.gateway.store.get_run("acme", run_id)
    assert shown["epoch"] == run.epoch
    # While connected: its token works at /mcp, and the lease it holds is held.
    assert (await mcp_status(oauth_api, connected.access_token)).status_code == 200
    held = await acquire(oauth_api, run_id, "another-worker")
    assert (held.status_code, held.json()["error"]["code"]) == (409, "lease_held")

    answer = await disconnect(oauth_api, run_id, connected.grant_id, {"reason": "  laptop lost  "})
    assert answer.status_code == 200, answer.text
    revoked = answer.json()
    assert (revoked["status"], revoked["reason"], revoked["revoked_by"]) == ("revoked", "laptop lost", "op")
    assert revoked["revoked_reason"] == "laptop lost" and revoked["revoked_at"] is not None

    denied = await mcp_status(oauth_api, connected.access_token)
    assert denied.status_code == 401
    assert "resource_metadata=" in denied.headers["www-authenticate"]
    refused = await refresh(oauth_api, connected)
    assert (refused.status_code, refused.json()["error"]) == (400, "invalid_grant")
    taken = await acquire(oauth_api, run_id, "another-worker")  # no takeover needed
    assert taken.status_code == 201, taken.text
    assert taken.json()["epoch"] == run.epoch + 1
    [event] = await events_of(oauth_api, run_id, "oauth_revoked")
    assert (event["grant_id"], event["reason"], event["by"]) == (connected.grant_id, "laptop lost", "op")
    [listed] = await connections(oauth_api, run_id)
    assert listed["status"] == "revoked"


async def test_disconnecting_twice_changes_nothing_the_second_time(oauth_api: Api) -> None:
    run_id = await oauth_api.new_run()
    connected = await connect_client(oauth_api, run_id)
    first = await disconnect(oauth_api, run_id, connected.grant_id, {"reason": "first"})
    again = await disconnect(oauth_api, run_id, connected.grant_id, {"reason": "second"}, key="ops")
    assert again.status_code == 200
    assert again.json() == first.json()  # the first reason, by and time stand
    assert len(await events_of(oauth_api, run_id, "oauth_revoked")) == 1


async def test_a_disconnect_without_a_reason_is_refused_and_changes_nothing(oauth_api: Api) -> None:
    run_id = await oauth_api.new_run()
    connected = await connect_client(oauth_api, run_id)
    for body in ({}, {"reason": ""}, {"reason": "   "}, {"reason": "x" * 2001}, {"reason": 3}, {"why": "x"}):
        answer = await disconnect(oauth_api, run_id, connected.grant_id, body)
        assert (answer.status_code, answer.json()["error"]["code"]) == (422, "invalid_request"), body
        assert "reason" in {p["field"] for p in answer.json()["error"]["problems"]}, body
    assert (await connections(oauth_api, run_id))[0]["status"] == "active"
    assert (await mcp_status(oauth_api, connected.access_token)).status_code == 200


async def test_roles_tenants_and_other_runs_are_refused(oauth_api: Api) -> None:
    run_id = await oauth_api.new_run()
    other_run = await oauth_api.new_run()
    connected = await connect_client(oauth_api, run_id)
    for key in ("aud", "appr", "wrk"):  # runs.control: operators and admins only
        answer = await disconnect(oauth_api, run_id, connected.grant_id, {"reason": "no"}, key=key)
        assert (answer.status_code, answer.json()["error"]["code"]) == (403, "forbidden"), key
    for key in ("appr", "wrk"):  # runs.read
        async with oauth_api.client(key) as c:
            assert (await c.get(f"/api/runs/{run_id}/connections")).status_code == 403
    # Another tenant's admin: the run and the grant do not exist for it.
    async with oauth_api.client("other") as c:
        listed = await c.get(f"/api/runs/{run_id}/connections")
    assert (listed.status_code, listed.json()["error"]["code"]) == (404, "not_found")
    answer = await disconnect(oauth_api, run_id, connected.grant_id, {"reason": "mine"}, key="other")
    assert (answer.status_code, answer.json()["error"]["code"]) == (404, "not_found")
    # The grant named under another run of the same tenant.
    answer = await disconnect(oauth_api, other_run, connected.grant_id, {"reason": "wrong run"})
    assert (answer.status_code, answer.json()["error"]["code"]) == (404, "not_found")
    answer = await disconnect(oauth_api, run_id, "og_000000000000000000000000", {"reason": "nobody"})
    assert answer.status_code == 404
    assert await connections(oauth_api, other_run) == []
    assert (await connections(oauth_api, run_id))[0]["status"] == "active"
    assert (await mcp_status(oauth_api, connected.access_token)).status_code == 200
    assert await events_of(oauth_api, run_id, "oauth_revoked") == []


async def test_a_connection_ends_when_its_lease_is_taken_over_or_its_run_finishes(oauth_api: Api) -> None:
    run_id = await oauth_api.new_run()
    first = await connect_client(oauth_api, run_id, name="first")
    async with oauth_api.client("op") as c:
        taken = await c.post(f"/api/runs/{run_id}/lease", json={"worker": "rescuer", "takeover": True})
    assert taken.status_code == 201
    [shown] = await connections(oauth_api, run_id)
    assert (shown["status"], shown["reason"]) == ("ended", "lease_taken_over")
    assert "rescuer" in shown["message"]
    refused = await refresh(oauth_api, first)
    assert (refused.status_code, refused.json()["error"]) == (400, "invalid_grant")

    second_run = await oauth_api.new_run()
    second = await connect_client(oauth_api, second_run, name="second")
    async with oauth_api.client("op") as c:
        assert (await c.post(f"/api/runs/{second_run}/cancel", json={"reason": "done"})).status_code == 200
    [shown] = await connections(oauth_api, second_run)
    assert (shown["status"], shown["reason"]) == ("ended", "run_finished")
    # An ended connection may still be disconnected, for the record.
    answer = await disconnect(oauth_api, second_run, second.grant_id, {"reason": "tidy up"})
    assert (answer.status_code, answer.json()["status"]) == (200, "revoked")


async def test_a_connection_ends_when_the_key_that_consented_is_revoked(oauth_api: Api) -> None:
    async with oauth_api.client("ops") as c:
        made = await c.post("/api/keys", json={"name": "ana", "roles": ["operator"]})
    assert made.status_code == 201
    run_id = await oauth_api.new_run()
    connected: Connected = await connect_client(oauth_api, run_id, api_key=made.json()["key"])
    [shown] = await connections(oauth_api, run_id)
    assert (shown["status"], shown["granted_by"]) == ("active", "ana")
    async with oauth_api.client("ops") as c:
        assert (await c.post(f"/api/keys/{made.json()['key_id']}/revoke", json={})).status_code == 200
    [shown] = await connections(oauth_api, run_id)
    assert (shown["status"], shown["reason"]) == ("ended", "key_revoked")
    assert connected.grant_id == shown["grant_id"]


async def test_the_answers_conform_to_the_openapi_document(oauth_api: Api) -> None:
    conformance = Conformance(await fetch_document(oauth_api))
    run_id = await oauth_api.new_run()
    connected = await connect_client(oauth_api, run_id)
    assert (await refresh(oauth_api, connected)).status_code == 200  # refreshed_at is a time now
    async with oauth_api.client("op") as c:
        listed = (await c.get(f"/api/runs/{run_id}/connections")).json()
        assert listed["items"][0]["refreshed_at"] is not None
        conformance.check("GET", "/api/runs/{run_id}/connections", 200, listed)
        path = "/api/runs/{run_id}/connections/{grant_id}/revoke"
        revoked = await c.post(f"/api/runs/{run_id}/connections/{connected.grant_id}/revoke", json={"reason": "r"})
        conformance.check("POST", path, 200, revoked.json())
        missing = await c.post(f"/api/runs/{run_id}/connections/{connected.grant_id}/revoke", json={})
        conformance.check("POST", path, 422, missing.json())
        limited = await c.get(f"/api/runs/{run_id}/connections", params={"limit": "0"})
        assert limited.status_code == 422
    assert {"ConnectionList", "ConnectionView", "ErrorBody"} <= conformance.checked
