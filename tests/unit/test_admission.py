from dataclasses import replace
from typing import Any

import pytest

from gateway.domain import CallFacts, Reservation, RunSnapshot, RunStatus, lease_refusal, refusal_for

NOW = 1_800_000_000.0
LIMITS = {"spend": 2000, "tool_calls": 10, "writes": 5, "active_seconds": 3600}
NOTHING = {"spend": 0, "tool_calls": 0, "writes": 0, "active_seconds": 0}


def _run(**changes: Any) -> RunSnapshot:
    run = RunSnapshot(
        run_id="run_1",
        tenant="acme",
        lineage_id="lin_1",
        status=RunStatus.RUNNING,
        spec_version="v1",
        epoch=3,
        lease_expires_at=NOW + 300,
        deadline=NOW + 86400,
        limits=dict(LIMITS),
        reserved=dict(NOTHING),
        spent=dict(NOTHING),
    )
    return replace(run, **changes)


def _read(**changes: Any) -> CallFacts:
    return replace(CallFacts(epoch=3, is_write=False), **changes)


def _write(spend: int = 0, **changes: Any) -> CallFacts:
    call = CallFacts(epoch=3, is_write=True, reservation=Reservation(spend=spend, tool_calls=1, writes=1))
    return replace(call, **changes)


def _code(run: RunSnapshot, call: CallFacts, now: float = NOW) -> str | None:
    refusal = refusal_for(run, call, now)
    return None if refusal is None else refusal.code


def test_a_live_run_with_a_current_lease_and_budget_admits_reads_and_writes() -> None:
    assert _code(_run(), _read()) is None
    assert _code(_run(), _write(spend=100)) is None
    assert lease_refusal(_run(), 3, NOW) is None


def test_an_older_epoch_is_superseded() -> None:
    refusal = lease_refusal(_run(epoch=4), 3, NOW)
    assert refusal is not None and refusal.code == "lease_superseded"
    assert (refusal.details["epoch"], refusal.details["current_epoch"]) == (3, 4)


def test_time_never_refuses_the_current_holder_past_its_lease() -> None:
    assert lease_refusal(_run(), 3, NOW + 299.999) is None
    assert lease_refusal(_run(), 3, NOW + 300) is None  # lapsed: the next request re-establishes it
    assert lease_refusal(_run(epoch=4), 3, NOW + 300) is not None  # ... but never an older epoch's


def test_a_revoked_lease_is_refused_before_its_expiry_and_a_superseded_one_stays_superseded() -> None:
    revoked = _run(lease_revoked_at=NOW - 1)
    assert _code(revoked, _write()) == "lease_revoked"
    assert _code(revoked, _read(), NOW + 300) == "lease_revoked"  # renewing would not help
    assert _code(replace(revoked, epoch=4), _read()) == "lease_superseded"


def test_a_run_whose_lease_time_is_unknown_admits_the_current_epoch_only() -> None:
    assert _code(_run(lease_expires_at=None), _read()) is None
    assert _code(_run(lease_expires_at=None, epoch=4), _read()) == "lease_superseded"


def test_a_run_past_its_deadline_refuses_run_expired_even_before_it_is_marked_expired() -> None:
    run = _run(deadline=NOW, lease_expires_at=NOW + 300)
    assert _code(run, _read()) == "run_expired"
    assert _code(run, _read(), NOW - 0.001) is None


@pytest.mark.parametrize(
    ("status", "code"),
    [
        (RunStatus.PAUSED, "run_paused"),
        (RunStatus.COMPLETED, "run_completed"),
        (RunStatus.CANCELLED, "run_cancelled"),
        (RunStatus.EXPIRED, "run_expired"),
    ],
)
def test_a_run_that_is_not_live_refuses_every_call_with_its_status(status: RunStatus, code: str) -> None:
    assert _code(_run(status=status), _read()) == code
    assert _code(_run(status=status), _write()) == code


@pytest.mark.parametrize("status", [RunStatus.COMPLETED, RunStatus.CANCELLED, RunStatus.EXPIRED])
def test_a_terminal_status_is_named_before_a_superseded_or_expired_lease(status: RunStatus) -> None:
    run = _run(status=status, epoch=9, lease_expires_at=NOW - 1)
    assert _code(run, _read()) == f"run_{status.value}"


def test_a_passed_deadline_is_named_before_a_superseded_or_expired_lease() -> None:
    run = _run(status=RunStatus.PAUSED, epoch=4, lease_expires_at=NOW - 1, deadline=NOW)
    assert _code(run, _read()) == "run_expired"


def test_a_superseded_lease_is_named_before_an_expired_one_and_before_a_pause() -> None:
    run = _run(status=RunStatus.PAUSED, epoch=4, lease_expires_at=NOW - 1)
    assert _code(run, _read()) == "lease_superseded"


