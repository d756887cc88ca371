"""The admit transaction re-checks the contract version the gate decided under."""

from __future__ import annotations

import pytest

from gateway.domain.admission import CallFacts, Reservation
from gateway.store.base import Admitted, Stale
from gateway.store.records import Intent
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
