"""The gate caches a token's run; a contract revision under that cache is noticed at admit."""

from __future__ import annotations

import pytest

from tests.harness import SQLiteBackend, World, code_of

pytestmark = pytest.mark.anyio


async def test_a_call_after_the_contract_version_changed_is_decided_again_and_admitted(world: World) -> None:
    run = await world.new_run()
    assert code_of(await world.call(run.token, "t__read", {"q": "a"})) is None  # the gate now caches the run
    assert isinstance(world.backend, SQLiteBackend)
    # What a revision does to the run row (revisions themselves come with issue 7).
    world.backend._execute(("UPDATE runs SET spec_version = 'v2' WHERE run_id = ?", (run.run_id,)))

    result = await world.call(run.token, "t__read", {"q": "b"})

    assert code_of(result) is None
    last = (await world.actions(run.run_id))[-1]
    assert last.status.value == "succeeded"
    assert len(await world.actions(run.run_id)) == 2