def test_a_paused_run_past_its_lease_time_is_refused_as_paused_not_as_expired() -> None:
    assert _code(_run(status=RunStatus.PAUSED, lease_expires_at=NOW - 1), _read()) == "run_paused"


def test_a_waiting_run_admits_reads_and_the_approved_write_only() -> None:
    waiting = _run(status=RunStatus.WAITING)
    assert _code(waiting, _read()) is None
    assert _code(waiting, _write(approved=True)) is None
    assert _code(waiting, _write()) == "run_waiting"


def test_a_waiting_write_is_refused_before_the_budget_is_looked_at() -> None:
    waiting = _run(status=RunStatus.WAITING, spent={**NOTHING, "writes": 5})
    assert _code(waiting, _write()) == "run_waiting"


@pytest.mark.parametrize("dimension", ["spend", "tool_calls", "writes"])
def test_a_call_that_uses_exactly_the_rest_of_a_budget_is_admitted_and_one_more_is_refused(dimension: str) -> None:
    need = {"spend": 100, "tool_calls": 1, "writes": 1}[dimension]
    spent = {**NOTHING, dimension: LIMITS[dimension] - need - 1}
    reserved = {**NOTHING, dimension: 1}
    assert _code(_run(spent=spent, reserved=reserved), _write(spend=100)) is None

    over = _run(spent={**spent, dimension: spent[dimension] + 1}, reserved=reserved)
    refusal = refusal_for(over, _write(spend=100), NOW)
    assert refusal is not None and refusal.code == "budget_exhausted"
    assert refusal.details["dimension"] == dimension


def test_reserved_budget_counts_against_the_limit() -> None:
    run = _run(reserved={**NOTHING, "tool_calls": 10})
    refusal = refusal_for(run, _read(), NOW)
    assert refusal is not None and refusal.code == "budget_exhausted"
    assert refusal.details["dimension"] == "tool_calls"


def test_an_exhausted_spend_budget_shows_money_as_decimal_strings() -> None:
    run = _run(spent={**NOTHING, "spend": 1500}, reserved={**NOTHING, "spend": 450})
    refusal = refusal_for(run, _write(spend=51), NOW)
    assert refusal is not None and refusal.code == "budget_exhausted"
    assert refusal.details == {
        "dimension": "spend",
        "limit": "20.00",
        "spent": "15.00",
        "reserved": "4.50",
        "needed": "0.51",
        "left": "0.50",
    }


def test_spend_is_shown_in_the_runs_currency() -> None:
    run = _run(currency="JPY", limits={**LIMITS, "spend": 500}, spent={**NOTHING, "spend": 500})
    refusal = refusal_for(run, _write(spend=1), NOW)
    assert refusal is not None and refusal.details["limit"] == "500"


def test_counted_dimensions_are_shown_as_integers() -> None:
    run = _run(spent={**NOTHING, "writes": 5})
    refusal = refusal_for(run, _write(), NOW)
    assert refusal is not None
    assert (refusal.details["dimension"], refusal.details["limit"], refusal.details["needed"]) == ("writes", 5, 1)


def test_a_read_needs_no_write_budget() -> None:
    assert _code(_run(spent={**NOTHING, "writes": 5}), _read()) is None


def test_a_free_call_needs_no_spend_budget() -> None:
    assert _code(_run(spent={**NOTHING, "spend": 2000}), _write(spend=0)) is None


def test_spend_is_checked_before_tool_calls_and_writes() -> None:
    run = _run(spent={"spend": 2000, "tool_calls": 10, "writes": 5, "active_seconds": 0})
    refusal = refusal_for(run, _write(spend=1), NOW)
    assert refusal is not None and refusal.details["dimension"] == "spend"


def test_active_seconds_admit_just_below_the_limit_and_refuse_at_it() -> None:
    run = _run(active_seconds_spent=3000.0, active_since=NOW - 599)
    assert _code(run, _read()) is None
    refusal = refusal_for(run, _read(), NOW + 1)
    assert refusal is not None and refusal.code == "budget_exhausted"
    assert refusal.details["dimension"] == "active_seconds"


def test_active_seconds_do_not_run_while_the_run_is_not_active() -> None:
    run = _run(active_seconds_spent=1000.0, active_since=None)
    assert run.active_seconds(NOW + 10_000) == 1000.0


def test_remaining_budget_subtracts_spent_and_reserved() -> None:
    run = _run(
        spent={**NOTHING, "spend": 500, "tool_calls": 2},
        reserved={**NOTHING, "spend": 100, "writes": 1},
        active_seconds_spent=600.0,
        active_since=NOW - 60,
    )
    assert run.remaining(NOW) == {"spend": 1400, "tool_calls": 8, "writes": 4, "active_seconds": 2940}


def test_a_reservation_holds_one_tool_call_by_default() -> None:
    assert Reservation().as_dict() == {"spend": 0, "tool_calls": 1, "writes": 0}
