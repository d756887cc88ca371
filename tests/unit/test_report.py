"""The pilot report and the charge tag rule, as pure functions (gateway/domain/report.py)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from gateway.cli.format import report_text
from gateway.domain import Charge, Fact, ReportInputs, RunSnapshot, RunStatus, ToolCost, build_report, charge_tag
from gateway.domain.report import recovery_windows, review_time
from tests.unit.test_admission import NOW, _run

T0 = NOW


def snapshot(**changes: Any) -> RunSnapshot:
    return _run(**{"active_since": T0, **changes})


def charge(tag: str, amount: int, at: float = T0) -> Charge:
    kind = tag if tag in ("model", "runtime") else "model"
    return Charge(f"chg_{tag}_{amount}", "run_1", kind, tag, amount, None, None, "wrk", at)


def inputs(**changes: Any) -> ReportInputs:
    base = ReportInputs(run=snapshot(), charges=[], tool_costs=[], facts=[], last_checkpoint_at=None)
    return replace(base, **changes)


def resumed(at: float) -> Fact:
    return Fact("run_running", at, {"previous": "paused", "by": "op"})


@pytest.mark.parametrize(
    ("resumed_at", "checkpoint_at", "tag"),
    [
        (None, None, "model"),  # never resumed
        (None, T0, "model"),
        (T0, None, "recovery"),  # resumed, no checkpoint yet
        (T0, T0 - 1, "recovery"),  # the checkpoint is older than the resume
        (T0, T0, "model"),  # a checkpoint at the resume ends the recovery
        (T0, T0 + 5, "model"),
    ],
)
def test_a_charge_is_recovery_between_a_resume_and_the_next_checkpoint(
    resumed_at: float | None, checkpoint_at: float | None, tag: str
) -> None:
    assert charge_tag("model", resumed_at, checkpoint_at) == tag


def test_an_empty_run_reports_zeros_and_no_review_times() -> None:
    got = build_report(inputs(), T0 + 10).as_dict()
    assert got["cost"] == {
        "total": "0.00",
        "by_tag": {"model": "0.00", "tool": "0.00", "runtime": "0.00", "recovery": "0.00", "children": "0.00"},
    }
    assert got["review_time"] == {
        "approvals": 0,
        "total_seconds": 0.0,
        "median_seconds": None,
        "max_seconds": None,
        "p50_seconds": None,
        "p90_seconds": None,
    }
    assert got["recovery"] == {
        "resumes": 0,
        "recovery_spend": "0.00",
        "recovery_seconds": 0.0,
        "by_cause": {"takeover": 0, "restart": 0, "resume": 0},
        "episodes": [],
    }
    assert (got["usable"], got["unusable_reasons"], got["active_seconds"]) == (False, ["not_completed"], 10)
    assert (got["duplicates_prevented"], got["duplicate_effects"], got["duplicates_found"]) == (0, 0, 0)


def test_the_total_is_the_sum_of_every_tag_to_the_cent() -> None:
    report = build_report(
        inputs(
            charges=[charge("model", 42), charge("runtime", 13), charge("recovery", 7)],
            tool_costs=[ToolCost(T0, 5), ToolCost(T0 + 1, 15)],
        ),
        T0 + 2,
    )
    assert report.by_tag == {"model": 42, "tool": 20, "runtime": 13, "recovery": 7, "children": 0}
    assert report.total == 82
    assert report.as_dict()["cost"]["total"] == "0.82"


def test_a_tool_call_admitted_inside_a_recovery_window_counts_as_recovery() -> None:
    facts = [resumed(T0 + 100)]
    costs = [ToolCost(T0 + 50, 5), ToolCost(T0 + 100, 7), ToolCost(T0 + 300, 11)]
    report = build_report(inputs(facts=facts, tool_costs=costs, last_checkpoint_at=T0 + 200), T0 + 400)
    assert report.by_tag["tool"] == 5 + 11 and report.by_tag["recovery"] == 7
    assert (report.recovery.resumes, report.recovery.spend, report.recovery.seconds) == (1, 7, 100)


def test_recovery_windows_end_at_a_checkpoint_the_next_resume_or_the_end() -> None:
    windows = recovery_windows([T0 + 10, T0 + 100, T0 + 500], [T0 + 40], T0 + 600)
    assert windows == [(T0 + 10, T0 + 40), (T0 + 100, T0 + 500), (T0 + 500, T0 + 600)]


def test_recovery_of_a_live_run_lasts_until_now_and_of_an_ended_one_until_its_end() -> None:
    live = build_report(inputs(facts=[resumed(T0 + 10)]), T0 + 70)
    assert live.recovery.seconds == 60
    ended = inputs(
        run=snapshot(status=RunStatus.CANCELLED, active_since=None),
        facts=[resumed(T0 + 10), Fact("run_cancelled", T0 + 40, {"previous": "running"})],
    )
    assert build_report(ended, T0 + 1000).recovery.seconds == 30


def test_review_time_counts_decided_approvals_from_request_to_decision() -> None:
    facts = [
        Fact("approval_requested", T0, {"approval_id": "a1"}),
        Fact("approval_requested", T0 + 10, {"approval_id": "a2"}),
        Fact("approval_requested", T0 + 20, {"approval_id": "a3"}),  # expired undecided: not counted
        Fact("approval_requested", T0 + 30, {"approval_id": "a4"}),
        Fact("approval_approved", T0 + 60, {"approval_id": "a1"}),
        Fact("approval_denied", T0 + 130, {"approval_id": "a2"}),
        Fact("approval_expired", T0 + 200, {"approval_id": "a3"}),
        Fact("approval_approved", T0 + 31, {"approval_id": "a4"}),
    ]
    got = review_time(facts)
    assert (got.approvals, got.total_seconds, got.median_seconds, got.max_seconds) == (3, 181, 60, 120)


def test_an_unknown_that_turned_out_to_have_happened_once_is_no_duplicate_effect() -> None:
    facts = [
        Fact("action_settled", T0, {"action_id": "a", "previous": "unknown", "status": "succeeded"}),
        Fact("action_settled", T0, {"action_id": "b", "previous": "unknown", "status": "failed"}),
        Fact("action_settled", T0, {"action_id": "c", "previous": "admitted", "status": "succeeded"}),
    ]
    got = build_report(inputs(facts=facts), T0).as_dict()
    assert (got["duplicate_effects"], got["duplicates_found"], got["duplicates_prevented"]) == (0, 0, 0)


def test_duplicate_effects_are_what_evidence_says_happened_twice_and_prevented_ones_are_replays_and_refusals() -> None:
    twice = {"resolved_by": "op", "evidence": "two rows", "status": "succeeded", "duplicate": True}
    facts = [
        Fact("action_settled", T0, {"action_id": "a", "previous": "unknown", "status": "succeeded", "receipt": twice}),
        Fact("action_settled", T0, {"action_id": "b", "previous": "unknown", "receipt": {"duplicate": "yes"}}),
    ]
    got = build_report(inputs(facts=facts, replays=3, refused_repeats=2), T0).as_dict()
    assert (got["duplicate_effects"], got["duplicates_found"], got["duplicates_prevented"]) == (1, 1, 5)
    assert "duplicate_effects" in got["unusable_reasons"]


def test_only_a_completed_run_is_usable_and_active_time_stops_with_the_run() -> None:
    done = snapshot(status=RunStatus.COMPLETED, active_seconds_spent=120.5, active_since=None)
    got = build_report(inputs(run=done), T0 + 10_000)
    assert got.usable is True and got.unusable_reasons == () and got.active_seconds == 120
    assert build_report(inputs(run=snapshot(status=RunStatus.CANCELLED)), T0).usable is False


@pytest.mark.parametrize(
    ("changes", "reasons"),
    [
        ({"unknown_actions": 1}, ("unresolved_actions",)),
        ({"run": "over"}, ("over_budget",)),
        ({"run": "cancelled", "unknown_actions": 2}, ("not_completed", "unresolved_actions")),
    ],
)
def test_a_completed_run_is_not_usable_with_an_unknown_action_or_an_overrun(
    changes: dict[str, Any], reasons: tuple[str, ...]
) -> None:
    runs = {
        "over": snapshot(
            status=RunStatus.COMPLETED,
            spent={"spend": 2, "tool_calls": 0, "writes": 0, "active_seconds": 0},
            limits={"spend": 1, "tool_calls": 9, "writes": 9, "active_seconds": 99},
        ),
        "cancelled": snapshot(status=RunStatus.CANCELLED),
    }
    run = runs.get(changes.pop("run", ""), snapshot(status=RunStatus.COMPLETED))
    got = build_report(inputs(run=run, **changes), T0)
    assert (got.usable, got.unusable_reasons) == (False, reasons)


def test_money_follows_the_runs_currency() -> None:
    yen = snapshot(currency="JPY", limits={"spend": 5000, "tool_calls": 1, "writes": 1, "active_seconds": 1})
    got = build_report(inputs(run=yen, charges=[charge("model", 420)]), T0).as_dict()
    assert got["cost"]["total"] == "420" and got["budgets"]["spend"]["limit"] == "5000"


def test_runs_report_shows_the_measures_and_the_cost_by_tag_to_a_person() -> None:
    facts = [
        Fact("approval_requested", T0, {"approval_id": "a1"}),
        Fact("approval_approved", T0 + 90, {"approval_id": "a1"}),
        resumed(T0 + 100),
    ]
    report = build_report(inputs(facts=facts, charges=[charge("model", 7)], tool_costs=[ToolCost(T0, 50)]), T0 + 130)
    lines = report_text(report.as_dict()).splitlines()
    assert lines[0] == "run_1  running"
    assert "  review time  1 decided approval: total 1m30s, median 1m30s, p90 1m30s, max 1m30s" in lines
    assert "  recovery     1 episode (1 resume), 1 resume, 0.00 spent, 30s" in lines
    assert "  duplicates   0 prevented, 0 effects found twice" in lines
    assert lines[-6:] == [
        "  model     0.07",
        "  tool      0.50",
        "  runtime   0.00",
        "  recovery  0.00",
        "  children  0.00",
        "  total     0.57",
    ]


def test_what_ended_children_spent_or_still_held_is_the_children_tag() -> None:
    facts = [
        Fact("child_ended", T0, {"spent": {"spend": "0.05"}, "reserved": {"spend": "0.10"}}),
        Fact("child_ended", T0 + 5, {"spent": {"spend": "1.00"}, "reserved": {"spend": "0.00"}}),
    ]
    report = build_report(inputs(facts=facts, tool_costs=[ToolCost(T0, 3)]), T0 + 10)
    assert report.by_tag["children"] == 115 and report.by_tag["tool"] == 3
    assert report.as_dict()["cost"]["total"] == "1.18"


def test_review_time_has_nearest_rank_percentiles() -> None:
    facts = [Fact("approval_requested", T0, {"approval_id": f"a{i}"}) for i in range(10)]
    facts += [Fact("approval_approved", T0 + 10 * (i + 1), {"approval_id": f"a{i}"}) for i in range(10)]
    got = review_time(facts)
    assert (got.p50_seconds, got.p90_seconds, got.max_seconds) == (50, 90, 100)
