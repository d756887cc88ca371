"""Retention (docs/retention.md), on both back ends: operation ids that expire, bodies purged while
every chain still verifies, and the bodies a purge never takes."""

from __future__ import annotations

import pytest

from gateway.domain import ActionStatus, PurgeScope
from gateway.errors import NotFound
from gateway.gate import META_ACTION_ID, META_RECEIPT, META_REPLAYED, META_RESULT_PURGED
from gateway.runtime.retention import Purger
from gateway.runtime.settings import RetentionSettings
from gateway.store.wait_records import SignalRecord
from tests.harness import OPS, TENANT, World, code_of, op, text_of

pytestmark = pytest.mark.anyio

HOUR = 3600.0


async def purge_all(world: World, **scope: str) -> tuple[int, int, int]:
    """Purge everything settled up to now (and in `scope`): (actions, purged, kept)."""
    report = await world.store.purge_bodies(
        PurgeScope(tenant=TENANT, before=world.clock.now() + 1, **scope), by="test", reason="on request"
    )
    return report.actions, report.purged, report.kept


async def test_a_settled_write_past_its_retention_is_held_expired_and_refused_not_replayed(world: World) -> None:
    world.regate(idempotency_for=HOUR)
    run = await world.new_run()
    first = await world.call(run.token, "t__write", {"text": "invoice"}, op("inv-1"))
    within = await world.call(run.token, "t__write", {"text": "invoice"}, op("inv-1"))
    assert within.meta[META_REPLAYED] is True

    held = await world.store.find_operation(run.lineage_id, "inv-1", kept_for=HOUR)
    assert held is not None and not held.expired
    world.clock.advance(HOUR)
    held = await world.store.find_operation(run.lineage_id, "inv-1", kept_for=HOUR)
    assert held is not None and held.expired and held.action.action_id == first.meta[META_ACTION_ID]
    forever = await world.store.find_operation(run.lineage_id, "inv-1", kept_for=None)
    assert forever is not None and not forever.expired

    token = await world.takeover(run)  # the first lease lapsed while the clock moved
    again = await world.call(token, "t__write", {"text": "invoice"}, op("inv-1"))
    assert code_of(again) == "idempotency_expired"
    assert again.structured is not None
    assert again.structured["error"]["action_id"] == first.meta[META_ACTION_ID]
    assert world.tools.effects == [("write", {"text": "invoice"})]
    rejected = (await world.actions(run.run_id))[-1]
    assert (rejected.status, rejected.code) == (ActionStatus.REJECTED, "idempotency_expired")
    # Another payload under the expired id is still named a conflict; a fresh id is a new write.
    other = await world.call(token, "t__write", {"text": "other"}, op("inv-1"))
    assert code_of(other) == "idempotency_conflict"
    fresh = await world.call(token, "t__write", {"text": "invoice"}, op("inv-2"))
    assert code_of(fresh) is None and len(world.tools.effects) == 2


async def test_a_derived_operation_id_expires_too(world: World) -> None:
    world.regate(idempotency_for=HOUR)
    run = await world.new_run()
    await world.call(run.token, "t__write", {"text": "same"})
    world.clock.advance(2 * HOUR)
    token = await world.takeover(run)
    again = await world.call(token, "t__write", {"text": "same"})
    assert code_of(again) == "idempotency_expired"
    assert len(world.tools.effects) == 1


async def test_an_unknown_operation_never_expires_it_must_be_reconciled(world: World) -> None:
    world.regate(idempotency_for=HOUR)
    world.tools.modes["write"] = "crash"
    run = await world.new_run()
    lost = await world.call(run.token, "t__write", {"text": "lost"}, op("lost-1"))
    assert code_of(lost) == "outcome_unknown"
    world.clock.advance(2 * HOUR)
    held = await world.store.find_operation(run.lineage_id, "lost-1", kept_for=HOUR)
    assert held is not None and not held.expired
    token = await world.takeover(run)
    again = await world.call(token, "t__write", {"text": "lost"}, op("lost-1"))
    assert code_of(again) == "outcome_unknown"


async def test_an_approval_required_write_past_its_retention_is_refused_before_any_approval(world: World) -> None:
    world.regate(idempotency_for=HOUR)
    run = await world.new_run()
    pending = await world.call(run.token, "t__approve", {"text": "pay"}, op("pay-1"))
    assert code_of(pending) == "approval_required"
    await world.decide(pending)
    done = await world.call(run.token, "t__approve", {"text": "pay"}, op("pay-1"))
    assert code_of(done) is None
    world.clock.advance(2 * HOUR)
    token = await world.takeover(run)
    again = await world.call(token, "t__approve", {"text": "pay"}, op("pay-1"))
    assert code_of(again) == "idempotency_expired"
    assert len(world.tools.effects) == 1


