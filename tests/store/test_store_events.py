"""The events outbox on both back ends: a ledger entry's webhook deliveries are queued in the
entry's own transaction, named by its event id, capped per run; served entries carry progress."""

from __future__ import annotations

import importlib
import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from gateway.clock import ManualClock
from gateway.domain.events import Outbox, Subscriber, event_id
from gateway.domain.tasks import TaskStatus
from gateway.store.sql.connection import Conn
from tests.harness import TENANT, Backend, SQLiteBackend, World, open_world
from tests.harness_postgres import PostgresBackend
from tests.store.test_store_tasks import moved, plan_of, save

pytestmark = pytest.mark.anyio


@pytest.fixture
async def everything(backend: Backend, clock: ManualClock) -> AsyncIterator[World]:
    """A world whose store queues every entry for one webhook subscribed to `*`."""
    world = await open_world(backend, clock, outbox=Outbox((Subscriber("all", frozenset({"*"})),), max_attempts=3))
    try:
        yield world
    finally:
        await world.teardown()


async def bodies(world: World) -> list[dict[str, Any]]:
    return [json.loads(d.body) for d in await world.store.list_deliveries(limit=1000)]


async def test_every_entry_gets_its_delivery_named_by_its_event_id(everything: World) -> None:
    world = everything
    run = await world.new_run()
    await save(world, run, plan_of({"id": "a"}, {"id": "b", "depends_on": ["a"]}))
    await moved(world, run, "a", TaskStatus.RUNNING)
    await moved(world, run, "a", TaskStatus.COMPLETED)
    entries = await world.events(run.run_id)
    sent = await bodies(world)
    assert [b["id"] for b in sent] == [event_id(run.run_id, e.seq) for e in entries]
    assert [b["type"] for b in sent] == [e.type for e in entries]
    deliveries = await world.store.list_deliveries(limit=1000)
    assert {(d.target, d.max_attempts) for d in deliveries} == {("all", 3)}
    done = next(b for b in sent if b["type"] == "task_completed")
    assert (done["task_id"], done["progress"], done["tenant"]) == ("a", {"done": 1, "total": 2}, TENANT)
    assert "a" in done["message"]
    before = next(b for b in sent if b["type"] == "lease_granted")
    assert "progress" not in before  # no plan yet
    assert (await world.store.verify_ledger()).ok


async def test_an_entry_and_its_deliveries_commit_together_or_not_at_all(everything: World) -> None:
    world = everything
    run = await world.new_run()
    queued = len(await bodies(world))
    store: Any = world.store  # the shared SQL store's own transaction, as its methods run them

    def fails_after_the_entry(conn: Conn) -> None:
        store._event(conn, run.run_id, "checkpoint_invalidated", world.clock.now(), version=1, reason="x", by="t")
        raise RuntimeError("the transaction fails after its entry was appended")

    with pytest.raises(RuntimeError):
        await store._db.transaction(fails_after_the_entry, durable=True)
    assert len(await bodies(world)) == queued  # no delivery without its entry
    assert "checkpoint_invalidated" not in await world.event_types(run.run_id)

    def succeeds(conn: Conn) -> None:
        store._event(conn, run.run_id, "checkpoint_invalidated", world.clock.now(), version=1, reason="x", by="t")

    await store._db.transaction(succeeds, durable=True)
    [last] = [e for e in await world.events(run.run_id) if e.type == "checkpoint_invalidated"]
    assert (await bodies(world))[-1]["id"] == event_id(run.run_id, last.seq)


