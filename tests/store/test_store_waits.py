"""Waits and signals through the Store interface and the watchdog, on both back ends
(docs/decisions/0027-waits.md): a wait times out per on_timeout by the store's clock, a signal it
names wakes it once per key, a signal it does not name is kept, a superseded worker's wait is
refused, and a store reopened while a run waits changes nothing."""

from __future__ import annotations

from typing import Any

import pytest

from gateway.domain.lifecycle import RunStatus
from gateway.domain.waits import OnTimeout, WaitSpec, parse_wait
from gateway.errors import Conflict, Refusal
from gateway.runtime.settings import WatchdogSettings
from gateway.runtime.watchdog import Watchdog
from gateway.store.records import Refused
from gateway.store.wait_records import WaitRecord
from tests.harness import OPS, TENANT, TEXT, TOOLS, Run, World, code_of
from tests.store.downgrade import back_to

pytestmark = pytest.mark.anyio

SETTINGS = WatchdogSettings(tick=5, heartbeat=3600)


def spec(world: World, *, until: str = "2s", on_timeout: str = "resume", wake_on: list[str] | None = None) -> WaitSpec:
    arguments: dict[str, Any] = {"reason": "quotes", "until": until, "on_timeout": on_timeout}
    arguments["wake_on"] = ["quote.received"] if wake_on is None else wake_on
    return parse_wait(arguments, world.clock.now(), world.clock.now() + 86400)


async def waiting(world: World, run: Run, **kw: Any) -> WaitRecord:
    started = await world.store.start_wait(run.run_id, epoch=1, worker="worker-1", spec=spec(world, **kw))
    assert isinstance(started, WaitRecord), started
    assert (await world.run(run.run_id)).status is RunStatus.WAITING
    return started


async def signal(world: World, run: Run, name: str, key: str, payload: Any = None) -> Any:
    return await world.store.signal_run(OPS, run.run_id, name=name, payload=payload, idempotency_key=key)


async def tick(world: World) -> None:
    await Watchdog(world.store, world.clock, SETTINGS).tick()


@pytest.mark.parametrize(
    ("on_timeout", "after"),
    [(OnTimeout.RESUME, RunStatus.RUNNING), (OnTimeout.PAUSE, RunStatus.PAUSED), (OnTimeout.FAIL, RunStatus.FAILED)],
)
async def test_a_wait_with_a_2s_timeout_times_out_per_on_timeout_at_the_watchdogs_tick(
    world: World, on_timeout: OnTimeout, after: RunStatus
) -> None:
    run = await world.new_run()
    wait = await waiting(world, run, on_timeout=on_timeout.value)

    world.clock.advance(1.5)
    await tick(world)
    assert (await world.run(run.run_id)).status is RunStatus.WAITING  # not yet

    world.clock.advance(0.5)
    await tick(world)
    record = await world.run(run.run_id)
    assert record.status is after
    assert await world.store.open_wait(run.run_id) is None
    ended = [e for e in await world.events(run.run_id) if e.type == "wait_ended"]
    assert [(e.data["wait_id"], e.data["cause"]) for e in ended] == [(wait.wait_id, "timeout")]
    if after is RunStatus.FAILED:
        assert record.status_cause is not None and record.status_cause["rule"] == "wait.on_timeout"


async def test_a_signal_named_in_wake_on_wakes_the_run_and_the_agent_reads_its_payload(world: World) -> None:
    run = await world.new_run()
    wait = await waiting(world, run)

    answer = await signal(world, run, "quote.received", "k1", {"price": "12.50"})

    assert (answer.status, answer.signal.wait_id, answer.replayed) == (RunStatus.RUNNING, wait.wait_id, False)
    assert (await world.run(run.run_id)).status is RunStatus.RUNNING
    [received] = await world.store.list_signals(run.run_id)
    assert (received.name, received.payload) == ("quote.received", {"price": "12.50"})
    assert (await world.event_types(run.run_id))[-3:] == ["signal_received", "wait_ended", "run_running"]


async def test_the_signal_sent_twice_with_one_key_is_recorded_and_wakes_once(world: World) -> None:
    run = await world.new_run()
    await waiting(world, run)
    first = await signal(world, run, "quote.received", "k1", {"n": 1})
    second_wait = await waiting(world, run)  # the agent waits again

    again = await signal(world, run, "quote.received", "k1", {"n": 1})

    assert again.replayed and again.signal.signal_id == first.signal.signal_id
    assert (await world.run(run.run_id)).status is RunStatus.WAITING
    assert (await world.store.open_wait(run.run_id)) == second_wait
    assert len(await world.store.list_signals(run.run_id)) == 1
    assert (await world.event_types(run.run_id)).count("signal_received") == 1
    with pytest.raises(Conflict) as refused:
        await signal(world, run, "quote.received", "k1", {"n": 2})
    assert refused.value.code == "idempotency_conflict"


