"""`warrant backup` and `warrant restore` as real commands (gateway/store/backup.py, docs/operations.md).

SQLite: a backup taken while a real `warrant serve` has traffic (an agent's write held in flight at
the demo CRM, reads and writes of another run going on) is restored into a fresh file; `warrant
ledger verify` passes on it; serving it shows its runs paused, the agent's call refused
`run_paused` until an operator resumes the run, the write that was in flight `unknown`.
PostgreSQL: a real pg_dump of a store, `warrant restore` (pg_restore into a fresh database) and
`warrant backup --check` on it.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import anyio
import pytest

from gateway.clock import ManualClock
from gateway.domain import ActionStatus, RunStatus, parse_contract
from gateway.gate import Gate
from gateway.store.postgres import PostgresStore
from tests.e2e.crm_gateway import LEDGER_KEY, WAIT, Gateway, gateway
from tests.e2e.serving import code_of, mcp_agent
from tests.harness import CONTRACT, OPS, TENANT, Tools
from tests.harness_postgres import fresh_database
from tests.integration.test_http_services import Service

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

HELD = {"email": "held@prospect.example", "name": "Held"}


def report(done: Any) -> dict[str, Any]:
    assert done.returncode in (0, 1), done.stderr
    body: dict[str, Any] = json.loads(done.stdout)
    return body


async def test_a_backup_under_traffic_restores_into_a_fresh_store_that_verifies_and_starts_paused(
    tmp_path: Path, crm: Service
) -> None:
    live = gateway(tmp_path / "live", crm, grace=1)
    out = tmp_path / "backups" / "warrant.backup"
    with live.serve():
        run_id, token = await live.lease()
        _, other = await live.lease()
        await crm.fault(method="POST", path="/contacts", mode="delay", delay=60)
        with anyio.fail_after(WAIT * 2):
            async with mcp_agent(live.url, token) as client, mcp_agent(live.url, other) as busy:
                async with anyio.create_task_group() as group:
                    group.start_soon(client.call_tool, "crm__create_contact", HELD)
                    held = await live.wait_admitted(run_id)
                    traffic: list[str | None] = []

                    async def more() -> None:
                        for n in range(1000):
                            found = await busy.call_tool("crm__search_contacts", {"q": "prospect"})
                            made = await busy.call_tool("crm__create_contact", {"email": f"t{n}@traffic.example"})
                            traffic.extend([code_of(found), code_of(made)])

                    group.start_soon(more)
                    done = await anyio.to_thread.run_sync(
                        lambda: live.warrant("backup", str(out), "--config", str(live.config))
                    )
                    group.cancel_scope.cancel()
    backed_up = report(done)
    assert done.returncode == 0 and backed_up["ok"] is True, backed_up
    assert backed_up["integrity"] == "ok" and backed_up["ledger"]["ok"] is True
    assert traffic and set(traffic) == {None}  # the server kept answering while the backup ran
    assert list(out.parent.iterdir()) == [out]  # no partial file left beside it

    fresh = gateway(tmp_path / "fresh", crm, db="restored.db")
    restored = report(fresh.warrant("restore", str(out), "--config", str(fresh.config)))
    assert restored["ok"] is True, restored
    assert run_id in restored["restored"]["runs_paused"]
    assert held in restored["restored"]["actions_unknown"]  # with any call of the traffic caught in flight
    verified = fresh.warrant("ledger", "verify", "--config", str(fresh.config))
    assert verified.returncode == 0 and json.loads(verified.stdout)["ok"] is True, verified.stdout

    with fresh.serve():
        async with fresh.api() as api:
            run = (await api.get(f"/api/runs/{run_id}")).json()
            assert run["status"] == "paused" and run["status_reason"].startswith("restored from backup "), run
            with anyio.fail_after(WAIT):
                async with mcp_agent(fresh.url, token) as client:
                    refused = await client.call_tool("crm__search_contacts", {"q": "prospect"})
                    assert code_of(refused) == "run_paused"
                    resumed = await api.post(f"/api/runs/{run_id}/resume", json={"reason": "reconciled"})
                    assert resumed.status_code == 200 and resumed.json()["status"] == "running", resumed.text
                    passed = await client.call_tool("crm__search_contacts", {"q": "prospect"})
                    assert code_of(passed) is None, passed
    assert fresh.actions()[held][0] in ("unknown", "succeeded")  # the CRM may still be holding it


def test_a_backup_that_fails_its_check_is_not_left_under_its_name_and_check_says_so(tmp_path: Path) -> None:
    source = tmp_path / "w.db"
    sqlite3.connect(source).close()  # a database, but not a Warrant store
    gw = Gateway(tmp_path, "http://unused", tmp_path / "none.yaml", source)
    env = gw.env
    done = gw.warrant("backup", str(tmp_path / "out.db"), "--database", f"sqlite:///{source}", env=env)
    assert done.returncode == 1 and report(done)["ok"] is False
    assert not (tmp_path / "out.db").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["w.db"]
    checked = gw.warrant("backup", "--check", str(source), "--database", f"sqlite:///{source}", env=env)
    assert checked.returncode == 1 and report(checked)["ok"] is False


def test_restore_refuses_a_target_that_exists_and_a_missing_backup(tmp_path: Path) -> None:
    gw = Gateway(tmp_path, "http://unused", tmp_path / "none.yaml", tmp_path / "w.db")
    (tmp_path / "taken.db").write_bytes(b"")
    (tmp_path / "b.backup").write_bytes(b"")
    taken = gw.warrant("restore", str(tmp_path / "b.backup"), "--database", f"sqlite:///{tmp_path}/taken.db")
    missing = gw.warrant("restore", str(tmp_path / "none.backup"), "--database", f"sqlite:///{tmp_path}/new.db")
    assert (taken.returncode, missing.returncode) == (2, 2)
    assert "exists" in taken.stderr and "no backup" in missing.stderr
    assert not (tmp_path / "new.db").exists()


@pytest.mark.skipif(shutil.which("pg_dump") is None, reason="pg_dump is not installed (postgresql-client)")
async def test_a_postgres_dump_taken_with_a_write_in_flight_restores_paused_with_the_write_unknown(
    tmp_path: Path,
) -> None:
    dump = tmp_path / "warrant.dump"
    gw = Gateway(tmp_path, "http://unused", tmp_path / "none.yaml", tmp_path / "unused.db")
    with fresh_database() as source, fresh_database() as target:
        store = PostgresStore(source, clock=ManualClock(), ledger_key=LEDGER_KEY.encode(), database_time=False)
        await store.open()
        tools = Tools()
        tools.modes["write"] = "block"
        try:
            run = await store.create_run(OPS, parse_contract(CONTRACT))
            grant = await store.acquire_lease(OPS, run.run_id, "agent", takeover=False)
            gate = Gate(store, tools.catalog(), store.clock)
            async with anyio.create_task_group() as group:
                group.start_soon(gate.call, grant.token, "t__write", {"text": "in flight"})
                await tools.wait_for_effects(1)
                dumped = await anyio.run_process(["pg_dump", "--format=custom", "--no-owner", f"--file={dump}", source])
                tools.release.set()
        finally:
            await store.close()
        assert dumped.returncode == 0
        restored = report(gw.warrant("restore", str(dump), "--database", target))
        assert restored["ok"] is True and restored["restored"]["runs_paused"] == [run.run_id], restored
        [held] = restored["restored"]["actions_unknown"]
        checked = report(gw.warrant("backup", "--check", "--database", target))
        assert checked["ok"] is True and checked["ledger"]["runs"] == 1, checked
        again = gw.warrant("restore", str(dump), "--database", target)
        assert again.returncode == 2 and "not empty" in again.stderr  # a store is never loaded twice
        opened = PostgresStore(target, clock=ManualClock(), ledger_key=LEDGER_KEY.encode())
        await opened.open()
        try:
            after = await opened.get_run(TENANT, run.run_id)
            action = await opened.get_action(TENANT, held)
        finally:
            await opened.close()
    assert after.status is RunStatus.PAUSED and (after.status_reason or "").startswith("restored from backup")
    assert (action.status, action.reason) == (ActionStatus.UNKNOWN, after.status_reason)


def test_backup_of_a_postgres_store_prints_the_pg_dump_commands_without_the_password(tmp_path: Path) -> None:
    gw = Gateway(tmp_path, "http://unused", tmp_path / "none.yaml", tmp_path / "unused.db")
    url = "postgresql://warrant:s3cret@db.internal:5432/warrant"
    done = gw.warrant("backup", str(tmp_path / "w.dump"), "--database", url)
    assert done.returncode == 0, done.stderr
    assert f"pg_dump --format=custom --no-owner --no-privileges --file={tmp_path / 'w.dump'}" in done.stdout
    assert "warrant restore" in done.stdout and "s3cret" not in done.stdout
    assert not (tmp_path / "w.dump").exists()
