"""The watchdog's decisions (gateway/domain/watch.py) as a table, and its configuration."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from gateway.clock import isoformat
from gateway.config import load_settings
from gateway.domain import PendingApproval, RunStatus, RunWatch, UnknownAction, open_alerts
from gateway.domain.watch import BlockedTask, run_alerts
from gateway.errors import ConfigError

NOW = 1_800_000_000.0
LIMITS = {"spend": 1000, "tool_calls": 100, "writes": 10, "active_seconds": 3600}

RUN = RunWatch(
    run_id="run_1",
    tenant="acme",
    status=RunStatus.RUNNING,
    currency="USD",
    epoch=1,
    lease_worker="w",
    lease_expires_at=NOW + 60,
    progress_at=NOW - 60,
    progress_expectation=3600,
    limits=LIMITS,
    remaining=dict(LIMITS),
)


def kinds(run: RunWatch, now: float = NOW) -> list[str]:
    return [alert.kind for alert in run_alerts(run, now)]


def test_a_healthy_run_calls_for_no_alert() -> None:
    assert kinds(RUN) == []


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        (RunStatus.RUNNING, ["lease_missed"]),
        (RunStatus.WAITING, ["lease_missed"]),
        (RunStatus.PAUSED, []),  # a paused run's worker is not expected to renew
    ],
)
def test_a_lease_that_expired_unrenewed_is_a_missed_heartbeat_while_live(
    status: RunStatus, expected: list[str]
) -> None:
    assert kinds(replace(RUN, status=status, lease_expires_at=NOW)) == expected
    assert kinds(replace(RUN, status=status, lease_expires_at=None)) == []  # never leased: no worker yet
    # In a warrant_wait the worker is silent by its own word: never a missed heartbeat.
    assert kinds(replace(RUN, status=status, lease_expires_at=NOW, wait_open=True)) == (
        [] if status is RunStatus.WAITING else expected
    )


def test_open_alerts_are_every_runs_alerts_then_every_unknown_actions() -> None:
    missed = replace(RUN, run_id="run_2", lease_expires_at=NOW)
    unknown = UnknownAction("act_1", "run_3", "acme", "shop__charge", NOW - 5)  # a terminal run's too
    found = open_alerts([RUN, missed], [unknown], NOW)
    assert [(a.run_id, a.kind, a.episode) for a in found] == [
        ("run_2", "lease_missed", f"1@{NOW:.6f}"),
        ("run_3", "unknown_action", "act_1"),
    ]


def test_no_progress_within_the_expectation_is_a_stall_only_while_running() -> None:
    stalled = replace(RUN, progress_at=NOW - 3600)
    assert kinds(stalled) == ["stalled"]
    assert kinds(replace(stalled, status=RunStatus.WAITING)) == []
    assert kinds(replace(stalled, progress_expectation=None)) == []
    assert kinds(replace(RUN, progress_at=NOW - 3599)) == []


def test_episodes_change_with_the_condition() -> None:
    one = run_alerts(replace(RUN, lease_expires_at=NOW - 1), NOW)[0]
    same = run_alerts(replace(RUN, lease_expires_at=NOW - 1), NOW + 100)[0]
    renewed_and_missed_again = run_alerts(replace(RUN, lease_expires_at=NOW + 50), NOW + 100)[0]
    assert one.episode == same.episode != renewed_and_missed_again.episode


@pytest.mark.parametrize(
    ("left", "expected"),
    [(3, []), (2, ["budget_80"]), (0, ["budget_80", "budget_exhausted"])],
)
def test_budget_alerts_per_dimension(left: int, expected: list[str]) -> None:
    alerts = run_alerts(replace(RUN, remaining={**LIMITS, "writes": left}), NOW)
    assert [a.kind for a in alerts] == expected
    assert all(a.data["dimension"] == "writes" and a.episode == "writes:10" for a in alerts)


def test_spend_is_shown_as_money_and_a_dimension_given_nothing_never_alerts() -> None:
    [alert] = run_alerts(replace(RUN, remaining={**LIMITS, "spend": 150}), NOW)
    assert (alert.data["limit"], alert.data["used"]) == ("10.00", "8.50")
    assert kinds(replace(RUN, limits={**LIMITS, "writes": 0}, remaining={**LIMITS, "writes": 0})) == []


@pytest.mark.parametrize(
    ("decide_within", "left", "warned"),
    [
        (4 * 3600, 15 * 60, True),  # 10% would be 24 min: the 15 min cap wins
        (4 * 3600, 15 * 60 + 1, False),
        (120, 12, True),  # 10% of two minutes
        (120, 13, False),
        (120, 0, False),  # expired: the sweep's business, not a warning
    ],
)
def test_an_approval_is_expiring_within_its_share_of_decide_within_or_15_minutes(
    decide_within: float, left: float, warned: bool
) -> None:
    approval = PendingApproval("apr_1", "t__x", NOW + left - decide_within, NOW + left)
    assert kinds(replace(RUN, approvals=(approval,))) == (["approval_expiring"] if warned else [])


def _config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "warrant.yaml"
    path.write_text(text)
    return path


def test_webhooks_and_watchdog_settings_are_read_with_secrets_from_the_environment(tmp_path: Path) -> None:
    path = _config(
        tmp_path,
        "webhooks:\n  - {url: 'https://hooks.example/w', secret_env: HOOK_SECRET, events: [stalled, heartbeat]}\n"
        "watchdog: {tick: 2s, heartbeat: 5m, delivery_attempts: 4}\n",
    )
    settings = load_settings(path, {"WARRANT_LEDGER_KEY": "k", "HOOK_SECRET": "s3cret"})
    [hook] = settings.webhooks
    assert (hook.name, hook.secret, hook.wants("stalled"), hook.wants("lease_missed")) == (
        "https://hooks.example/w",
        b"s3cret",
        True,
        False,
    )
    assert "s3cret" not in repr(hook)
    assert (settings.watchdog.tick, settings.watchdog.heartbeat, settings.watchdog.delivery_attempts) == (2, 300, 4)


def test_a_missing_webhook_secret_stops_start_up_naming_the_variable(tmp_path: Path) -> None:
    path = _config(tmp_path, "webhooks:\n  - {url: 'https://hooks.example/w', secret_env: HOOK_SECRET}\n")
    with pytest.raises(ConfigError, match="HOOK_SECRET"):
        load_settings(path, {"WARRANT_LEDGER_KEY": "k"})


@pytest.mark.parametrize(
    "webhooks",
    [
        "[{url: 'https://a.example', secret_env: S, events: [lease_mised]}]",
        "[{url: 'ftp://a.example', secret_env: S}]",
        "[{url: 'https://a.example', secret_env: S}, {url: 'https://a.example', secret_env: S}]",
    ],
)
def test_an_invalid_webhook_stops_start_up(tmp_path: Path, webhooks: str) -> None:
    with pytest.raises(ConfigError):
        load_settings(_config(tmp_path, f"webhooks: {webhooks}\n"), {"WARRANT_LEDGER_KEY": "k", "S": "s"})


@pytest.mark.parametrize(
    ("status", "after", "alerted"),
    [
        (RunStatus.RUNNING, 599, False),
        (RunStatus.RUNNING, 600, True),
        (RunStatus.WAITING, 600, True),
        (RunStatus.PAUSED, 6000, False),  # its operator is on it
    ],
)
def test_a_task_blocked_past_its_expectation_is_alerted_while_the_run_is_live(
    status: RunStatus, after: float, alerted: bool
) -> None:
    run = replace(RUN, status=status, lease_expires_at=None, blocked=(BlockedTask("t1", NOW - after, 600.0),))
    found = [a for a in run_alerts(run, NOW) if a.kind == "task_blocked_long"]
    assert bool(found) is alerted
    if found:
        assert found[0].episode == f"t1@{NOW - after:.6f}"
        assert found[0].data == {"task_id": "t1", "blocked_since": isoformat(NOW - after), "blocked_expectation": 600.0}
