"""Revisions and successors end to end: the operator API over HTTP and the worker through the
official MCP SDK client, against a real uvicorn server; the shop adapter records each side effect."""

from __future__ import annotations

from typing import Any

import mcp.types as types
import pytest

from gateway.domain import OPERATION_ID_META, merge_patch, parse_contract, token_hash
from tests.api.conftest import CONTRACT, Api
from tests.e2e.serving import code_of
from tests.harness import OPS
from tests.mcp.test_mcp_front import mcp_client, start

pytestmark = pytest.mark.anyio


def text_of(result: types.CallToolResult) -> str:
    return "".join(block.text for block in result.content if isinstance(block, types.TextContent))


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_after_a_revision_the_workers_write_waits_until_it_read_the_contract(api: Api, mode: str) -> None:
    run_id, token = await start(api)
    async with mcp_client(api, token, mode) as worker:
        assert code_of(await worker.call_tool("shop__charge", {"card": "a"})) is None
        async with api.client("op") as op:
            body = {"spec_version": "v2", "patch": {"budgets": {"writes": 5}}, "reason": "smaller job"}
            revised = await op.post(f"/api/runs/{run_id}/revise", json=body)
        assert revised.status_code == 200, revised.text
        assert revised.json()["changes"] == [{"field": "budgets.writes", "effect": "narrows", "was": 10, "now": 5}]

        refused = await worker.call_tool("shop__charge", {"card": "b"})
        assert code_of(refused) == "spec_version_mismatch"
        assert len(api.effects) == 1

        status = await worker.call_tool("warrant_status", {})
        assert status.structured_content is not None and status.structured_content["spec_version"] == "v2"
        admitted = await worker.call_tool("shop__charge", {"card": "b"})
        assert code_of(admitted) is None
        assert api.effects == [{"card": "a"}, {"card": "b"}]
        assert admitted.meta is not None and admitted.meta["warrant/budget_remaining"]["writes"] == 3


async def test_an_operator_may_narrow_only_and_an_admin_may_widen(api: Api) -> None:
    run_id, _ = await start(api)
    widen = {"spec_version": "v2", "patch": {"budgets": {"writes": 50, "spend": "0.50"}}, "reason": "more"}
    async with api.client("op") as op:
        refused = await op.post(f"/api/runs/{run_id}/revise", json=widen)
        same = await op.post(f"/api/runs/{run_id}/revise", json={"spec_version": "v1", "patch": {}})
        bad = await op.post(
            f"/api/runs/{run_id}/revise",
            json={"spec_version": "v2", "patch": {"goal": None, "budgets": {"writes": -1}}},
        )
    assert (refused.status_code, refused.json()["error"]["code"]) == (403, "widening_requires_admin")
    assert [c["field"] for c in refused.json()["error"]["changes"]] == ["budgets.writes"]
    assert (same.status_code, same.json()["error"]["code"]) == (409, "spec_version_unchanged")
    assert (bad.status_code, bad.json()["error"]["code"]) == (422, "invalid_contract")
    assert {p["field"] for p in bad.json()["error"]["problems"]} == {"goal", "budgets.writes"}
    async with api.client("ops") as admin:
        widened = await admin.post(f"/api/runs/{run_id}/revise", json=widen)
    assert widened.status_code == 200, widened.text
    assert widened.json()["budgets"]["writes"]["limit"] == 50


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_a_successor_does_not_repeat_a_write_its_predecessor_made(api: Api, mode: str) -> None:
    meta: Any = {OPERATION_ID_META: "pay-invoice-7"}
    run_id, token = await start(api)
    async with mcp_client(api, token, mode) as worker:
        first = await worker.call_tool("shop__charge", {"card": "visa"}, meta=meta)
    assert code_of(first) is None and first.meta is not None
    action_id = first.meta["warrant/action_id"]
    async with api.client("op") as op:
        live = await op.post(f"/api/runs/{run_id}/successor", json={"reason": "too early"})
        assert (live.status_code, live.json()["error"]["code"]) == (409, "run_not_terminal")
        assert (await op.post(f"/api/runs/{run_id}/cancel", json={"reason": "worker lost"})).status_code == 200
        extended = await op.post(f"/api/runs/{run_id}/successor", json={"reason": "go on", "extend_by": "24h"})
        assert (extended.status_code, extended.json()["error"]["code"]) == (403, "widening_requires_admin")
        made = await op.post(f"/api/runs/{run_id}/successor", json={"reason": "a new worker goes on"})
        assert made.status_code == 201, made.text
        successor = made.json()
        grant = await op.post(f"/api/runs/{successor['run_id']}/lease", json={"worker": "agent-2"})
    assert successor["lineage_id"] == (await api.gateway.store.get_run("acme", run_id)).lineage_id
    assert successor["budgets"]["spend"]["limit"] == "0.80"  # 1.00 less the 0.20 its predecessor spent

    async with mcp_client(api, grant.json()["token"], mode) as worker:
        again = await worker.call_tool("shop__charge", {"card": "visa"}, meta=meta)

    assert code_of(again) is None
    assert text_of(again).startswith(f"not executed again: identical to action {action_id}")
    assert api.effects == [{"card": "visa"}]


