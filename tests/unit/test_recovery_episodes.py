"""Recovery episodes by cause, their end and their cost (gateway/domain/recovery.py), and the
report over runs (gateway/domain/report_sums.py): pure."""

from __future__ import annotations

import pytest

from gateway.domain import Fact, RunStatus, ToolCost, build_report
from gateway.domain.recovery import episodes_of
from gateway.domain.report_sums import UNTAGGED, summarize
from tests.unit.test_report import T0, charge, inputs, resumed, snapshot


def lease(at: float, epoch: int) -> Fact:
    return Fact("lease_granted", at, {"epoch": epoch, "worker": f"w{epoch}", "previous_worker": None})


def orphaned(at: float, by: str = "restart") -> Fact:
    return Fact("action_settled", at, {"previous": "admitted", "status": "unknown", "orphaned": by})


def progress(at: float, type_: str = "checkpoint_saved") -> Fact:
    return Fact(type_, at, {})


@pytest.mark.parametrize(
    ("start", "cause"),
    [
        (lease(T0 + 10, 2), "takeover"),
        (orphaned(T0 + 10), "restart"),
        (orphaned(T0 + 10, "restore"), "restart"),
        (resumed(T0 + 10), "resume"),
    ],
)
def test_each_cause_starts_an_episode_that_the_next_progress_ends(start: Fact, cause: str) -> None:
    (episode,) = episodes_of([lease(T0, 1), start, progress(T0 + 40, "task_started")])
    assert (episode.cause, episode.started_at, episode.ended_at, episode.outcome) == (
        cause,
        T0 + 10,
        T0 + 40,
        "recovered",
    )


def test_a_first_lease_a_pause_or_an_ordinary_settle_starts_no_episode() -> None:
    facts = [
        lease(T0, 1),
        Fact("run_paused", T0 + 1, {"previous": "running"}),
        Fact("run_running", T0 + 2, {"previous": "waiting"}),
        Fact("action_settled", T0 + 3, {"previous": "admitted", "status": "unknown"}),  # a timeout: no restart
    ]
    assert episodes_of(facts) == []


def test_causes_arriving_while_an_episode_is_open_join_it() -> None:
    facts = [orphaned(T0), orphaned(T0), lease(T0 + 5, 2), resumed(T0 + 6), progress(T0 + 9)]
    (episode,) = episodes_of(facts)
    assert (episode.cause, episode.triggers, episode.joined) == ("restart", 4, ["takeover", "resume"])
    assert episode.detail == {"by": "restart", "actions_orphaned": 2}


def test_an_episode_is_open_until_progress_and_closes_unrecovered_when_the_run_ends() -> None:
    open_, ended = episodes_of([lease(T0, 2), Fact("run_cancelled", T0 + 20, {}), lease(T0 + 30, 3)])
    assert (open_.outcome, open_.ended_at, open_.seconds(T0 + 99)) == ("run_ended", T0 + 20, 20)
    assert (ended.outcome, ended.ended_at, ended.seconds(T0 + 99)) == ("open", None, 69)


def test_an_episodes_cost_is_the_calls_and_charges_of_its_window_and_its_calls_are_tagged_recovery() -> None:
    facts = [lease(T0 + 10, 2), progress(T0 + 50, "task_completed")]
    costs = [ToolCost(T0, 5), ToolCost(T0 + 10, 7), ToolCost(T0 + 20, 0), ToolCost(T0 + 50, 11)]
    report = build_report(inputs(facts=facts, tool_costs=costs, charges=[charge("model", 3, T0 + 30)]), T0 + 60)
    got = report.as_dict()["recovery"]
    (episode,) = got["episodes"]
    assert (episode["cause"], episode["tool_calls"], episode["spend"], episode["seconds"]) == (
        "takeover",
        2,
        "0.10",
        40,
    )
    assert got["by_cause"] == {"takeover": 1, "restart": 0, "resume": 0}
    assert report.by_tag["recovery"] == 7 and report.by_tag["tool"] == 16 and report.by_tag["model"] == 3
    assert report.total == 5 + 7 + 11 + 3  # the tags still add up to what was spent


def test_after_a_crash_and_reconciliation_the_report_counts_a_restart_not_zero() -> None:
    facts = [
        lease(T0, 1),
        orphaned(T0 + 100),
        Fact("action_settled", T0 + 110, {"previous": "unknown", "status": "succeeded"}),
    ]
    got = build_report(inputs(facts=facts), T0 + 200).as_dict()["recovery"]
    assert got["by_cause"]["restart"] == 1 and got["episodes"][0]["outcome"] == "open"


def test_the_sums_over_runs_add_cost_by_currency_and_contract_tag_and_percentiles_over_all_approvals() -> None:
    done = snapshot(status=RunStatus.COMPLETED, active_since=None)
    approvals = [
        Fact("approval_requested", T0, {"approval_id": "a"}),
        Fact("approval_approved", T0 + 30, {"approval_id": "a"}),
    ]
    one = build_report(inputs(run=done, tags=("team:a", "pilot"), charges=[charge("model", 10)], facts=approvals), T0)
    two = build_report(inputs(tags=("team:a",), tool_costs=[ToolCost(T0, 5)], facts=[lease(T0, 2)]), T0 + 5)
    three = build_report(inputs(charges=[charge("runtime", 1)]), T0)
    got = summarize([one, two, three], truncated=False)
    assert (got["runs"], got["usable"], got["truncated"]) == (3, 1, False)
    assert got["by_status"]["completed"] == 1 and got["by_status"]["running"] == 2
    assert got["cost"]["USD"]["total"] == "0.16"
    assert got["cost"]["USD"]["by_contract_tag"] == {UNTAGGED: "0.01", "pilot": "0.10", "team:a": "0.15"}
    assert got["recovery"]["by_cause"] == {"takeover": 1, "restart": 0, "resume": 0}
    assert (got["review_time"]["approvals"], got["review_time"]["p90_seconds"]) == (1, 30)
