"""GET /api/runs does not silently skip a damaged run row: the answer names it in `damaged`, the
document describes it, and `warrant runs list` and the console's runs page say so."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import anyio
import pytest

from gateway import cli
from gateway.store.sqlite.db import _statements
from tests.api.conftest import Api
from tests.api.test_openapi import Conformance, fetch_document
from tests.api.test_operator_api import create_run
from tests.console.conftest import signed_in
from tests.store.test_store_counters import migration_0014

pytestmark = pytest.mark.anyio


def damage_file(db: Path, run_id: str) -> None:
    """Write a float into the run's spend_spent behind the gateway's back, past the schema's guard."""
    again = [s for s in _statements(migration_0014()) if s.startswith("CREATE TRIGGER runs_")]
    with sqlite3.connect(db) as conn:
        conn.execute("DROP TRIGGER runs_money_insert")
        conn.execute("DROP TRIGGER runs_money_update")
        conn.execute("UPDATE runs SET spend_spent = 9.3e18 WHERE run_id = ?", (run_id,))
        for statement in again:
            conn.execute(statement)


async def test_the_run_list_names_the_damaged_row_it_does_not_list(api: Api, tmp_path: Path) -> None:
    first = (await create_run(api))["run_id"]
    broken = (await create_run(api))["run_id"]
    damage_file(tmp_path / "w.db", broken)
    conformance = Conformance(await fetch_document(api))
    async with api.client("aud") as c:
        listed = (await c.get("/api/runs")).json()
        alone = await c.get(f"/api/runs/{broken}")
    conformance.check("GET", "/api/runs", 200, listed)
    assert [r["run_id"] for r in listed["items"]] == [first]
    assert listed["damaged"] == [{"run_id": broken, "code": "record_damaged"}]
    assert alone.status_code == 500 and alone.json()["error"]["code"] == "record_damaged"


async def test_a_list_with_nothing_damaged_says_so_with_an_empty_list(api: Api) -> None:
    await create_run(api)
    async with api.client("aud") as c:
        assert (await c.get("/api/runs")).json()["damaged"] == []


async def test_the_document_describes_damaged(api: Api) -> None:
    components = (await fetch_document(api))["components"]["schemas"]
    assert "damaged" in components["RunPage"]["required"]
    assert components["DamagedRun"]["properties"]["code"]["const"] == "record_damaged"


async def test_runs_list_and_the_console_name_the_damaged_run(
    api: Api, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    await create_run(api)
    broken = (await create_run(api))["run_id"]
    damage_file(tmp_path / "w.db", broken)
    env = {"WARRANT_URL": api.url, "WARRANT_API_KEY": "key-aud"}
    with pytest.MonkeyPatch.context() as mp:
        for name, value in env.items():
            mp.setenv(name, value)
        for extra in ([], ["--all"]):
            code = await anyio.to_thread.run_sync(cli.main, ["runs", "list", *extra])
            assert code == 0
            assert f"not listed: run {broken} (record_damaged" in capsys.readouterr().err
    async with signed_in(api, "key-aud") as browser:
        page = await browser.get("/console/runs")
    assert page.status_code == 200 and 'id="runs-damaged"' in page.text and broken in page.text
