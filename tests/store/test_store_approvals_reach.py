"""Approvals that reach people and need not stop the run (issue 24; docs/decisions/0029-approvals-reach.md):
the `approval_requested` alert in the request's own transaction, `blocks_run: false`, the rule's
`approvers`, and `approval_escalated` once past `escalate_after` (the clock moved, not waited on)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from gateway.clock import ManualClock
from gateway.domain import RunStatus
from gateway.errors import Forbidden
from gateway.runtime.settings import WatchdogSettings
from gateway.runtime.watchdog import Watchdog
from gateway.store.records import AlertRoutes, ApprovalStatus, Principal
from tests.harness import APPROVER, OPS, TENANT, TEXT, TOOLS, Backend, World, code_of, open_world
from tests.store.downgrade import back_to

pytestmark = pytest.mark.anyio

ROUTES = AlertRoutes(
    (("people", frozenset({"approval_requested", "approval_escalated"})),), console_url="https://gw.example"
)
BO = Principal("bo", TENANT, frozenset({"approver"}), key_id="key_bo")


@pytest.fixture
async def routed(backend: Backend, clock: ManualClock) -> AsyncIterator[World]:
    """A world whose store queues the approvals' alerts to one webhook and links to a public URL."""
    world = await open_world(backend, clock, alert_routes=ROUTES)
    try:
        yield world
    finally:
        await world.teardown()


def gate_policy(world: World, monkeypatch: pytest.MonkeyPatch, **rule: Any) -> None:
    """The gateway policy's approval rule for t__approve, with `rule`'s fields added."""
    approval = {"decide_within": "2m", "valid_for": "1m", **rule}
    monkeypatch.setitem(TOOLS, "approve", (TEXT, {"effect": "write", "approval": approval}))
    world.regate()


async def alerts(world: World, run_id: str) -> list[tuple[str, dict[str, Any]]]:
    return [(a.kind, a.data) for a in reversed(await world.store.list_alerts(TENANT, run_id=run_id))]


async def test_an_approval_request_raises_its_alert_in_the_same_transaction_without_the_payload(
    routed: World,
) -> None:
    run = await routed.new_run()
    asked = await routed.call(run.token, "t__approve", {"text": "the secret is hunter2"})
    approval = await routed.approval(asked)
    [(kind, data)] = await alerts(routed, run.run_id)
    assert kind == "approval_requested"
    assert data == {
        "approval_id": approval.approval_id,
        "tool": "t__approve",
        "destination": "in-process tool approve of adapter t",
        "payload_sha256": approval.payload_sha256,
        "decide_by": data["decide_by"],
        "role": "approver",
        "approvers": None,
        "blocks_run": True,
        "link": f"https://gw.example/console/approvals/{approval.approval_id}",
    }
    types = await routed.event_types(run.run_id)
    assert types.index("approval_requested") < types.index("alert")  # the entry, then its alert
    # Asking again for the same payload is the same approval: no second alert.
    await routed.call(run.token, "t__approve", {"text": "the secret is hunter2"})
    assert len(await alerts(routed, run.run_id)) == 1
    assert "hunter2" not in json.dumps(await alerts(routed, run.run_id))


async def test_without_blocks_run_false_another_write_waits_as_before(world: World) -> None:
    run = await world.new_run()
    assert code_of(await world.call(run.token, "t__approve", {"text": "big"})) == "approval_required"
    assert (await world.run(run.run_id)).status is RunStatus.WAITING
    assert code_of(await world.call(run.token, "t__write", {"text": "other"})) == "run_waiting"
    assert world.tools.effects == []


