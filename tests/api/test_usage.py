"""POST /api/runs/{id}/usage and GET /api/runs/{id}/report against a real server on loopback."""

from __future__ import annotations

from typing import Any

import pytest

from tests.api.conftest import Api
from tests.api.test_operator_api import create_run, lease
from tests.api.test_resolve import code_of, unknown_action

pytestmark = pytest.mark.anyio


async def report(api: Api, run_id: str, key: str, body: dict[str, Any]) -> Any:
    async with api.client(key) as c:
        return await c.post(f"/api/runs/{run_id}/usage", json=body)


async def worker_key(api: Api, name: str) -> str:
    async with api.client("ops") as c:
        r = await c.post("/api/keys", json={"name": name, "roles": ["worker"]})
    assert r.status_code == 201, r.text
    key: str = r.json()["key"]
    return key


async def run_view(api: Api, run_id: str) -> dict[str, Any]:
    async with api.client("aud") as c:
        body: dict[str, Any] = (await c.get(f"/api/runs/{run_id}")).json()
    return body


async def events(api: Api, run_id: str, type_: str) -> list[dict[str, Any]]:
    async with api.client("aud") as c:
        items = (await c.get(f"/api/runs/{run_id}/events")).json()["items"]
    return [e for e in items if e["type"] == type_]


async def test_the_runs_worker_reports_spend_recorded_in_the_ledger(api: Api) -> None:
    run = await create_run(api, workers=["wrk"])
    r = await report(api, run["run_id"], "wrk", {"kind": "model", "amount": "0.42", "note": "tokens"})
    assert r.status_code == 201, r.text
    charge = r.json()
    assert (charge["kind"], charge["tag"], charge["amount"], charge["by"]) == ("model", "model", "0.42", "wrk")
    assert charge["replayed"] is False
    assert charge["spend"] == {"limit": "1.00", "reserved": "0.00", "spent": "0.42", "remaining": "0.58"}
    assert (await run_view(api, run["run_id"]))["budgets"]["spend"]["spent"] == "0.42"
    [entry] = await events(api, run["run_id"], "usage_reported")
    assert (
        entry["data"].items()
        >= {"charge_id": charge["charge_id"], "tag": "model", "amount": "0.42", "by": "wrk"}.items()
    )
    async with api.client("aud") as c:
        assert (await c.get("/api/ledger/verify")).json()["ok"] is True


async def test_an_operator_may_report_and_an_auditor_or_approver_may_not(api: Api) -> None:
    run = await create_run(api)
    body = {"kind": "runtime", "amount": "0.10"}
    assert (await report(api, run["run_id"], "op", body)).status_code == 201
    for key in ("aud", "appr"):
        refused = await report(api, run["run_id"], key, body)
        assert (refused.status_code, refused.json()["error"]["code"]) == (403, "forbidden")
    assert (await run_view(api, run["run_id"]))["budgets"]["spend"]["spent"] == "0.10"


async def test_a_worker_reports_only_for_the_runs_it_may_lease(api: Api) -> None:
    run = await create_run(api, workers=["wrk"])
    other = await worker_key(api, "another-worker")
    async with api.client(None) as c:
        c.headers["Authorization"] = f"Bearer {other}"
        refused = await c.post(f"/api/runs/{run['run_id']}/usage", json={"kind": "model", "amount": "0.01"})
    assert (refused.status_code, refused.json()["error"]["code"]) == (404, "not_found")
    foreign = await report(api, run["run_id"], "other", {"kind": "model", "amount": "0.01"})  # another tenant
    assert (foreign.status_code, foreign.json()["error"]["code"]) == (404, "not_found")
    assert (await run_view(api, run["run_id"]))["budgets"]["spend"]["spent"] == "0.00"


