"""What the pilot report reads, on both back ends: the restart marker, takeovers, replays, the
report over runs (tag, status, lineage; bounded) and the drill history (bounded)."""

from __future__ import annotations

import pytest

from gateway.clock import ManualClock
from gateway.domain import build_report
from gateway.domain.lifecycle import RunStatus
from gateway.store.reports import DRILL_HISTORY_KEEP, DrillRun, ReportFilter
from tests.harness import OPS, TENANT, World, code_of

pytestmark = pytest.mark.anyio


def drill(passed: int, at: float) -> DrillRun:
    return DrillRun(
        drill_id="",
        started_at=at,
        seconds=1.5,
        profile="quick",
        modes="both",
        sabotage=None,
        passed=passed,
        failed=0,
        skipped=1,
        ok=True,
        summary={"passed": passed, "failed": 0, "skipped": 1, "failed_cases": []},
        results=[{"case": "crash", "mode": "active", "verdict": "pass"}],
        recorded_by="ops",
    )


async def test_a_restart_that_orphans_a_call_is_a_restart_episode_marked_in_the_ledger(world: World) -> None:
    run = await world.new_run()
    world.tools.modes["write"] = "block"
    in_flight = world.spawn(world.gate.call(run.token, "t__write", {"text": "x"}))
    await world.tools.wait_for_effects(1)
    restarted = world.backend.store(ManualClock(world.clock.now()), process_id="another-gateway")
    await restarted.open()
    try:
        (orphan,) = await restarted.mark_orphans_unknown()
    finally:
        await restarted.close()
    marked = [e for e in await world.events(run.run_id) if e.type == "action_settled"]
    assert [e.data["orphaned"] for e in marked] == ["restart"]
    world.clock.advance(5)
    report = build_report(await world.store.report_inputs(TENANT, run.run_id), world.clock.now())
    (episode,) = report.recovery.episodes
    assert (episode.cause, episode.outcome, episode.detail) == (
        "restart",
        "open",
        {"by": "restart", "actions_orphaned": 1},
    )
    assert report.unusable_reasons == ("not_completed", "unresolved_actions")
    world.tools.release.set()
    assert code_of(await world.settled(in_flight)) is None
    assert orphan


async def test_a_takeover_starts_an_episode_and_a_replay_counts_as_a_duplicate_prevented(world: World) -> None:
    run = await world.new_run()
    meta = {"warrant/operation_id": "op-1"}
    assert code_of(await world.call(run.token, "t__write", {"text": "x"}, meta)) is None
    world.clock.advance(10)
    token = await world.takeover(run)
    world.clock.advance(3)
    again = await world.call(token, "t__write", {"text": "x"}, meta)
    assert code_of(again) is None and again.meta.get("warrant/replayed") is True
    report = build_report(await world.store.report_inputs(TENANT, run.run_id), world.clock.now())
    (episode,) = report.recovery.episodes
    assert (episode.cause, episode.detail["epoch"], episode.outcome) == ("takeover", 2, "open")
    assert (report.duplicates.prevented, report.duplicates.effects) == (1, 0)


async def test_reports_over_runs_filter_by_tag_status_and_lineage_and_stay_in_the_tenant(world: World) -> None:
    team = await world.new_run(tags=["team:a"])
    world.clock.advance(1)
    other = await world.new_run(tags=["team:b"], owner="team:a")  # a candidate by pattern only
    world.clock.advance(1)
    await world.new_run()
    await world.store.cancel(OPS, other.run_id, "done with it", hard=False)
    found = await world.store.reports_inputs(TENANT, ReportFilter(tag="team:a"))
    assert [i.run.run_id for i in found.items] == [team.run_id] and not found.truncated
    everything = await world.store.reports_inputs(TENANT, ReportFilter())
    assert len(everything.items) == 3 and everything.items[-1].run.run_id == team.run_id  # newest first
    cancelled = await world.store.reports_inputs(TENANT, ReportFilter(statuses=(RunStatus.CANCELLED.value,)))
    assert [i.run.run_id for i in cancelled.items] == [other.run_id]
    lineage = await world.store.reports_inputs(TENANT, ReportFilter(lineage_id=team.lineage_id))
    assert [i.run.run_id for i in lineage.items] == [team.run_id]
    assert (await world.store.reports_inputs("another-tenant", ReportFilter())).items == []
    capped = await world.store.reports_inputs(TENANT, ReportFilter(limit=2))
    assert (len(capped.items), capped.truncated) == (2, True)


async def test_the_drill_history_lists_newest_first_in_pages_and_keeps_a_bounded_number(world: World) -> None:
    kept = await world.store.record_drill(TENANT, drill(1, 100.0))
    assert kept.drill_id.startswith("drl")
    await world.store.record_drill(TENANT, drill(2, 200.0))
    await world.store.record_drill("another-tenant", drill(9, 300.0))
    first = await world.store.list_drills(TENANT, limit=1)
    assert [d.passed for d in first.items] == [2] and first.next_cursor is not None
    second = await world.store.list_drills(TENANT, cursor=first.next_cursor, limit=1)
    assert [(d.passed, d.results, d.ok) for d in second.items] == [(1, kept.results, True)]
    assert second.next_cursor is None


async def test_recording_past_the_cap_deletes_the_oldest(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("gateway.store.sql.drills.DRILL_HISTORY_KEEP", 3)
    assert DRILL_HISTORY_KEEP > 3
    for i in range(5):
        await world.store.record_drill(TENANT, drill(i, float(i)))
    page = await world.store.list_drills(TENANT, limit=10)
    assert [d.passed for d in page.items] == [4, 3, 2]


async def test_a_store_of_the_version_before_0026_migrates_keeping_its_runs(world: World) -> None:
    run = await world.new_run()
    await world.store.close()
    world.backend._execute(
        ("DROP INDEX actions_shared_in_flight", ()),  # 0028's: a store before 0026 had none of the later ones
        ("DROP TABLE drill_runs", ()),
        ("ALTER TABLE runs DROP COLUMN replays", ()),
        ("DELETE FROM schema_migrations WHERE version >= 26", ()),
    )
    world.store = world.backend.store(world.clock, process_id="test-gateway")
    await world.store.open()
    inputs = await world.store.report_inputs(TENANT, run.run_id)
    assert (inputs.run.run_id, inputs.replays) == (run.run_id, 0)
    assert (await world.store.list_drills(TENANT)).items == []
