"""A hard cancel taken through one replica aborts the calls in flight on another (gateway/runtime/cancel_relay.py).

Two PostgresStores on one database play two replicas: A takes the operator's cancels; B has a real
Gate with calls in flight (tests/harness.py's blocking tools) and the relay listening. The relay's
connection is dropped with pg_terminate_backend, as a server restart or a network cut would.
The store's side (which runs are cancelled hard) and the gate's double abort run on both back ends.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import anyio
import psycopg
import pytest

from gateway import backoff
from gateway.clock import ManualClock
from gateway.domain import ActionStatus, parse_contract
from gateway.runtime import CancelRelay, relaying
from gateway.service import Gateway
from gateway.store import Store
from gateway.store.postgres.notices import APPLICATION_NAME, listen
from tests.contracts import child_contract
from tests.harness import OPS, WAIT, Run, SQLiteBackend, World, code_of, eventually, open_world
from tests.harness_postgres import PostgresBackend

pytestmark = pytest.mark.anyio

AT_ONCE = 1.0  # seconds: how soon a call in flight on B answers after the cancel on A commits

CHILD: dict[str, Any] = child_contract()


@dataclass
class Replicas:
    b: World  # the replica with calls in flight, and the relay
    a: Store  # the replica the operator's cancels go through
    relay: CancelRelay
    backend: PostgresBackend

    async def in_flight(self, run: Run, text: str = "x") -> asyncio.Task[Any]:
        """A paid write through B that reached its destination and waits there (never released here)."""
        effects = len(self.b.tools.effects)
        task = self.b.spawn(self.b.gate.call(run.token, "t__paid", {"text": text}))
        await self.b.tools.wait_for_effects(effects + 1)
        return task


@pytest.fixture
async def replicas(postgres_session: PostgresBackend, clock: ManualClock) -> AsyncIterator[Replicas]:
    postgres_session.clear()
    world = await open_world(postgres_session, clock)
    world.tools.modes["paid"] = "block"
    a = postgres_session.store(clock, process_id="replica-a")
    await a.open()
    try:
        async with relaying(world.store, world.gate) as relay:
            assert relay is not None
            with anyio.fail_after(WAIT):
                await relay.listening.wait()
            yield Replicas(world, a, relay, postgres_session)
    finally:
        await a.close()
        await world.teardown()


async def answered_at_once(task: asyncio.Task[Any]) -> Any:
    with anyio.fail_after(AT_ONCE):
        return await task


async def test_a_hard_cancel_on_one_replica_aborts_the_write_in_flight_on_another_at_once(replicas: Replicas) -> None:
    b = replicas.b
    run = await b.new_run()
    call = await replicas.in_flight(run)

    await replicas.a.cancel(OPS, run.run_id, "stop now", hard=True)
    aborted = await answered_at_once(call)

    assert code_of(aborted) == "outcome_unknown"
    action = await b.action(aborted)
    assert action.status is ActionStatus.UNKNOWN
    assert (await b.run(run.run_id)).reserved["writes"] == 1  # an unknown write keeps its reservation
    assert (replicas.relay.heard, replicas.relay.swept) == (1, 0)
    assert b.gate.in_flight_runs() == []


async def test_a_soft_cancel_lets_the_call_in_flight_run_on_and_a_hard_one_after_it_aborts_it(
    replicas: Replicas,
) -> None:
    b = replicas.b
    soft, barrier = await b.new_run(), await b.new_run()
    running_on = await replicas.in_flight(soft, "soft")
    await replicas.a.cancel(OPS, soft.run_id, "wind down", hard=False)
    # Notices arrive in commit order: once the barrier's call is aborted, any notice of the soft
    # cancel would have been heard already.
    barrier_call = await replicas.in_flight(barrier, "barrier")
    await replicas.a.cancel(OPS, barrier.run_id, "stop now", hard=True)
    assert code_of(await answered_at_once(barrier_call)) == "outcome_unknown"
    assert not running_on.done()
    assert replicas.relay.heard == 1

    # The operator makes the soft cancel hard: the call still in flight is aborted now.
    await replicas.a.cancel(OPS, soft.run_id, "stop now after all", hard=True)
    assert code_of(await answered_at_once(running_on)) == "outcome_unknown"
    assert (await b.action(running_on.result())).status is ActionStatus.UNKNOWN


async def test_a_hard_cancel_of_a_parent_aborts_its_childs_call_in_flight_on_another_replica(
    replicas: Replicas,
) -> None:
    b = replicas.b
    parent = await b.new_run()
    child = await b.store.create_child(OPS, parent.run_id, parse_contract(CHILD))
    grant = await b.store.acquire_lease(OPS, child.run_id, "worker-c", takeover=False)
    call = await replicas.in_flight(Run(child.run_id, grant.token, child.lineage_id))

    await replicas.a.cancel(OPS, parent.run_id, "the whole job is off", hard=True)

    assert code_of(await answered_at_once(call)) == "outcome_unknown"


async def test_the_replica_that_takes_the_cancel_hears_its_own_notice_and_the_call_is_aborted_once(
    replicas: Replicas,
) -> None:
    b = replicas.b
    run = await b.new_run()
    call = await replicas.in_flight(run)

    # As Gateway.cancel does on the replica that takes it: the store, then this process's calls.
    await b.store.cancel(OPS, run.run_id, "stop now", hard=True)
    await b.gate.abort_run(run.run_id)
    aborted = await answered_at_once(call)

    assert code_of(aborted) == "outcome_unknown"
    settled = [e for e in await b.events(run.run_id) if e.type == "action_settled"]
    assert [e.data["status"] for e in settled] == ["unknown"]


async def test_a_relay_whose_connection_dropped_reconnects_and_aborts_a_run_cancelled_hard_meanwhile(
    replicas: Replicas, monkeypatch: pytest.MonkeyPatch
) -> None:
    b, relay = replicas.b, replicas.relay
    run = await b.new_run()
    call = await replicas.in_flight(run)
    lost, reconnect = asyncio.Event(), asyncio.Event()

    async def held(seconds: float) -> None:  # the relay's backoff, held until the cancel committed
        lost.set()
        await reconnect.wait()

    monkeypatch.setattr(backoff, "sleep", held)
    with psycopg.connect(replicas.backend.url, autocommit=True) as admin:
        killed = admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE application_name = %s AND datname = current_database()",
            (APPLICATION_NAME,),
        ).fetchall()
    assert killed == [(True,)]
    with anyio.fail_after(WAIT):
        await lost.wait()
    assert not relay.listening.is_set()

    await replicas.a.cancel(OPS, run.run_id, "stop now", hard=True)  # nobody on B hears this one
    assert not call.done()
    reconnect.set()

    with anyio.fail_after(WAIT):
        aborted = await call
    assert code_of(aborted) == "outcome_unknown"
    assert (relay.connections, relay.heard, relay.swept) == (2, 0, 1)
    with anyio.fail_after(WAIT):
        await relay.listening.wait()


async def test_a_cancel_run_again_after_a_serialization_failure_notifies_once(replicas: Replicas) -> None:
    b, url = replicas.b, replicas.backend.url
    first, barrier = await b.new_run(), await b.new_run()
    async with listen(url) as notices:
        with psycopg.connect(url, autocommit=True) as blocker:
            # A concurrent writer holds the run's row: the cancel waits for it, then fails to
            # serialize and is run again from the start.
            blocker.execute("BEGIN ISOLATION LEVEL SERIALIZABLE")
            blocker.execute("UPDATE runs SET updated_at = updated_at WHERE run_id = %s", (first.run_id,))
            retries = replicas.a._db.retries  # type: ignore[attr-defined]
            cancel = asyncio.create_task(replicas.a.cancel(OPS, first.run_id, "stop now", hard=True))
            # A wait on a lock shows only in the server's activity view: polled, bounded.
            await eventually(lambda: waiting_for_a_lock(url), wait=WAIT, every=0.02)
            blocker.execute("COMMIT")
        with anyio.fail_after(WAIT):
            await cancel
        assert replicas.a._db.retries > retries  # type: ignore[attr-defined]
        await replicas.a.cancel(OPS, barrier.run_id, "stop now", hard=True)

        heard = []
        with anyio.fail_after(WAIT):
            async for run_id in notices:
                heard.append(run_id)
                if run_id == barrier.run_id:
                    break
    assert heard == [first.run_id, barrier.run_id]


def waiting_for_a_lock(url: str) -> bool:
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'"
        ).fetchone()
    return row is not None and row[0] > 0


# -- both back ends ------------------------------------------------------------------------------
async def test_the_store_says_which_runs_were_cancelled_hard(world: World) -> None:
    soft, hard, hardened, live = [await world.new_run() for _ in range(4)]
    child = await world.store.create_child(OPS, hard.run_id, parse_contract(CHILD))
    await world.store.cancel(OPS, soft.run_id, "off", hard=False)
    await world.store.cancel(OPS, hard.run_id, "off now", hard=True)
    await world.store.cancel(OPS, hardened.run_id, "off", hard=False)
    await world.store.cancel(OPS, hardened.run_id, "off now after all", hard=True)

    asked = [soft.run_id, hard.run_id, hardened.run_id, live.run_id, child.run_id, "run_nobody"]
    assert await world.store.hard_cancelled_among(asked) == {hard.run_id, hardened.run_id, child.run_id}
    assert await world.store.hard_cancelled_among([]) == set()


async def test_aborting_a_run_twice_while_its_write_settles_is_one_abort(world: World) -> None:
    """The second abort (the store's notice, after the operator's request) lands at every step of
    the first one's settle: the caller still gets outcome_unknown, never a cancellation."""
    world.tools.modes["paid"] = "block"
    for steps in range(12):
        run = await world.new_run()
        call = world.spawn(world.gate.call(run.token, "t__paid", {"text": f"x{steps}"}))
        await world.tools.wait_for_effects(steps + 1)
        await world.store.cancel(OPS, run.run_id, "stop now", hard=True)
        first = asyncio.create_task(world.gate.abort_run(run.run_id))
        for _ in range(steps):
            await asyncio.sleep(0)  # one turn of the event loop: the first abort goes one step further
        second = asyncio.create_task(world.gate.abort_run(run.run_id))
        with anyio.fail_after(WAIT):
            await asyncio.gather(first, second)
        result = await world.settled(call)
        assert code_of(result) == "outcome_unknown", f"after {steps} steps"
        assert (await world.action(result)).status is ActionStatus.UNKNOWN


