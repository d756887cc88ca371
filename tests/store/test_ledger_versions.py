"""Ledger entry version 2 (gateway/store/chain.py ENTRY_VERSION): what it covers, and that every
version-1 entry and bundle still verifies.

Version 2 states an action's `reason` and times, a read's reservation, and a purge for every run it
touches; a body listed as purged (bundle) or an action row marked purged (store) needs its purge
entry. `ledger_v1/` holds a store written by the gateway before version 2, on SQLite and on PostgreSQL (its
make_fixture.py says how); each must verify, export verifiable bundles, and go on with version-2
entries appended.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import psycopg
import pytest

from gateway.api import bundle_lines
from gateway.clock import ManualClock
from gateway.domain import PurgeScope
from gateway.store.bundle import BundleReport, verify_bundle
from gateway.store.chain import ENTRY_VERSION
from tests.harness import LEDGER_KEY, OPS, TENANT, Backend, SQLiteBackend, World, code_of, open_world
from tests.harness_postgres import PostgresBackend

pytestmark = pytest.mark.anyio

V1_STORE = Path(__file__).parent / "ledger_v1" / "store.sql"
V1_POSTGRES = Path(__file__).parent / "ledger_v1" / "store_postgres.sql"


async def bundle_of(world: World, run_id: str) -> list[str]:
    snapshot = await world.store.export_snapshot(TENANT, run_id)
    return "".join([c async for c in bundle_lines(world.store, snapshot, world.clock.now())]).splitlines()


async def bundle_report(world: World, run_id: str) -> BundleReport:
    return verify_bundle(await bundle_of(world, run_id), LEDGER_KEY)


def first_bad(report: BundleReport) -> tuple[str, str | None]:
    assert report.first_bad is not None, "the bundle check found nothing wrong"
    return report.first_bad.code, report.first_bad.field


def store_bad(report: Any) -> tuple[str, str]:
    assert report.first_bad is not None, "verify found nothing wrong"
    return report.first_bad.run_id, report.first_bad.code


async def purge(world: World, **scope: Any) -> None:
    await world.store.purge_bodies(PurgeScope(tenant=TENANT, **scope), by="ops", reason="retention")


# -- version 1: a store written before version 2 ------------------------------------------------
@pytest.fixture(params=["sqlite", "postgres"])
async def v1_world(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    """The version-1 store, loaded: a SQLite file from its dump, or its rows into an emptied
    PostgreSQL database the current code migrated (the migrations since version 1 add no rows)."""
    clock = ManualClock(1_800_000_000.0 + 3600)
    backend: Backend
    if request.param == "sqlite":
        path = tmp_path / "warrant.db"
        conn = sqlite3.connect(path)
        conn.executescript(V1_STORE.read_text(encoding="utf-8"))
        conn.close()
        backend = SQLiteBackend(path)
    else:
        postgres: PostgresBackend = request.getfixturevalue("postgres_session")
        store = postgres.store(clock)
        await store.open()  # migrated, whatever ran before
        await store.close()
        postgres.clear()
        with psycopg.connect(postgres.url, autocommit=True) as conn:
            conn.execute(V1_POSTGRES.read_text(encoding="utf-8").encode())
        backend = postgres
    world = await open_world(backend, clock)
    try:
        yield world
    finally:
        await world.teardown()


def run_ids(world: World) -> list[str]:
    rows = world.backend._execute(("SELECT run_id FROM runs ORDER BY seq", ()))  # type: ignore[attr-defined]
    return [r["run_id"] for r in rows]


async def test_a_store_of_version_1_entries_still_verifies_and_exports_verifiable_bundles(v1_world: World) -> None:
    versions = {json.loads(e["body"])["v"] for r in run_ids(v1_world) for e in v1_world.backend.events(r)}
    assert versions == {1}
    report = await v1_world.store.verify_ledger()
    assert (report.ok, report.first_bad, report.runs) == (True, None, 4)
    for run_id in run_ids(v1_world):
        bundle = await bundle_report(v1_world, run_id)
        assert (bundle.ok, bundle.first_bad) == (True, None), run_id


async def test_version_1_chains_go_on_with_version_2_entries_and_still_verify(v1_world: World) -> None:
    world = v1_world
    for run_id in run_ids(world):
        run = await world.run(run_id)
        if run.status.terminal:
            continue
        grant = await world.store.acquire_lease(OPS, run_id, "new-worker", takeover=True)
        assert code_of(await world.call(grant.token, "t__write", {"text": "first"})) is None  # a body v1 named too
        assert code_of(await world.call(grant.token, "t__read", {"q": "look"})) is None
        assert code_of(await world.call(grant.token, "t__denied", {})) == "forbidden"
        world.tools.modes["write"] = "crash"
        assert code_of(await world.call(grant.token, "t__write", {"text": "lost again"})) == "outcome_unknown"
        world.tools.modes["write"] = "ok"
    world.clock.advance(60)
    await purge(world)
    assert ENTRY_VERSION == 2
    newest = {json.loads(e["body"])["v"] for r in run_ids(world) for e in world.backend.events(r)}
    assert newest == {1, 2}
    report = await world.store.verify_ledger()
    assert (report.ok, report.first_bad) == (True, None)
    for run_id in run_ids(world):
        bundle = await bundle_report(world, run_id)
        assert (bundle.ok, bundle.first_bad) == (True, None), run_id


async def test_verify_holds_no_version_1_action_to_the_reason_and_times_version_2_states(v1_world: World) -> None:
    # Version 1 never chained them: the same edits verify names on a version-2 action
    # (test_store_ledger_replay.py) are no finding here, as the bundle check exempts them too.
    rows = v1_world.backend._execute(("SELECT action_id FROM actions ORDER BY seq", ()))  # type: ignore[attr-defined]
    assert rows
    for row in rows:
        v1_world.backend.set_row("actions", "action_id", row["action_id"], reason="edited", created_at=1.0)
    report = await v1_world.store.verify_ledger()
    assert (report.ok, report.first_bad) == (True, None)


# -- version 2: a purged mark needs its purge entry -----------------------------------------------
async def test_a_bundle_listing_a_result_as_purged_with_no_purge_entry_is_refused(world: World) -> None:
    run = await world.new_run()
    action = await world.action(await world.call(run.token, "t__write", {"text": "kept"}))
    assert action.result_sha256 is not None
    world.backend.delete_row("blobs", "sha256", action.result_sha256)
    assert first_bad(await bundle_report(world, run.run_id)) == ("blob_purge_unrecorded", None)
    assert store_bad(await world.store.verify_ledger()) == (run.run_id, "body_missing")


async def test_a_bundle_listing_an_approvals_payload_as_purged_with_no_purge_entry_is_refused(world: World) -> None:
    run = await world.new_run()
    denied = await world.decide(await world.call(run.token, "t__approve", {"text": "no"}), approve=False)
    world.backend.delete_row("blobs", "sha256", denied.payload_sha256)
    assert first_bad(await bundle_report(world, run.run_id)) == ("blob_purge_unrecorded", None)


async def test_an_action_marked_purged_with_no_purge_entry_is_named_by_verify(world: World) -> None:
    run = await world.new_run()
    action = await world.action(await world.call(run.token, "t__write", {"text": "still here"}))
    world.backend.set_row("actions", "action_id", action.action_id, bodies_purged_at=world.clock.now())
    assert store_bad(await world.store.verify_ledger()) == (run.run_id, "purge_unrecorded")


async def test_a_body_shared_by_two_runs_and_purged_run_by_run_still_verifies(world: World) -> None:
    # The first purge keeps the body (the other run still needs it); the second deletes it. Both
    # runs' chains record the purge, so neither names the body as missing.
    first, second = await world.new_run(), await world.new_run()
    for run in (first, second):
        assert code_of(await world.call(run.token, "t__write", {"text": "same payload"})) is None
        assert code_of(await world.call(run.token, "t__read", {"q": "same read"})) is None
        assert code_of(await world.call(run.token, "t__approve", {"text": "same approval"})) == "approval_required"
    world.clock.advance(60)
    await purge(world, run_id=first.run_id)
    await purge(world, run_id=second.run_id)
    report = await world.store.verify_ledger()
    assert (report.ok, report.first_bad) == (True, None)
    for run in (first, second):
        bundle = await bundle_report(world, run.run_id)
        assert (bundle.ok, bundle.first_bad) == (True, None)
        assert bundle.purged > 0


async def test_a_body_purged_then_named_again_needs_a_newer_purge_entry(world: World) -> None:
    run = await world.new_run()
    await world.call(run.token, "t__write", {"text": "again"}, {"warrant/operation_id": "op-1"})
    world.clock.advance(60)
    await purge(world, run_id=run.run_id)
    again = await world.action(
        await world.call(run.token, "t__write", {"text": "again"}, {"warrant/operation_id": "op-2"})
    )
    assert (await world.store.verify_ledger()).ok  # stored again by the second write
    world.backend.delete_row("blobs", "sha256", again.payload_sha256)
    assert first_bad(await bundle_report(world, run.run_id)) == ("blob_purge_unrecorded", None)
    assert store_bad(await world.store.verify_ledger()) == (run.run_id, "body_missing")


# -- version 2: an action's reason and times are the chain's ---------------------------------------
@pytest.mark.parametrize(
    ("tool", "column", "value"),
    [
        ("t__denied", "reason", "nothing was refused here"),
        ("t__write", "reason", "someone explains it away"),
        ("t__write", "created_at", 1_700_000_000.0),
        ("t__write", "settled_at", 1_700_000_000.0),
        ("t__read", "created_at", 1_700_000_000.0),
        ("t__denied", "settled_at", 1_700_000_000.0),
    ],
)
async def test_an_edited_reason_or_time_of_an_action_is_named_by_the_bundle_check(
    world: World, tool: str, column: str, value: Any
) -> None:
    run = await world.new_run()
    result = await world.call(
        run.token, tool, {"q": "x"} if tool == "t__read" else {"text": "x"} if tool != "t__denied" else {}
    )
    action_id = result.meta.get("warrant/action_id") or (result.structured or {}).get("error", {}).get("action_id")
    if action_id is None:
        action_id = (await world.actions(run.run_id))[-1].action_id
    assert (await bundle_report(world, run.run_id)).ok
    world.backend.set_row("actions", "action_id", action_id, **{column: value})
    assert first_bad(await bundle_report(world, run.run_id)) == ("action_mismatch", column)


async def test_an_unknown_outcome_states_its_reason_and_time(world: World) -> None:
    run = await world.new_run()
    world.tools.modes["write"] = "crash"
    assert code_of(await world.call(run.token, "t__write", {"text": "lost"})) == "outcome_unknown"
    await world.store.mark_restored(by="ops")  # nothing admitted is left; the unknown one keeps its reason
    action = (await world.actions(run.run_id))[-1]
    assert (await bundle_report(world, run.run_id)).ok
    world.backend.set_row("actions", "action_id", action.action_id, reason="it never happened")
    assert first_bad(await bundle_report(world, run.run_id)) == ("action_mismatch", "reason")


async def test_a_read_in_flight_at_a_restore_states_its_intent_and_reservation(world: World) -> None:
    # A read has no entry until it settles: marked unknown by a restore, its one entry says what
    # was asked and what it holds, so its reservation is the chain's, not only its row's.
    run = await world.new_run()
    world.tools.modes["read"] = "block"
    flying = world.spawn(world.call(run.token, "t__read", {"q": "in flight"}))
    await world.tools.wait_for_effects(1)
    await world.store.mark_restored(by="ops")
    (action,) = [a for a in await world.actions(run.run_id) if a.tool == "t__read"]
    assert str(action.status) == "unknown"
    (entry,) = [e for e in await world.events(run.run_id) if e.data.get("action_id") == action.action_id]
    assert (entry.data["tool"], entry.data["reserved"]["tool_calls"], entry.data["reason"]) == (
        "t__read",
        1,
        action.reason,
    )
    report = await world.store.verify_ledger()
    assert (report.ok, report.first_bad) == (True, None)
    assert (await bundle_report(world, run.run_id)).ok
    world.tools.release.set()
    await world.settled(flying)
