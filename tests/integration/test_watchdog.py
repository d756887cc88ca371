"""The watchdog over a real store and gate, with a moved clock (nothing sleeps): time enforcement,
the heartbeat kept apart from progress, alerts once per episode, one acting process at a time."""

from __future__ import annotations

from typing import Any

import pytest

from gateway.domain.leases import token_hash
from gateway.domain.lifecycle import RunStatus
from gateway.domain.tasks import TaskStatus, parse_plan
from gateway.runtime.settings import WatchdogSettings, Webhook
from gateway.runtime.watchdog import Watchdog
from gateway.store.records import ApprovalStatus
from tests.harness import OPS, World, code_of

pytestmark = pytest.mark.anyio

SETTINGS = WatchdogSettings(tick=5, heartbeat=60)
HOOK = Webhook("hook", "http://127.0.0.1:9/never", b"secret", None)


def watchdog(world: World, **changes: Any) -> Watchdog:
    return Watchdog(world.store, world.clock, SETTINGS, [HOOK], catalog=world.tools.catalog(), **changes)


async def alerts(world: World, run_id: str) -> list[tuple[str, dict[str, Any]]]:
    return [(e.data["kind"], e.data) for e in await world.events(run_id) if e.type == "alert"]


async def kinds(world: World, run_id: str) -> list[str]:
    return [kind for kind, _ in await alerts(world, run_id)]


async def test_an_undecided_approval_expires_on_a_tick_and_pauses_the_run(world: World) -> None:
    run = await world.new_run()
    asked = await world.call(run.token, "t__approve", {"text": "big"})
    approval = await world.approval(asked)
    dog = watchdog(world)
    world.clock.advance(120)  # decide_within: nobody decided, nobody touched the run
    tick = await dog.tick()
    assert tick.holding and tick.sweep is not None and tick.sweep.runs_paused == [run.run_id]
    assert (await world.approval(approval.approval_id)).status is ApprovalStatus.EXPIRED
    record = await world.run(run.run_id)
    assert record.status is RunStatus.PAUSED and approval.approval_id in (record.status_reason or "")
    assert code_of(await world.call(run.token, "t__read", {"q": "x"})) == "run_paused"
    assert world.tools.effects == []


async def test_an_undecided_approval_under_on_expiry_resume_lets_the_run_go_on(world: World) -> None:
    # On t__paid, which the policy does not gate: on t__approve the policy's stricter pause would win.
    run = await world.new_run(approvals=[{"tool": "t__paid", "decide_within": "2m", "on_expiry": "resume"}])
    await world.call(run.token, "t__paid", {"text": "big"})
    world.clock.advance(120)
    await watchdog(world).tick()
    assert (await world.run(run.run_id)).status is RunStatus.RUNNING
    assert code_of(await world.call(run.token, "t__write", {"text": "a"})) is None


async def test_a_deadline_expires_the_run_on_a_tick_and_the_next_call_is_refused(world: World) -> None:
    run = await world.new_run(expires_in="10m", lease_ttl="1h")
    world.clock.advance(600)
    tick = await watchdog(world).tick()
    assert tick.sweep is not None and tick.sweep.runs_expired == [run.run_id]
    record = await world.run(run.run_id)
    assert (record.status, record.status_reason) == (RunStatus.EXPIRED, "the deadline passed")
    assert code_of(await world.call(run.token, "t__read", {"q": "x"})) == "run_expired"
    assert world.tools.calls == []


async def test_a_worker_that_stops_renewing_raises_the_heartbeat_alert_once(world: World) -> None:
    run = await world.new_run(lease_ttl="1m", progress_expectation="1h")
    dog = watchdog(world)
    world.clock.advance(59)
    await dog.tick()
    assert await kinds(world, run.run_id) == []
    world.clock.advance(1)  # the lease expired unrenewed
    tick = await dog.tick()
    assert [r.alert.kind for r in tick.raised] == ["lease_missed"]
    world.clock.advance(5)
    assert (await dog.tick()).raised == []  # the same episode: once
    [(_, data)] = await alerts(world, run.run_id)
    assert (data["worker"], data["epoch"]) == ("worker-1", 1)

    # Renewing late (allowed while nobody took over) ends the episode; missing again is a new one.
    await world.store.renew_lease(token_hash(run.token))
    await dog.tick()
    world.clock.advance(60)
    await dog.tick()
    assert await kinds(world, run.run_id) == ["lease_missed", "lease_missed"]


