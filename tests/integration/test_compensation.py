"""Compensation against the demo CRM as a real process (docs/compensation.md): the policy's
`compensate:` of crm__create_contact deletes exactly the contact that call created.

Ground truth is the CRM's own SQLite file; the gateway runs under uvicorn with a ManualClock
(tests/integration/test_http_services.py has the world).
"""

from __future__ import annotations

from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from gateway.tools.calls import ToolCalls
from tests.integration.test_http_services import WAIT, World, secrets_env, world

pytestmark = [pytest.mark.anyio, pytest.mark.slow]
__all__ = ["secrets_env", "world"]  # the fixtures, shared with test_http_services

ANA = {"email": "ana@lead.example", "name": "Ana"}
BEA = {"email": "bea@lead.example", "name": "Bea"}


async def _compensate(world: World, action_id: str, key: str = "ops") -> tuple[int, dict[str, Any]]:
    async with world.api(key) as c:
        r = await c.post(f"/api/actions/{action_id}/compensate", json={"reason": "created by mistake"})
    return r.status_code, r.json()


async def _agent_compensate(world: World, token: str, action_id: str) -> Any:
    calls = ToolCalls(world.gateway.gate)
    with anyio.fail_after(WAIT):
        return await calls.call(token, "warrant_compensate", {"action_id": action_id, "reason": "undo"})


def _contacts(world: World) -> set[str]:
    return {row[0] for row in world.crm.rows("SELECT email FROM contacts")}


async def _events(world: World, run_id: str) -> list[dict[str, Any]]:
    async with world.api() as c:
        return list((await c.get(f"/api/runs/{run_id}/events")).json()["items"])


async def test_compensating_a_created_contact_removes_exactly_that_contact(world: World) -> None:
    run_id, token = await world.run()
    ana = await world.call(token, "crm__create_contact", ANA)
    bea = await world.call(token, "crm__create_contact", BEA)
    assert not ana.is_error and not bea.is_error
    original = ana.meta["warrant/action_id"]

    status, body = await _compensate(world, original)
    assert status == 200, body
    assert _contacts(world) == {"bea@lead.example"}  # Ana's contact, and only hers, is gone
    assert body["original"]["status"] == "compensated"
    compensation = body["compensation"]
    assert (compensation["tool"], compensation["status"]) == ("crm__delete_contact", "succeeded")
    assert compensation["compensates"] == original
    assert compensation["worker"] == "operator:ops"
    events = await _events(world, run_id)
    [moved] = [e for e in events if e["type"] == "action_compensated"]
    assert moved["data"]["action_id"] == original
    assert moved["data"]["compensation_id"] == compensation["action_id"]
    [admitted] = [e for e in events if e["type"] == "action_admitted" and e["data"].get("compensates") == original]
    assert admitted["data"]["reason"] == "created by mistake"

    # Twice is once: the operator again, and the agent, are answered with the first compensation.
    status, again = await _compensate(world, original)
    assert status == 200 and again["replayed"] is True
    assert again["compensation"]["action_id"] == compensation["action_id"]
    by_agent = await _agent_compensate(world, token, original)
    assert not by_agent.is_error and by_agent.meta["warrant/replayed"] is True
    deletes = [a for a in await world.actions(run_id) if a["tool"] == "crm__delete_contact"]
    assert len(deletes) == 1
    assert _contacts(world) == {"bea@lead.example"}
    async with world.api() as c:
        budget = (await c.get(f"/api/runs/{run_id}")).json()["budgets"]
    assert budget["writes"]["spent"] == 3  # two creates and one compensation: it is budgeted


async def test_an_agent_compensates_its_own_write_through_the_gate(world: World) -> None:
    run_id, token = await world.run()
    ana = await world.call(token, "crm__create_contact", ANA)
    original = ana.meta["warrant/action_id"]
    result = await _agent_compensate(world, token, original)
    assert not result.is_error, result.content
    assert _contacts(world) == set()
    [created] = [a for a in await world.actions(run_id) if a["action_id"] == original]
    assert created["status"] == "compensated"


async def test_a_compensation_that_times_out_is_unknown_and_reconciled_by_lookup(world: World) -> None:
    run_id, token = await world.run()
    ana = await world.call(token, "crm__create_contact", ANA)
    original, contact_id = ana.meta["warrant/action_id"], ana.structured["id"]  # type: ignore[index]
    # The CRM holds this one delete past the tool's 3 s timeout, then does it.
    await world.crm.fault(method="DELETE", path=f"/contacts/{contact_id}", mode="delay", delay=5, times=1)

    status, body = await _compensate(world, original)
    assert status == 200, body
    assert (body["code"], body["compensation"]["status"]) == ("outcome_unknown", "unknown")
    assert body["original"]["status"] == "succeeded"  # not moved on an unknown
    # An unknown compensation is never sent again blindly: asking again says it is unknown.
    status, again = await _compensate(world, original)
    assert again["code"] == "outcome_unknown"

    with anyio.fail_after(WAIT):
        while await world.reconcile(run_id) == 0:  # noqa: ASYNC110 - the CRM commits once its delay is over
            await anyio.sleep(0.2)
    actions = {a["action_id"]: a for a in await world.actions(run_id)}
    assert actions[original]["status"] == "compensated"
    assert actions[body["compensation"]["action_id"]]["status"] == "succeeded"
    assert _contacts(world) == set()
    assert world.crm.rows("SELECT COUNT(*) FROM idempotency_keys WHERE method = 'DELETE'") == [(1,)]


