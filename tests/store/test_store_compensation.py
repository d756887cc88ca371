"""Compensation in the store (both stores): an operator's compensating intent is admitted without a
lease on a cancelled run, refused on a completed one and for an original that is not succeeded; its
success moves the original to `compensated` in the settle transaction, with its ledger entry."""

from __future__ import annotations

from typing import Any

import pytest

from gateway.adapters.base import OutcomeKind
from gateway.domain import ActionStatus
from gateway.domain.admission import CallFacts, Reservation
from gateway.domain.compensation import compensation_operation_id
from gateway.domain.settlement import Settlement
from gateway.gate import META_ACTION_ID
from gateway.store.records import ActionRecord, Admitted, Held, Intent, Refused
from tests.harness import OPS, World

pytestmark = pytest.mark.anyio
FACTS = CallFacts(epoch=0, is_write=True, reservation=Reservation(writes=1), operator=True)


def _intent(original: ActionRecord, **changes: Any) -> Intent:
    operation_id = compensation_operation_id(original.lineage_id, original.action_id)
    fields: dict[str, Any] = {
        "run_id": original.run_id,
        "tool": "t__write",
        "effect": "write",
        "payload": {"text": "undo"},
        "payload_sha256": "a" * 64,
        "operation_id": operation_id,
        "idempotency_key": "wk_test_" + operation_id,
        "epoch": 0,
        "worker": "operator:ops",
        "process_id": "p",
        "reservation": FACTS.reservation,
        "compensates": original.action_id,
        "reason": "wrong contact",
    }
    return Intent(**{**fields, **changes})


async def _original(world: World) -> tuple[Any, ActionRecord]:
    run = await world.new_run()
    done = await world.call(run.token, "t__write", {"text": "made"})
    return run, await world.action(done.meta[META_ACTION_ID])


def _succeeded() -> Settlement:
    return Settlement.dispatched(OutcomeKind.SUCCEEDED, write=True, receipt={"id": "gone"}, structured={"id": "gone"})


async def test_a_compensation_on_a_cancelled_run_moves_its_original_when_it_succeeds(world: World) -> None:
    run, original = await _original(world)
    await world.store.cancel(OPS, run.run_id, "wrong leads", hard=False)
    admitted = await world.store.admit(_intent(original), FACTS)
    assert isinstance(admitted, Admitted), admitted
    assert admitted.action.compensates == original.action_id
    assert (await world.action(original.action_id)).status is ActionStatus.SUCCEEDED  # not before it succeeds

    settled = await world.store.settle(admitted.action.action_id, _succeeded(), admitted=admitted.action)
    assert settled.action.status is ActionStatus.SUCCEEDED
    assert (await world.action(original.action_id)).status is ActionStatus.COMPENSATED
    events = await world.events(run.run_id)
    [entry] = [e for e in events if e.type == "action_compensated"]
    assert entry.data["action_id"] == original.action_id
    assert entry.data["compensation_id"] == admitted.action.action_id
    [intent] = [e for e in events if e.type == "action_admitted" and e.data.get("compensates")]
    assert intent.data["reason"] == "wrong contact"

    again = await world.store.admit(_intent(original), FACTS)  # the same operation: held, not admitted twice
    assert isinstance(again, Held) and again.action.action_id == admitted.action.action_id


async def test_an_unknown_compensation_moves_its_original_when_reconciled(world: World) -> None:
    _, original = await _original(world)
    admitted = await world.store.admit(_intent(original), FACTS)
    assert isinstance(admitted, Admitted)
    unknown = Settlement.dispatched(OutcomeKind.UNKNOWN, write=True, reason="no answer within 3 s")
    await world.store.settle(admitted.action.action_id, unknown, admitted=admitted.action)
    assert (await world.action(original.action_id)).status is ActionStatus.SUCCEEDED
    proved = Settlement.reconciled(OutcomeKind.SUCCEEDED, receipt={"id": "gone"})
    assert proved is not None
    await world.store.settle(admitted.action.action_id, proved)
    assert (await world.action(original.action_id)).status is ActionStatus.COMPENSATED


async def test_a_failed_compensation_leaves_its_original_succeeded(world: World) -> None:
    _, original = await _original(world)
    admitted = await world.store.admit(_intent(original), FACTS)
    assert isinstance(admitted, Admitted)
    failed = Settlement.dispatched(OutcomeKind.FAILED, write=True, code="upstream_failed", reason="404")
    await world.store.settle(admitted.action.action_id, failed, admitted=admitted.action)
    assert (await world.action(original.action_id)).status is ActionStatus.SUCCEEDED


async def test_an_operators_compensation_is_refused_on_a_completed_run(world: World) -> None:
    run, original = await _original(world)
    record = await world.run(run.run_id)
    done = await world.store.complete_run(run.run_id, epoch=record.epoch, worker=str(record.lease_worker), summary="ok")
    assert not isinstance(done, Refused), done
    refused = await world.store.admit(_intent(original), FACTS)
    assert isinstance(refused, Refused) and refused.refusal.code == "run_completed"


async def test_only_a_succeeded_write_of_the_same_run_is_compensated(world: World) -> None:
    _, original = await _original(world)
    other = await world.new_run()
    elsewhere = await world.store.admit(_intent(original, run_id=other.run_id, operation_id="op_x"), FACTS)
    assert isinstance(elsewhere, Refused) and elsewhere.refusal.code == "not_compensable"
    first = await world.store.admit(_intent(original), FACTS)
    assert isinstance(first, Admitted)
    await world.store.settle(first.action.action_id, _succeeded(), admitted=first.action)
    # compensated now: a compensation under another operation id finds no succeeded original
    second = await world.store.admit(_intent(original, operation_id="op_y"), FACTS)
    assert isinstance(second, Refused) and second.refusal.code == "not_compensable"
