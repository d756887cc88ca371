"""The watchdog's alerts fire once across replicas: both replicas' watchdogs tick, one alert per episode.

Both replicas run their watchdog every second. The one holding the store's watchdog lease raises
the alerts; the other takes over once the holder stops renewing (here: SIGKILLed) and evaluates the
same runs again, and must raise nothing twice: not in the run's history, not at the webhook.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from gateway.drill.cases.watchdog import Receiver
from tests.harness import eventually
from tests.replicas.cluster import Cluster, Replica, open_cluster

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

KINDS = ["lease_missed", "stalled"]
WAIT = 20.0  # seconds an alert may take to be raised and delivered, or a watchdog to take over


@contextlib.asynccontextmanager
async def receiving(secret: str) -> AsyncIterator[Receiver]:
    """A webhook receiver on loopback that keeps every correctly signed body."""
    receiver = Receiver(secret.encode())
    server = await asyncio.start_server(receiver.handle, "127.0.0.1", 0)
    receiver.url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/hooks"
    try:
        yield receiver
    finally:
        server.close()


async def history_alerts(replica: Replica, run_id: str) -> Counter[str]:
    page = await replica.ok("GET", f"/api/runs/{run_id}/events", "auditor", params={"limit": "1000"})
    return Counter(entry["data"]["kind"] for entry in page["items"] if entry["type"] == "alert")


async def test_a_missed_lease_and_a_stall_are_alerted_once_across_replicas_also_after_a_watchdog_takeover(
    tmp_path: Path,
) -> None:
    secret = "replicas-webhook-secret"
    async with receiving(secret) as receiver:
        hooks = [{"url": receiver.url, "name": "replicas", "events": KINDS}]
        watchdog = {"tick": "1s", "heartbeat": "1h", "reconcile_every": "1h", "delivery_timeout": "2s"}
        async with open_cluster(tmp_path, watchdog=watchdog, webhooks=hooks, webhook_secret=secret) as cluster:
            await alerted_once_across_a_takeover(cluster, receiver)


async def alerted_once_across_a_takeover(cluster: Cluster, receiver: Receiver) -> None:
    a, b = cluster.replicas
    # A worker that never calls again: its 2 s lease lapses, and the run makes no progress for 2 s.
    run_id, _ = await cluster.start_run(via=a, lease_ttl="2s", progress_expectation="2s")
    once = Counter(dict.fromkeys(KINDS, 1))

    def deliveries() -> list[tuple[str, str]]:
        rows = cluster.sql(
            "SELECT kind, status FROM webhook_deliveries WHERE body LIKE %s ORDER BY kind", (f'%"{run_id}"%',)
        )
        return [(row["kind"], row["status"]) for row in rows]

    async def alerted() -> bool:
        """Raised once each, received, and marked delivered (a delivery cut short by the kill below
        would rightly be sent again: receivers deduplicate on the alert's id)."""
        delivered = deliveries() == [(kind, "delivered") for kind in KINDS]
        return delivered and await history_alerts(b, run_id) == once and receiver.alerts(run_id) == once

    await eventually(alerted, wait=WAIT, every=0.2)

    # Kill whichever replica holds the watchdog lease; the other takes it over and ticks.
    (lease,) = cluster.sql("SELECT holder FROM watch_leases WHERE name = 'watchdog'")
    holder, survivor = (a, b) if lease["holder"] == await a.process_id() else (b, a)
    assert lease["holder"] == await holder.process_id()
    await holder.kill()
    survivor_id = await survivor.process_id()
    ticks: list[float] = []

    async def ticked_thrice() -> bool:
        """Three renewals of the watchdog lease by the survivor: three ticks that evaluated every live run."""
        (lease,) = cluster.sql("SELECT holder, expires_at FROM watch_leases WHERE name = 'watchdog'")
        if lease["holder"] == survivor_id and (not ticks or lease["expires_at"] > ticks[-1]):
            ticks.append(lease["expires_at"])
        return len(ticks) >= 3

    await eventually(ticked_thrice, wait=WAIT, every=0.2)

    assert await history_alerts(survivor, run_id) == once
    assert receiver.alerts(run_id) == once
    assert receiver.unsigned == 0
    raised = cluster.sql("SELECT kind, raised_by FROM watch_alerts WHERE run_id = %s ORDER BY kind", (run_id,))
    assert [row["kind"] for row in raised] == KINDS
    assert deliveries() == [(kind, "delivered") for kind in KINDS]