async def test_a_purge_takes_settled_bodies_records_itself_and_every_chain_still_verifies(world: World) -> None:
    run = await world.new_run()
    wrote = await world.call(run.token, "t__write", {"text": "secret"})
    read = await world.call(run.token, "t__read", {"q": "secret"})
    written = await world.action(wrote)
    assert written.result_sha256 is not None
    assert await world.store.get_blob(written.payload_sha256) == {"text": "secret"}

    actions, purged, kept = await purge_all(world)
    assert (actions, purged, kept) == (2, 3, 0)  # the write's payload and result, the read's payload
    for sha256 in (written.payload_sha256, written.result_sha256, (await world.action(read)).payload_sha256):
        assert await world.store.get_blob(sha256) is None
    events = await world.events(run.run_id)
    assert events[-1].type == "bodies_purged"
    assert events[-1].data["by"] == "test"
    assert sorted(events[-1].data["actions"]) == sorted(a.action_id for a in await world.actions(run.run_id))
    assert (await world.store.verify_ledger()).ok

    assert await purge_all(world) == (0, 0, 0)  # done once: nothing left to purge, nothing recorded
    assert (await world.events(run.run_id))[-1].seq == events[-1].seq


async def test_a_purge_keeps_what_is_still_needed(world: World) -> None:
    run = await world.new_run()
    world.tools.modes["write"] = "crash"
    await world.call(run.token, "t__write", {"text": "unknown"})  # awaiting reconciliation
    world.tools.modes["write"] = "ok"
    await world.call(run.token, "t__read", {"q": "asked"})  # settled, its body shared with nothing
    # A settled write whose payload a newer, not yet purged action names too.
    old = await world.action(await world.call(run.token, "t__write", {"text": "shared"}, op("a")))
    cutoff = world.clock.now() + 1
    world.clock.advance(10)
    newer = await world.action(await world.call(run.token, "t__write", {"text": "shared"}, op("b")))
    assert newer.payload_sha256 == old.payload_sha256 and newer.status is ActionStatus.SUCCEEDED
    pending = await world.call(run.token, "t__approve", {"text": "asked"})  # an approver must see it
    assert code_of(pending) == "approval_required"

    report = await world.store.purge_bodies(PurgeScope(before=cutoff), by="retention", reason="due")
    assert report.actions == 2  # the read and the older write; not the unknown one
    assert await world.store.get_blob(old.payload_sha256) == {"text": "shared"}  # kept for the newer write
    assert await world.store.get_blob(old.result_sha256 or "") is None
    unknown = [a for a in await world.actions(run.run_id) if a.status is ActionStatus.UNKNOWN]
    assert await world.store.get_blob(unknown[0].payload_sha256) == {"text": "unknown"}
    approval = await world.approval(pending)
    assert await world.store.get_blob(approval.payload_sha256) == {"text": "asked"}

    later = await world.store.purge_bodies(PurgeScope(), by="retention", reason="due")
    assert later.actions == 1  # the newer write; the unknown one is still not purgeable
    assert await world.store.get_blob(old.payload_sha256) is None  # now nothing needs it
    assert await world.store.get_blob(approval.payload_sha256) == {"text": "asked"}
    assert (await world.store.verify_ledger()).ok


async def test_a_purge_on_request_is_scoped_to_its_tenant_run_and_action(world: World) -> None:
    first = await world.new_run()
    second = await world.new_run()
    a = await world.call(first.token, "t__write", {"text": "one"})
    await world.call(second.token, "t__write", {"text": "two"})
    with pytest.raises(NotFound):
        await world.store.purge_bodies(PurgeScope(tenant="globex", run_id=first.run_id), by="x", reason="y")
    with pytest.raises(NotFound):
        await world.store.purge_bodies(
            PurgeScope(tenant="globex", action_id=a.meta[META_ACTION_ID]), by="x", reason="y"
        )
    assert await world.store.purge_bodies(
        PurgeScope(tenant="globex"), by="x", reason="y"
    ) == await world.store.purge_bodies(PurgeScope(tenant="globex"), by="x", reason="y")
    assert (await purge_all(world, action_id=a.meta[META_ACTION_ID]))[0] == 1
    assert (await world.events(second.run_id))[-1].type != "bodies_purged"
    assert (await purge_all(world, run_id=second.run_id))[0] == 1
    assert (await world.events(second.run_id))[-1].type == "bodies_purged"


async def test_a_replay_whose_result_was_purged_says_so_and_carries_the_receipt(world: World) -> None:
    run = await world.new_run()
    first = await world.call(run.token, "t__write", {"text": "once"}, op("once"))
    await purge_all(world)
    replay = await world.call(run.token, "t__write", {"text": "once"}, op("once"))
    assert code_of(replay) is None
    assert replay.meta[META_REPLAYED] is True and replay.meta[META_RESULT_PURGED] is True
    assert replay.meta[META_RECEIPT] == (await world.action(first)).receipt
    assert text_of(replay).startswith(f"not executed again: identical to action {first.meta[META_ACTION_ID]}")
    assert len(world.tools.effects) == 1


