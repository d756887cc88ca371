"""Fixtures every test folder shares: the async backend, and the store/gate world of tests/harness.py."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from gateway.clock import ManualClock
from tests.harness import Backend, SQLiteBackend, World, open_world


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(params=["sqlite"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    # A PostgreSQL backend joins here: a fresh database per test, and its own tampering access.
    assert request.param == "sqlite"
    return SQLiteBackend(tmp_path / "warrant.db")


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
