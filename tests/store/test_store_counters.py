"""Counters cannot overflow or turn into floats (issue 26), on both back ends: a usage report that
would carry a run's spend past units.MAX_MONEY is refused and changes nothing, a run that ended
takes no usage, the schema itself refuses a money value that is not an integer within its bound,
and one row damaged behind the store's back stops neither the list nor the watchdog for others."""

from __future__ import annotations

import pytest

from gateway.domain import MAX_MONEY, RunStatus, parse_money
from gateway.errors import DamagedRecord, InvalidRequest, Refusal
from gateway.store.records import Damaged
from gateway.store.sqlite.db import _statements
from tests.harness import OPS, TENANT, World

pytestmark = pytest.mark.anyio

HUGE = parse_money("999999999999999.99")  # the largest amount one report may write


async def report(world: World, run_id: str, amount: int, ref: str | None = None) -> object:
    return await world.store.report_usage(OPS, run_id, kind="model", amount=amount, note=None, ref=ref)


def damage(world: World, run_id: str, value: object) -> None:
    """Write `value` into the run's spend_spent behind the store's back, past the schema's guard
    (as a store damaged before migration 0014, or by hand, would hold it)."""
    backend = world.backend
    if backend.name == "sqlite":
        drop = [(f"DROP TRIGGER {t}", ()) for t in ("runs_money_insert", "runs_money_update")]
        again = [(s, ()) for s in _statements(migration_0014()) if s.startswith("CREATE TRIGGER runs_")]
        backend._execute(*drop, ("UPDATE runs SET spend_spent = ? WHERE run_id = ?", (value, run_id)), *again)
    else:
        backend._execute(
            ("ALTER TABLE runs DROP CONSTRAINT runs_money_bounded", ()),
            ("UPDATE runs SET spend_spent = ? WHERE run_id = ?", (value, run_id)),
            (
                "ALTER TABLE runs ADD CONSTRAINT runs_money_bounded CHECK (spend_limit <= 99999999999999999 "
                "AND spend_reserved <= 99999999999999999 AND spend_spent <= 99999999999999999) NOT VALID",
                (),
            ),
        )


def migration_0014() -> str:
    from importlib import resources

    folder = resources.files("gateway.store") / "migrations" / "sqlite"
    return (folder / "0014_money_integers.sql").read_text()


async def test_reports_that_would_carry_spend_past_the_bound_are_refused_and_change_nothing(world: World) -> None:
    run = await world.new_run()
    accepted = 0
    for i in range(93):  # the reports that once pushed spend_spent past 2^63
        try:
            await report(world, run.run_id, HUGE, ref=f"r{i}")
            accepted += 1
        except InvalidRequest as exc:
            assert exc.code == "amount_out_of_range"
            break
    assert accepted == MAX_MONEY // HUGE == 1
    before = await world.run(run.run_id)
    events = len(await world.events(run.run_id))
    with pytest.raises(InvalidRequest) as refused:
        await report(world, run.run_id, 1)
    assert (refused.value.code, refused.value.http_status) == ("amount_out_of_range", 422)
    after = await world.run(run.run_id)
    assert after.spent == before.spent and type(after.spent["spend"]) is int and after.spent["spend"] <= MAX_MONEY
    assert len(await world.events(run.run_id)) == events
    page = await world.store.list_runs(TENANT)
    assert [r.run_id for r in page.items] == [run.run_id]
    assert (await world.store.verify_ledger()).ok


async def test_a_run_that_ended_takes_no_usage(world: World) -> None:
    run = await world.new_run()
    await report(world, run.run_id, 5, ref="before")
    await world.store.cancel(OPS, run.run_id, "done", hard=False)
    events = len(await world.events(run.run_id))
    with pytest.raises(Refusal) as refused:
        await report(world, run.run_id, 5, ref="after")
    assert (refused.value.code, refused.value.http_status) == ("run_cancelled", 409)
    assert (await world.run(run.run_id)).spent["spend"] == 5
    assert len(await world.events(run.run_id)) == events
    # The same report made before the end is answered from the record, as any replay is.
    replay = await report(world, run.run_id, 5, ref="before")
    assert replay.replayed  # type: ignore[attr-defined]


async def test_the_schema_refuses_a_money_value_that_is_not_an_integer_within_its_bound(world: World) -> None:
    run = await world.new_run()
    statement = "UPDATE runs SET spend_spent = ? WHERE run_id = ?"
    for value in ([9.3e18] if world.backend.name == "sqlite" else []) + [MAX_MONEY + 1]:
        with pytest.raises(Exception, match=r"money|runs_money_bounded"):
            world.backend._execute((statement, (value, run.run_id)))
    assert (await world.run(run.run_id)).spent["spend"] == 0


async def test_the_run_list_names_a_damaged_row_it_passes_over(world: World) -> None:
    first = await world.new_run()
    damaged = await world.new_run()
    last = await world.new_run()
    damage(world, damaged.run_id, 9.3e18 if world.backend.name == "sqlite" else MAX_MONEY + 1)
    page = await world.store.list_runs(TENANT)
    assert [r.run_id for r in page.items] == [first.run_id, last.run_id]
    assert page.damaged == [Damaged(damaged.run_id, "record_damaged")]  # told, not silently skipped
    one = await world.store.list_runs(TENANT, limit=2)
    assert ([r.run_id for r in one.items], one.damaged) == ([first.run_id], [Damaged(damaged.run_id)])
    assert one.next_cursor is not None
    two = await world.store.list_runs(TENANT, cursor=one.next_cursor, limit=2)
    assert ([r.run_id for r in two.items], two.damaged) == ([last.run_id], [])  # each page names its own


async def test_one_damaged_run_row_stops_neither_the_list_nor_the_sweep_nor_the_watch(world: World) -> None:
    damaged = await world.new_run(expires_in="1m")
    healthy = await world.new_run(expires_in="1m")
    damage(world, damaged.run_id, 9.3e18 if world.backend.name == "sqlite" else MAX_MONEY + 1)
    with pytest.raises(DamagedRecord) as read:
        await world.run(damaged.run_id)
    assert read.value.code == "record_damaged"
    assert [r.run_id for r in (await world.store.list_runs(TENANT)).items] == [healthy.run_id]
    assert [r.run_id for r in (await world.store.watch_state()).runs] == [healthy.run_id]
    world.clock.advance(60)
    sweep = await world.store.sweep_expiries()
    assert (sweep.runs_expired, sweep.failed) == ([healthy.run_id], [damaged.run_id])
    assert (await world.run(healthy.run_id)).status is RunStatus.EXPIRED
