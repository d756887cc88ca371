"""A dead token is dead everywhere: every gateway tool and tools/list answer its refusal, nothing of the run."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.api.conftest import Api
from tests.mcp.test_mcp_front import MODES, mcp_client, start

pytestmark = pytest.mark.anyio

SECRET = "the heir's next step"
GATEWAY_TOOLS: dict[str, dict[str, Any]] = {
    "warrant_status": {},
    "warrant_propose": {"tool": "shop__order", "arguments": {"to": "x@example.com"}},
    "warrant_repeat": {"action_id": "act_nothing", "reason": "again"},
    "warrant_compensate": {"action_id": "act_nothing", "reason": "undo"},
    "warrant_checkpoint": {"expected_version": 0, "next_operation": {"description": "go on"}},
    "warrant_milestone": {"milestone_id": "m1", "evidence": {}},
    "warrant_complete": {"summary": "done"},
    "warrant_plan": {"expected_version": 0, "tasks": [{"id": "t1", "title": "one"}]},
    "warrant_task": {"task_id": "t1", "status": "running"},
    "warrant_nothing": {},
}


async def _kill(api: Api, run_id: str, how: str) -> None:
    async with api.client("op") as c:
        if how == "takeover":
            r = await c.post(f"/api/runs/{run_id}/lease", json={"worker": "heir", "takeover": True})
            heir = r.json()["token"]
            # The new holder saves a checkpoint the old token must not see.
            progress = api.gateway.progress
            assert progress is not None
            saved = await progress.checkpoint(heir, {"expected_version": 0, "next_operation": {"description": SECRET}})
            assert saved.is_error is False
        else:
            r = await c.post(f"/api/runs/{run_id}/cancel", json={"reason": "stop"})
        assert r.status_code in (200, 201), r.text


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(("how", "code"), [("takeover", "lease_superseded"), ("cancel", "run_cancelled")])
async def test_a_dead_token_gets_its_refusal_from_every_gateway_tool_and_tools_list(
    api: Api, mode: str, how: str, code: str
) -> None:
    run_id, token = await start(api)
    await _kill(api, run_id, how)
    async with mcp_client(api, token, mode) as c:
        for name, arguments in GATEWAY_TOOLS.items():
            result = await c.call_tool(name, arguments)
            assert result.is_error is True, name
            assert result.structured_content is not None
            assert result.structured_content["error"]["code"] == code, name
            assert run_id not in json.dumps(result.structured_content), name  # nothing of the run
            assert SECRET not in json.dumps(result.structured_content) + str(result.content)
        listed = await c.list_tools()
    assert listed.tools == []  # nothing of the run: not its tools, not the gateway's
    assert listed.meta is not None and listed.meta["warrant/refusal"]["code"] == code


@pytest.mark.parametrize("mode", MODES)
async def test_a_token_of_a_revoked_key_gets_lease_revoked_from_warrant_status_and_tools_list(
    api: Api, mode: str
) -> None:
    async with api.client("ops") as c:
        worker = (await c.post("/api/keys", json={"name": "w1", "roles": ["worker"]})).json()
        run = (await c.post("/api/runs", json=_contract())).json()
    headers = {"Authorization": f"Bearer {worker['key']}"}
    async with api.client(None) as c:
        grant = (await c.post(f"/api/runs/{run['run_id']}/lease", json={"worker": "agent"}, headers=headers)).json()
    async with api.client("ops") as c:
        assert (await c.post(f"/api/keys/{worker['key_id']}/revoke", json={})).status_code == 200
    async with mcp_client(api, grant["token"], mode) as c:
        result = await c.call_tool("warrant_status", {})
        listed = await c.list_tools()
    assert result.structured_content is not None
    assert result.structured_content["error"]["code"] == "lease_revoked"
    assert listed.tools == [] and listed.meta is not None and listed.meta["warrant/refusal"]["code"] == "lease_revoked"


@pytest.mark.parametrize("mode", MODES)
async def test_a_lapsed_lease_is_not_dead_its_status_reestablishes_it_and_lists_the_tools(api: Api, mode: str) -> None:
    _, token = await start(api)
    api.clock.advance(600)  # past the 5m lease_ttl: lapsed, not dead
    async with mcp_client(api, token, mode) as c:
        result = await c.call_tool("warrant_status", {})
        names = {t.name for t in (await c.list_tools()).tools}
    assert result.is_error is False and result.structured_content is not None
    assert result.structured_content["lease"]["refusal"] is None
    assert result.structured_content["lease"]["state"] == "live"  # re-established by this very request
    assert "warrant_status" in names


def _contract() -> dict[str, Any]:
    from tests.api.conftest import CONTRACT

    return CONTRACT