async def test_a_retried_report_with_the_same_ref_is_charged_once(api: Api) -> None:
    run = await create_run(api)
    body = {"kind": "model", "amount": "0.30", "ref": "step-7"}
    first = (await report(api, run["run_id"], "wrk", body)).json()
    again = await report(api, run["run_id"], "wrk", body)
    assert again.status_code == 201
    assert again.json()["charge_id"] == first["charge_id"] and again.json()["replayed"] is True
    changed = await report(api, run["run_id"], "wrk", {**body, "amount": "0.31"})
    assert (changed.status_code, changed.json()["error"]["code"]) == (409, "idempotency_conflict")
    assert changed.json()["error"]["charge_id"] == first["charge_id"]
    assert (await run_view(api, run["run_id"]))["budgets"]["spend"]["spent"] == "0.30"
    assert len(await events(api, run["run_id"], "usage_reported")) == 1


@pytest.mark.parametrize(
    "body",
    [
        {"kind": "model", "amount": "0.001"},  # more decimals than USD has
        {"kind": "model", "amount": "-1.00"},
        {"kind": "model", "amount": "lots"},
        {"kind": "model", "amount": 0.42},  # money is never a float
        {"kind": "tool", "amount": "0.42"},  # tool costs are the gate's, not reported
        {"kind": "model"},
        {"kind": "model", "amount": "0.42", "extra": 1},
    ],
)
async def test_a_bad_report_is_422_invalid_request_and_charges_nothing(api: Api, body: dict[str, Any]) -> None:
    run = await create_run(api)
    r = await report(api, run["run_id"], "wrk", body)
    assert (r.status_code, r.json()["error"]["code"]) == (422, "invalid_request")
    assert (await run_view(api, run["run_id"]))["budgets"]["spend"]["spent"] == "0.00"


async def test_spend_past_the_limit_is_recorded_raises_budget_overrun_and_refuses_paid_calls(api: Api) -> None:
    run = await create_run(api)
    grant = await lease(api, run["run_id"])
    r = await report(api, run["run_id"], "wrk", {"kind": "model", "amount": "1.50"})
    assert r.status_code == 201
    assert r.json()["spend"].items() >= {"spent": "1.50", "remaining": "-0.50"}.items()
    [overrun] = await events(api, run["run_id"], "budget_overrun")
    assert overrun["data"].items() >= {"charge_id": r.json()["charge_id"], "spent": "1.50", "limit": "1.00"}.items()
    gate = api.gateway.gate
    refused = await gate.call(grant["token"], "shop__charge", {"card": "ok"})  # costs 0.20
    assert code_of(refused) == "budget_exhausted"
    assert refused.structured is not None and refused.structured["error"]["dimension"] == "spend"
    assert code_of(await gate.call(grant["token"], "shop__find", {"q": "free"})) is None  # costs nothing
    assert api.effects == []


async def test_spend_reported_after_a_resume_is_recovery_until_a_checkpoint(api: Api) -> None:
    run = await create_run(api)
    before = (await report(api, run["run_id"], "wrk", {"kind": "model", "amount": "0.10"})).json()
    async with api.client("op") as c:
        assert (await c.post(f"/api/runs/{run['run_id']}/pause")).status_code == 200
        assert (await c.post(f"/api/runs/{run['run_id']}/resume")).status_code == 200
    after = (await report(api, run["run_id"], "wrk", {"kind": "runtime", "amount": "0.05"})).json()
    assert (before["tag"], after["kind"], after["tag"]) == ("model", "runtime", "recovery")


