"""The lease table (gateway/domain/lease_rules.py): its rows, and the admission decision, the
watchdog and docs/leases.md held to it."""

from __future__ import annotations

import itertools
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from gateway.domain import (
    LeaseState,
    LeaseWrite,
    RunSnapshot,
    RunStatus,
    RunWatch,
    dead_refusal,
    lease_held,
    lease_refusal,
    lease_rule,
    lease_write,
    reestablishes,
    renewal_due,
    resumed_expiry,
    wait_ended_expiry,
)
from gateway.domain.admission import DEAD_CODES
from gateway.domain.lease_rules import LEASE_RULES, RULES
from gateway.domain.lifecycle import TERMINAL
from gateway.domain.watch import run_alerts

NOW = 1_800_000_000.0
TTL = 300.0
DOCS = Path(__file__).resolve().parents[2] / "docs" / "leases.md"
ZERO = {"spend": 0, "tool_calls": 0, "writes": 0, "active_seconds": 0}


def _run(**changes: Any) -> RunSnapshot:
    run = RunSnapshot(
        run_id="run_1",
        tenant="acme",
        lineage_id="lin_1",
        status=RunStatus.RUNNING,
        spec_version="v1",
        epoch=3,
        lease_expires_at=NOW + TTL,
        deadline=NOW + 86400,
        limits={"spend": 100, "tool_calls": 10, "writes": 5, "active_seconds": 3600},
        reserved=dict(ZERO),
        spent=dict(ZERO),
    )
    return replace(run, **changes)


def _state(run: RunSnapshot, epoch: int = 3, now: float = NOW) -> LeaseState:
    return lease_rule(run, epoch, now).state


def test_each_row_is_reached_by_its_condition_and_the_first_that_holds_decides() -> None:
    past = NOW - 1
    assert _state(_run()) is LeaseState.LIVE
    assert _state(_run(lease_expires_at=past)) is LeaseState.LAPSED
    assert _state(_run(lease_expires_at=past, status=RunStatus.WAITING)) is LeaseState.WAITING
    assert _state(_run(lease_expires_at=past, status=RunStatus.WAITING, wait_open=True)) is LeaseState.WAIT
    assert _state(_run(lease_expires_at=past, status=RunStatus.PAUSED)) is LeaseState.PAUSED
    assert _state(_run(status=RunStatus.WAITING)) is LeaseState.LIVE  # unexpired: live, whatever the status
    assert _state(_run(lease_revoked_at=past)) is LeaseState.REVOKED
    assert _state(_run(), epoch=2) is LeaseState.SUPERSEDED
    assert _state(_run(status=RunStatus.CANCELLED, epoch=4)) is LeaseState.ENDED
    assert _state(_run(deadline=NOW)) is LeaseState.ENDED
    # The fencing rows come before every row about time: nothing about time revives a dead token.
    assert _state(_run(lease_expires_at=past, lease_revoked_at=past), epoch=2) is LeaseState.SUPERSEDED
    assert [rule.state for rule in LEASE_RULES] == list(LeaseState)
    assert [rule.dead for rule in LEASE_RULES] == [True, True, True, False, False, False, False, False]


GRID = list(
    itertools.product(
        list(RunStatus),
        (3, 4),  # the run's epoch; the token's is 3
        (None, NOW - 1),  # lease_revoked_at
        (None, NOW - 1, NOW + 1),  # lease_expires_at
        (NOW, NOW + 100),  # deadline
    )
)


