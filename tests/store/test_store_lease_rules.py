"""The lease table (gateway/domain/lease_rules.py) as each store carries it out: renewal by every
request of the holder, re-establishment of a lapsed lease, no lapse while waiting or paused, and
fencing untouched by any of it. Time moves by the injected clock."""

from __future__ import annotations

import asyncio

import pytest

from gateway.domain import RunStatus, open_alerts, token_hash
from gateway.errors import Conflict, Refusal
from gateway.store.records import TokenInfo
from tests.harness import OPS, World, code_of

pytestmark = pytest.mark.anyio
TTL = 60.0  # the runs' lease_ttl below; t__approve's approval is decided within 2 minutes


async def _reestablished(world: World, run_id: str) -> list[dict[str, object]]:
    return [e.data for e in await world.events(run_id) if e.type == "lease_reestablished"]


async def test_a_lapsed_lease_nobody_took_over_is_reestablished_by_the_holders_next_call(world: World) -> None:
    run = await world.new_run(lease_ttl="60s")
    world.clock.advance(TTL + 40)
    assert code_of(await world.call(run.token, "t__write", {"text": "after the lapse"})) is None
    after = await world.run(run.run_id)
    assert (after.epoch, after.lease_worker, after.lease_expires_at) == (1, "worker-1", world.clock.now() + TTL)
    [event] = await _reestablished(world, run.run_id)
    assert (event["epoch"], event["worker"], event["lapsed_s"]) == (1, "worker-1", 40.0)
    # One episode, one entry: the next calls renew a live lease.
    assert code_of(await world.call(run.token, "t__read", {})) is None
    assert len(await _reestablished(world, run.run_id)) == 1
    assert (await world.store.verify_ledger(OPS.tenant)).ok


async def test_a_refused_call_and_a_read_of_the_run_renew_the_lease_too(world: World) -> None:
    run = await world.new_run(lease_ttl="60s")
    world.clock.advance(TTL - 10)
    assert code_of(await world.call(run.token, "t__denied", {})) == "forbidden"
    assert (await world.run(run.run_id)).lease_expires_at == world.clock.now() + TTL
    world.clock.advance(TTL - 10)
    await world.gate.status(run.token)  # warrant_status
    assert (await world.run(run.run_id)).lease_expires_at == world.clock.now() + TTL
    world.clock.advance(TTL - 10)
    assert await world.gate.dead(run.token) is None  # tools/list
    assert (await world.run(run.run_id)).lease_expires_at == world.clock.now() + TTL
    assert await _reestablished(world, run.run_id) == []


async def test_a_renewal_is_written_only_once_a_tenth_of_the_ttl_has_passed(world: World) -> None:
    run = await world.new_run(lease_ttl="60s")
    granted = (await world.run(run.run_id)).lease_expires_at
    world.clock.advance(TTL / 10 - 1)
    held = await world.store.hold_lease(token_hash(run.token))
    assert held is not None and held.run.lease_expires_at == granted  # too soon: nothing written
    world.clock.advance(2)
    held = await world.store.hold_lease(token_hash(run.token))
    assert held is not None and held.run.lease_expires_at == world.clock.now() + TTL


async def test_the_renewal_api_reestablishes_a_lapsed_lease(world: World) -> None:
    run = await world.new_run(lease_ttl="60s")
    world.clock.advance(TTL + 5)
    renewed = await world.store.renew_lease(token_hash(run.token))
    assert (renewed.epoch, renewed.expires_at) == (1, world.clock.now() + TTL)
    [event] = await _reestablished(world, run.run_id)
    assert event["lapsed_s"] == 5.0


