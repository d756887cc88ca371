"""Cancel: every token dies at once, pending approvals are superseded, writes in flight settle honestly."""

from __future__ import annotations

import pytest

from gateway.domain import ActionStatus, RunStatus
from gateway.errors import Refusal
from gateway.store.records import ApprovalStatus
from tests.harness import OPS, World, code_of

pytestmark = pytest.mark.anyio


async def test_cancel_bumps_the_epoch_so_the_old_token_meets_run_cancelled(world: World) -> None:
    run = await world.new_run()
    before = await world.run(run.run_id)
    cancelled = await world.store.cancel(OPS, run.run_id, "the job is off", hard=False)
    assert cancelled.status is RunStatus.CANCELLED
    assert cancelled.epoch > before.epoch
    assert code_of(await world.call(run.token, "t__read", {})) == "run_cancelled"
    assert code_of(await world.call(run.token, "t__write", {"text": "x"})) == "run_cancelled"
    with pytest.raises(Refusal) as again:
        await world.store.acquire_lease(OPS, run.run_id, "worker-2", takeover=True)
    assert again.value.code == "run_cancelled"
    assert world.tools.calls == []


async def test_cancel_supersedes_pending_approvals(world: World) -> None:
    run = await world.new_run()
    asked = await world.call(run.token, "t__approve", {"text": "big"})
    await world.store.cancel(OPS, run.run_id, "the job is off", hard=False)
    assert (await world.approval(asked)).status is ApprovalStatus.SUPERSEDED
    assert "approval_superseded" in await world.event_types(run.run_id)


async def test_cancel_twice_is_one_cancel(world: World) -> None:
    run = await world.new_run()
    first = await world.store.cancel(OPS, run.run_id, "off", hard=False)
    second = await world.store.cancel(OPS, run.run_id, "off again", hard=False)
    assert second.epoch == first.epoch and second.status is RunStatus.CANCELLED


async def test_a_write_in_flight_at_a_soft_cancel_settles_with_its_real_outcome_and_is_flagged(world: World) -> None:
    run = await world.new_run()
    world.tools.modes["write"] = "block"
    in_flight = world.spawn(world.gate.call(run.token, "t__write", {"text": "x"}))
    await world.tools.wait_for_effects(1)

    await world.store.cancel(OPS, run.run_id, "stop", hard=False)
    assert code_of(await world.call(run.token, "t__write", {"text": "y"})) == "run_cancelled"
    world.tools.release.set()
    settled = await world.settled(in_flight)

    assert code_of(settled) is None
    action = await world.action(settled)
    assert action.status is ActionStatus.SUCCEEDED
    events = await world.events(run.run_id)
    flagged = [e for e in events if e.type == "effect_after_cancel"]
    assert [e.data["action_id"] for e in flagged] == [action.action_id]
    after = await world.run(run.run_id)
    assert (after.spent["writes"], after.reserved["writes"]) == (1, 0)
    assert world.tools.effects == [("write", {"text": "x"})]


async def test_a_hard_cancel_aborts_the_write_in_flight_which_becomes_unknown_and_keeps_its_reservation(
    world: World,
) -> None:
    run = await world.new_run()
    world.tools.modes["paid"] = "block"
    in_flight = world.spawn(world.gate.call(run.token, "t__paid", {"text": "x"}))
    await world.tools.wait_for_effects(1)

    await world.store.cancel(OPS, run.run_id, "stop now", hard=True)
    assert await world.gate.abort_run(run.run_id) == 1
    aborted = await world.settled(in_flight)

    assert code_of(aborted) == "outcome_unknown"
    action = await world.action(aborted)
    assert action.status is ActionStatus.UNKNOWN
    after = await world.run(run.run_id)
    assert after.reserved == {"spend": 10, "tool_calls": 1, "writes": 1, "active_seconds": 0}
    assert (after.spent["spend"], after.spent["writes"]) == (0, 0)
    assert await world.gate.abort_run(run.run_id) == 0


async def test_a_read_aborted_by_a_hard_cancel_is_answered_as_failed_and_holds_no_reservation(
    world: World,
) -> None:
    run = await world.new_run()
    world.tools.modes["read"] = "block"
    in_flight = world.spawn(world.gate.call(run.token, "t__read", {"q": "x"}))
    await world.tools.wait_for_effects(1)
    await world.store.cancel(OPS, run.run_id, "stop now", hard=True)
    assert await world.gate.abort_run(run.run_id) == 1
    result = await world.settled(in_flight)
    assert code_of(result) == "upstream_unavailable"
    assert (await world.action(result)).status is ActionStatus.FAILED
    assert (await world.run(run.run_id)).reserved == {"spend": 0, "tool_calls": 0, "writes": 0, "active_seconds": 0}
