"""Leases that fit agents, end to end (docs/leases.md): a real `warrant serve`, the example notebook
behind it over stdio, the official MCP SDK client in front, and a 20 s `lease_ttl` waited out for
real (these few tests sleep 30 s each; they run side by side under xdist).

The gateway and its fixture are tests/e2e/test_mcp_end_to_end.py's (`served`, one per module).
The same three through `warrant stdio` are the stdio bridge's own tests.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from tests.e2e.serving import code_of
from tests.e2e.test_mcp_end_to_end import WAIT, Served, served, tool_names

__all__ = ["served"]  # the module's gateway (a fixture)

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

TTL = "20s"
IDLE = 30.0  # seconds the agent makes no request: past its lease's time
BOUND = WAIT + IDLE
APPROVAL = {"tool": "files__write_note", "role": "approver", "decide_within": "1h", "valid_for": "1h"}


async def _events(served: Served, run_id: str) -> list[dict[str, Any]]:
    async with served.api("op") as api:
        answer = await api.get(f"/api/runs/{run_id}/events", params={"limit": 1000})
    assert answer.status_code == 200, answer.text
    items: list[dict[str, Any]] = answer.json()["items"]
    return items


def _titles(effects: list[dict[str, Any]]) -> list[str]:
    return [e["title"] for e in effects]


async def test_a_holder_idle_past_its_lease_carries_on_with_the_same_token(served: Served) -> None:
    run_id, token = await served.start(lease_ttl=TTL)
    before = served.effects()
    with anyio.fail_after(BOUND):
        async with served.connect(token, "auto") as client:
            first = await client.call_tool("files__write_note", {"title": "idle-before", "body": "x"})
            assert code_of(first) is None, first
            await anyio.sleep(IDLE)  # stays: the lease's time passes for real (a real gateway process)
            after = await client.call_tool("files__write_note", {"title": "idle-after", "body": "x"})
            names = await tool_names(client)
    assert code_of(after) is None, after
    assert "files__write_note" in names
    assert _titles(served.effects()[len(before) :]) == ["idle-before", "idle-after"]
    # Re-established once, under the same epoch: nobody took it over.
    lapses = [e["data"] for e in await _events(served, run_id) if e["type"] == "lease_reestablished"]
    assert [(e["epoch"], e["worker"]) for e in lapses] == [(1, "agent-1")]
    assert lapses[0]["lapsed_s"] > 0


async def test_an_approval_decided_after_the_lease_time_is_usable_by_the_same_client_and_token(
    served: Served,
) -> None:
    run_id, token = await served.start(lease_ttl=TTL, approvals=[APPROVAL])
    note = {"title": "approved-late", "body": "after a long wait"}
    before = served.effects()
    with anyio.fail_after(BOUND):
        async with served.connect(token, "auto") as client:
            asked = await client.call_tool("files__write_note", note)
            assert code_of(asked) == "approval_required", asked
            assert asked.structured_content is not None
            error = asked.structured_content["error"]
            await anyio.sleep(IDLE)  # stays: the agent waits, silent; a person decides after its lease's time
            async with served.api("appr") as api:
                decided = await api.post(
                    f"/api/approvals/{error['approval_id']}/approve", json={"expected_sha256": error["payload_sha256"]}
                )
            assert decided.status_code == 200, decided.text
            sent = await client.call_tool("files__write_note", note)
    assert code_of(sent) is None, sent
    assert _titles(served.effects()[len(before) :]) == ["approved-late"]
    # While the run waited, the lease did not lapse: nothing to re-establish.
    assert "lease_reestablished" not in {e["type"] for e in await _events(served, run_id)}


async def test_after_an_idle_expiry_a_takeover_still_kills_the_old_token(served: Served) -> None:
    run_id, old = await served.start(lease_ttl=TTL)
    with anyio.fail_after(BOUND):
        async with served.connect(old, "auto") as client:
            first = await client.call_tool("files__write_note", {"title": "idle-takeover-1", "body": "x"})
            assert code_of(first) is None, first
            await anyio.sleep(IDLE)  # stays: the lease's time passes for real (a real gateway process)
            # Polling its status is a request of the holder: it re-establishes the lease, which holds
            # again, so another worker needs an explicit takeover.
            status = await client.call_tool("warrant_status", {})
            assert code_of(status) is None and status.structured_content is not None
            assert status.structured_content["lease"]["state"] == "live"
            async with served.api("op") as api:
                held = await api.post(f"/api/runs/{run_id}/lease", json={"worker": "agent-2"})
                assert held.status_code == 409 and held.json()["error"]["code"] == "lease_held", held.text
                grant = await api.post(f"/api/runs/{run_id}/lease", json={"worker": "agent-2", "takeover": True})
            assert grant.status_code == 201, grant.text
            before = served.effects()
            late = await client.call_tool("files__write_note", {"title": "idle-takeover-late", "body": "x"})
            read = await client.call_tool("files__read_note", {"title": "idle-takeover-1"})
            dead = await client.call_tool("warrant_status", {})
        assert [code_of(late), code_of(read), code_of(dead)] == ["lease_superseded"] * 3
        assert served.effects() == before  # nothing the old worker sent reached the notebook
        async with served.connect(grant.json()["token"], "auto") as client:
            mine = await client.call_tool("files__write_note", {"title": "idle-takeover-late", "body": "x"})
    assert code_of(mine) is None, mine
    assert _titles(served.effects()[len(before) :]) == ["idle-takeover-late"]
