"""A contract never loosens the gateway's policy (issue 26): through the API, on both stores.

The policy gates `pay__send` with role admin, valid for an hour. A contract (or a revision) whose
approval rule asks less is refused; a run whose stored contract already asks less (created before
this rule, or before the policy was tightened) is still held to the policy by the gate.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from gateway.adapters import PythonAdapter
from gateway.domain import parse_contract
from gateway.store.records import Principal
from tests.api.conftest import CONTRACT, Api, serving_api
from tests.api.test_operator_api import lease
from tests.harness import Backend

pytestmark = pytest.mark.anyio

POLICY = "  pay__send: {effect: write, approval: {role: admin, valid_for: 1h}}\n"
LOOSE = {"tool": "pay__send", "role": "approver", "valid_for": "3650d"}
GATED = {**CONTRACT, "authority": {"allow": ["shop__*", "pay__*"]}}


def pay_adapter(sent: list[dict[str, Any]]) -> PythonAdapter:
    pay = PythonAdapter("pay")

    @pay.tool(input_schema={"type": "object", "properties": {"to": {"type": "string"}}, "required": ["to"]})
    async def send(args: dict[str, Any], call: Any) -> dict[str, Any]:
        sent.append(args)
        return {"id": f"payment-{len(sent)}"}

    return pay


@pytest.fixture
async def served(tmp_path: Path, backend: Backend) -> AsyncIterator[tuple[Api, list[dict[str, Any]]]]:
    sent: list[dict[str, Any]] = []
    database = getattr(backend, "url", None)  # PostgreSQL; SQLite: a file of the app's own
    async with serving_api(tmp_path, policy_extra=POLICY, adapters=[pay_adapter(sent)], database=database) as api:
        yield api, sent


async def test_a_contract_whose_approval_rule_asks_less_than_the_policy_is_refused_and_no_run_is_made(
    served: tuple[Api, list[dict[str, Any]]],
) -> None:
    api, _ = served
    async with api.client("ops") as c:
        refused = await c.post("/api/runs", json={**GATED, "approvals": [LOOSE]})
        assert refused.status_code == 422, refused.text
        error = refused.json()["error"]
        assert error["code"] == "approval_looser_than_policy"
        assert [p["field"] for p in error["problems"]] == ["approvals.0.role", "approvals.0.valid_for"]
        assert (await c.get("/api/runs")).json()["items"] == []
        # Asking the same or more is accepted; a field the contract leaves out is no loosening.
        stricter = {"tool": "pay__*", "role": "admin", "valid_for": "10m", "decide_within": "1h"}
        ok = await c.post("/api/runs", json={**GATED, "approvals": [stricter, {"tool": "pay__send"}]})
        assert ok.status_code == 201, ok.text


async def test_an_approver_cannot_approve_what_the_policy_gives_to_admins_and_it_is_valid_for_the_policys_hour(
    served: tuple[Api, list[dict[str, Any]]],
) -> None:
    api, sent = served
    # A run stored with the looser rule (made before this check, or before the policy was tightened).
    admin = Principal(name="ops", tenant="acme", roles=frozenset({"admin"}))
    run = await api.gateway.store.create_run(admin, parse_contract({**GATED, "approvals": [LOOSE]}))
    token = (await lease(api, run.run_id))["token"]
    gate = api.gateway.gate
    asked = await gate.call(token, "pay__send", {"to": "acct-1"})
    assert asked.code == "approval_required" and asked.structured is not None
    approval_id = asked.structured["error"]["approval_id"]
    [shown_to_agent] = (await gate.status(token))["pending_approvals"]
    assert (shown_to_agent["role"], shown_to_agent["valid_for"]) == ("admin", 3600)
    async with api.client("appr") as c:
        shown = (await c.get(f"/api/approvals/{approval_id}")).json()
        assert shown["role"] == "admin"
        body = {"expected_sha256": shown["payload_sha256"]}
        refused = await c.post(f"/api/approvals/{approval_id}/approve", json=body)
        assert refused.status_code == 403
        assert refused.json()["error"]["code"] == "forbidden"
    async with api.client("ops") as c:
        approved = await c.post(f"/api/approvals/{approval_id}/approve", json={})
        assert approved.status_code == 200, approved.text
    (decided,) = await api.gateway.store.approvals_for(run.run_id, "pay__send", shown["payload_sha256"])
    assert decided.valid_until is not None and decided.decided_at is not None
    assert decided.valid_until - decided.decided_at == 3600  # the policy's hour, not the contract's ten years
    done = await gate.call(token, "pay__send", {"to": "acct-1"})
    assert done.code is None and sent == [{"to": "acct-1"}]


async def test_a_revision_adding_a_rule_looser_than_the_policy_is_refused_for_an_operator_and_an_admin(
    served: tuple[Api, list[dict[str, Any]]],
) -> None:
    api, _ = served
    async with api.client("ops") as c:
        created = await c.post("/api/runs", json={**GATED, "approvals": [{"tool": "shop__charge", "role": "admin"}]})
        assert created.status_code == 201, created.text
        run_id = created.json()["run_id"]
        keep = {"tool": "shop__charge", "role": "admin"}
    for key in ("op", "ops"):
        async with api.client(key) as c:
            revised = await c.post(
                f"/api/runs/{run_id}/revise",
                json={"spec_version": f"v2-{key}", "patch": {"approvals": [keep, LOOSE]}, "reason": "ten years"},
            )
            assert revised.status_code == 422, revised.text
            assert revised.json()["error"]["code"] == "approval_looser_than_policy"
    async with api.client("op") as c:
        removed = await c.post(
            f"/api/runs/{run_id}/revise", json={"spec_version": "v3", "patch": {"approvals": []}, "reason": "drop it"}
        )
        assert removed.status_code == 403
        assert removed.json()["error"]["code"] == "widening_requires_admin"
        loosened = {"tool": "shop__charge", "role": "approver"}
        weaker = await c.post(
            f"/api/runs/{run_id}/revise", json={"spec_version": "v3", "patch": {"approvals": [loosened]}, "reason": "x"}
        )
        assert weaker.status_code == 403
        assert weaker.json()["error"]["code"] == "widening_requires_admin"
        tighter = [keep, {"tool": "pay__send", "role": "admin", "valid_for": "5m"}]
        narrowed = await c.post(
            f"/api/runs/{run_id}/revise", json={"spec_version": "v3", "patch": {"approvals": tighter}, "reason": "y"}
        )
        assert narrowed.status_code == 200, narrowed.text


async def test_a_child_whose_approval_rule_asks_less_than_the_policy_is_refused(
    served: tuple[Api, list[dict[str, Any]]],
) -> None:
    api, _ = served
    async with api.client("ops") as c:
        parent = (await c.post("/api/runs", json=GATED)).json()["run_id"]
        small = {"spend": "0.10", "tool_calls": 5, "writes": 1, "active_seconds": 60}
        child = {**GATED, "budgets": {**GATED["budgets"], **small}}
        refused = await c.post(f"/api/runs/{parent}/children", json={**child, "approvals": [LOOSE]})
        assert refused.status_code == 422, refused.text
        assert refused.json()["error"]["code"] == "approval_looser_than_policy"
        made = await c.post(f"/api/runs/{parent}/children", json={**child, "approvals": [{"tool": "pay__send"}]})
        assert made.status_code == 201, made.text


OLD_POLICY = "  pay__send: {effect: write, approval: {role: approver, valid_for: 10h}}\n"


async def test_an_approval_asked_under_a_looser_policy_is_neither_used_nor_waited_on_after_it_tightens(
    tmp_path: Path, backend: Backend
) -> None:
    sent: list[dict[str, Any]] = []
    database = getattr(backend, "url", None)
    served = {"policy_extra": OLD_POLICY, "adapters": [pay_adapter(sent)], "database": database}
    async with serving_api(tmp_path, **served) as api:  # type: ignore[arg-type]
        async with api.client("ops") as c:
            run_id = (await c.post("/api/runs", json=GATED)).json()["run_id"]
        token = (await lease(api, run_id))["token"]
        approved = await api.gateway.gate.call(token, "pay__send", {"to": "acct-1"})
        assert approved.structured is not None
        async with api.client("appr") as c:
            ok = await c.post(f"/api/approvals/{approved.structured['error']['approval_id']}/approve", json={})
            assert ok.status_code == 200, ok.text
        pending = await api.gateway.gate.call(token, "pay__send", {"to": "acct-2"})
        assert pending.structured is not None
        old_pending = pending.structured["error"]["approval_id"]
    # The gateway restarts with the policy tightened to admin, one hour.
    async with serving_api(tmp_path, **(served | {"policy_extra": POLICY})) as api:  # type: ignore[arg-type]
        gate = api.gateway.gate
        again = await gate.call(token, "pay__send", {"to": "acct-1"})
        assert again.code == "approval_required" and sent == []
        waiting = await gate.call(token, "pay__send", {"to": "acct-2"})
        assert waiting.code == "approval_required" and waiting.structured is not None
        fresh = waiting.structured["error"]["approval_id"]
        assert fresh != old_pending
        async with api.client("appr") as c:
            assert (await c.get(f"/api/approvals/{old_pending}")).json()["status"] == "superseded"
            assert (await c.get(f"/api/approvals/{fresh}")).json()["role"] == "admin"
            refused = await c.post(f"/api/approvals/{fresh}/approve", json={})
            assert refused.status_code == 403