async def test_while_the_run_waits_on_an_approval_the_lease_does_not_lapse(world: World) -> None:
    run = await world.new_run(lease_ttl="60s")
    asked = await world.call(run.token, "t__approve", {"text": "big"})
    assert code_of(asked) == "approval_required"
    assert (await world.run(run.run_id)).status is RunStatus.WAITING
    world.clock.advance(TTL + 40)  # the holder silent past its TTL, the approver still deciding
    with pytest.raises(Conflict) as held:
        await world.store.acquire_lease(OPS, run.run_id, "worker-2", takeover=False)
    assert held.value.code == "lease_held"
    await world.decide(asked)
    # Back to running, the lease's time starts again: the time spent on people is not the worker's.
    decided = await world.run(run.run_id)
    assert (decided.status, decided.lease_expires_at) == (RunStatus.RUNNING, world.clock.now() + TTL)
    assert code_of(await world.call(run.token, "t__approve", {"text": "big"})) is None
    assert world.tools.calls == [("approve", {"text": "big"})]
    assert await _reestablished(world, run.run_id) == []  # it never lapsed


async def test_while_the_run_is_paused_the_lease_does_not_lapse(world: World) -> None:
    run = await world.new_run(lease_ttl="60s")
    await world.store.pause(OPS, run.run_id, "lunch")
    world.clock.advance(3 * TTL)
    assert code_of(await world.call(run.token, "t__read", {})) == "run_paused"
    with pytest.raises(Conflict) as held:
        await world.store.acquire_lease(OPS, run.run_id, "worker-2", takeover=False)
    assert held.value.code == "lease_held"
    world.clock.advance(3 * TTL)  # silent again, still paused
    resumed = await world.store.resume(OPS, run.run_id, "back")
    assert resumed.lease_expires_at == world.clock.now() + TTL
    assert code_of(await world.call(run.token, "t__write", {"text": "after the pause"})) is None
    assert await _reestablished(world, run.run_id) == []


async def test_after_a_lapse_another_workers_acquire_still_kills_the_old_token(world: World) -> None:
    run = await world.new_run(lease_ttl="60s")
    world.clock.advance(TTL + 1)
    grant = await world.store.acquire_lease(OPS, run.run_id, "worker-2", takeover=False)
    assert grant.epoch == 2
    # Nothing about time brings the old token back: its calls, its renewal, its requests.
    assert code_of(await world.call(run.token, "t__write", {"text": "late"})) == "lease_superseded"
    assert code_of(await world.call(run.token, "t__read", {})) == "lease_superseded"
    with pytest.raises(Refusal) as superseded:
        await world.store.renew_lease(token_hash(run.token))
    assert superseded.value.code == "lease_superseded"
    held = await world.store.hold_lease(token_hash(run.token))
    assert held is not None and held.run.epoch == 2 and held.run.lease_worker == "worker-2"
    assert world.tools.calls == []
    assert await _reestablished(world, run.run_id) == []
    assert code_of(await world.call(grant.token, "t__write", {"text": "new"})) is None


async def test_requests_that_find_a_renewal_due_at_once_share_one_transaction(world: World) -> None:
    run = await world.new_run(lease_ttl="60s")
    assert code_of(await world.call(run.token, "t__read", {})) is None  # the gate now holds the token
    world.clock.advance(TTL / 2)
    holds: list[str] = []
    hold = world.store.hold_lease

    async def counted(digest: str) -> TokenInfo | None:
        holds.append(digest)
        return await hold(digest)

    world.store.hold_lease = counted  # type: ignore[method-assign]
    results = await asyncio.gather(*(world.call(run.token, "t__read", {}) for _ in range(8)))
    assert [code_of(result) for result in results] == [None] * 8
    assert holds == [token_hash(run.token)]
    assert (await world.run(run.run_id)).lease_expires_at == world.clock.now() + TTL


async def test_the_watchdog_still_sees_a_holder_silent_past_its_ttl_until_its_next_request(world: World) -> None:
    run = await world.new_run(lease_ttl="60s")

    async def missed() -> bool:
        state = await world.store.watch_state()
        alerts = open_alerts(state.runs, state.unknown, world.clock.now())
        return any(a.kind == "lease_missed" and a.run_id == run.run_id for a in alerts)

    world.clock.advance(TTL - 1)
    assert not await missed()
    world.clock.advance(2)  # silent past its TTL: an operator is told, and may take over
    assert await missed()
    assert await world.gate.dead(run.token) is None  # its next request (a tools/list) ...
    assert not await missed()  # ... re-established the lease
    assert len(await _reestablished(world, run.run_id)) == 1