@pytest.mark.parametrize(("status", "epoch", "revoked", "expires", "deadline"), GRID)
@pytest.mark.parametrize("wait_open", [False, True])  # the `wait` row answers a request as `waiting` does
def test_the_admission_decision_follows_the_table(
    status: RunStatus, epoch: int, revoked: float | None, expires: float | None, deadline: float, wait_open: bool
) -> None:
    run = _run(
        status=status, epoch=epoch, lease_revoked_at=revoked, lease_expires_at=expires, deadline=deadline,
        wait_open=wait_open,
    )  # fmt: skip
    rule = lease_rule(run, 3, NOW)
    refusal = lease_refusal(run, 3, NOW)
    if rule.dead:
        assert refusal is not None and rule.refusal is not None
        ended = status if status.terminal else RunStatus.EXPIRED
        assert refusal.code == rule.refusal.replace("<status>", ended.value)
        assert refusal.code in DEAD_CODES and dead_refusal(run, 3, NOW) is not None
    else:
        # The lease holds: only the run's own state may refuse (a pause; a waiting write is step 6's).
        assert refusal is None or refusal.code == "run_paused"
        assert dead_refusal(run, 3, NOW) is None


def test_only_fencing_kills_a_token_and_lease_expired_is_never_a_dead_code() -> None:
    codes = {rule.refusal for rule in LEASE_RULES if rule.dead}
    expanded = {code for code in codes if code and "<status>" not in code} | {f"run_{s.value}" for s in TERMINAL}
    assert expanded <= DEAD_CODES
    assert "lease_expired" not in DEAD_CODES
    assert all(rule.refusal is None for rule in LEASE_RULES if not rule.dead)


@pytest.mark.parametrize("status", [RunStatus.RUNNING, RunStatus.WAITING, RunStatus.PAUSED])
def test_time_alone_never_takes_the_current_holder_to_a_dead_row(status: RunStatus) -> None:
    run = _run(status=status)
    for later in (0.0, TTL - 1, TTL, 10 * TTL, 80_000.0):
        assert lease_rule(run, 3, NOW + later).alive


@pytest.mark.parametrize("status", [RunStatus.RUNNING, RunStatus.WAITING, RunStatus.PAUSED])
@pytest.mark.parametrize("expires", [NOW - 1, NOW + 1])
@pytest.mark.parametrize("wait_open", [False, True])
def test_the_watchdog_alerts_lease_missed_where_the_table_says(
    status: RunStatus, expires: float, wait_open: bool
) -> None:
    run = _run(status=status, lease_expires_at=expires, wait_open=wait_open)
    watch = RunWatch(
        run_id=run.run_id,
        tenant=run.tenant,
        status=status,
        currency="USD",
        epoch=run.epoch,
        lease_worker="worker-1",
        lease_expires_at=expires,
        progress_at=NOW,
        progress_expectation=None,
        limits=run.limits,
        remaining=run.remaining(NOW),
        wait_open=wait_open,
    )
    missed = "lease_missed" in {alert.kind for alert in run_alerts(watch, NOW)}
    assert missed is lease_rule(run, run.epoch, NOW).missed


def test_another_workers_acquire_needs_a_takeover_while_the_lease_holds() -> None:
    assert lease_held(_run(), NOW)
    assert lease_held(_run(lease_expires_at=NOW - 1, status=RunStatus.WAITING), NOW)
    assert lease_held(_run(lease_expires_at=NOW - 1, status=RunStatus.PAUSED), NOW)
    assert not lease_held(_run(lease_expires_at=NOW - 1), NOW)  # lapsed: anyone may acquire (and fence it)
    assert not lease_held(_run(lease_revoked_at=NOW - 1), NOW)
    assert not lease_held(_run(status=RunStatus.COMPLETED), NOW)


