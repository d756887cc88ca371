"""A tool limited to 3 calls in flight across every run, on SQLite: 20 runs call it at once through a
real `warrant serve` process, the demo CRM holds each call half a second, and the CRM's own count
of requests it held at once never passes 3 (docs/limits.md, "Shared limits")."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from gateway.drill.world import Replica, World
from tests.shared_load import destination_load, hammer

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

RUNS = 20
LIMIT = 3
SHARED = f"shared_limits:\n  - {{tool: crm__search_contacts, max_concurrent: {LIMIT}}}\n"


class LimitedWorld(World):
    """The drill's world, its policy with one shared limit more."""

    def _config(self, replica: Replica, failpoints: Mapping[str, Mapping[str, Any]]) -> Path:
        config = super()._config(replica, failpoints)
        policy = self.folder / "policy.yaml"
        policy.write_text(policy.read_text() + SHARED)
        return config


async def test_twenty_runs_never_hold_more_than_three_calls_at_the_destination(tmp_path: Path) -> None:
    async with LimitedWorld(tmp_path) as world:
        await world.start_gateway()
        agents = [(await world.start_run())[1] for _ in range(RUNS)]
        await world.crm.fault(method="GET", path="/contacts", mode="delay", times=None, delay=0.5)
        await destination_load(world.crm.url, reset=True)

        tally = await hammer(agents, "crm__search_contacts", {"q": "acme"}, bound=90.0)

        load = await destination_load(world.crm.url)
        assert [reply.code for reply in tally.replies] == [None] * RUNS
        assert load["max_in_flight"] == LIMIT  # reached, never passed, counted at the CRM
        assert tally.refusals and {e["scope"] for e in tally.refusals} == {"tool:crm__search_contacts"}
        assert {e["retryable"] for e in tally.refusals} == {True}
