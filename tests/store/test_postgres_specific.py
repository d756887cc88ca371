"""What only the PostgreSQL store has: its migrations, its statement translation, its retries, and
several stores (replicas) on one database. The contract itself runs on both back ends (the
`backend` fixture); these are the PostgreSQL side's own."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Iterator
from importlib import resources
from typing import Any

import psycopg
import pytest

from gateway.clock import ManualClock
from gateway.domain import parse_contract, token_hash
from gateway.errors import StoreError
from gateway.gate import Gate
from gateway.store.factory import open_store, serving
from gateway.store.postgres import PostgresStore
from gateway.store.postgres import db as postgres_db
from gateway.store.postgres.db import PostgresDatabase, Row, sql
from gateway.store.schema import check_migrations
from gateway.store.sqlite import db as sqlite_db
from tests.harness import LEDGER_KEY, OPS, Tools, code_of, contract, eventually, open_world
from tests.harness_postgres import PostgresBackend

pytestmark = pytest.mark.anyio


@pytest.fixture
def fresh() -> Iterator[PostgresBackend]:
    """A database of its own, not migrated yet."""
    yield from PostgresBackend.session()


def _versions(dialect: str) -> list[str]:
    folder = resources.files("gateway.store") / "migrations" / dialect
    return sorted(entry.name for entry in folder.iterdir() if entry.name.endswith(".sql"))


def test_every_sqlite_migration_has_its_postgres_twin_of_the_same_number_and_name() -> None:
    assert _versions("postgres") == _versions("sqlite")
    assert postgres_db.SCHEMA_VERSION == sqlite_db.SCHEMA_VERSION


def test_placeholders_become_psycopgs_and_percent_signs_are_escaped_outside_and_inside_literals() -> None:
    statement = "SELECT * FROM events WHERE type LIKE 'run\\_%' ESCAPE '\\' AND run_id = ? AND note = '?'"
    expected = b"SELECT * FROM events WHERE type LIKE 'run\\_%%' ESCAPE '\\' AND run_id = %s AND note = '?'"
    assert sql(statement) == expected


@pytest.mark.parametrize(
    "statement",
    [
        "INSERT OR IGNORE INTO blobs (sha256) VALUES (?)",
        "INSERT OR REPLACE INTO blobs (sha256) VALUES (?)",
        "SELECT json_extract(contract, '$.x') FROM runs",
        "SELECT strftime('%s', 'now')",
        "SELECT rowid FROM runs",
        "PRAGMA foreign_keys=ON",
        "SELECT IFNULL(note, '') FROM approvals",
    ],
)
def test_a_sqlite_only_statement_is_refused_loudly_not_approximated(statement: str) -> None:
    with pytest.raises(StoreError):
        sql(statement)


def test_a_sqlite_only_word_inside_a_literal_is_only_text() -> None:
    statement = "SELECT 1 FROM events WHERE body = 'PRAGMA rowid'"
    assert sql(statement) == statement.encode()


def test_rows_read_by_name_by_position_and_by_slice() -> None:
    from gateway.store.postgres.db import _row_class

    row = _row_class(("a", "b", "a"))((1, 2, 3))
    assert isinstance(row, Row)
    assert (row["a"], row["b"], row[2], row[1:], list(row.keys())) == (1, 2, 3, (2, 3), ["a", "b"])


def test_pending_migrations_refuse_a_newer_store_and_a_gap() -> None:
    assert check_migrations({1, 2}, [1, 2, 3, 4], where="db", apply=True) == [3, 4]
    with pytest.raises(StoreError):
        check_migrations({1, 2, 9}, [1, 2, 3], where="db", apply=True)
    with pytest.raises(StoreError):
        check_migrations({1, 3}, [1, 2, 3], where="db", apply=True)
    assert check_migrations({1, 2, 3}, [1, 2, 3], where="db", apply=False) == []
    with pytest.raises(StoreError, match="run `warrant migrate`"):
        check_migrations({1, 2}, [1, 2, 3], where="db", apply=False)


async def test_a_store_refuses_to_open_on_a_schema_newer_than_this_gateway(fresh: PostgresBackend) -> None:
    store = fresh.store(ManualClock())
    await store.open()
    await store.close()
    with psycopg.connect(fresh.url, autocommit=True) as conn:
        conn.execute("INSERT INTO schema_migrations VALUES (%s, 0)", (postgres_db.SCHEMA_VERSION + 1,))
    with pytest.raises(StoreError):
        await fresh.store(ManualClock()).open()


async def test_two_stores_starting_at_once_apply_each_migration_once(fresh: PostgresBackend) -> None:
    stores = [fresh.store(ManualClock()) for _ in range(3)]
    await asyncio.gather(*(store.open() for store in stores))
    for store in stores:
        await store.close()
    with psycopg.connect(fresh.url) as conn:
        versions = [row[0] for row in conn.execute("SELECT version FROM schema_migrations ORDER BY version")]
    assert versions == [version for version, _ in postgres_db._migrations()]  # each shipped one, once


async def test_an_unreachable_server_is_a_store_error_naming_no_password() -> None:
    store = PostgresStore("postgresql://warrant:secret@127.0.0.1:1/none", clock=ManualClock(), ledger_key=LEDGER_KEY)
    with pytest.raises(StoreError) as refused:
        await asyncio.wait_for(store.open(), 30)
    assert "secret" not in str(refused.value)


async def test_the_factory_opens_postgresql_urls_and_serving_takes_no_file_lock(fresh: PostgresBackend) -> None:
    with serving(fresh.url), serving(fresh.url):  # several replicas: no lock to hold
        async with open_store(fresh.url, clock=ManualClock(), ledger_key=LEDGER_KEY) as store:
            assert isinstance(store, PostgresStore)
            assert (await store.health())["store"]["status"] == "ok"


async def test_replicas_on_one_database_admit_exactly_the_budget_of_concurrent_writes(fresh: PostgresBackend) -> None:
    """Two stores, each with its own pool (two replicas' worth), 40 writes for a budget of 10."""
    clock = ManualClock()
    replicas = [fresh.store(clock, process_id=f"replica-{i}") for i in range(2)]
    for store in replicas:
        await store.open()
    try:
        tools = Tools()
        gates = [Gate(store, tools.catalog(), clock) for store in replicas]
        run = await replicas[0].create_run(OPS, parse_contract(contract(budgets={"writes": 10})))
        token = (await replicas[0].acquire_lease(OPS, run.run_id, "worker-1", takeover=False)).token
        calls = [gates[i % 2].call(token, "t__write", {"text": f"note {i}"}, None) for i in range(40)]
        results = await asyncio.wait_for(asyncio.gather(*calls), 60)
        codes = [code_of(result) for result in results]
        assert codes.count(None) == 10
        assert set(codes) == {None, "budget_exhausted"}
        assert len(tools.effects) == 10
        final = await replicas[1].get_run(run.tenant, run.run_id)
        assert final.spent["writes"] == 10 and final.reserved["writes"] == 0
    finally:
        for store in replicas:
            await store.close()


async def test_a_starting_replica_marks_only_the_actions_of_processes_that_are_gone(
    postgres_session: PostgresBackend,
) -> None:
    postgres_session.clear()
    clock = ManualClock()
    world = await open_world(postgres_session, clock)
    await world.store.close()  # the world's store again, as a replica: alive while its session is open
    world.store = PostgresStore(postgres_session.url, clock=clock, ledger_key=LEDGER_KEY, process_id="replica-a")
    await world.store.open()
    world.gate = Gate(world.store, world.tools.catalog(), clock)
    other = PostgresStore(postgres_session.url, clock=clock, ledger_key=LEDGER_KEY, process_id="replica-b")
    try:
        run = await world.new_run()
        world.tools.modes["write"] = "block"
        in_flight = world.spawn(world.call(run.token, "t__write", {"text": "in flight on replica A"}))
        await world.tools.wait_for_effects(1)
        await other.open()
        assert await other.mark_orphans_unknown() == []  # replica A is alive: its call is its own

        [action] = [a for a in await world.actions(run.run_id) if a.status.value == "admitted"]
        with psycopg.connect(postgres_session.url, autocommit=True) as conn:
            conn.execute("UPDATE actions SET process_id = 'gone' WHERE action_id = %s", (action.action_id,))
        assert await other.mark_orphans_unknown() == [action.action_id]
        world.tools.release.set()
        await world.settled(in_flight)
    finally:
        await other.close()
        await world.teardown()


async def test_a_replica_whose_clock_is_ten_minutes_ahead_grants_leases_and_deadlines_by_the_databases_clock(
    postgres_session: PostgresBackend,
) -> None:
    postgres_session.clear()
    ahead = ManualClock(time.time() + 600)  # this replica's own clock is wrong
    store = PostgresStore(postgres_session.url, clock=ahead, ledger_key=LEDGER_KEY, process_id="replica-ahead")
    await store.open()
    try:
        run = await store.create_run(OPS, parse_contract(contract(expires_in="1h", lease_ttl="5m")))
        grant = await store.acquire_lease(OPS, run.run_id, "worker-1", takeover=False)
        real = time.time()  # the database runs on this machine: its clock is this one
        assert abs(run.deadline - (real + 3600)) < 5
        assert abs(grant.expires_at - (real + 300)) < 5
        renewed = await store.renew_lease(token_hash(grant.token))
        assert abs(renewed.expires_at - (real + 300)) < 5
        # Outside a transaction the store's clock (what the gate and the watchdog read) is this
        # replica's own clock corrected by the skew the last transaction saw: the database's.
        assert abs(store.clock.now() - time.time()) < 5
        ahead.advance(30)  # this replica's clock runs on; the correction follows it
        assert abs(store.clock.now() - (time.time() + 30)) < 5
    finally:
        await store.close()


async def test_a_transaction_that_keeps_failing_to_serialize_is_a_retryable_store_error_after_the_bound(
    postgres_session: PostgresBackend,
) -> None:
    db = PostgresDatabase(postgres_session.url, max_size=2)
    await db.open()
    runs: list[int] = []

    def conflicted(conn: Any) -> None:
        runs.append(1)
        conn.execute("DO $$ BEGIN RAISE EXCEPTION 'conflict' USING ERRCODE = '40001'; END $$")

    def broken(conn: Any) -> None:
        runs.append(1)
        conn.execute("SELECT 1 / 0")

    def carries_on(conn: Any) -> None:
        with contextlib.suppress(StoreError, psycopg.Error):
            conn.execute("SELECT 1 / 0")

    try:
        with pytest.raises(StoreError) as refused:
            await db.transaction(conflicted, durable=True)
        assert refused.value.retryable and len(runs) == postgres_db.MAX_ATTEMPTS
        runs.clear()
        with pytest.raises(StoreError):
            await db.transaction(broken, durable=True)
        assert len(runs) == 1  # not a conflict: not run again
        with pytest.raises(StoreError):  # COMMIT would have answered ROLLBACK, silently
            await db.transaction(carries_on, durable=True)
    finally:
        await db.close()


async def test_a_transaction_that_keeps_losing_to_other_writers_runs_alone_and_commits(
    postgres_session: PostgresBackend,
) -> None:
    """Another replica commits to a row all the time; a slow read-modify-write of it would lose every
    optimistic run. Its last run is alone (WRITERS_LOCK): it commits, and no increment is lost."""
    with psycopg.connect(postgres_session.url, autocommit=True) as conn:
        conn.execute("DROP TABLE IF EXISTS hot_counter")
        conn.execute("CREATE TABLE hot_counter (id INTEGER PRIMARY KEY, n BIGINT NOT NULL)")
        conn.execute("INSERT INTO hot_counter VALUES (1, 0)")
    mine, other = PostgresDatabase(postgres_session.url), PostgresDatabase(postgres_session.url)
    await mine.open()
    await other.open()
    done = asyncio.Event()
    counted = [0]

    def increment(conn: Any) -> None:
        conn.execute("UPDATE hot_counter SET n = n + 1 WHERE id = 1")

    def slow_increment(conn: Any) -> None:
        (n,) = conn.execute("SELECT n FROM hot_counter WHERE id = 1").fetchone()
        time.sleep(0.05)  # stays: a transaction held open on purpose while the other replica commits
        conn.execute("UPDATE hot_counter SET n = ? WHERE id = 1", (n + 1,))

    async def hammer() -> None:
        while not done.is_set():
            await other.transaction(increment, durable=False)
            counted[0] += 1

    try:
        hammers = [asyncio.create_task(hammer()) for _ in range(4)]
        await eventually(lambda: counted[0] >= 4)  # the other replica is committing: now contend
        for _ in range(3):
            await mine.transaction(slow_increment, durable=True)
        done.set()
        await asyncio.gather(*hammers)
        assert mine.escalations >= 1  # the optimistic runs lost, as intended
        with psycopg.connect(postgres_session.url) as conn:
            row = conn.execute("SELECT n FROM hot_counter WHERE id = 1").fetchone()
        assert row is not None and row[0] == counted[0] + 3
    finally:
        done.set()
        await mine.close()
        await other.close()
        with psycopg.connect(postgres_session.url, autocommit=True) as conn:
            conn.execute("DROP TABLE IF EXISTS hot_counter")


async def test_a_runs_next_call_waits_for_its_reads_settle_instead_of_conflicting_with_it(
    postgres_session: PostgresBackend,
) -> None:
    """A read's settle is not awaited; the same run's next admit would race it on the run's row
    (half the reads of one client rolled back once). It waits for it: not one transaction repeats."""
    postgres_session.clear()
    world = await open_world(postgres_session, ManualClock())
    try:
        run = await world.new_run()
        db: PostgresDatabase = world.store._db  # type: ignore[attr-defined]
        before = db.retries
        for n in range(30):
            assert not (await world.call(run.token, "t__read", {"q": f"q{n}"})).is_error
        assert db.retries == before
        actions = await world.actions(run.run_id)
        assert [a.status.value for a in actions].count("succeeded") == 30
    finally:
        await world.teardown()


async def test_replicas_answering_a_worker_keys_first_requests_at_once_hold_one_lease(fresh: PostgresBackend) -> None:
    """The held lease lives in the store: two replicas granting it at the same moment end with one."""
    from gateway.gate import held_token_for

    clock = ManualClock()
    replicas = [fresh.store(clock, process_id=f"replica-{i}") for i in range(2)]
    for store in replicas:
        await store.open()
    try:
        run = await replicas[0].create_run(OPS, parse_contract(contract()))
        tokens = await asyncio.wait_for(
            asyncio.gather(*(held_token_for(replicas[i % 2], OPS, "wk-worker-key", run.run_id) for i in range(6))), 30
        )
        assert len(set(tokens)) == 1
        info = await replicas[1].authenticate(token_hash(tokens[0]))
        assert info is not None and info.epoch == info.run.epoch == 1
    finally:
        for store in replicas:
            await store.close()