async def test_with_blocks_run_false_another_write_goes_through_while_the_approval_waits(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    gate_policy(world, monkeypatch, blocks_run=False)
    run = await world.new_run()
    asked = await world.call(run.token, "t__approve", {"text": "big"})
    assert code_of(asked) == "approval_required"
    assert asked.structured is not None and asked.structured["error"]["blocks_run"] is False
    assert (await world.run(run.run_id)).status is RunStatus.RUNNING
    assert code_of(await world.call(run.token, "t__write", {"text": "other"})) is None
    assert world.tools.effects == [("write", {"text": "other"})]
    # Decided, the approved write runs; the run never waited.
    await world.decide(asked)
    assert code_of(await world.call(run.token, "t__approve", {"text": "big"})) is None
    assert "run_waiting" not in await world.event_types(run.run_id)
    assert (await world.run(run.run_id)).status is RunStatus.RUNNING


async def test_a_contract_may_ask_for_an_approval_that_does_not_block_where_the_policy_asks_none(
    world: World,
) -> None:
    run = await world.new_run(approvals=[{"tool": "t__write", "blocks_run": False}])
    assert code_of(await world.call(run.token, "t__write", {"text": "gated"})) == "approval_required"
    assert code_of(await world.call(run.token, "t__paid", {"text": "free"})) is None
    assert (await world.run(run.run_id)).status is RunStatus.RUNNING


async def test_a_paused_run_resumed_with_only_a_non_blocking_approval_pending_runs(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    gate_policy(world, monkeypatch, blocks_run=False)
    run = await world.new_run()
    await world.call(run.token, "t__approve", {"text": "big"})
    await world.store.pause(OPS, run.run_id, "look")
    assert (await world.store.resume(OPS, run.run_id, "go on")).status is RunStatus.RUNNING


async def test_only_the_approvers_a_rule_names_may_decide_it(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    gate_policy(world, monkeypatch, approvers=["key_bo"])  # by the key's id
    run = await world.new_run()
    approval = await world.approval(await world.call(run.token, "t__approve", {"text": "big"}))
    assert approval.approvers == ("key_bo",)
    with pytest.raises(Forbidden) as refused:
        await world.store.decide_approval(APPROVER, approval.approval_id, approve=True, note=None, expected_sha256=None)
    assert refused.value.code == "not_an_approver"
    decided = await world.store.decide_approval(BO, approval.approval_id, approve=True, note=None, expected_sha256=None)
    assert (decided.status, decided.decided_by) == (ApprovalStatus.APPROVED, "bo")


async def test_an_undecided_approval_escalates_once_past_escalate_after(
    routed: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    gate_policy(routed, monkeypatch, escalate_after="30s")
    watchdog = Watchdog(routed.store, routed.clock, WatchdogSettings())
    run = await routed.new_run()
    approval = await routed.approval(await routed.call(run.token, "t__approve", {"text": "big"}))
    routed.clock.advance(29)
    await watchdog.tick()
    assert [k for k, _ in await alerts(routed, run.run_id)] == ["approval_requested"]
    routed.clock.advance(1)
    await watchdog.tick()
    routed.clock.advance(10)
    await watchdog.tick()
    assert [k for k, _ in await alerts(routed, run.run_id)] == ["approval_requested", "approval_escalated"]
    escalated = (await alerts(routed, run.run_id))[1][1]
    assert (escalated["approval_id"], escalated["tool"], escalated["payload_sha256"]) == (
        approval.approval_id,
        "t__approve",
        approval.payload_sha256,
    )
    assert escalated["link"] == f"https://gw.example/console/approvals/{approval.approval_id}"


async def test_a_decided_approval_never_escalates(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    gate_policy(world, monkeypatch, escalate_after="30s")
    watchdog = Watchdog(world.store, world.clock, WatchdogSettings())
    run = await world.new_run()
    await world.decide(await world.call(run.token, "t__approve", {"text": "big"}))
    world.clock.advance(45)
    await watchdog.tick()
    assert "approval_escalated" not in [k for k, _ in await alerts(world, run.run_id)]


async def test_a_store_of_the_version_before_0029_migrates_its_pending_approval_to_one_that_blocks(
    world: World,
) -> None:
    run = await world.new_run()
    asked = await world.call(run.token, "t__approve", {"text": "big"})
    await world.store.close()
    world.backend._execute(*back_to(28, world.backend))
    world.store = world.backend.store(world.clock, process_id="test-gateway")
    await world.store.open()
    world.regate()
    approval = await world.approval(asked)
    assert (approval.blocks_run, approval.approvers, approval.escalate_at) == (True, None, None)
    assert code_of(await world.call(run.token, "t__write", {"text": "other"})) == "run_waiting"
    await world.decide(asked)
    assert code_of(await world.call(run.token, "t__approve", {"text": "big"})) is None
