"""A takeover while the old worker has a call in flight: fencing by epoch, before any replay or dispatch."""

from __future__ import annotations

import pytest

from gateway.domain import ActionStatus
from gateway.gate import META_ACTION_ID, META_REPLAYED
from tests.harness import World, code_of, op, text_of

pytestmark = pytest.mark.anyio


async def test_the_old_workers_call_in_flight_settles_and_its_later_calls_are_refused_lease_superseded(
    world: World,
) -> None:
    run = await world.new_run()
    world.tools.modes["write"] = "block"
    in_flight = world.spawn(world.gate.call(run.token, "t__write", {"text": "a"}))
    await world.tools.wait_for_effects(1)

    new_token = await world.takeover(run)
    # While its first call is still in flight, the old worker is already fenced off.
    assert code_of(await world.call(run.token, "t__write", {"text": "b"})) == "lease_superseded"

    world.tools.release.set()
    settled = await world.settled(in_flight)
    assert code_of(settled) is None
    action = await world.action(settled)
    assert (action.status, action.epoch) == (ActionStatus.SUCCEEDED, 1)
    assert (await world.run(run.run_id)).spent["writes"] == 1

    world.tools.modes["write"] = "ok"
    calls = list(world.tools.calls)
    later = [
        await world.call(run.token, "t__write", {"text": "a"}),  # identical and replayable: still not replayed
        await world.call(run.token, "t__write", {"text": "a"}, op("fresh-op")),
        await world.call(run.token, "t__write", {"text": "c"}),
        await world.call(run.token, "t__read", {"q": "anything"}),
        await world.gate.repeat(run.token, action.action_id, "the old worker insists"),
    ]
    for result in later:
        assert code_of(result) == "lease_superseded"
        assert META_REPLAYED not in result.meta
        assert "not executed again" not in text_of(result)
    assert world.tools.calls == calls

    # The current worker gets the replay the old one was refused: the record of the write is intact.
    replay = await world.call(new_token, "t__write", {"text": "a"})
    assert code_of(replay) is None
    assert replay.meta[META_REPLAYED] is True and replay.meta[META_ACTION_ID] == action.action_id
    assert world.tools.effects == [("write", {"text": "a"})]
