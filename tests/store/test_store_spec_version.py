"""The admit transaction re-checks the contract version the gate decided under."""

from __future__ import annotations

import pytest

from gateway.domain import ActionStatus, CallFacts, Reservation
from gateway.errors import Conflict
from gateway.store.records import Admitted, Intent, SettleKind, Settlement, Stale
from tests.harness import World

pytestmark = pytest.mark.anyio


def intent(run_id: str, epoch: int, spec_version: str | None) -> Intent:
    return Intent(
        run_id=run_id,
        tool="t__read",
        effect="read",
        payload={"q": "x"},
        payload_sha256="a" * 64,
        operation_id=None,
        idempotency_key=None,
        epoch=epoch,
        worker="worker-1",
        process_id="p",
        reservation=Reservation(),
        spec_version=spec_version,
    )


async def test_an_admit_decided_under_another_spec_version_is_stale_and_writes_nothing(world: World) -> None:
    run = await world.new_run()
    record = await world.run(run.run_id)
    facts = CallFacts(epoch=record.epoch, is_write=False)

    stale = await world.store.admit(intent(run.run_id, record.epoch, "v0-old"), facts)
    assert stale == Stale(record.spec_version)
    assert await world.actions(run.run_id) == []
    assert (await world.run(run.run_id)).reserved == record.reserved

    admitted = await world.store.admit(intent(run.run_id, record.epoch, record.spec_version), facts)
    assert isinstance(admitted, Admitted)


async def test_a_settle_given_the_admitted_action_still_settles_it_once(world: World) -> None:
    # The gate hands `settle` the action as admitted, so the store need not read it back; that hint
    # must not let a second settle pass as the first: the row's status decides, in the transaction.
    run = await world.new_run()
    record = await world.run(run.run_id)
    admitted = await world.store.admit(
        intent(run.run_id, record.epoch, record.spec_version), CallFacts(epoch=record.epoch, is_write=False)
    )
    assert isinstance(admitted, Admitted)
    done = Settlement(kind=SettleKind.SUCCEEDED, durable=False)
    first = await world.store.settle(admitted.action.action_id, done, admitted=admitted.action)
    assert first.action.status is ActionStatus.SUCCEEDED and first.run is not None
    assert (first.run.reserved["tool_calls"], first.run.spent["tool_calls"]) == (0, 1)
    with pytest.raises(Conflict) as twice:
        await world.store.settle(admitted.action.action_id, done, admitted=admitted.action)
    assert twice.value.code == "invalid_transition"
    after = await world.run(run.run_id)
    assert (after.reserved["tool_calls"], after.spent["tool_calls"]) == (0, 1)  # released and spent once
    assert (await world.store.verify_ledger()).ok
