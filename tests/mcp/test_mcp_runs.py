"""`/mcp/runs/{run_id}` with a worker's API key: the gateway holds the lease, the gate is the same.

The official SDK client against a real uvicorn gateway, both protocol eras.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from tests.api.conftest import Api

pytestmark = pytest.mark.anyio

MODES = ["auto", "legacy"]
SHORT = {"lease_ttl": "20s"}


@asynccontextmanager
async def worker(api: Api, run_id: str, key: str = "key-wrk", mode: str = "auto") -> AsyncIterator[Client]:
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=10) as http:
        transport = streamable_http_client(f"{api.url}/mcp/runs/{run_id}", http_client=http)
        async with Client(transport, mode=mode, cache=None) as client:
            yield client


async def lease_of(api: Api, run_id: str) -> dict[str, Any]:
    async with api.client("op") as c:
        lease: dict[str, Any] = (await c.get(f"/api/runs/{run_id}")).json()["lease"]
    return lease


async def take_over(api: Api, run_id: str, worker_name: str = "agent-2", *, takeover: bool = True) -> str:
    return await api.lease_token(run_id, worker_name, takeover=takeover)


async def refused_on_call(api: Api, run_id: str, key: str) -> str:
    """The JSON-RPC error a client meets calling a tool (raised alone or, by the client's task
    group, inside an exception group)."""
    try:
        async with worker(api, run_id, key=key) as client:
            await client.call_tool("shop__find", {"q": "x"})
    except MCPError as error:
        return error.error.message
    except BaseExceptionGroup as group:
        matched, _ = group.split(MCPError)
        assert matched is not None, group
        first: BaseException = matched
        while isinstance(first, BaseExceptionGroup):
            first = first.exceptions[0]
        assert isinstance(first, MCPError)
        return first.error.message
    raise AssertionError("the call was not refused")


def code_of(result: Any) -> str | None:
    """The refusal code (None: it succeeded); a waiting answer is no error, its `_meta` names it."""
    code: str | None = (result.meta or {}).get("warrant/code")
    return code


@pytest.mark.parametrize("mode", MODES)
async def test_a_worker_key_naming_its_run_lists_reads_and_meets_the_gate(api: Api, mode: str) -> None:
    run_id = await api.new_run()
    async with worker(api, run_id, mode=mode) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        read = await client.call_tool("shop__find", {"q": "x"})
        write = await client.call_tool("shop__order", {"to": "bob@example.com"})
    assert {"shop__find", "shop__order", "warrant_status"} <= names
    assert read.is_error is False and read.meta is not None and read.meta["warrant/action_id"].startswith("act_")
    assert code_of(write) == "approval_required"
    lease = await lease_of(api, run_id)
    assert (lease["worker"], lease["epoch"]) == ("wrk", 1)
    assert api.effects == []


async def test_every_connection_of_the_key_shares_one_held_lease(api: Api) -> None:
    run_id = await api.new_run()
    for mode in MODES:
        async with worker(api, run_id, mode=mode) as client:
            assert (await client.call_tool("shop__find", {"q": "x"})).is_error is False
    async with api.client("wrk") as c:
        held = await c.post(f"/api/runs/{run_id}/lease", json={"worker": "wrk", "held": True})
    assert held.status_code == 201 and held.json()["epoch"] == 1 and held.json()["granted"] is False
    assert (await lease_of(api, run_id))["epoch"] == 1


async def test_an_approval_decided_by_a_person_is_used_by_the_same_worker_connection(api: Api) -> None:
    run_id = await api.new_run()
    async with worker(api, run_id) as client:
        asked = await client.call_tool("shop__order", {"to": "bob@example.com"})
        approval = asked.structured_content["error"]["approval_id"]  # type: ignore[index]
        async with api.client("appr") as c:
            assert (await c.post(f"/api/approvals/{approval}/approve", json={})).status_code == 200
        done = await client.call_tool("shop__order", {"to": "bob@example.com"})
    assert done.is_error is False, done.content
    assert api.effects == [{"to": "bob@example.com"}]


# -- who may, and which runs ---------------------------------------------------------------------
async def test_another_tenants_run_answers_as_one_that_does_not_exist(api: Api) -> None:
    run_id = await api.new_run()
    async with httpx2.AsyncClient(timeout=10) as http:
        theirs = await http.post(
            f"{api.url}/mcp/runs/{run_id}", headers={"Authorization": "Bearer key-other"}, json=_list()
        )
        none = await http.post(
            f"{api.url}/mcp/runs/run_0000000000000000000000000",
            headers={"Authorization": "Bearer key-other"},
            json=_list(),
        )
    assert theirs.status_code == none.status_code == 404
    assert theirs.json()["error"]["data"]["code"] == none.json()["error"]["data"]["code"] == "not_found"
    assert theirs.text.replace(run_id, "RUN") == none.text.replace("run_0000000000000000000000000", "RUN")
    assert (await refused_on_call(api, run_id, "key-other")).startswith("[not_found]")
    assert (await lease_of(api, run_id))["epoch"] == 0  # nothing was granted


async def test_an_unknown_key_is_401_and_a_role_without_leases_is_403(api: Api) -> None:
    run_id = await api.new_run()
    async with httpx2.AsyncClient(timeout=10) as http:
        unknown = await http.post(
            f"{api.url}/mcp/runs/{run_id}", headers={"Authorization": "Bearer nope"}, json=_list()
        )
        auditor = await http.post(
            f"{api.url}/mcp/runs/{run_id}", headers={"Authorization": "Bearer key-aud"}, json=_list()
        )
    assert unknown.status_code == 401 and "www-authenticate" in unknown.headers
    assert auditor.status_code == 403 and auditor.json()["error"]["data"]["code"] == "forbidden"


async def test_a_run_another_worker_holds_is_refused_naming_the_holder(api: Api) -> None:
    run_id = await api.new_run()
    await take_over(api, run_id, "someone-else", takeover=False)
    message = await refused_on_call(api, run_id, "key-wrk")
    assert message.startswith("[lease_held]") and "someone-else" in message
    assert (await lease_of(api, run_id))["worker"] == "someone-else"


# -- fencing ---------------------------------------------------------------------------------------
async def test_a_taken_over_held_lease_stays_dead_for_the_key(api: Api) -> None:
    run_id = await api.new_run(**SHORT)
    async with worker(api, run_id) as client:
        assert (await client.call_tool("shop__find", {"q": "x"})).is_error is False
        await take_over(api, run_id)
        late = await client.call_tool("shop__charge", {"card": "visa"})
    assert code_of(late) == "lease_superseded"
    # Reconnecting does not re-acquire, not even once the other worker's lease lapsed.
    api.clock.advance(30)
    async with worker(api, run_id, mode="legacy") as client:
        again = await client.call_tool("shop__charge", {"card": "visa"})
    assert code_of(again) == "lease_superseded"
    assert api.effects == []
    assert (await lease_of(api, run_id))["worker"] == "agent-2"
    # Only an explicit takeover for the key puts it back.
    async with api.client("wrk") as c:
        refused = await c.post(f"/api/runs/{run_id}/lease", json={"worker": "wrk", "held": True})
        back = await c.post(f"/api/runs/{run_id}/lease", json={"worker": "wrk", "held": True, "takeover": True})
    assert refused.status_code == 409 and refused.json()["error"]["code"] == "lease_superseded"
    assert back.status_code == 201, back.text
    async with worker(api, run_id) as client:
        assert (await client.call_tool("shop__charge", {"card": "visa"})).is_error is False
    assert api.effects == [{"card": "visa"}]


async def test_after_an_idle_expiry_a_takeover_kills_the_keys_held_lease(api: Api) -> None:
    run_id = await api.new_run(**SHORT)
    async with worker(api, run_id) as client:
        assert (await client.call_tool("shop__find", {"q": "x"})).is_error is False
        api.clock.advance(30)
        await take_over(api, run_id, takeover=False)  # expired: no takeover needed
        late = await client.call_tool("shop__charge", {"card": "visa"})
    assert code_of(late) == "lease_superseded"
    assert api.effects == []


async def test_a_cancelled_run_answers_the_worker_key_with_its_refusal(api: Api) -> None:
    run_id = await api.new_run()
    async with worker(api, run_id) as client:
        assert (await client.call_tool("shop__find", {"q": "x"})).is_error is False
        async with api.client("op") as c:
            await c.post(f"/api/runs/{run_id}/cancel", json={"reason": "stop"})
        after = await client.call_tool("shop__find", {"q": "x"})
    assert code_of(after) == "run_cancelled"


# -- agents that wait on people (the gate's lease rules: gateway/domain/admission.py) -------------
async def test_a_worker_key_idle_past_the_ttl_carries_on(api: Api) -> None:
    run_id = await api.new_run(**SHORT)
    async with worker(api, run_id) as client:
        assert (await client.call_tool("shop__find", {"q": "x"})).is_error is False
        api.clock.advance(30)
        after = await client.call_tool("shop__find", {"q": "y"})
    assert after.is_error is False, after.content
    assert (await lease_of(api, run_id))["epoch"] == 1


async def test_an_approval_decided_after_the_ttl_is_usable_through_the_worker_key(api: Api) -> None:
    run_id = await api.new_run(**SHORT)
    async with worker(api, run_id) as client:
        asked = await client.call_tool("shop__order", {"to": "bob@example.com"})
        approval = asked.structured_content["error"]["approval_id"]  # type: ignore[index]
        api.clock.advance(30)
        async with api.client("appr") as c:
            assert (await c.post(f"/api/approvals/{approval}/approve", json={})).status_code == 200
        done = await client.call_tool("shop__order", {"to": "bob@example.com"})
    assert done.is_error is False, done.content
    assert api.effects == [{"to": "bob@example.com"}]


def _list() -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