async def test_a_worker_that_renews_but_makes_no_progress_raises_the_stall_alert_not_the_heartbeat_one(
    world: World,
) -> None:
    run = await world.new_run(lease_ttl="5m", progress_expectation="1h")
    dog = watchdog(world)
    for _ in range(16):  # an hour and four minutes of renewals every four minutes, nothing verified
        world.clock.advance(240)
        await world.store.renew_lease(token_hash(run.token))
        await dog.tick()
    assert await kinds(world, run.run_id) == ["stalled"]
    [(_, data)] = await alerts(world, run.run_id)
    assert data["progress_expectation"] == 3600


async def test_a_contract_without_progress_expectation_never_stalls(world: World) -> None:
    run = await world.new_run(lease_ttl="5m")
    dog = watchdog(world)
    for _ in range(30):
        world.clock.advance(240)
        assert code_of(await world.call(run.token, "t__read", {"q": "x"})) is None  # a call renews too
        await dog.tick()
    assert await kinds(world, run.run_id) == []


async def test_budget_alerts_come_at_80_percent_and_when_exhausted_per_dimension(world: World) -> None:
    run = await world.new_run(budgets={"writes": 5})
    dog = watchdog(world)
    for i in range(5):
        assert code_of(await world.call(run.token, "t__write", {"text": str(i)})) is None
        await dog.tick()
    raised = await alerts(world, run.run_id)
    assert [(kind, data["dimension"]) for kind, data in raised] == [
        ("budget_80", "writes"),
        ("budget_exhausted", "writes"),
    ]
    assert (raised[0][1]["used"], raised[0][1]["limit"]) == (4, 5)


async def test_an_approval_about_to_expire_raises_its_alert_once(world: World) -> None:
    # t__paid: the policy's own rule on t__approve decides within 2m, and the shorter would win.
    run = await world.new_run(approvals=[{"tool": "t__paid", "decide_within": "4h", "on_expiry": "resume"}])
    approval = await world.approval(await world.call(run.token, "t__paid", {"text": "big"}))
    dog = watchdog(world)
    world.clock.advance(4 * 3600 - 15 * 60 - 1)
    await dog.tick()
    assert "approval_expiring" not in await kinds(world, run.run_id)
    world.clock.advance(1)  # 15 minutes left (10% of 4h would be 24: the cap wins)
    await dog.tick()
    world.clock.advance(60)
    await dog.tick()
    [(kind, data)] = [(k, d) for k, d in await alerts(world, run.run_id) if k == "approval_expiring"]
    assert (kind, data["approval_id"]) == ("approval_expiring", approval.approval_id)


async def test_an_unknown_action_raises_its_alert_even_after_the_run_ended(world: World) -> None:
    run = await world.new_run()
    world.tools.modes["write"] = "crash"
    await world.call(run.token, "t__write", {"text": "a"})
    await world.store.cancel(OPS, run.run_id, "stop", hard=False)
    dog = watchdog(world)
    await dog.tick()
    await dog.tick()
    [(kind, data)] = await alerts(world, run.run_id)
    action = (await world.actions(run.run_id))[0]
    assert (kind, data["action_id"], data["tool"]) == ("unknown_action", action.action_id, "t__write")
    assert dog.reconciling is not None
    await dog.reconciling  # the python test adapter cannot tell: the action stays unknown
    assert (await world.action(action.action_id)).status.value == "unknown"


async def test_only_the_watchdog_lease_holder_acts_and_another_takes_over_when_it_stops(world: World) -> None:
    run = await world.new_run(expires_in="1m")
    other_store = world.backend.store(world.clock, process_id="gateway-b")
    await other_store.open()
    try:
        first, second = watchdog(world), Watchdog(other_store, world.clock, SETTINGS, [HOOK])
        for _ in range(11):  # both tick every 5 s up to 50 s; the first holds the lease
            assert (await first.tick()).holding and not (await second.tick()).holding
            world.clock.advance(5)
        world.clock.advance(5)  # the deadline passed; the first's lease runs to 65 s
        assert (await second.tick()).sweep is None  # not the holder: sweeps nothing
        assert (await world.run(run.run_id)).status is RunStatus.RUNNING
        world.clock.advance(15)  # the first process stopped ticking: its lease (3 ticks) lapsed
        tick = await second.tick()
        assert tick.holding and tick.sweep is not None and tick.sweep.runs_expired == [run.run_id]
        assert not (await first.tick()).holding
    finally:
        await other_store.close()


