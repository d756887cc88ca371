"""Writes `store.sql` and `store_postgres.sql`: a store as the gateway wrote it before ledger entry
version 2, on SQLite (a whole dump) and on PostgreSQL (its rows only, `pg_dump --data-only`, to
load into a database migrated by the current code: the migrations since add nothing to rows).

Run once, with the code of the last commit whose `gateway.store.chain.ENTRY_VERSION` was 1
(commit 68fa62f), never with newer code:

    git worktree add /tmp/v1 68fa62f && cd /tmp/v1 && PYTHONPATH=$PWD python tests/store/ledger_v1/make_fixture.py

The store holds what a ledger of that time could hold: writes, reads, a paid write, an approval
approved and used, one denied, a refusal, an unknown write reconciled later, usage, a takeover, a
purge of one run's bodies, a child that ended, a cancel and a successor. Its ledger key is the
tests' (`tests.harness.LEDGER_KEY`); tests/store/test_ledger_versions.py loads them. The
PostgreSQL one needs the test server (WARRANT_TEST_POSTGRES) and `pg_dump` on the PATH.
"""

from __future__ import annotations

import asyncio
import sqlite3
import subprocess
import tempfile
from pathlib import Path

from gateway.clock import ManualClock
from gateway.domain.contract import parse_contract
from gateway.domain.retention import PurgeScope
from gateway.store.chain import ENTRY_VERSION
from gateway.store.records import SettleKind, Settlement
from tests.harness import OPS, TENANT, Backend, SQLiteBackend, open_world
from tests.harness_postgres import PostgresBackend, fresh_database

HERE = Path(__file__).parent
# contract literal: this script runs with the code of 68fa62f (above), which has no tests/contracts.py.
CHILD = {
    "goal": "a part",
    "spec_version": "c1",
    "owner": "ops@acme.example",
    "expires_in": "1h",
    "budgets": {"spend": "1.00", "tool_calls": 5, "writes": 2, "active_seconds": 3600},
    "authority": {"allow": ["t__write", "t__read"]},
}


async def build(backend: Backend) -> None:
    world = await open_world(backend, ManualClock())
    try:
        run = await world.new_run()
        await world.call(run.token, "t__write", {"text": "first"})
        await world.call(run.token, "t__read", {"q": "look"})
        await world.call(run.token, "t__paid", {"text": "paid"})
        asked = await world.call(run.token, "t__approve", {"text": "yes"})
        await world.decide(asked)
        await world.call(run.token, "t__approve", {"text": "yes"})
        await world.decide(await world.call(run.token, "t__approve", {"text": "no"}), approve=False)
        await world.call(run.token, "t__denied", {})
        world.tools.modes["write"] = "crash"
        lost = await world.call(run.token, "t__write", {"text": "lost"})
        world.tools.modes["write"] = "ok"
        unknown = lost.structured["error"]["action_id"] if lost.structured else None
        if unknown is not None:
            await world.store.settle(unknown, Settlement(SettleKind.SUCCEEDED, reason="looked it up"))
        await world.store.report_usage(OPS, run.run_id, kind="model", amount=7, note=None, ref=None)
        token = await world.takeover(run)
        await world.call(token, "t__write", {"text": "after takeover"})
        child = await world.store.create_child(OPS, run.run_id, parse_contract(CHILD))
        grant = await world.store.acquire_lease(OPS, child.run_id, "child-worker", takeover=False)
        await world.call(grant.token, "t__write", {"text": "child"})
        await world.store.cancel(OPS, child.run_id, "done", hard=False)
        other = await world.new_run()
        await world.call(other.token, "t__write", {"text": "other"})
        world.clock.advance(60)
        await world.store.purge_bodies(PurgeScope(tenant=TENANT, run_id=run.run_id), by="ops", reason="retention")
        await world.store.cancel(OPS, run.run_id, "stop", hard=False)
        await world.store.create_successor(OPS, run.run_id, reason="carry on", extend_by=None)
        assert (await world.store.verify_ledger()).ok
    finally:
        await world.teardown()


def main() -> None:
    assert ENTRY_VERSION == 1, "run this with the code that wrote version-1 entries (see the docstring)"
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "warrant.db"
        asyncio.run(build(SQLiteBackend(path)))
        conn = sqlite3.connect(path)
        try:
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            dump = "\n".join(conn.iterdump()) + "\n"
        finally:
            conn.close()
    (HERE / "store.sql").write_text(dump, encoding="utf-8")
    with fresh_database() as url:
        asyncio.run(build(PostgresBackend(url)))
        rows = subprocess.run(
            ["pg_dump", "--data-only", "--column-inserts", "--no-owner", "--exclude-table-data=schema_migrations", url],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    # psql's meta-commands (`\restrict`) are not SQL: the test runs the file through psycopg.
    rows = "".join(line for line in rows.splitlines(keepends=True) if not line.startswith("\\"))
    (HERE / "store_postgres.sql").write_text(rows, encoding="utf-8")


if __name__ == "__main__":
    main()
