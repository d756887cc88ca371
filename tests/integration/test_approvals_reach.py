"""Approvals that reach people, end to end (issue 24, docs/decisions/0029-approvals-reach.md): a served
gateway (uvicorn on loopback), the official MCP SDK client as the worker, and a real webhook receiver
on loopback subscribed by the issue's name `approval_required`. Each approval asked for reaches it
once, signed, with a console link under `oauth.public_url` and never the payload."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.contracts import DROP, contract
from tests.harness import eventually
from tests.integration.served_hooks import Served, serving_with_hooks, worker

pytestmark = pytest.mark.anyio

SECRET = "whsec-approvals-reach"
PUBLIC = "https://warrant.acme.example"
KEYS = {"op": ("acme", "operator"), "ana": ("acme", "approver")}
CONTRACT: dict[str, Any] = contract(
    goal="Mail two partners",
    lease_ttl=DROP,
    authority={"allow": ["notes__*"]},
)


@pytest.fixture
async def world(tmp_path: Path) -> AsyncIterator[Served]:
    extra = f"oauth: {{public_url: '{PUBLIC}'}}\n"
    hooks = {"people": ["approval_required"]}
    async with serving_with_hooks(tmp_path, keys=KEYS, hooks=hooks, secret=SECRET, extra=extra) as served:
        yield served


async def test_each_approval_reaches_the_webhook_once_with_its_link_and_without_the_payload(world: Served) -> None:
    run_id, token = await world.start(CONTRACT)
    asked = []
    async with worker(world, token) as mcp:
        for to in ("bo@partner.example", "cy@partner.example"):
            args = {"note_id": "note-HUNTER2", "to": to}
            result = await mcp.call_tool("notes__send", args)
            error = (result.structured_content or {})["error"]
            assert error["code"] == "approval_required"
            asked.append(error["approval_id"])
    assert len(set(asked)) == 2  # the second proposal replaced the first: two approvals

    await eventually(lambda: len(world.receiver.bodies) == 2)
    for delivered, approval_id in zip(world.receiver.delivered("people"), asked, strict=True):
        body, signed, raw = delivered.body, delivered.signed, delivered.raw
        assert signed and body["kind"] == "approval_requested" and body["run_id"] == run_id
        data = body["data"]
        assert (data["approval_id"], data["tool"], data["blocks_run"]) == (approval_id, "notes__send", True)
        assert data["link"] == f"{PUBLIC}/console/approvals/{approval_id}"
        assert len(data["payload_sha256"]) == 64 and data["decide_by"] and data["destination"]
        assert b"HUNTER2" not in raw and b"partner.example" not in raw
    async with world.client("op") as c:
        events = (await c.get(f"/api/runs/{run_id}/events")).json()["items"]
    assert [e["data"]["approval_id"] for e in events if e["type"] == "approval_requested"] == asked
    async with world.client("ana") as c:
        shown = (await c.get(f"/api/approvals/{asked[1]}")).json()
    assert (shown["blocks_run"], shown["approvers"], shown["escalate_at"]) == (True, None, None)
    assert shown["destination"] == body["data"]["destination"]


async def test_a_contract_may_not_unblock_the_run_where_the_policy_blocks_it(world: Served) -> None:
    unblocking = contract(
        goal="Mail partners without waiting",
        lease_ttl=DROP,
        authority={"allow": ["notes__*"]},
        approvals=[{"tool": "notes__send", "blocks_run": False}],
    )
    async with world.client("op") as c:
        r = await c.post("/api/runs", json=unblocking)
    assert r.status_code == 422 and r.json()["error"]["code"] == "approval_looser_than_policy"
    [problem] = r.json()["error"]["problems"]
    assert (problem["field"], problem["policy"], problem["contract"]) == ("approvals.0.blocks_run", True, False)
