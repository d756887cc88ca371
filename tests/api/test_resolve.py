"""POST /api/actions/{id}/resolve: an operator settles an `unknown` action with evidence."""

from __future__ import annotations

from typing import Any

import pytest

from gateway.gate import CallResult
from tests.api.conftest import Api
from tests.api.test_operator_api import create_run, lease

pytestmark = pytest.mark.anyio

LOST = {"card": "lost"}


def code_of(result: CallResult) -> str | None:
    return result.code  # a waiting answer (approval_required) is not an error result, and has its code


async def unknown_action(api: Api) -> tuple[dict[str, Any], str, str]:
    """A run whose write of LOST ended `unknown`; returns (run, token, action_id)."""
    run = await create_run(api)
    grant = await lease(api, run["run_id"])
    result = await api.gateway.gate.call(grant["token"], "shop__charge", LOST)
    assert code_of(result) == "outcome_unknown"
    async with api.client("aud") as c:
        actions = (await c.get(f"/api/runs/{run['run_id']}/actions")).json()["items"]
    assert [a["status"] for a in actions] == ["unknown"]
    return run, grant["token"], actions[0]["action_id"]


async def test_resolved_succeeded_keeps_the_evidence_and_a_retry_returns_the_recorded_result(api: Api) -> None:
    run, token, action_id = await unknown_action(api)
    async with api.client("op") as c:
        r = await c.post(
            f"/api/actions/{action_id}/resolve",
            json={
                "status": "succeeded",
                "evidence": "charge ch_42 seen in the processor's dashboard",
                "receipt_id": "ch_42",
            },
        )
        assert r.status_code == 200, r.text
        action = r.json()
        assert action["status"] == "succeeded"
        assert action["receipt"] == {
            "resolved_by": "op",
            "evidence": "charge ch_42 seen in the processor's dashboard",
            "status": "succeeded",
            "id": "ch_42",
        }
        got = (await c.get(f"/api/runs/{run['run_id']}")).json()
        events = (await c.get(f"/api/runs/{run['run_id']}/events")).json()["items"]
    assert got["budgets"]["spend"]["reserved"] == "0.00"
    assert got["budgets"]["spend"]["spent"] == "0.20"
    settled = [e for e in events if e["type"] == "action_settled"]
    assert settled[-1]["data"]["previous"] == "unknown"
    assert settled[-1]["data"]["receipt"]["resolved_by"] == "op"

    effects_before = len(api.effects)
    retry = await api.gateway.gate.call(token, "shop__charge", LOST)
    assert not retry.is_error
    assert retry.meta["warrant/replayed"] is True
    assert retry.meta["warrant/action_id"] == action_id
    assert len(api.effects) == effects_before  # not executed again


async def test_resolved_failed_releases_the_reservation_and_the_operation_may_run_again(api: Api) -> None:
    run, token, action_id = await unknown_action(api)
    async with api.client("op") as c:
        r = await c.post(
            f"/api/actions/{action_id}/resolve", json={"status": "failed", "evidence": "no charge at the processor"}
        )
        assert r.status_code == 200, r.text
        assert r.json()["status"] == "failed"
        got = (await c.get(f"/api/runs/{run['run_id']}")).json()
    assert got["budgets"]["spend"]["reserved"] == "0.00"
    assert got["budgets"]["spend"]["spent"] == "0.00"
    effects_before = len(api.effects)
    retry = await api.gateway.gate.call(token, "shop__charge", LOST)
    assert len(api.effects) == effects_before + 1  # dispatched again, as a new action
    assert retry.meta["warrant/action_id"] != action_id


async def test_only_an_unknown_action_can_be_resolved_and_only_by_a_role_that_may(api: Api) -> None:
    run, token, action_id = await unknown_action(api)
    ok = await api.gateway.gate.call(token, "shop__charge", {"card": "ok"})
    assert not ok.is_error
    settled_id = ok.meta["warrant/action_id"]
    body = {"status": "failed", "evidence": "x"}
    async with api.client("op") as c:
        conflict = await c.post(f"/api/actions/{settled_id}/resolve", json=body)
        bad = await c.post(f"/api/actions/{action_id}/resolve", json={"status": "maybe", "evidence": "x"})
        empty = await c.post(f"/api/actions/{action_id}/resolve", json={"status": "failed", "evidence": ""})
        money = await c.post(f"/api/actions/{action_id}/resolve", json={**body, "actual_spend": "0.5x"})
    async with api.client("appr") as c:
        forbidden = await c.post(f"/api/actions/{action_id}/resolve", json=body)
    async with api.client("other") as c:
        foreign = await c.post(f"/api/actions/{action_id}/resolve", json=body)
    assert (conflict.status_code, conflict.json()["error"]["code"]) == (409, "invalid_transition")
    assert bad.status_code == 422 and empty.status_code == 422
    assert money.status_code in (400, 422) and money.json()["error"]["code"] == "invalid_request"
    assert (forbidden.status_code, forbidden.json()["error"]["code"]) == (403, "forbidden")
    assert (foreign.status_code, foreign.json()["error"]["code"]) == (404, "not_found")
    async with api.client("aud") as c:
        actions = (await c.get(f"/api/runs/{run['run_id']}/actions")).json()["items"]
    assert [a["status"] for a in actions if a["action_id"] == action_id] == ["unknown"]  # nothing changed


async def test_a_destination_refusing_the_gateways_credentials_raises_an_alert(api: Api) -> None:
    run = await create_run(api)
    grant = await lease(api, run["run_id"])
    result = await api.gateway.gate.call(grant["token"], "shop__charge", {"card": "revoked"})
    assert code_of(result) == "upstream_unauthorized"
    async with api.client("aud") as c:
        events = (await c.get(f"/api/runs/{run['run_id']}/events")).json()["items"]
    alerts = [e["data"] for e in events if e["type"] == "alert"]
    assert [(a["kind"], a["tool"], a["action_id"]) for a in alerts] == [
        ("upstream_unauthorized", "shop__charge", result.meta["warrant/action_id"])
    ]
