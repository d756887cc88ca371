"""Active time and the pilot report's cost, against the store and the gate, with a moved clock: never a sleep.

`active_seconds` accrues from the store's own timestamps while the run is running, and while it
is waiting only when the contract says `count_waiting: true`; a run that has used it all is
refused `budget_exhausted` naming the dimension. The report's cost adds up to the run's spend
counter to the cent, whatever mix of tool costs, reported charges and reconciled actions made it.
"""

from __future__ import annotations

from typing import Any

import pytest

from gateway.domain import build_report, format_money
from gateway.store.records import SettleKind, Settlement
from tests.harness import OPS, TENANT, Run, World, code_of

pytestmark = pytest.mark.anyio

LONG_LEASE: dict[str, Any] = {"lease_ttl": "48h"}  # the clock moves far; the lease must not be what refuses


def budgets(active_seconds: int, *, count_waiting: bool = False) -> dict[str, Any]:
    return {
        "spend": "100.00",
        "tool_calls": 1000,
        "writes": 100,
        "active_seconds": active_seconds,
        "count_waiting": count_waiting,
    }


async def active(world: World, run: Run) -> float:
    return (await world.run(run.run_id)).snapshot().active_seconds(world.clock.now())


async def test_active_time_accrues_while_running_and_stops_while_paused(world: World) -> None:
    run = await world.new_run(**LONG_LEASE)
    world.clock.advance(100)
    assert await active(world, run) == 100
    await world.store.pause(OPS, run.run_id, "lunch")
    world.clock.advance(5000)
    assert await active(world, run) == 100
    await world.store.resume(OPS, run.run_id, None)
    world.clock.advance(50)
    assert await active(world, run) == 150


async def wait_for_approval(world: World, run: Run) -> Any:
    result = await world.call(run.token, "t__approve", {"text": "hello"})
    assert code_of(result) == "approval_required"
    assert (await world.run(run.run_id)).status.value == "waiting"
    return result


async def test_active_time_stops_while_waiting_by_default(world: World) -> None:
    run = await world.new_run(**LONG_LEASE)
    world.clock.advance(10)
    pending = await wait_for_approval(world, run)
    world.clock.advance(100)  # inside decide_within (2m): the approval is still pending
    assert await active(world, run) == 10
    await world.decide(pending)
    world.clock.advance(20)
    assert await active(world, run) == 30


async def test_active_time_accrues_while_waiting_when_the_contract_counts_waiting(world: World) -> None:
    run = await world.new_run(budgets=budgets(100000, count_waiting=True), **LONG_LEASE)
    world.clock.advance(10)
    pending = await wait_for_approval(world, run)
    world.clock.advance(100)
    assert await active(world, run) == 110
    await world.decide(pending)
    world.clock.advance(20)
    assert await active(world, run) == 130


async def test_a_run_that_used_its_active_seconds_is_refused_budget_exhausted_naming_the_dimension(
    world: World,
) -> None:
    run = await world.new_run(budgets=budgets(300), **LONG_LEASE)
    world.clock.advance(299)
    assert code_of(await world.call(run.token, "t__read", {"q": "a"})) is None
    world.clock.advance(1)
    refused = await world.call(run.token, "t__read", {"q": "b"})
    assert code_of(refused) == "budget_exhausted"
    assert refused.structured is not None
    assert refused.structured["error"]["dimension"] == "active_seconds"
    assert code_of(await world.call(run.token, "t__write", {"text": "c"})) == "budget_exhausted"


async def test_time_spent_paused_does_not_exhaust_active_seconds(world: World) -> None:
    run = await world.new_run(budgets=budgets(300), **LONG_LEASE)
    world.clock.advance(200)
    await world.store.pause(OPS, run.run_id, None)
    world.clock.advance(10_000)
    await world.store.resume(OPS, run.run_id, None)
    world.clock.advance(50)
    assert code_of(await world.call(run.token, "t__read", {"q": "a"})) is None


async def test_the_report_adds_up_to_the_ledger_to_the_cent(world: World) -> None:
    run = await world.new_run(**LONG_LEASE)
    paid, name = "t__paid", "paid"  # policy: spend 0.05 estimated, 0.10 at most
    world.tools.actual_spend[name] = 7
    assert code_of(await world.call(run.token, paid, {"text": "reported 0.07"})) is None
    world.tools.actual_spend[name] = 15  # above cost.max: spent anyway, budget_overrun
    assert code_of(await world.call(run.token, paid, {"text": "reported 0.15"})) is None
    del world.tools.actual_spend[name]
    assert code_of(await world.call(run.token, paid, {"text": "estimated 0.05"})) is None
    world.tools.modes[name] = "failed"  # sent and refused by the destination: nothing reported, 0
    assert code_of(await world.call(run.token, paid, {"text": "failed"})) == "upstream_failed"
    world.tools.modes[name] = "crash"
    lost = await world.call(run.token, paid, {"text": "lost"})
    assert code_of(lost) == "outcome_unknown"
    await world.store.report_usage(OPS, run.run_id, kind="model", amount=42, note="tokens", ref=None)
    await world.store.report_usage(OPS, run.run_id, kind="runtime", amount=13, note=None, ref="r1")
    await world.store.report_usage(OPS, run.run_id, kind="runtime", amount=13, note=None, ref="r1")  # a retry
    # Reconciliation finds the lost write happened: settled as the lookup would, at its estimate.
    unknown = [a for a in await world.actions(run.run_id) if a.status.value == "unknown"]
    reconciled = Settlement(SettleKind.SUCCEEDED, receipt={"id": "found"}, estimate_spend=5, max_spend=10)
    await world.store.settle(unknown[0].action_id, reconciled)
    await world.store.pause(OPS, run.run_id, None)
    world.clock.advance(60)
    await world.store.resume(OPS, run.run_id, None)
    world.clock.advance(30)
    await world.store.report_usage(OPS, run.run_id, kind="model", amount=30, note="re-reading", ref=None)
    world.tools.modes[name] = "ok"
    assert code_of(await world.call(run.token, paid, {"text": "after the resume"})) is None
    world.clock.advance(10)

    report = build_report(await world.store.report_inputs(TENANT, run.run_id), world.clock.now())
    spent = (await world.run(run.run_id)).spent["spend"]
    assert report.total == spent == 7 + 15 + 5 + 0 + 42 + 13 + 5 + 30 + 5
    assert report.by_tag == {"tool": 7 + 15 + 5 + 5, "model": 42, "runtime": 13, "recovery": 30 + 5, "children": 0}
    # The lost write happened once: reconciliation found it, no duplicate (docs/decisions/0026-reports.md).
    assert (report.duplicates.effects, report.duplicates.prevented) == (0, 0)
    assert (report.recovery.resumes, report.recovery.spend, report.recovery.seconds) == (1, 35, 40)
    assert [e.cause for e in report.recovery.episodes] == ["resume"]
    shown = report.as_dict()
    assert shown["cost"]["total"] == format_money(spent) == "1.22"
    assert shown["budgets"]["spend"] == {"limit": "100.00", "spent": "1.22"}
