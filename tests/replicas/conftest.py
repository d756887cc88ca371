"""The two-replica cluster (tests/replicas/cluster.py): one shared by the tests that leave it as they
found it, and a fresh one for each test that disturbs it.

Starting a cluster (a database, two services, two replicas) takes 5-6 s on this 2-core machine
when it is otherwise idle and 15-20 s when other suites run beside it, so the tests that only make
runs of their own and call through both replicas share one (`shared_cluster`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.replicas.cluster import Cluster, open_cluster


@pytest.fixture(scope="package")
def anyio_backend() -> str:
    """Package-wide, so that one cluster can serve several modules' tests. Not session-wide: anyio's
    plugin runs every test on the event loop a live fixture holds, and the rest of the suite must
    keep a fresh loop per test."""
    return "asyncio"


@pytest.fixture(scope="package")
async def shared_cluster(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Cluster]:
    """Both demo services and two `warrant serve` replicas in the default configuration, on a fresh
    database, for every test that makes its own runs and leaves the processes, faults and
    configuration as they are (it stops, kills and faults nothing)."""
    async with open_cluster(tmp_path_factory.mktemp("shared-cluster")) as opened:
        yield opened


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[Cluster]:
    """A cluster of the test's own in the default configuration: it may kill a replica or fault a
    service. A test that needs another configuration opens its own with `open_cluster`."""
    async with open_cluster(tmp_path) as opened:
        yield opened