async def test_compensation_after_cancel_is_the_operators_and_not_the_agents(world: World) -> None:
    run_id, token = await world.run()
    ana = await world.call(token, "crm__create_contact", ANA)
    original = ana.meta["warrant/action_id"]
    async with world.api() as c:
        assert (await c.post(f"/api/runs/{run_id}/cancel", json={"reason": "wrong leads"})).status_code == 200
        recovery = (await c.get(f"/api/runs/{run_id}/recovery")).json()
    [listed] = recovery["compensable"]
    assert (listed["action_id"], listed["compensate_with"]) == (original, "crm__delete_contact")

    refused = await _agent_compensate(world, token, original)
    assert refused.code == "run_cancelled"  # the cancelled run's lease is dead
    status, body = await _compensate(world, original)
    assert status == 200, body
    assert body["original"]["status"] == "compensated"
    assert _contacts(world) == set()
    async with world.api() as c:
        recovery = (await c.get(f"/api/runs/{run_id}/recovery")).json()
    assert recovery["compensable"] == []


async def test_nobody_compensates_another_runs_or_tenants_action(world: World) -> None:
    _, token = await world.run()
    _, other = await world.run()
    _, rival = await world.run("rival")
    ana = await world.call(token, "crm__create_contact", ANA)
    original = ana.meta["warrant/action_id"]

    assert (await _agent_compensate(world, other, original)).code == "not_compensable"  # same tenant, other run
    assert (await _agent_compensate(world, rival, original)).code == "not_compensable"  # other tenant
    status, body = await _compensate(world, original, key="rival")
    assert status == 404, body
    assert _contacts(world) == {"ana@lead.example"}


async def test_only_a_confirmed_write_with_a_compensation_is_compensated(world: World) -> None:
    _, token = await world.run()
    found = await world.call(token, "crm__search_contacts", {"q": "ana"})
    status, body = await _compensate(world, found.meta["warrant/action_id"])
    assert (status, body["error"]["code"]) == (409, "not_compensable")
    deal_less = await world.call(token, "crm__create_contact", ANA)
    note = await world.call(
        token,
        "crm__add_note",
        {"contact_id": deal_less.structured["id"], "text": "hi"},  # type: ignore[index]
    )
    status, body = await _compensate(world, note.meta["warrant/action_id"])  # add_note names no compensation
    assert (status, body["error"]["code"]) == (409, "not_compensable")
    assert "compensation" not in body and body["error"]["original"]["status"] == "succeeded"

    await world.crm.fault(method="POST", path="/contacts", mode="error_after_commit")
    unknown = await world.call(token, "crm__create_contact", BEA)
    assert unknown.code == "outcome_unknown"
    status, body = await _compensate(world, unknown.meta["warrant/action_id"])
    assert (status, body["error"]["code"]) == (409, "outcome_unknown")  # reconcile first
    assert "reconcile" in body["error"]["message"]


async def test_the_mcp_sdk_client_lists_and_compensates_through_warrant_status(world: World) -> None:
    run_id, token = await world.run()
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=WAIT) as http,
        Client(streamable_http_client(f"{world.url}/mcp", http_client=http), cache=None) as c,
    ):
        assert "warrant_compensate" in {t.name for t in (await c.list_tools()).tools}
        made = await c.call_tool("crm__create_contact", ANA)
        assert not made.is_error
        status = (await c.call_tool("warrant_status", {})).structured_content or {}
        [listed] = status["recovery"]["compensable"]
        assert listed["compensate_with"] == "crm__delete_contact"
        undone = await c.call_tool("warrant_compensate", {"action_id": listed["action_id"], "reason": "duplicate"})
        assert not undone.is_error, undone.content
        twice = await c.call_tool("warrant_compensate", {"action_id": listed["action_id"], "reason": "again"})
        assert not twice.is_error and (twice.meta or {}).get("warrant/replayed") is True
        status = (await c.call_tool("warrant_status", {})).structured_content or {}
        assert status["recovery"]["compensable"] == []
    assert _contacts(world) == set()
    deletes = [a for a in await world.actions(run_id) if a["tool"] == "crm__delete_contact"]
    assert len(deletes) == 1


async def test_warrant_actions_compensate_from_the_cli(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.integration.test_waits import warrant

    monkeypatch.setenv("WARRANT_API_KEY", "key-ops")
    _, token = await world.run()
    made = await world.call(token, "crm__create_contact", ANA)
    original = made.meta["warrant/action_id"]
    argv = ["actions", "compensate", original, "--reason", "a test lead", "--url", world.url]
    code, out = await warrant(argv)
    assert code == 0, out
    assert "crm__delete_contact succeeded" in out and f"{original} is compensated" in out
    code, out = await warrant([*argv, "--json"])
    assert code == 0 and '"replayed": true' in out
    assert _contacts(world) == set()
    search = await world.call(token, "crm__search_contacts", {"q": "x"})
    code, _ = await warrant(
        ["actions", "compensate", search.meta["warrant/action_id"], "--reason", "r", "--url", world.url]
    )
    assert code == 1  # a read: not_compensable, one line on stderr
