"""The operator API core against a real server on loopback: runs, leases, controls, approvals, roles, tenants."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest

from tests.api.conftest import CONTRACT, Api

pytestmark = pytest.mark.anyio


async def create_run(api: Api, key: str = "ops", **changes: Any) -> dict[str, Any]:
    async with api.client(key) as c:
        r = await c.post("/api/runs", json={**CONTRACT, **changes})
    assert r.status_code == 201, r.text
    body: dict[str, Any] = r.json()
    return body


async def lease(api: Api, run_id: str, key: str = "op", worker: str = "w1", takeover: bool = False) -> dict[str, Any]:
    async with api.client(key) as c:
        r = await c.post(f"/api/runs/{run_id}/lease", json={"worker": worker, "takeover": takeover})
    assert r.status_code == 201, r.text
    body: dict[str, Any] = r.json()
    return body


async def test_created_run_shows_budgets_as_decimal_strings_and_counts(api: Api) -> None:
    run = await create_run(api)
    assert run["run_id"].startswith("run_")
    assert run["status"] == "running"
    assert run["budgets"]["spend"] == {"limit": "1.00", "reserved": "0.00", "spent": "0.00", "remaining": "1.00"}
    assert run["budgets"]["writes"]["limit"] == 10
    async with api.client("aud") as c:
        got = (await c.get(f"/api/runs/{run['run_id']}")).json()
    assert got["run_id"] == run["run_id"]
    assert got["approvals"] == []


async def test_bad_contract_is_refused_listing_every_problem(api: Api) -> None:
    bad = {**CONTRACT, "expires_in": "soon", "budgets": {"spend": 1.5, "tool_calls": 1}}
    async with api.client("ops") as c:
        r = await c.post("/api/runs", json=bad)
    assert r.status_code == 422
    error = r.json()["error"]
    assert error["code"] == "invalid_contract"
    fields = {p["field"] for p in error["problems"]}
    assert {"expires_in", "budgets.spend", "budgets.writes", "budgets.active_seconds"} <= fields


async def test_body_that_is_not_json_is_a_400_with_a_code(api: Api) -> None:
    async with api.client("ops") as c:
        r = await c.post("/api/runs", content=b"{not json", headers={"content-type": "application/json"})
    assert r.status_code == 400
    assert r.json()["error"]["code"] == "invalid_json"


async def test_list_runs_paginates_with_a_cursor(api: Api) -> None:
    ids = [(await create_run(api))["run_id"] for _ in range(5)]
    seen: list[str] = []
    cursor = None
    async with api.client("ops") as c:
        for _ in range(10):
            params = {"limit": "2", **({"cursor": cursor} if cursor else {})}
            page = (await c.get("/api/runs", params=params)).json()
            seen += [r["run_id"] for r in page["items"]]
            cursor = page["next_cursor"]
            if cursor is None:
                break
        bad = await c.get("/api/runs", params={"cursor": "garbage!"})
    assert seen == ids
    assert bad.status_code == 422
    assert bad.json()["error"]["code"] == "invalid_cursor"


async def test_second_acquire_needs_takeover_and_takeover_raises_the_epoch(api: Api) -> None:
    run = await create_run(api)
    first = await lease(api, run["run_id"])
    async with api.client("op") as c:
        r = await c.post(f"/api/runs/{run['run_id']}/lease", json={"worker": "w2"})
    assert r.status_code == 409
    assert r.json()["error"]["code"] == "lease_held"
    second = await lease(api, run["run_id"], worker="w2", takeover=True)
    assert second["epoch"] == first["epoch"] + 1
    result = await api.gateway.gate.call(first["token"], "shop__find", {"q": "x"})
    assert result.code == "lease_superseded"


async def test_lease_renewal_with_the_token_extends_it_and_a_dead_token_is_refused(api: Api) -> None:
    run = await create_run(api)
    grant = await lease(api, run["run_id"])
    api.clock.advance(240)
    async with api.client(None) as c:
        r = await c.post("/api/leases/renew", headers={"Authorization": f"Bearer {grant['token']}"})
        assert r.status_code == 200, r.text
        assert r.json()["epoch"] == grant["epoch"]
        api.clock.advance(240)  # past the original expiry, within the renewed one
        assert (await api.gateway.gate.call(grant["token"], "shop__find", {"q": "x"})).code is None
        await lease(api, run["run_id"], worker="w2", takeover=True)
        r = await c.post("/api/leases/renew", headers={"Authorization": f"Bearer {grant['token']}"})
        assert r.status_code == 409
        assert r.json()["error"]["code"] == "lease_superseded"
        r = await c.post("/api/leases/renew", headers={"Authorization": "Bearer wl_not-a-real-token-at-all"})
        assert r.status_code == 401


async def test_pause_resume_cancel_follow_the_lifecycle(api: Api) -> None:
    run = await create_run(api)
    grant = await lease(api, run["run_id"])
    rid = run["run_id"]
    async with api.client("op") as c:
        assert (await c.post(f"/api/runs/{rid}/pause", json={"reason": "lunch"})).json()["status"] == "paused"
        assert (await api.gateway.gate.call(grant["token"], "shop__find", {"q": "x"})).code == "run_paused"
        assert (await c.post(f"/api/runs/{rid}/resume", json={})).json()["status"] == "running"
        assert (await api.gateway.gate.call(grant["token"], "shop__find", {"q": "x"})).code is None
        cancelled = await c.post(f"/api/runs/{rid}/cancel", json={"reason": "done"})
        assert cancelled.json()["status"] == "cancelled"
        assert cancelled.json()["lease"]["epoch"] == grant["epoch"] + 1
        again = await c.post(f"/api/runs/{rid}/resume", json={})
        assert again.status_code == 409
        assert again.json()["error"]["code"] == "run_cancelled"
        assert (await c.post(f"/api/runs/{rid}/lease", json={"worker": "w"})).json()["error"]["code"] == "run_cancelled"
    assert (await api.gateway.gate.call(grant["token"], "shop__find", {"q": "x"})).code == "run_cancelled"


async def test_approval_flow_binds_the_exact_payload_and_the_decider(api: Api) -> None:
    run = await create_run(api)
    grant = await lease(api, run["run_id"], key="op")
    gate = api.gateway.gate
    first = await gate.call(grant["token"], "shop__order", {"to": "bob@example.com"})
    assert first.code == "approval_required"
    assert api.effects == []
    async with api.client("appr") as c:
        pending = (await c.get("/api/approvals", params={"status": "pending"})).json()["items"]
        assert len(pending) == 1
        approval = pending[0]
        assert approval["payload"] == {"to": "bob@example.com"}
        expected = hashlib.sha256(b'{"to":"bob@example.com"}').hexdigest()
        assert approval["payload_sha256"] == expected
        wrong = await c.post(f"/api/approvals/{approval['approval_id']}/approve", json={"expected_sha256": "0" * 64})
        assert wrong.status_code == 409
        assert wrong.json()["error"]["code"] == "payload_mismatch"
    async with api.client("op") as c:  # the key that holds the lease asked: it may not decide (nor may its role)
        own = await c.post(f"/api/approvals/{approval['approval_id']}/approve", json={"expected_sha256": expected})
        assert own.status_code == 403
    async with api.client("appr") as c:
        ok = await c.post(f"/api/approvals/{approval['approval_id']}/approve", json={"expected_sha256": expected})
        assert ok.status_code == 200, ok.text
        assert ok.json()["status"] == "approved"
    done = await gate.call(grant["token"], "shop__order", {"to": "bob@example.com"})
    assert done.code is None
    assert api.effects == [{"to": "bob@example.com"}]
    changed = await gate.call(grant["token"], "shop__order", {"to": "eve@example.com"})
    assert changed.code == "approval_required"
    assert len(api.effects) == 1


async def test_an_approval_shows_its_diff_against_the_last_one_approved(api: Api) -> None:
    run = await create_run(api)
    rid = run["run_id"]
    token = (await lease(api, rid, key="op"))["token"]
    gate = api.gateway.gate
    approved = {"to": "bob@example.com", "note": "first"}

    async def request(payload: dict[str, Any]) -> str:
        refused = await gate.call(token, "shop__order", payload)
        assert refused.code == "approval_required", refused
        assert refused.structured is not None
        approval_id: str = refused.structured["error"]["approval_id"]
        return approval_id

    async def decide(c: Any, approval_id: str, verb: str) -> dict[str, Any]:
        shown = (await c.get(f"/api/approvals/{approval_id}")).json()
        r = await c.post(f"/api/approvals/{approval_id}/{verb}", json={"expected_sha256": shown["payload_sha256"]})
        assert r.status_code == 200, r.text
        body: dict[str, Any] = r.json()
        return body

    first = await request(approved)
    async with api.client("appr") as c:
        assert (await c.get(f"/api/approvals/{first}")).json()["diff"] is None  # nothing approved before it
        await decide(c, first, "approve")
    assert (await gate.call(token, "shop__order", approved)).code is None

    other = await request({"to": "eve@example.com", "note": "first"})
    async with api.client("appr") as c:
        shown = (await c.get(f"/api/approvals/{other}")).json()
        assert shown["diff"]["against"] == first
        assert shown["diff"]["against_status"] == "used"
        assert shown["diff"]["same_payload"] is False
        assert shown["diff"]["changes"] == [{"path": "/to", "before": "bob@example.com", "after": "eve@example.com"}]
        assert '-  "to": "bob@example.com"' in shown["diff"]["unified"]
        assert '+  "to": "eve@example.com"' in shown["diff"]["unified"]
        assert shown["diff"]["spec_version"] is None
        assert shown["diff"]["tool_definition_changed"] is False
        denied = await decide(c, other, "deny")
        assert denied["diff"] == shown["diff"]  # the decision's answer shows it too

    third = await request({"to": "bob@example.com", "extra": {"a/b": 1}})
    async with api.client("appr") as c:
        listed = (await c.get("/api/approvals", params={"status": "pending", "run_id": rid})).json()["items"]
        [shown] = [a for a in listed if a["approval_id"] == third]
        assert shown["diff"]["against"] == first  # the denied one in between is not what was approved
        assert shown["diff"]["changes"] == [
            {"path": "/extra", "after": {"a/b": 1}},
            {"path": "/note", "before": "first"},
        ]
    async with api.client("op") as c:
        summary = (await c.get(f"/api/runs/{rid}")).json()["approvals"]
        assert [a["diff"] for a in summary] == [None]  # a run's summary shows neither payload nor diff
    async with api.client("appr") as c:
        await decide(c, third, "deny")
        unused = await request({"to": "zed@example.com"})  # approved under v1, never called
        await decide(c, unused, "approve")
    async with api.client("op") as c:
        revised = await c.post(
            f"/api/runs/{rid}/revise", json={"spec_version": "v2", "patch": {"budgets": {"tool_calls": 90}}}
        )
        assert revised.status_code == 200, revised.text
    await gate.status(token)  # the worker reads the revised contract
    again = await request({"to": "zed@example.com"})
    async with api.client("appr") as c:
        shown = (await c.get(f"/api/approvals/{again}")).json()
        assert shown["diff"]["against"] == unused
        assert shown["diff"]["against_status"] == "superseded"
        assert shown["diff"]["same_payload"] is True
        assert shown["diff"]["changes"] == []
        assert shown["diff"]["unified"] == ""
        assert shown["diff"]["spec_version"] == {"from": "v1", "to": "v2"}


async def test_an_admin_who_asked_for_an_approval_may_not_decide_it(api: Api) -> None:
    run = await create_run(api)
    grant = await lease(api, run["run_id"], key="ops")
    result = await api.gateway.gate.call(grant["token"], "shop__order", {"to": "x@example.com"})
    approval_id = result.structured["error"]["approval_id"] if result.structured else None
    async with api.client("ops") as c:
        r = await c.post(f"/api/approvals/{approval_id}/approve", json={})
    assert r.status_code == 403
    assert r.json()["error"]["code"] == "forbidden"


async def test_denied_payload_proposed_again_is_refused(api: Api) -> None:
    run = await create_run(api)
    grant = await lease(api, run["run_id"])
    result = await api.gateway.gate.call(grant["token"], "shop__order", {"to": "x@example.com"})
    approval_id = result.structured["error"]["approval_id"] if result.structured else None
    async with api.client("appr") as c:
        r = await c.post(f"/api/approvals/{approval_id}/deny", json={"note": "no"})
    assert r.json()["status"] == "denied"
    again = await api.gateway.gate.call(grant["token"], "shop__order", {"to": "x@example.com"})
    assert again.code == "approval_denied"
    assert api.effects == []


@pytest.mark.parametrize(
    ("key", "method", "path"),
    [
        ("aud", "POST", "/api/runs"),
        ("appr", "POST", "/api/runs"),
        ("wrk", "POST", "/api/runs"),
        ("appr", "POST", "/api/runs/{rid}/pause"),
        ("aud", "POST", "/api/runs/{rid}/cancel"),
        ("wrk", "GET", "/api/runs/{rid}"),
        ("op", "GET", "/api/ledger/verify"),
        ("aud", "POST", "/api/runs/{rid}/lease"),
    ],
)
async def test_a_role_that_may_not_is_answered_403(api: Api, key: str, method: str, path: str) -> None:
    run = await create_run(api)
    async with api.client(key) as c:
        r = await c.request(method, path.format(rid=run["run_id"]), json=CONTRACT if path == "/api/runs" else {})
    assert r.status_code == 403
    assert r.json()["error"]["code"] == "forbidden"


async def test_missing_or_unknown_key_is_401_with_www_authenticate(api: Api) -> None:
    for key in (None, "nobody"):
        async with api.client(key) as c:
            r = await c.get("/api/runs")
        assert r.status_code == 401
        assert r.json()["error"]["code"] == "unauthenticated"
        assert "Bearer" in r.headers["www-authenticate"]


async def test_every_route_answers_404_to_another_tenants_key(api: Api) -> None:
    run = await create_run(api)
    grant = await lease(api, run["run_id"])
    result = await api.gateway.gate.call(grant["token"], "shop__order", {"to": "x@example.com"})
    approval_id = result.structured["error"]["approval_id"] if result.structured else ""
    rid = run["run_id"]
    routes = [
        ("GET", f"/api/runs/{rid}"),
        ("POST", f"/api/runs/{rid}/lease"),
        ("POST", f"/api/runs/{rid}/pause"),
        ("POST", f"/api/runs/{rid}/resume"),
        ("POST", f"/api/runs/{rid}/cancel"),
        ("POST", f"/api/runs/{rid}/reconcile"),
        ("GET", f"/api/runs/{rid}/actions"),
        ("GET", f"/api/runs/{rid}/events"),
        ("GET", f"/api/approvals/{approval_id}"),
        ("POST", f"/api/approvals/{approval_id}/approve"),
        ("POST", f"/api/approvals/{approval_id}/deny"),
    ]
    async with api.client("other") as c:
        for method, path in routes:
            body = {"worker": "w"} if path.endswith("/lease") else {}
            r = await c.request(method, path, json=body)
            assert r.status_code == 404, (method, path, r.text)
            assert r.json()["error"]["code"] == "not_found"
        assert (await c.get("/api/runs")).json()["items"] == []
        assert (await c.get("/api/approvals")).json()["items"] == []
        assert (await c.get("/api/ledger/verify")).json()["runs"] == 0
    async with api.client("ops") as c:
        run_after = (await c.get(f"/api/runs/{rid}")).json()
    assert run_after["status"] == "waiting"  # untouched by the other tenant's attempts
    assert run_after["lease"]["epoch"] == grant["epoch"]


async def test_actions_and_events_record_the_call_and_the_ledger_verifies(api: Api) -> None:
    run = await create_run(api)
    grant = await lease(api, run["run_id"])
    await api.gateway.gate.call(grant["token"], "shop__find", {"q": "a"})
    await api.gateway.gate.call(grant["token"], "shop__nope", {})
    async with api.client("aud") as c:
        actions = (await c.get(f"/api/runs/{run['run_id']}/actions")).json()["items"]
        events = (await c.get(f"/api/runs/{run['run_id']}/events")).json()["items"]
        verify = (await c.get("/api/ledger/verify")).json()
    assert [(a["tool"], a["status"]) for a in actions] == [("shop__find", "succeeded"), ("shop__nope", "rejected")]
    assert actions[1]["code"] == "tool_not_found"
    types = [e["type"] for e in events]
    assert types[:2] == ["run_created", "lease_granted"]
    # A read is one ledger entry (it changes nothing outside); a refusal is one too.
    assert types[2:] == ["action_settled", "action_rejected"]
    assert events[2]["data"]["tool"] == "shop__find" and events[2]["data"]["status"] == "succeeded"
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    assert verify == {"ok": True, "runs": 1, "entries": len(events), "first_bad": None}


async def test_an_unknown_route_answers_json(api: Api) -> None:
    async with api.client("ops") as c:
        missing = await c.get("/api/nothing-here")
    assert missing.status_code == 404
    assert missing.json()["error"]["code"] == "not_found"


async def test_deadline_passed_expires_the_run(api: Api) -> None:
    run = await create_run(api, expires_in="1h")
    grant = await lease(api, run["run_id"])
    api.clock.advance(3601)
    result = await api.gateway.gate.call(grant["token"], "shop__find", {"q": "x"})
    assert result.code == "run_expired"
    async with api.client("ops") as c:
        r = await c.post(f"/api/runs/{run['run_id']}/pause", json={})
    assert r.status_code == 409
    assert r.json()["error"]["code"] == "run_expired"


async def test_a_contract_may_forbid_its_creator_from_deciding_its_approvals(api: Api) -> None:
    async def approval_for(forbid: bool) -> str:
        run = await create_run(api, key="ops", forbid_creator_approval=forbid)
        grant = await lease(api, run["run_id"], key="op")
        result = await api.gateway.gate.call(grant["token"], "shop__order", {"to": "x@example.com"})
        assert result.structured is not None
        approval_id: str = result.structured["error"]["approval_id"]
        return approval_id

    forbidden, allowed = await approval_for(True), await approval_for(False)
    async with api.client("ops") as c:
        refused = await c.post(f"/api/approvals/{forbidden}/approve", json={})
        accepted = await c.post(f"/api/approvals/{allowed}/approve", json={})
    assert refused.status_code == 403 and refused.json()["error"]["code"] == "forbidden"
    assert accepted.status_code == 200


async def test_a_worker_key_may_lease_only_the_runs_that_name_it(api: Api) -> None:
    other = await create_run(api, workers=["someone-else"])
    mine = await create_run(api, workers=["wrk"])
    async with api.client("wrk") as c:
        refused = await c.post(f"/api/runs/{other['run_id']}/lease", json={"worker": "w"})
        granted = await c.post(f"/api/runs/{mine['run_id']}/lease", json={"worker": "w"})
    assert refused.status_code == 404 and refused.json()["error"]["code"] == "not_found"
    assert granted.status_code == 201


async def test_a_body_over_the_limit_is_413_and_creates_nothing(api: Api) -> None:
    async with api.client("ops") as c:
        r = await c.post("/api/runs", content=b'{"goal": "' + b"x" * (1 << 20) + b'"}')
        listed = (await c.get("/api/runs")).json()["items"]
    assert r.status_code == 413 and r.json()["error"]["code"] == "payload_too_large"
    assert listed == []
