"""A store restored from a backup (`Store.mark_restored`) comes up with every live run paused and
every action in flight `unknown`, with the reason, as ledger entries that still verify."""

from __future__ import annotations

import pytest

from gateway.domain import ActionStatus, RunStatus
from tests.harness import OPS, World, code_of

pytestmark = pytest.mark.anyio


async def test_restored_live_runs_are_paused_and_actions_in_flight_unknown_until_resumed(world: World) -> None:
    running, waiting, paused, cancelled = [await world.new_run() for _ in range(4)]
    world.tools.modes["write"] = "block"
    world.spawn(world.gate.call(running.token, "t__write", {"text": "x"}))
    await world.tools.wait_for_effects(1)
    assert code_of(await world.call(waiting.token, "t__approve", {"text": "big"})) == "approval_required"
    await world.store.pause(OPS, paused.run_id, "an operator's own pause")
    await world.store.cancel(OPS, cancelled.run_id, "off", hard=False)
    [admitted] = [a for a in await world.actions(running.run_id) if a.status is ActionStatus.ADMITTED]

    restored = await world.store.mark_restored(by="warrant restore")

    assert restored.reason.startswith("restored from backup ") and restored.taken_at is not None
    assert sorted(restored.runs_paused) == sorted([running.run_id, waiting.run_id])
    assert restored.actions_unknown == [admitted.action_id]
    for run in (running, waiting):
        record = await world.run(run.run_id)
        assert (record.status, record.status_reason) == (RunStatus.PAUSED, restored.reason)
    assert (await world.run(paused.run_id)).status_reason == "an operator's own pause"
    assert (await world.run(cancelled.run_id)).status is RunStatus.CANCELLED
    action = await world.action(admitted.action_id)
    assert (action.status, action.reason) == (ActionStatus.UNKNOWN, restored.reason)
    assert (await world.store.verify_ledger()).ok

    assert code_of(await world.call(running.token, "t__read", {})) == "run_paused"
    await world.store.resume(OPS, running.run_id, "reconciled")
    assert code_of(await world.call(running.token, "t__read", {})) is None


async def test_marking_a_restored_store_twice_changes_nothing_more(world: World) -> None:
    run = await world.new_run()
    first = await world.store.mark_restored(by="warrant restore")
    again = await world.store.mark_restored(by="warrant restore")
    assert first.runs_paused == [run.run_id]
    assert (again.runs_paused, again.actions_unknown) == ([], [])
    assert (await world.store.verify_ledger()).ok
