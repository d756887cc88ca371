"""The store's part of the watchdog, through the Store interface: the sweep (deadlines, approvals,
on_expiry), the watchdog lease, alerts once per episode across stores, the webhook outbox."""

from __future__ import annotations

import json

import pytest

from gateway.domain import Alert, RunStatus, parse_contract
from gateway.domain.watch import run_alerts
from gateway.store.records import AlertDraft, ApprovalStatus, Principal
from tests.harness import OPS, TENANT, World, code_of, contract

pytestmark = pytest.mark.anyio

# On t__paid, which the policy does not gate: on t__approve the policy's stricter pause would win.
RESUME = {"approvals": [{"tool": "t__paid", "decide_within": "2m", "on_expiry": "resume"}]}


async def test_the_sweep_expires_a_run_past_its_deadline_without_anyone_touching_it(world: World) -> None:
    run = await world.new_run(expires_in="1m")
    world.clock.advance(60)
    sweep = await world.store.sweep_expiries()
    assert sweep.runs_expired == [run.run_id]
    record = await world.run(run.run_id)
    assert record.status is RunStatus.EXPIRED
    assert code_of(await world.call(run.token, "t__read", {})) == "run_expired"
    assert (await world.store.sweep_expiries()).runs_expired == []  # once


async def test_an_undecided_approval_expires_and_pauses_the_run_naming_it(world: World) -> None:
    run = await world.new_run()
    asked = await world.call(run.token, "t__approve", {"text": "big"})
    approval = await world.approval(asked)
    world.clock.advance(119)
    assert (await world.store.sweep_expiries()).approvals_expired == []
    world.clock.advance(1)
    sweep = await world.store.sweep_expiries()
    assert (sweep.approvals_expired, sweep.runs_paused) == ([approval.approval_id], [run.run_id])
    assert (await world.approval(approval.approval_id)).status is ApprovalStatus.EXPIRED
    record = await world.run(run.run_id)
    assert record.status is RunStatus.PAUSED
    assert record.status_reason is not None and approval.approval_id in record.status_reason
    events = await world.events(run.run_id)
    assert [e.type for e in events][-2:] == ["approval_expired", "run_paused"]
    assert events[-1].data["approval_id"] == approval.approval_id
    assert code_of(await world.call(run.token, "t__read", {})) == "run_paused"


async def test_an_undecided_approval_under_on_expiry_resume_lets_the_run_go_on(world: World) -> None:
    run = await world.new_run(**RESUME)
    await world.call(run.token, "t__paid", {"text": "big"})
    assert (await world.run(run.run_id)).status is RunStatus.WAITING
    world.clock.advance(120)
    sweep = await world.store.sweep_expiries()
    assert len(sweep.approvals_expired) == 1 and sweep.runs_paused == []
    assert (await world.run(run.run_id)).status is RunStatus.RUNNING
    assert code_of(await world.call(run.token, "t__write", {"text": "a"})) is None


async def test_an_approved_approval_unused_in_time_expires_and_leaves_the_run_running(world: World) -> None:
    run = await world.new_run()
    approval = await world.decide(await world.call(run.token, "t__approve", {"text": "big"}))
    world.clock.advance(60)  # valid_for
    sweep = await world.store.sweep_expiries()
    assert sweep.approvals_expired == [approval.approval_id] and sweep.runs_paused == []
    assert (await world.run(run.run_id)).status is RunStatus.RUNNING


async def test_resuming_restarts_the_stall_clock(world: World) -> None:
    run = await world.new_run(progress_expectation="1h")
    [watched] = [r for r in (await world.store.watch_state()).runs if r.run_id == run.run_id]
    created = watched.progress_at
    assert watched.progress_expectation == 3600
    await world.store.pause(OPS, run.run_id, "look")
    world.clock.advance(7200)
    await world.store.resume(OPS, run.run_id, "go on")
    [watched] = [r for r in (await world.store.watch_state()).runs if r.run_id == run.run_id]
    assert watched.progress_at == created + 7200
    assert [a.kind for a in run_alerts(watched, world.clock.now()) if a.kind == "stalled"] == []


async def test_one_holder_has_the_watchdog_lease_until_it_expires(world: World) -> None:
    other = world.backend.store(world.clock, process_id="other")
    await other.open()
    try:
        assert await world.store.hold_watch_lease("a", 15)
        assert not await other.hold_watch_lease("b", 15)
        world.clock.advance(10)
        assert await world.store.hold_watch_lease("a", 15)  # renewed: good until 25
        world.clock.advance(10)
        assert not await other.hold_watch_lease("b", 15)
        world.clock.advance(5)
        assert await other.hold_watch_lease("b", 15)  # expired unrenewed: taken over
        assert not await world.store.hold_watch_lease("a", 15)
    finally:
        await other.close()


