"""A tool limited to 3 calls in flight, across two replicas on one PostgreSQL store: 20 runs, half
calling through A and half through B, at once; the demo CRM holds each call half a second and its
own count of requests held at once never passes 3. The count is the store's (the admitted actions,
counted in each replica's SERIALIZABLE admit), not either replica's (docs/limits.md, "Shared limits")."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest

from gateway.yamlfile import read_yaml
from tests.harness import eventually
from tests.replicas.cluster import ROOT, open_cluster
from tests.shared_load import destination_load, hammer

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

RUNS = 20
LIMIT = 3
HOLD = 60.0  # seconds the CRM holds the killed replica's calls, and their tool timeout: the slot's
# own expiry (HOLD + SLOT_GRACE_S) is far past the kill and restart, so only the sweep can free it


def limited(folder: Path, **limit: Any) -> Path:
    """The repository's default policy with one shared limit on the CRM."""
    policy = read_yaml(ROOT / "policies" / "default.yaml")
    policy["shared_limits"] = [{"destination": "crm", **limit}]
    path = folder / "policy.json"
    path.write_text(json.dumps(policy))
    return path


async def test_twenty_runs_on_two_replicas_never_hold_more_than_three_calls_at_the_destination(tmp_path: Path) -> None:
    async with open_cluster(tmp_path, policies=[limited(tmp_path, max_concurrent=LIMIT)]) as cluster:
        agents = []
        for n in range(RUNS):
            replica = cluster.replicas[n % 2]
            _, token = await cluster.start_run(via=replica)
            agents.append(replica.agent(token))
        await cluster.crm.fault(method="GET", path="/contacts", mode="delay", times=None, delay=0.5)
        await destination_load(cluster.crm.url, reset=True)

        tally = await hammer(agents, "crm__search_contacts", {"q": "acme"}, bound=120.0)

        load = await destination_load(cluster.crm.url)
        assert [reply.code for reply in tally.replies] == [None] * RUNS
        assert load["max_in_flight"] == LIMIT  # reached, never passed, counted at the CRM
        assert {e["scope"] for e in tally.refusals} == {"destination:crm"}
        admitted = cluster.sql("SELECT process_id, COUNT(*) AS n FROM actions WHERE status = 'succeeded' GROUP BY 1")
        assert len(admitted) == 2  # both replicas admitted some: the limit held across them


async def test_a_killed_replicas_slots_are_freed_by_its_restarts_orphan_sweep(tmp_path: Path) -> None:
    async with open_cluster(tmp_path, policies=[limited(tmp_path, max_concurrent=2)], tool_timeout=HOLD) as cluster:
        a, b = cluster.replicas
        await cluster.crm.fault(method="GET", path="/contacts", mode="delay", times=2, delay=HOLD)
        holders = [a.agent((await cluster.start_run(via=a))[1]) for _ in range(2)]
        calls = [asyncio.create_task(agent.call("crm__search_contacts", {"q": "x"}, bound=HOLD)) for agent in holders]
        began = time.monotonic()
        try:

            async def both_held() -> bool:
                return (await destination_load(cluster.crm.url))["in_flight"] == 2

            await eventually(both_held, wait=30.0, every=0.1)
            _, token = await cluster.start_run(via=b)
            agent = b.agent(token)
            assert (await agent.call("crm__search_contacts", {"q": "y"})).code == "shared_limit"

            await a.kill()  # its two calls stay admitted: nothing of A runs on the way out
            assert (await agent.call("crm__search_contacts", {"q": "y"})).code == "shared_limit"
            await a.start()  # its start-up sweep marks them unknown, which frees their slots
            reply = await agent.call("crm__search_contacts", {"q": "y"})
            assert reply.code is None, reply.error
            assert time.monotonic() - began < HOLD  # freed by the sweep, long before the slots' own expiry
            statuses = cluster.sql(
                "SELECT status FROM actions WHERE tool = 'crm__search_contacts' AND status != 'rejected'"
            )
            assert sorted(row["status"] for row in statuses) == ["succeeded", "unknown", "unknown"]
        finally:
            for call in calls:
                call.cancel()
            await asyncio.gather(*calls, return_exceptions=True)