async def test_past_the_cap_deliveries_are_counted_dropped_and_alerted_once(
    backend: Backend, clock: ManualClock
) -> None:
    outbox = Outbox((Subscriber("all", frozenset({"*"})),), cap=3)
    world = await open_world(backend, clock, outbox=outbox)
    try:
        run = await world.new_run()  # run_created, lease_granted: 2 pending
        await save(world, run, plan_of({"id": "a"}, {"id": "b"}))  # plan_created, task_ready x2
        await moved(world, run, "a", TaskStatus.RUNNING)
        store: Any = world.store
        pending = await world.store.list_deliveries(status="pending", limit=1000)
        kinds = [d.kind for d in pending]
        assert kinds[:3] == ["run_created", "lease_granted", "plan_created"]
        # Past the cap only the one `deliveries_dropped` alert is queued (its own is exempt).
        assert kinds[3:] == ["deliveries_dropped"]
        alerts = [e for e in await world.events(run.run_id) if e.type == "alert"]
        assert [a.data["kind"] for a in alerts] == ["deliveries_dropped"]

        def dropped(conn: Conn) -> int:
            return int(conn.execute("SELECT dropped FROM event_drops WHERE run_id = ?", (run.run_id,)).fetchone()[0])

        # task_ready a, task_ready b, task_started a: counted, not queued
        assert await store._db.read(dropped) == 3
        assert (await world.store.verify_ledger()).ok
    finally:
        await world.teardown()


async def test_a_store_without_subscribers_queues_nothing(world: World) -> None:
    run = await world.new_run()
    await save(world, run, plan_of({"id": "a"}))
    assert await world.store.list_deliveries() == []


async def test_served_entries_carry_the_progress_as_of_each_entry_also_across_pages(world: World) -> None:
    run = await world.new_run()
    await save(world, run, plan_of({"id": "a"}, {"id": "b"}, {"id": "c"}))
    await moved(world, run, "a", TaskStatus.RUNNING)
    await moved(world, run, "a", TaskStatus.COMPLETED)
    await world.call(run.token, "t__read", {"q": "x"})  # an action's entry: no progress of its own
    entries = await world.events(run.run_id)
    by_type = {e.type: e for e in entries}
    assert by_type["run_created"].progress is None
    assert by_type["plan_created"].progress == {"done": 0, "total": 3}
    assert by_type["task_completed"].progress == {"done": 1, "total": 3}
    assert by_type["action_settled"].progress == {"done": 1, "total": 3}
    last = entries[-1]
    [alone] = await world.store.list_events(TENANT, run.run_id, after=last.seq - 1, limit=1)
    assert alone.progress == last.progress  # a page of its own looks back once


@pytest.fixture(params=["sqlite", "postgres"])
def unmigrated(request: pytest.FixtureRequest, tmp_path: Any) -> Iterator[Backend]:
    """A store of its own that no gateway opened yet (the upgrade starts from an older version)."""
    if request.param == "sqlite":
        yield SQLiteBackend(tmp_path / "old.db")
    else:
        yield from PostgresBackend.session()


async def test_version_25_upgrades_a_store_with_alert_deliveries_queued(
    unmigrated: Backend, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    module = "sqlite" if isinstance(unmigrated, SQLiteBackend) else "postgres"
    shipped = importlib.import_module(f"gateway.store.{module}.db")._migrations
    monkeypatch.setattr(f"gateway.store.{module}.db._migrations", lambda: [m for m in shipped() if m[0] < 25])
    old = await open_world(unmigrated, clock)
    run = await old.new_run()
    store: Any = old.store

    def queued_by_an_older_gateway(conn: Conn) -> None:  # its row as version 24 wrote it
        conn.execute(
            "INSERT INTO webhook_deliveries (delivery_id, target, kind, body, status, max_attempts, next_at, "
            "created_at) VALUES ('dlv_old', 'hook', 'stalled', '{}', 'pending', 2, 0, 0)"
        )

    await store._db.transaction(queued_by_an_older_gateway, durable=True)
    await old.teardown()
    monkeypatch.undo()

    world = await open_world(unmigrated, clock, outbox=Outbox((Subscriber("hook", frozenset({"*"})),)))
    try:
        [before] = await world.store.list_deliveries()
        await save(world, run, plan_of({"id": "a"}))  # a queued row from before, new ones beside it
        deliveries = await world.store.list_deliveries(limit=100)
        assert deliveries[0] == before and len(deliveries) > 1
        assert json.loads(deliveries[-1].body)["progress"] == {"done": 0, "total": 1}
        [claimed, *_] = await world.store.claim_deliveries("a", hold=30, limit=100)
        assert claimed.delivery_id == before.delivery_id
        assert (await world.store.verify_ledger()).ok
    finally:
        await world.teardown()