async def test_an_alert_is_raised_once_per_episode_across_two_stores_on_one_database(world: World) -> None:
    run = await world.new_run()
    other = world.backend.store(world.clock, process_id="other")
    await other.open()
    try:
        draft = AlertDraft(Alert(run.run_id, TENANT, "stalled", "e1", {"progress_at": "x"}), ("hook",))
        first = await world.store.raise_alerts([draft], max_attempts=3)
        again = await other.raise_alerts([draft], max_attempts=3)
        assert len(first) == 1 and again == []
        later = AlertDraft(Alert(run.run_id, TENANT, "stalled", "e2", {}), ("hook", "pager"))
        assert len(await other.raise_alerts([later], max_attempts=3)) == 1
    finally:
        await other.close()
    alerts = [e for e in await world.events(run.run_id) if e.type == "alert"]
    assert [e.data["kind"] for e in alerts] == ["stalled", "stalled"]
    assert alerts[0].data["alert_id"] == first[0].alert_id
    deliveries = await world.store.list_deliveries()
    assert [d.target for d in deliveries] == ["hook", "hook", "pager"]
    body = json.loads(deliveries[0].body)
    # The entry's envelope (its event id, for idempotent receivers) with the alert's own fields.
    assert body == {
        "v": 1,
        "id": f"evt_{run.run_id}_{alerts[0].seq}",
        "seq": alerts[0].seq,
        "type": "alert",
        "alert_id": first[0].alert_id,
        "kind": "stalled",
        "message": body["message"],
        "run_id": run.run_id,
        "tenant": TENANT,
        "at": body["at"],
        "data": {"progress_at": "x"},
    }
    assert (await world.store.verify_ledger(TENANT)).ok


async def test_a_heartbeat_is_queued_by_the_lease_holder_once_per_interval(world: World) -> None:
    assert not await world.store.queue_heartbeat("a", 60, ["hook"], {})  # no lease held
    assert await world.store.hold_watch_lease("a", 15)
    assert await world.store.queue_heartbeat("a", 60, ["hook"], {"process_id": "a"})
    assert not await world.store.queue_heartbeat("a", 60, ["hook"], {})
    assert not await world.store.queue_heartbeat("b", 60, ["hook"], {})
    world.clock.advance(60)
    assert await world.store.hold_watch_lease("a", 15)
    assert await world.store.queue_heartbeat("a", 60, ["hook"], {})
    deliveries = await world.store.list_deliveries()
    assert [(d.kind, d.max_attempts) for d in deliveries] == [("heartbeat", 1), ("heartbeat", 1)]


async def test_a_claimed_delivery_is_not_claimed_again_until_its_claim_lapses(world: World) -> None:
    run = await world.new_run()
    draft = AlertDraft(Alert(run.run_id, TENANT, "stalled", "e1", {}), ("hook",))
    await world.store.raise_alerts([draft], max_attempts=2)
    [claimed] = await world.store.claim_deliveries("a", hold=30, limit=10)
    assert claimed.attempts == 1
    assert await world.store.claim_deliveries("b", hold=30, limit=10) == []
    soon = world.clock.now() + 5
    await world.store.finish_delivery(claimed.delivery_id, "a", ok=False, error="HTTP 500", retry_at=soon)
    assert await world.store.claim_deliveries("b", hold=30, limit=10) == []  # not due yet
    world.clock.advance(5)
    [retry] = await world.store.claim_deliveries("b", hold=30, limit=10)
    assert retry.attempts == 2 and retry.last_error == "HTTP 500"
    await world.store.finish_delivery(retry.delivery_id, "a", ok=True, error=None, retry_at=None)  # not a's claim
    await world.store.finish_delivery(retry.delivery_id, "b", ok=False, error="HTTP 500", retry_at=world.clock.now())
    [failed] = await world.store.list_deliveries(status="failed")  # attempts used up
    assert (failed.attempts, failed.last_error) == (2, "HTTP 500")


async def test_the_watch_state_lists_unknown_actions_of_terminal_runs_too(world: World) -> None:
    run = await world.new_run()
    world.tools.modes["write"] = "crash"
    assert code_of(await world.call(run.token, "t__write", {"text": "a"})) == "outcome_unknown"
    await world.store.cancel(OPS, run.run_id, "stop", hard=False)
    state = await world.store.watch_state()
    assert [a.run_id for a in state.unknown] == [run.run_id]
    assert run.run_id not in {r.run_id for r in state.runs}


async def test_the_watch_state_of_one_tenant_holds_only_its_runs_and_unknown_actions(world: World) -> None:
    run = await world.new_run()
    world.tools.modes["write"] = "crash"
    assert code_of(await world.call(run.token, "t__write", {"text": "a"})) == "outcome_unknown"
    other = Principal("globex-ops", "globex", frozenset({"operator"}))
    theirs = await world.store.create_run(other, parse_contract(contract()))
    everyone = await world.store.watch_state()
    assert {run.run_id, theirs.run_id} <= {r.run_id for r in everyone.runs}
    mine = await world.store.watch_state(tenant=TENANT)
    assert {r.run_id for r in mine.runs} == {run.run_id} and [a.run_id for a in mine.unknown] == [run.run_id]
    assert {r.tenant for r in mine.runs} == {TENANT}
    globex = await world.store.watch_state(tenant="globex")
    assert [r.run_id for r in globex.runs] == [theirs.run_id] and globex.unknown == []


async def test_the_watch_state_reads_progress_expectation_from_the_contract(world: World) -> None:
    plain = await world.store.create_run(OPS, parse_contract(contract()))
    [watched] = [r for r in (await world.store.watch_state()).runs if r.run_id == plain.run_id]
    assert watched.progress_expectation is None and watched.progress_at == plain.created_at
