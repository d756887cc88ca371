"""The drill's PostgreSQL databases (gateway/drill/postgres.py): one per two-replica world, made and
dropped on the server it is given; what a killed drill left is dropped by the next, and only that."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator

import psycopg
import pytest

from gateway.drill import postgres as pg

SERVER = os.environ.get("WARRANT_TEST_POSTGRES", pg.DEFAULT_SERVER)


def exists(name: str) -> bool:
    with psycopg.connect(pg.database_url(SERVER, "postgres"), autocommit=True) as conn:
        return conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone() is not None


def make(name: str) -> None:
    with psycopg.connect(pg.database_url(SERVER, "postgres"), autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')


@pytest.fixture
def made() -> Iterator[list[str]]:
    """Names this test creates, dropped at its end whatever happened."""
    names: list[str] = []
    yield names
    with psycopg.connect(pg.database_url(SERVER, "postgres"), autocommit=True) as conn:
        for name in names:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def name_of(url: str) -> str:
    return url.rsplit("/", 1)[-1]


def test_a_world_database_is_made_on_the_server_and_dropped_with_its_sessions(made: list[str]) -> None:
    url = pg.create_database(SERVER)
    made.append(name_of(url))
    assert name_of(url).startswith(f"warrant_drill_{os.getpid()}_")
    assert pg.is_drill_database(url)
    with psycopg.connect(url) as conn:  # a session still open, as a replica's pool would be
        conn.execute("CREATE TABLE t (x int)")
        conn.commit()
        pg.drop_database(url)
    assert not exists(name_of(url))


def test_only_a_drill_database_is_ever_dropped() -> None:
    with pytest.raises(ValueError):
        pg.drop_database(pg.database_url(SERVER, "postgres"))
    assert not pg.is_drill_database("sqlite:///warrant_drill_1_ab.db")


def test_databases_of_a_dead_drill_are_dropped_by_the_next_and_a_live_ones_are_kept(made: list[str]) -> None:
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead = f"warrant_drill_{int(gone.stdout)}_deadbeef"
    live = f"warrant_drill_{os.getpid()}_cafebabe"  # this process: alive
    for name in (dead, live):
        make(name)
        made.append(name)
    made.append(name_of(pg.create_database(SERVER)))
    assert not exists(dead)
    assert exists(live)


def test_a_server_that_does_not_answer_is_named_with_the_reason() -> None:
    assert pg.problem(SERVER) is None
    reason = pg.problem("postgresql://postgres:secret@127.0.0.1:1")
    assert reason is not None and reason.startswith("no PostgreSQL server answers at postgresql://postgres:***@")


def test_the_database_goes_in_the_path_and_the_rest_of_the_url_stays() -> None:
    url = pg.database_url("postgresql://u:p@h:5433/other?options=-csearch_path%3Ds", "warrant_drill_1_ab")
    assert url == "postgresql://u:p@h:5433/warrant_drill_1_ab?options=-csearch_path%3Ds"