def test_a_renewal_is_written_once_a_tenth_of_the_ttl_has_passed_and_a_lapse_always() -> None:
    granted = _run(lease_expires_at=NOW + TTL)  # renewed at NOW
    assert not renewal_due(granted, NOW + TTL / 10 - 0.001, TTL)
    assert renewal_due(granted, NOW + TTL / 10, TTL)
    assert lease_write(granted, 3, NOW + 1, TTL) is LeaseWrite.NOTHING
    assert lease_write(granted, 3, NOW + 1, TTL, throttled=False) is LeaseWrite.RENEW
    assert lease_write(granted, 3, NOW + TTL / 2, TTL) is LeaseWrite.RENEW
    assert lease_write(granted, 3, NOW + TTL, TTL) is LeaseWrite.REESTABLISH
    waiting = replace(granted, status=RunStatus.WAITING)
    assert lease_write(waiting, 3, NOW + 2 * TTL, TTL) is LeaseWrite.RENEW  # it never lapsed
    assert lease_write(granted, 2, NOW + TTL, TTL) is LeaseWrite.NOTHING  # a superseded token writes nothing
    assert lease_write(replace(granted, lease_expires_at=None), 3, NOW, TTL) is LeaseWrite.REESTABLISH


def test_leaving_waiting_or_paused_for_running_starts_the_lease_time_again() -> None:
    for before in (RunStatus.WAITING, RunStatus.PAUSED):
        assert resumed_expiry(before, RunStatus.RUNNING, NOW - 500, TTL, NOW) == NOW + TTL
        assert resumed_expiry(before, RunStatus.RUNNING, NOW + 1000, TTL, NOW) == NOW + 1000  # never earlier
    assert resumed_expiry(RunStatus.RUNNING, RunStatus.WAITING, NOW - 500, TTL, NOW) == NOW - 500
    assert resumed_expiry(RunStatus.WAITING, RunStatus.CANCELLED, NOW - 500, TTL, NOW) == NOW - 500
    assert resumed_expiry(RunStatus.PAUSED, RunStatus.RUNNING, None, TTL, NOW) is None


def test_a_wait_that_ends_on_an_approval_starts_the_lease_time_again() -> None:
    assert wait_ended_expiry(NOW - 500, TTL, NOW) == NOW + TTL
    assert wait_ended_expiry(NOW + 1000, TTL, NOW) == NOW + 1000  # never earlier
    assert wait_ended_expiry(None, TTL, NOW) is None
    # Silent in its wait, the worker is not missed; the approval's row watches it once the wait ends.
    assert not RULES[LeaseState.WAIT].missed and RULES[LeaseState.WAITING].missed


def _documented_rows() -> list[list[str]]:
    text = DOCS.read_text()
    table = text[text.index("| state |") :].split("\n\n", 1)[0]
    rows = [[cell.strip() for cell in line.strip("|").split("|")] for line in table.splitlines()[2:]]
    return rows


def test_docs_leases_md_shows_the_same_table() -> None:
    rows = _documented_rows()
    assert [re.sub(r"`", "", row[0]) for row in rows] == [rule.state.value for rule in LEASE_RULES]
    for row, rule in zip(rows, LEASE_RULES, strict=True):
        state, when, request, _writes, acquire, watchdog, token = row
        assert when == rule.when
        assert ("refused" in request) is rule.dead and (rule.refusal is None or f"`{rule.refusal}`" in request)
        assert token == ("dead" if rule.dead else "alive")
        assert (watchdog == "`lease_missed`") is rule.missed
        assert ("needs `takeover`" == acquire) is rule.held
        assert RULES[LeaseState(state.strip("`"))] is rule


@pytest.mark.parametrize(("status", "epoch", "revoked", "expires", "deadline"), GRID)
def test_the_admits_shortcut_for_a_lapse_agrees_with_the_table(
    status: RunStatus, epoch: int, revoked: float | None, expires: float | None, deadline: float
) -> None:
    run = _run(status=status, epoch=epoch, lease_revoked_at=revoked, lease_expires_at=expires, deadline=deadline)
    assert reestablishes(run, 3, NOW) is (lease_rule(run, 3, NOW).state is LeaseState.LAPSED)
    assert (lease_write(run, 3, NOW, TTL) is LeaseWrite.NOTHING) is (
        not renewal_due(run, NOW, TTL) or lease_rule(run, 3, NOW).write is LeaseWrite.NOTHING
    )