# -- signal payloads (docs/retention.md) ----------------------------------------------------------
async def signalled(world: World, payload: object, *, key: str = "k1") -> tuple[str, str]:
    """A run that received a signal with `payload`: (run id, signal id)."""
    run = await world.new_run()
    answer = await world.store.signal_run(OPS, run.run_id, name="quote.received", payload=payload, idempotency_key=key)
    return run.run_id, answer.signal.signal_id


async def the_signal(world: World, run_id: str) -> SignalRecord:
    [signal] = await world.store.list_signals(run_id)
    return signal


async def test_the_scheduled_purge_takes_the_signal_payloads_of_runs_ended_past_the_period(world: World) -> None:
    ended, _ = await signalled(world, {"price": "12.50", "vendor": "Acme"})
    await world.store.cancel(OPS, ended, "done", hard=False)
    live, _ = await signalled(world, {"price": "9.00"})
    world.clock.advance(HOUR)
    recent, _ = await signalled(world, {"price": "7.00"})
    await world.store.cancel(OPS, recent, "done", hard=False)  # ended within the period: kept
    world.clock.advance(HOUR / 2)
    before = await the_signal(world, ended)

    report = await Purger(world.store, world.clock, RetentionSettings(payload_bodies=HOUR)).tick()

    assert report is not None and (report.signals, report.runs) == (1, [ended])
    after = await the_signal(world, ended)
    assert (after.payload, after.payload_sha256, after.signal_id) == (None, before.payload_sha256, before.signal_id)
    assert after.payload_purged_at == world.clock.now()
    assert after.view()["payload_purged"] is True and after.view()["payload"] is None
    assert (await the_signal(world, live)).payload == {"price": "9.00"}  # a live run's agent reads it
    assert (await the_signal(world, recent)).payload == {"price": "7.00"}
    entry = (await world.events(ended))[-1]
    assert (entry.type, entry.data["signals"], entry.data["actions"]) == ("bodies_purged", [after.signal_id], [])
    received = next(e for e in await world.events(ended) if e.type == "signal_received")
    assert received.data["payload_sha256"] == before.payload_sha256 and "payload" not in received.data
    assert (await world.store.verify_ledger()).ok
    # Done once: the next purge finds nothing and records nothing.
    world.clock.advance(2 * HOUR)
    again = await world.store.purge_bodies(PurgeScope(run_id=ended), by="retention", reason="due")
    assert (again.signals, again.runs) == (0, [])
    # A replayed key of the purged signal answers the first signal, and says its payload is gone.
    replay = await world.store.signal_run(
        OPS, ended, name="quote.received", payload={"price": "12.50", "vendor": "Acme"}, idempotency_key="k1"
    )
    assert replay.replayed and replay.signal.payload_purged_at is not None


async def test_a_purge_on_request_takes_an_ended_runs_signals_with_its_bodies_and_never_one_actions(
    world: World,
) -> None:
    run = await world.new_run()
    wrote = await world.call(run.token, "t__write", {"text": "secret"})
    await world.store.signal_run(OPS, run.run_id, name="note", payload="the secret", idempotency_key="k1")
    await world.store.cancel(OPS, run.run_id, "done", hard=False)

    one = await world.store.purge_bodies(
        PurgeScope(tenant=TENANT, action_id=(await world.action(wrote)).action_id), by="ops", reason="one action"
    )
    assert (one.actions, one.signals) == (1, 0)
    assert (await the_signal(world, run.run_id)).payload == "the secret"
    whole = await world.store.purge_bodies(PurgeScope(tenant=TENANT, run_id=run.run_id), by="ops", reason="GDPR")
    assert (whole.signals, whole.runs) == (1, [run.run_id])
    assert (await the_signal(world, run.run_id)).payload is None


async def test_a_purge_keeps_the_proposal_an_approved_edit_is_read_against(world: World) -> None:
    # docs/decisions/0032-approve-edited.md: the edit's diff shows the proposal while the edit is unused.
    run = await world.new_run()
    write = await world.action(await world.call(run.token, "t__write", {"text": "shared"}))
    edited = await world.edit(await world.call(run.token, "t__approve", {"text": "shared"}), {"text": "edited"})
    assert edited.proposed_sha256 == write.payload_sha256  # one body, named by the write and the edit
    actions, _, _ = await purge_all(world)
    assert actions >= 1
    assert await world.store.get_blob(write.payload_sha256) == {"text": "shared"}
    assert await world.store.get_blob(edited.payload_sha256) == {"text": "edited"}
    assert (await world.store.verify_ledger()).ok
