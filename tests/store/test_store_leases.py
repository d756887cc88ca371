"""Leases with fencing, orphaned actions, settle transitions and tenant scoping, through the Store interface."""

from __future__ import annotations

import pytest

from gateway.clock import ManualClock
from gateway.domain import ActionStatus, token_hash
from gateway.errors import Conflict, NotFound, Refusal
from gateway.store.records import SettleKind, Settlement
from tests.harness import OPS, TENANT, World, code_of

pytestmark = pytest.mark.anyio


async def test_a_held_lease_is_not_granted_again_without_an_explicit_takeover(world: World) -> None:
    run = await world.new_run()
    with pytest.raises(Conflict) as held:
        await world.store.acquire_lease(OPS, run.run_id, "worker-2", takeover=False)
    assert held.value.code == "lease_held"
    grant = await world.store.acquire_lease(OPS, run.run_id, "worker-2", takeover=True)
    assert grant.epoch == (await world.run(run.run_id)).epoch == 2
    assert grant.token != run.token


async def test_an_expired_lease_may_be_acquired_without_a_takeover(world: World) -> None:
    run = await world.new_run()
    world.clock.advance(300)
    grant = await world.store.acquire_lease(OPS, run.run_id, "worker-2", takeover=False)
    assert grant.epoch == 2
    assert code_of(await world.call(run.token, "t__read", {})) == "lease_superseded"
    assert code_of(await world.call(grant.token, "t__read", {})) is None


async def test_renewal_extends_the_current_lease_and_refuses_a_superseded_one(world: World) -> None:
    run = await world.new_run()
    world.clock.advance(200)
    renewed = await world.store.renew_lease(token_hash(run.token))
    assert (renewed.token, renewed.expires_at) == ("", world.clock.now() + 300)
    world.clock.advance(200)
    assert code_of(await world.call(run.token, "t__read", {})) is None

    await world.takeover(run)
    with pytest.raises(Refusal) as superseded:
        await world.store.renew_lease(token_hash(run.token))
    assert superseded.value.code == "lease_superseded"
    with pytest.raises(NotFound):
        await world.store.renew_lease(token_hash("wl_never-granted-" + "x" * 30))


async def test_every_admitted_call_renews_the_lease(world: World) -> None:
    run = await world.new_run()
    for _ in range(3):
        world.clock.advance(200)
        assert code_of(await world.call(run.token, "t__read", {})) is None
        assert (await world.run(run.run_id)).lease_expires_at == world.clock.now() + 300
    assert "lease_reestablished" not in await world.event_types(run.run_id)  # it never lapsed


async def test_only_hashes_of_tokens_authenticate(world: World) -> None:
    run = await world.new_run()
    info = await world.store.authenticate(token_hash(run.token))
    assert info is not None and (info.run.run_id, info.epoch, info.worker) == (run.run_id, 1, "worker-1")
    assert await world.store.authenticate(run.token) is None
    assert await world.store.authenticate(token_hash(run.token + "x")) is None


async def test_orphans_are_the_admitted_actions_of_other_processes_only(world: World) -> None:
    run = await world.new_run()
    world.tools.modes["write"] = "block"
    in_flight = world.spawn(world.gate.call(run.token, "t__write", {"text": "x"}))
    await world.tools.wait_for_effects(1)
    assert await world.store.mark_orphans_unknown() == []

    restarted = world.backend.store(ManualClock(world.clock.now()), process_id="another-gateway")
    await restarted.open()
    try:
        orphans = await restarted.mark_orphans_unknown()
    finally:
        await restarted.close()
    assert len(orphans) == 1
    assert (await world.action(orphans[0])).status is ActionStatus.UNKNOWN

    # The dispatch was alive after all: its late success still settles the unknown action.
    world.tools.release.set()
    assert code_of(await world.settled(in_flight)) is None
    assert (await world.action(orphans[0])).status is ActionStatus.SUCCEEDED
    assert (await world.run(run.run_id)).reserved["writes"] == 0


async def test_an_unknown_action_settles_once_by_reconciliation_and_then_spends_its_reservation(world: World) -> None:
    run = await world.new_run()
    world.tools.modes["paid"] = "crash"
    action = await world.action(await world.call(run.token, "t__paid", {"text": "x"}))
    evidence = Settlement(
        kind=SettleKind.SUCCEEDED, receipt={"id": "obj-1"}, estimate_spend=5, max_spend=10, reason="looked up"
    )
    settled = await world.store.settle(action.action_id, evidence)
    assert settled.action.status is ActionStatus.SUCCEEDED
    assert (settled.run.reserved["spend"], settled.run.spent["spend"], settled.run.spent["writes"]) == (0, 5, 1)
    with pytest.raises(Conflict) as twice:
        await world.store.settle(action.action_id, evidence)
    assert twice.value.code == "invalid_transition"


async def test_another_tenants_objects_are_not_found(world: World) -> None:
    run = await world.new_run()
    action = await world.action(await world.call(run.token, "t__write", {"text": "x"}))
    asked = await world.approval(await world.call(run.token, "t__approve", {"text": "big"}))
    other = "globex"
    with pytest.raises(NotFound):
        await world.store.get_run(other, run.run_id)
    with pytest.raises(NotFound):
        await world.store.get_action(other, action.action_id)
    with pytest.raises(NotFound):
        await world.store.get_approval(other, asked.approval_id)
    with pytest.raises(NotFound):
        await world.store.list_actions(other, run.run_id)
    with pytest.raises(NotFound):
        await world.store.list_events(other, run.run_id)
    assert (await world.store.list_runs(other)).items == []
    assert (await world.store.list_approvals(other)).items == []
    assert [r.run_id for r in (await world.store.list_runs(TENANT)).items] == [run.run_id]
