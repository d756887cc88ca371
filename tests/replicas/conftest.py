"""The two-replica cluster (tests/replicas/cluster.py), fresh for each test that asks for it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.replicas.cluster import Cluster, open_cluster


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[Cluster]:
    """Both demo services and two `warrant serve` replicas in the default configuration, on a fresh
    database. A test that needs another configuration opens its own with `open_cluster`."""
    async with open_cluster(tmp_path) as opened:
        yield opened
