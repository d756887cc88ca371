"""Budgets: reserved at admit, settled at the actual cost, the rest released; `unknown` keeps its hold.

Money in minor units: `t__paid` costs 0.05 (5) and reserves its cost.max, 0.10 (10).
"""

from __future__ import annotations

import pytest

from gateway.domain import ActionStatus
from gateway.gate import META_BUDGET
from tests.harness import World, code_of

pytestmark = pytest.mark.anyio

NONE = {"spend": 0, "tool_calls": 0, "writes": 0, "active_seconds": 0}


async def test_a_write_holds_its_cost_max_while_in_flight_and_spends_its_estimate_when_it_succeeds(
    world: World,
) -> None:
    run = await world.new_run()
    world.tools.modes["paid"] = "block"
    in_flight = world.spawn(world.gate.call(run.token, "t__paid", {"text": "x"}))
    await world.tools.wait_for_effects(1)
    during = await world.run(run.run_id)
    assert (during.reserved, during.spent) == ({**NONE, "spend": 10, "tool_calls": 1, "writes": 1}, NONE)

    world.tools.release.set()
    result = await world.settled(in_flight)
    after = await world.run(run.run_id)
    assert (after.reserved, after.spent) == (NONE, {**NONE, "spend": 5, "tool_calls": 1, "writes": 1})
    assert result.meta[META_BUDGET]["spend"] == "99.95"
    assert result.meta[META_BUDGET]["writes"] == 99


async def test_an_actual_cost_reported_by_the_tool_is_what_is_spent(world: World) -> None:
    run = await world.new_run()
    world.tools.actual_spend["paid"] = 7
    await world.call(run.token, "t__paid", {"text": "x"})
    assert (await world.run(run.run_id)).spent["spend"] == 7
    assert (await world.actions(run.run_id))[0].actual_spend == 7


async def test_an_actual_cost_above_cost_max_is_spent_and_raises_budget_overrun(world: World) -> None:
    run = await world.new_run()
    world.tools.actual_spend["paid"] = 15
    result = await world.call(run.token, "t__paid", {"text": "x"})
    assert code_of(result) is None
    action = await world.action(result)
    overruns = [e for e in await world.events(run.run_id) if e.type == "budget_overrun"]
    assert [e.data["action_id"] for e in overruns] == [action.action_id]
    after = await world.run(run.run_id)
    assert (after.spent["spend"], after.reserved["spend"]) == (15, 0)


async def test_a_write_whose_outcome_is_unknown_keeps_its_whole_reservation(world: World) -> None:
    run = await world.new_run(budgets={"writes": 1})
    world.tools.modes["paid"] = "crash"
    result = await world.call(run.token, "t__paid", {"text": "x"})
    assert code_of(result) == "outcome_unknown"
    assert (await world.action(result)).status is ActionStatus.UNKNOWN
    after = await world.run(run.run_id)
    assert (after.reserved, after.spent) == ({**NONE, "spend": 10, "tool_calls": 1, "writes": 1}, NONE)
    # The held write counts against the budget: nothing else can be written until it is reconciled.
    world.tools.modes["write"] = "ok"
    assert code_of(await world.call(run.token, "t__write", {"text": "other"})) == "budget_exhausted"


async def test_writes_in_flight_count_against_the_budget_before_they_spend_anything(world: World) -> None:
    run = await world.new_run(budgets={"writes": 1})
    world.tools.modes["write"] = "block"
    world.spawn(world.gate.call(run.token, "t__write", {"text": "a"}))
    await world.tools.wait_for_effects(1)
    refused = await world.call(run.token, "t__write", {"text": "b"})
    assert code_of(refused) == "budget_exhausted"
    assert refused.structured is not None and refused.structured["error"]["dimension"] == "writes"
    assert len(world.tools.effects) == 1


async def test_a_failed_write_spends_its_tool_call_but_not_its_write(world: World) -> None:
    run = await world.new_run()
    world.tools.modes["paid"] = "failed"
    result = await world.call(run.token, "t__paid", {"text": "x"})
    assert code_of(result) == "upstream_failed"
    assert (await world.action(result)).status is ActionStatus.FAILED
    after = await world.run(run.run_id)
    assert (after.reserved, after.spent) == (NONE, {**NONE, "tool_calls": 1})


async def test_a_write_that_was_not_sent_spends_nothing(world: World) -> None:
    run = await world.new_run()
    world.tools.modes["paid"] = "not_sent"
    await world.call(run.token, "t__paid", {"text": "x"})
    after = await world.run(run.run_id)
    assert (after.reserved, after.spent) == (NONE, NONE)


async def test_a_read_spends_a_tool_call_and_no_write(world: World) -> None:
    run = await world.new_run()
    await world.call(run.token, "t__read", {"q": "x"})
    after = await world.run(run.run_id)
    assert (after.reserved, after.spent) == (NONE, {**NONE, "tool_calls": 1})
