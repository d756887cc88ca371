"""The failed end, end to end (issue 23, docs/decisions/0024-failed-end.md): a served gateway (uvicorn
on loopback), the official MCP SDK client as the worker, and a real webhook receiver on loopback.
A run whose verification fails under `completion.on_verification_failed: fail` ends `failed`, with
its `run_failed` ledger entry, and the signed `run_failed` alert arrives at the receiver; a serious
refusal reaches a receiver that takes that kind, and nothing of the call's arguments goes with it."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from tests.contracts import DROP, contract
from tests.harness import eventually
from tests.integration.served_hooks import Served, serving_with_hooks, worker

pytestmark = pytest.mark.anyio

SECRET = "whsec-failed-end"
CONTRACT: dict[str, Any] = contract(
    goal="An inventory the gateway verifies",
    lease_ttl=DROP,
    authority={"allow": ["notes__*"], "deny": ["notes__append"]},
    milestones=[{"id": "inventory", "checks": [{"artifact": "inventory"}]}],
    completion={"on_verification_failed": "fail"},
    escalation={"serious_refusals": ["forbidden"]},
)


@pytest.fixture
async def world(tmp_path: Path) -> AsyncIterator[Served]:
    hooks = {"failures": ["run_failed"], "refusals": ["serious_refusal"]}
    async with serving_with_hooks(tmp_path, keys={"op": ("acme", "operator")}, hooks=hooks, secret=SECRET) as served:
        yield served


async def call(c: Client, name: str, arguments: dict[str, Any]) -> tuple[bool, dict[str, Any], str]:
    result = await c.call_tool(name, arguments)
    text = result.content[0].text if result.content else ""  # type: ignore[union-attr]
    return result.is_error, result.structured_content or {}, text


async def test_a_run_that_fails_verification_under_fail_ends_failed_and_the_alert_reaches_the_receiver(
    world: Served,
) -> None:
    run_id, token = await world.start(CONTRACT)
    async with worker(world, token) as c:
        # The artifact the check reads is not there: the milestone fails, and with it the run.
        err, body, text = await call(c, "warrant_milestone", {"milestone_id": "inventory", "evidence": {}})
        assert not err and body["milestone"]["status"] == "failed"
        assert body["run_status"] == "failed" and "the run is failed" in text
        err, body, _ = await call(c, "warrant_status", {})
        assert err and body["error"]["code"] == "run_failed"

    async with world.client("op") as c:
        run = (await c.get(f"/api/runs/{run_id}")).json()
        events = (await c.get(f"/api/runs/{run_id}/events")).json()["items"]
    assert run["status"] == "failed"
    assert (run["status_cause"]["by"], run["status_cause"]["rule"]) == ("gateway", "completion.on_verification_failed")
    failed = [e for e in events if e["type"] == "run_failed"]
    assert [(e["data"]["previous"], e["data"]["milestone_id"]) for e in failed] == [("running", "inventory")]
    alert = next(e for e in events if e["type"] == "alert")
    assert alert["data"]["kind"] == "run_failed"

    await eventually(lambda: world.receiver.kinds("failures") == ["run_failed"])
    [(delivered, signed)] = [(d.body, d.signed) for d in world.receiver.delivered("failures")]
    assert signed  # the Warrant-Signature verifies with the hook's secret
    # The body is the alert entry's envelope: the event id, and the alert's own id beside it.
    assert (delivered["id"], delivered["alert_id"], delivered["run_id"]) == (
        alert["id"],
        alert["data"]["alert_id"],
        run_id,
    )
    assert delivered["data"]["rule"] == "completion.on_verification_failed"
    assert world.receiver.kinds("refusals") == []  # that hook takes serious_refusal only


async def test_a_serious_refusal_reaches_the_receiver_that_takes_it_without_the_arguments(world: Served) -> None:
    run_id, token = await world.start(CONTRACT)
    async with worker(world, token) as c:
        err, body, _ = await call(c, "notes__append", {"title": "t", "body": "the password is hunter2"})
        assert err and body["error"]["code"] == "forbidden"
    await eventually(lambda: world.receiver.kinds("refusals") == ["serious_refusal"])
    [(delivered, signed)] = [(d.body, d.signed) for d in world.receiver.delivered("refusals")]
    assert signed and delivered["run_id"] == run_id
    assert (delivered["data"]["code"], delivered["data"]["tool"]) == ("forbidden", "notes__append")
    assert "hunter2" not in json.dumps(delivered)
    assert world.receiver.kinds("failures") == []
