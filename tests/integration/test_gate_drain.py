"""The gate under a drain (gateway/runtime/shutdown.py), on both stores: nothing new is admitted, a call in
flight settles with its real outcome within the grace, and one slower than the grace is aborted:
a write `unknown` with the reason "gateway shut down", in the action and in the ledger."""

from __future__ import annotations

import asyncio

import anyio
import pytest

from gateway.domain import ActionStatus
from gateway.runtime import Drain
from gateway.runtime.shutdown import SHUT_DOWN_REASON
from tests.harness import TENANT, WAIT, World, code_of

pytestmark = pytest.mark.anyio


def draining(world: World) -> Drain:
    drain = Drain(world.gate.in_flight)
    drain.begin()
    return drain


async def test_while_draining_a_new_call_is_refused_draining_retryable_and_recorded(world: World) -> None:
    run = await world.new_run()
    draining(world)
    refused = await world.call(run.token, "t__write", {"text": "x"})
    assert code_of(refused) == "draining"
    assert refused.structured is not None and refused.structured["error"]["retryable"] is True
    assert world.tools.calls == []
    [action] = await world.actions(run.run_id)
    assert (action.status, action.code) == (ActionStatus.REJECTED, "draining")


async def test_while_draining_a_call_that_needs_approval_asks_for_none(world: World) -> None:
    run = await world.new_run()
    draining(world)
    assert code_of(await world.call(run.token, "t__approve", {"text": "big"})) == "draining"
    assert (await world.store.list_approvals(TENANT, run_id=run.run_id)).items == []


async def test_a_write_in_flight_that_settles_within_the_grace_keeps_its_real_outcome(world: World) -> None:
    run = await world.new_run()
    world.tools.modes["write"] = "block"
    in_flight = world.spawn(world.gate.call(run.token, "t__write", {"text": "x"}))
    await world.tools.wait_for_effects(1)
    drain = draining(world)
    asyncio.get_running_loop().call_later(0.1, world.tools.release.set)
    with anyio.fail_after(WAIT):
        assert await drain.settle(WAIT) == 0
    settled = await world.settled(in_flight)
    assert code_of(settled) is None
    assert (await world.action(settled)).status is ActionStatus.SUCCEEDED
    assert not world.gate.busy()


async def test_a_write_slower_than_the_grace_is_aborted_unknown_with_the_reason_in_the_ledger(world: World) -> None:
    run = await world.new_run()
    world.tools.modes["write"] = "block"
    in_flight = world.spawn(world.gate.call(run.token, "t__write", {"text": "x"}))
    await world.tools.wait_for_effects(1)
    drain = draining(world)
    with anyio.fail_after(WAIT):
        assert await drain.settle(0.2) == 1
    aborted = await world.settled(in_flight)
    assert code_of(aborted) == "outcome_unknown"
    action = await world.action(aborted)
    assert action.status is ActionStatus.UNKNOWN
    assert action.reason == SHUT_DOWN_REASON
    [settled] = [e for e in await world.events(run.run_id) if e.type == "action_settled"]
    assert (settled.data["status"], settled.data["reason"]) == ("unknown", SHUT_DOWN_REASON)
    assert (await world.store.verify_ledger()).ok
