"""A tool limited to 3 calls in flight, across two replicas on one PostgreSQL store: 20 runs, half
calling through A and half through B, at once; the demo CRM holds each call half a second and its
own count of requests held at once never passes 3. The count is the store's (the admitted actions,
counted in each replica's SERIALIZABLE admit), not either replica's (docs/limits.md, "Shared limits")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gateway.yamlfile import read_yaml
from tests.replicas.cluster import ROOT, open_cluster
from tests.shared_load import destination_load, hammer

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

RUNS = 20
LIMIT = 3


async def test_twenty_runs_on_two_replicas_never_hold_more_than_three_calls_at_the_destination(tmp_path: Path) -> None:
    policy = read_yaml(ROOT / "policies" / "default.yaml")
    policy["shared_limits"] = [{"destination": "crm", "max_concurrent": LIMIT}]
    path = tmp_path / "policy.json"
    path.write_text(json.dumps(policy))
    async with open_cluster(tmp_path, policies=[path]) as cluster:
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