async def test_a_signal_not_named_is_recorded_and_kept_and_the_run_keeps_waiting(world: World) -> None:
    run = await world.new_run()
    await waiting(world, run)

    answer = await signal(world, run, "note", "k-note", "hello")

    assert (answer.status, answer.signal.wait_id) == (RunStatus.WAITING, None)
    assert [s.name for s in await world.store.list_signals(run.run_id)] == ["note"]


async def test_a_reopened_store_while_a_run_waits_changes_nothing(world: World) -> None:
    run = await world.new_run()
    wait = await waiting(world, run, until="1h")
    await world.store.close()
    world.store = world.backend.store(world.clock, process_id="test-gateway-2")
    await world.store.open()

    assert (await world.run(run.run_id)).status is RunStatus.WAITING
    assert await world.store.open_wait(run.run_id) == wait
    answer = await signal(world, run, "quote.received", "after-restart")
    assert answer.status is RunStatus.RUNNING


async def test_a_superseded_workers_wait_is_refused_and_recorded(world: World) -> None:
    run = await world.new_run()
    await world.takeover(run)

    refused = await world.store.start_wait(run.run_id, epoch=1, worker="worker-1", spec=spec(world))

    assert isinstance(refused, Refused) and refused.refusal.code == "lease_superseded"
    assert (await world.run(run.run_id)).status is RunStatus.RUNNING
    action = await world.store.get_action(TENANT, refused.action_id or "")
    assert (action.tool, action.status.value) == ("warrant_wait", "rejected")


async def test_a_second_wait_while_one_is_open_is_refused_wait_open(world: World) -> None:
    run = await world.new_run()
    wait = await waiting(world, run)

    refused = await world.store.start_wait(run.run_id, epoch=1, worker="worker-1", spec=spec(world))

    assert isinstance(refused, Refused)
    assert (refused.refusal.code, refused.refusal.details["wait_id"]) == ("wait_open", wait.wait_id)


async def test_an_operators_pause_ends_the_wait_and_resume_makes_the_run_running(world: World) -> None:
    run = await world.new_run()
    await waiting(world, run)

    await world.store.pause(OPS, run.run_id, "looking into it")
    assert await world.store.open_wait(run.run_id) is None
    world.clock.advance(10)
    await tick(world)  # the wait's until passed while paused: nothing applies
    assert (await world.run(run.run_id)).status is RunStatus.PAUSED


@pytest.mark.parametrize(("count_waiting", "charged"), [(False, 0.0), (True, 100.0)])
async def test_waiting_time_counts_against_active_seconds_only_under_count_waiting(
    world: World, count_waiting: bool, charged: float
) -> None:
    run = await world.new_run(budgets={"count_waiting": count_waiting})
    await waiting(world, run, until="1h")
    world.clock.advance(100)

    await signal(world, run, "quote.received", "k1")

    assert (await world.run(run.run_id)).active_seconds_spent == pytest.approx(charged)


async def test_a_signal_to_a_run_that_is_over_is_refused_with_its_status(world: World) -> None:
    run = await world.new_run()
    await world.store.cancel(OPS, run.run_id, "done", hard=False)

    with pytest.raises(Refusal) as refused:
        await signal(world, run, "quote.received", "k1")
    assert refused.value.code == "run_cancelled"


async def test_a_store_of_the_version_before_0027_migrates_and_its_running_run_may_wait(world: World) -> None:
    run = await world.new_run()
    await world.store.close()
    world.backend._execute(*back_to(26, world.backend))
    world.store = world.backend.store(world.clock, process_id="test-gateway")
    await world.store.open()

    assert (await world.run(run.run_id)).status is RunStatus.RUNNING
    await waiting(world, run)
    assert (await signal(world, run, "quote.received", "k1")).status is RunStatus.RUNNING