async def test_a_delegated_child_is_carved_out_of_its_parent_over_http(api: Api) -> None:
    run_id, _ = await start(api)
    child = {**CONTRACT, "goal": "a part", "budgets": {**CONTRACT["budgets"], "spend": "0.40", "writes": 2}}
    async with api.client("op") as op:
        made = await op.post(f"/api/runs/{run_id}/children", json=child)
        parent = (await op.get(f"/api/runs/{run_id}")).json()
        too_big = await op.post(f"/api/runs/{run_id}/children", json=child | {"budgets": {**child["budgets"]}})
    assert made.status_code == 201, made.text
    assert made.json()["parent_run_id"] == run_id
    assert parent["budgets"]["spend"]["reserved"] == "0.40"
    assert parent["budgets"]["tool_calls"]["reserved"] == 100
    assert (too_big.status_code, too_big.json()["error"]["code"]) == (409, "budget_exhausted")
    assert too_big.json()["error"]["dimension"] == "tool_calls"
    async with api.client("aud") as auditor:
        forbidden = await auditor.post(f"/api/runs/{run_id}/children", json=child)
    assert forbidden.status_code == 403


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_a_call_revised_twice_while_decided_is_a_retryable_refusal_not_an_internal_error(
    api: Api, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_id, token = await start(api)
    store = api.gateway.gate.store
    admit = store.admit
    landing = iter(["v2", "v3"])

    async def revised_just_before(intent: Any, facts: Any) -> Any:
        version = next(landing, None)
        if version is not None:  # another replica's revision commits just before this admit
            run = await store.get_run("acme", run_id)
            contract = parse_contract(
                merge_patch({**CONTRACT, "spec_version": run.spec_version}, {"spec_version": version})
            )
            await store.revise(
                OPS, run_id, contract=contract, reason="r", widening=False, base_spec_version=run.spec_version
            )
            await store.acknowledge_spec(token_hash(token))
        return await admit(intent, facts)

    async with mcp_client(api, token, mode) as worker:
        assert code_of(await worker.call_tool("shop__find", {"q": "a"})) is None
        monkeypatch.setattr(store, "admit", revised_just_before)
        refused = await worker.call_tool("shop__find", {"q": "b"})  # not a JSON-RPC error (-32603)
        monkeypatch.undo()
        again = await worker.call_tool("shop__find", {"q": "b"})

    assert code_of(refused) == "contract_revised" and refused.is_error
    assert refused.structured_content is not None
    error = refused.structured_content["error"]
    assert (error["retryable"], error["spec_version"]) == (True, "v3")
    assert text_of(refused).startswith("[contract_revised] not executed")
    assert code_of(again) is None