async def test_the_report_shows_the_pilot_measures_and_adds_up_to_the_runs_spend(api: Api) -> None:
    run, token, unknown = await unknown_action(api)  # shop__charge: lost after sending, 0.20 reserved
    rid = run["run_id"]
    gate = api.gateway.gate
    assert code_of(await gate.call(token, "shop__charge", {"card": "ok"})) is None  # tool: 0.20
    pending = await gate.call(token, "shop__order", {"to": "bob@example.com"})
    assert code_of(pending) == "approval_required"
    api.clock.advance(90)  # the approver looks for 90 s
    async with api.client("appr") as c:
        approval_id = pending.structured["error"]["approval_id"] if pending.structured else None
        assert (await c.post(f"/api/approvals/{approval_id}/approve", json={})).status_code == 200
    assert code_of(await gate.call(token, "shop__order", {"to": "bob@example.com"})) is None  # tool: 0.10
    async with api.client("op") as c:
        resolved = {"status": "succeeded", "evidence": "charged twice in the processor's dashboard", "duplicate": True}
        assert (await c.post(f"/api/actions/{unknown}/resolve", json=resolved)).status_code == 200  # tool: 0.20
        await report(api, rid, "wrk", {"kind": "model", "amount": "0.07"})
        await report(api, rid, "wrk", {"kind": "runtime", "amount": "0.03"})
        assert (await c.post(f"/api/runs/{rid}/pause")).status_code == 200
        api.clock.advance(600)
        assert (await c.post(f"/api/runs/{rid}/resume")).status_code == 200
        await report(api, rid, "wrk", {"kind": "model", "amount": "0.11"})  # recovery
        api.clock.advance(30)
    async with api.client("aud") as c:
        r = await c.get(f"/api/runs/{rid}/report")
    assert r.status_code == 200, r.text
    got = r.json()
    spent = (await run_view(api, rid))["budgets"]["spend"]["spent"]
    assert got["cost"] == {
        "total": spent,
        "by_tag": {"model": "0.07", "tool": "0.50", "runtime": "0.03", "recovery": "0.11", "children": "0.00"},
    }
    assert spent == "0.71"
    assert got["usable"] is False and got["status"] == "running"
    assert got["review_time"] == {
        "approvals": 1,
        "total_seconds": 90,
        "median_seconds": 90,
        "max_seconds": 90,
        "p50_seconds": 90,
        "p90_seconds": 90,
    }
    recovery = got["recovery"]
    assert (recovery["resumes"], recovery["recovery_spend"], recovery["recovery_seconds"]) == (1, "0.11", 30)
    assert recovery["by_cause"] == {"takeover": 0, "restart": 0, "resume": 1}
    assert (recovery["episodes"][0]["spend"], recovery["episodes"][0]["outcome"]) == ("0.11", "open")
    # The operator's evidence: it happened twice. Still the alias until it goes.
    assert (got["duplicate_effects"], got["duplicates_found"], got["duplicates_prevented"]) == (1, 1, 0)
    assert got["unusable_reasons"] == ["not_completed", "duplicate_effects"]
    assert got["budgets"]["spend"] == {"limit": "1.00", "spent": "0.71"}
    assert got["active_seconds"] == 30  # after the resume: not the 90 s waiting for the approver, nor the pause


async def test_a_report_that_would_pass_the_counters_bound_is_422_and_changes_nothing(api: Api) -> None:
    run = await create_run(api, workers=["wrk"])
    first = await report(api, run["run_id"], "wrk", {"kind": "model", "amount": "999999999999999.99"})
    assert first.status_code == 201, first.text
    refused = await report(api, run["run_id"], "wrk", {"kind": "model", "amount": "0.01"})
    assert (refused.status_code, refused.json()["error"]["code"]) == (422, "amount_out_of_range")
    assert (await run_view(api, run["run_id"]))["budgets"]["spend"]["spent"] == "999999999999999.99"
    async with api.client("aud") as c:
        assert (await c.get("/api/runs")).status_code == 200
        assert (await c.get("/api/ledger/verify")).json()["ok"] is True


async def test_a_cancelled_run_takes_no_usage_report(api: Api) -> None:
    run = await create_run(api, workers=["wrk"])
    async with api.client("op") as c:
        assert (await c.post(f"/api/runs/{run['run_id']}/cancel", json={"reason": "done"})).status_code == 200
    refused = await report(api, run["run_id"], "wrk", {"kind": "model", "amount": "0.01"})
    assert (refused.status_code, refused.json()["error"]["code"]) == (409, "run_cancelled")
    assert (await run_view(api, run["run_id"]))["budgets"]["spend"]["spent"] == "0.00"
    assert await events(api, run["run_id"], "usage_reported") == []