# -- the lease while a run waits (docs/leases.md, the `wait` row) -------------------------------
@pytest.fixture
def slow_approval(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    """t__approve's approval is decided within 2 hours (the harness's 2 minutes would expire it)."""
    approval = {"decide_within": "2h", "valid_for": "1h"}
    monkeypatch.setitem(TOOLS, "approve", (TEXT, {"effect": "write", "approval": approval}))
    world.regate()


async def raised(world: World) -> list[str]:
    """The kinds the watchdog raises on a tick now."""
    return [r.alert.kind for r in (await Watchdog(world.store, world.clock, SETTINGS).tick()).raised]


async def missed(world: World, run: Run) -> list[str]:
    alerts = await world.store.list_alerts(TENANT, run_id=run.run_id)
    return [a.kind for a in alerts if a.kind == "lease_missed"]


@pytest.mark.parametrize("ended_by", ["signal", "timeout"])
async def test_a_wait_longer_than_the_lease_raises_no_lease_missed_and_the_worker_carries_on(
    world: World, ended_by: str
) -> None:
    run = await world.new_run(lease_ttl="60s")
    assert code_of(await world.call(run.token, "t__read", {})) is None
    await waiting(world, run, until="30m")
    for _ in range(5):  # 25 minutes of silence, 25 times the lease's TTL
        world.clock.advance(300)
        assert "lease_missed" not in await raised(world)
    if ended_by == "signal":
        assert (await signal(world, run, "quote.received", "k1", {"price": 12})).status is RunStatus.RUNNING
    else:
        world.clock.advance(300)
        await raised(world)  # the tick that applies on_timeout: resume
    record = await world.run(run.run_id)
    assert record.status is RunStatus.RUNNING
    assert record.lease_expires_at == world.clock.now() + 60  # its time starts again at the wait's end
    assert "lease_missed" not in await raised(world)
    assert code_of(await world.call(run.token, "t__write", {"text": "after the wait"})) is None
    assert world.tools.effects[-1] == ("write", {"text": "after the wait"})
    assert await missed(world, run) == []
    # Silent while running again, it is missed as any worker: the wait did not switch the watch off.
    world.clock.advance(61)
    assert await raised(world) == ["lease_missed"]


@pytest.mark.usefixtures("slow_approval")
async def test_an_approval_wait_longer_than_the_lease_lets_the_same_worker_carry_on(world: World) -> None:
    run = await world.new_run(lease_ttl="60s")
    asked = await world.call(run.token, "t__approve", {"text": "big"})
    assert code_of(asked) == "approval_required"
    world.clock.advance(600)
    # Waiting on a person, with no word of how long: a silent worker is still reported (the
    # `waiting` row, as before this change; tests/unit/test_demo_windows.py sizes lease_ttl for it).
    assert await raised(world) == ["lease_missed"]
    await world.decide(asked)
    record = await world.run(run.run_id)
    assert (record.status, record.lease_expires_at) == (RunStatus.RUNNING, world.clock.now() + 60)
    assert code_of(await world.call(run.token, "t__approve", {"text": "big"})) is None
    assert world.tools.effects == [("approve", {"text": "big"})]


# -- a wait and an approval at once ---------------------------------------------------------------
async def proposed(world: World, run: Run) -> str:
    """The agent, waiting, asks for approval of a write (warrant_propose); the approval's id."""
    answer = await world.gate.propose(run.token, "t__approve", {"text": "big"})
    assert answer.structured is not None and "approval" in answer.structured, answer.structured
    assert answer.structured["approval"]["status"] == "pending"
    return str(answer.structured["approval"]["approval_id"])


@pytest.mark.usefixtures("slow_approval")
async def test_a_signal_ends_the_wait_the_approval_holds_the_run_then_its_decision_runs_it(world: World) -> None:
    run = await world.new_run(lease_ttl="60s")
    wait = await waiting(world, run, until="1h")
    approval_id = await proposed(world, run)
    world.clock.advance(1200)  # silent past its lease, in its wait
    assert "lease_missed" not in await raised(world)

    answer = await signal(world, run, "quote.received", "k1", {"price": 12})

    assert (answer.status, answer.signal.wait_id) == (RunStatus.WAITING, wait.wait_id)  # the approval holds it
    assert await world.store.open_wait(run.run_id) is None
    record = await world.run(run.run_id)
    assert record.lease_expires_at == world.clock.now() + 60  # the wait's end starts the lease's time again
    assert "lease_missed" not in await raised(world)
    assert code_of(await world.call(run.token, "t__write", {"text": "other"})) == "run_waiting"

    await world.decide(approval_id)

    assert (await world.run(run.run_id)).status is RunStatus.RUNNING
    assert code_of(await world.call(run.token, "t__approve", {"text": "big"})) is None
    assert world.tools.effects == [("approve", {"text": "big"})]
    assert await missed(world, run) == []
    types = await world.event_types(run.run_id)
    assert types.index("wait_ended") < types.index("approval_approved") < types.index("run_running")
    assert types.count("run_running") == 1  # woken once, by the decision


@pytest.mark.usefixtures("slow_approval")
async def test_the_approval_decided_first_the_wait_holds_the_run_then_the_signal_runs_it(world: World) -> None:
    run = await world.new_run(lease_ttl="60s")
    wait = await waiting(world, run, until="1h")
    approval_id = await proposed(world, run)
    world.clock.advance(1200)

    await world.decide(approval_id)

    assert (await world.run(run.run_id)).status is RunStatus.WAITING  # the wait holds it
    assert (await world.store.open_wait(run.run_id)) == wait
    assert "lease_missed" not in await raised(world)
    answer = await signal(world, run, "quote.received", "k1")
    assert answer.status is RunStatus.RUNNING
    assert code_of(await world.call(run.token, "t__approve", {"text": "big"})) is None
    assert world.tools.effects == [("approve", {"text": "big"})]
    assert await missed(world, run) == []


async def test_an_approval_that_does_not_block_the_run_does_not_hold_it_after_the_signal(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(TOOLS, "approve", (TEXT, {"effect": "write", "approval": {"blocks_run": False}}))
    world.regate()
    run = await world.new_run()
    await waiting(world, run, until="1h")
    await proposed(world, run)

    answer = await signal(world, run, "quote.received", "k1")

    assert answer.status is RunStatus.RUNNING  # as `_settle_waiting` counts it: it never held the run
    assert code_of(await world.call(run.token, "t__write", {"text": "other"})) is None