async def test_a_damaged_counter_row_stops_neither_the_tick_nor_the_watch_of_other_runs(world: World) -> None:
    from tests.store.test_store_counters import damage

    bad = await world.new_run(expires_in="24h", lease_ttl="48h")
    good = await world.new_run(expires_in="10m", lease_ttl="1h")
    damage(world, bad.run_id, 1.0e19 if world.backend.name == "sqlite" else 2**62)
    world.clock.advance(600)
    tick = await watchdog(world).tick()
    assert tick.sweep is not None and good.run_id in tick.sweep.runs_expired
    assert (await world.run(good.run_id)).status is RunStatus.EXPIRED
    other = await world.new_run()
    assert [r.run_id for r in (await world.store.watch_state()).runs] == [other.run_id]


async def test_a_task_blocked_longer_than_its_expectation_raises_its_alert_once_per_spell(world: World) -> None:
    run = await world.new_run(lease_ttl="2h", plan={"blocked_expectation": "1h"})
    plan = parse_plan(
        [
            {"id": "quick", "title": "Needs an answer soon", "blocked_expectation": "10m"},
            {"id": "slow", "title": "May wait an hour"},
        ],
        max_tasks=10,
    )
    store, epoch = world.store, 1

    async def blocked_alerts() -> list[dict[str, Any]]:
        return [data for kind, data in await alerts(world, run.run_id) if kind == "task_blocked_long"]

    async def move(task_id: str, status: TaskStatus) -> None:
        done = await store.move_task(run.run_id, epoch=epoch, worker="worker-1", task_id=task_id, status=status)
        assert not hasattr(done, "refusal"), done

    saved = await store.save_plan(run.run_id, epoch=epoch, worker="worker-1", expected_version=0, plan=plan)
    assert not hasattr(saved, "refusal"), saved
    for task_id in ("quick", "slow"):
        await move(task_id, TaskStatus.RUNNING)
        await move(task_id, TaskStatus.BLOCKED)
    dog = watchdog(world)
    world.clock.advance(599)
    await dog.tick()
    assert await blocked_alerts() == []
    world.clock.advance(1)  # the quick one's ten minutes
    tick = await dog.tick()
    assert [(r.alert.kind, r.alert.data["task_id"]) for r in tick.raised] == [("task_blocked_long", "quick")]
    world.clock.advance(3000)  # an hour for the slow one (the contract's expectation)
    await dog.tick()
    await dog.tick()
    found = [(data["task_id"], data["blocked_expectation"]) for data in await blocked_alerts()]
    assert found == [("quick", 600), ("slow", 3600)]

    # Unblocked and blocked again: a new spell, alerted again once its ten minutes pass.
    await move("quick", TaskStatus.RUNNING)
    await move("quick", TaskStatus.BLOCKED)
    await dog.tick()
    world.clock.advance(600)
    await dog.tick()
    assert [d["task_id"] for d in await blocked_alerts()] == ["quick", "slow", "quick"]
    # An operator's pause: they know; nothing more is raised while it lasts.
    await move("slow", TaskStatus.RUNNING)
    await move("slow", TaskStatus.BLOCKED)
    await world.store.pause(OPS, run.run_id, "looking into it")
    world.clock.advance(7200)
    await dog.tick()
    assert len(await blocked_alerts()) == 3


async def test_a_replan_does_not_restart_the_clock_of_a_task_blocked_before_it(world: World) -> None:
    run = await world.new_run(lease_ttl="2h")
    store = world.store

    def plan_titled(title: str) -> Any:
        return parse_plan([{"id": "ask", "title": title, "blocked_expectation": "10m"}], max_tasks=10)

    saved = await store.save_plan(run.run_id, epoch=1, worker="worker-1", expected_version=0, plan=plan_titled("Ask"))
    assert not hasattr(saved, "refusal"), saved
    for status in (TaskStatus.RUNNING, TaskStatus.BLOCKED):
        moved = await store.move_task(run.run_id, epoch=1, worker="worker-1", task_id="ask", status=status)
        assert not hasattr(moved, "refusal"), moved
    dog = watchdog(world)
    world.clock.advance(300)
    revised = plan_titled("Ask the customer")
    saved = await store.save_plan(run.run_id, epoch=1, worker="worker-1", expected_version=1, plan=revised)
    assert not hasattr(saved, "refusal"), saved
    world.clock.advance(300)  # ten minutes blocked in all, five of them since the replan
    tick = await dog.tick()
    assert [(r.alert.kind, r.alert.data["task_id"]) for r in tick.raised] == [("task_blocked_long", "ask")]
