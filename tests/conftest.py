"""Fixtures every test folder shares: the async backend, and the store/gate world of tests/harness.py."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from gateway.clock import ManualClock
from tests.harness import Backend, SQLiteBackend, World, open_world
from tests.harness_postgres import PostgresBackend


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def postgres_session() -> Iterator[PostgresBackend]:
    """The session's database on the local PostgreSQL server (tests/harness_postgres.py)."""
    yield from PostgresBackend.session()


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    """Each store contract test runs on both back ends: a fresh SQLite file, or an emptied PostgreSQL database."""
    if request.param == "sqlite":
        return SQLiteBackend(tmp_path / "warrant.db")
    postgres: PostgresBackend = request.getfixturevalue("postgres_session")
    postgres.clear()
    return postgres


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
async def world(backend: Backend, clock: ManualClock) -> AsyncIterator[World]:
    world = await open_world(backend, clock)
    try:
        yield world
    finally:
        await world.teardown()