async def test_a_store_that_no_other_process_shares_runs_no_relay(tmp_path: Any, clock: ManualClock) -> None:
    world = await open_world(SQLiteBackend(tmp_path / "warrant.db"), clock)
    try:
        assert world.store.cancel_notices() is None
        async with relaying(world.store, world.gate) as relay:
            assert relay is None
    finally:
        await world.teardown()


async def test_a_call_admitted_just_before_a_hard_cancel_whose_abort_came_first_is_not_sent(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The cancel commits after the call's admit, and its abort runs before the call's dispatch is
    in flight (nothing to abort yet): the call is aborted before it is sent, not sent after it."""
    run = await world.new_run()
    admit = world.store.admit

    async def admitted_then_cancelled(*args: Any) -> Any:
        admitted = await admit(*args)
        await world.store.cancel(OPS, run.run_id, "stop now", hard=True)
        assert await world.gate.abort_run(run.run_id) == 0  # nothing in flight yet
        return admitted

    monkeypatch.setattr(world.store, "admit", admitted_then_cancelled)
    result = await world.call(run.token, "t__write", {"text": "never sent"})
    assert world.tools.effects == []
    assert code_of(result) == "upstream_unavailable"
    action = await world.action(result)
    assert action.status is ActionStatus.FAILED


async def test_a_hard_cancel_through_the_gateway_aborts_the_childs_call_in_flight_in_this_process(
    world: World,
) -> None:
    """One process (SQLite's case): the parent's hard cancel reaches its child's call in flight here."""
    world.tools.modes["paid"] = "block"
    parent = await world.new_run()
    child = await world.store.create_child(OPS, parent.run_id, parse_contract(CHILD))
    grant = await world.store.acquire_lease(OPS, child.run_id, "worker-c", takeover=False)
    call = world.spawn(world.gate.call(grant.token, "t__paid", {"text": "held"}))
    await world.tools.wait_for_effects(1)
    gateway = Gateway(world.store, world.gate.catalog, world.gate, world.clock, (), ())

    await gateway.cancel(OPS, parent.run_id, "the whole job is off", hard=True)

    assert code_of(await answered_at_once(call)) == "outcome_unknown"


async def test_a_soft_cancel_made_hard_is_in_the_history(world: World) -> None:
    run = await world.new_run()
    await world.store.cancel(OPS, run.run_id, "off", hard=False)
    await world.store.cancel(OPS, run.run_id, "off now", hard=True)
    await world.store.cancel(OPS, run.run_id, "off now, again", hard=True)
    types = await world.event_types(run.run_id)
    assert types.count("run_cancelled") == 1 and types.count("run_cancel_hardened") == 1
    hardened = [e for e in await world.events(run.run_id) if e.type == "run_cancel_hardened"]
    assert hardened[0].data["reason"] == "off now"
    assert (await world.store.verify_ledger()).as_dict()["ok"]
