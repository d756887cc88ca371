"""Retention's decision and settings (docs/retention.md): when an operation id has expired, and
`retention:` in warrant.yaml."""

from __future__ import annotations

from pathlib import Path

import pytest

from gateway.config import load_settings
from gateway.domain.lifecycle import ActionStatus
from gateway.domain.retention import operation_expired
from gateway.errors import ConfigError
from gateway.runtime.settings import RetentionSettings

NOW = 1_800_000_000.0
DAY = 86_400.0


@pytest.mark.parametrize(
    ("status", "age", "kept_for", "expired"),
    [
        (ActionStatus.SUCCEEDED, DAY - 1, DAY, False),
        (ActionStatus.SUCCEEDED, DAY, DAY, True),  # kept for a day: not a second longer
        (ActionStatus.COMPENSATED, 2 * DAY, DAY, True),
        (ActionStatus.SUCCEEDED, 3650 * DAY, None, False),  # null: kept for as long as the record
        (ActionStatus.UNKNOWN, 2 * DAY, DAY, False),  # must be reconciled, never expires
        (ActionStatus.ADMITTED, 2 * DAY, DAY, False),  # in flight
    ],
)
def test_only_a_settled_writes_operation_id_expires_once_its_period_passed(
    status: ActionStatus, age: float, kept_for: float | None, expired: bool
) -> None:
    assert operation_expired(status, NOW - age, kept_for, NOW) is expired


def _retention(tmp_path: Path, text: str) -> RetentionSettings:
    path = tmp_path / "warrant.yaml"
    path.write_text(text)
    return load_settings(path, {"WARRANT_LEDGER_KEY": "k"}).retention


def test_retention_defaults_keep_operation_ids_30_days_and_bodies_forever(tmp_path: Path) -> None:
    retention = _retention(tmp_path, "database: sqlite:///w.db\n")
    assert (retention.idempotency, retention.payload_bodies, retention.purge_every) == (30 * DAY, None, 3600)


def test_retention_takes_durations_and_null(tmp_path: Path) -> None:
    text = "retention: {idempotency: null, payload_bodies: 90d, purge_every: 10m}\n"
    retention = _retention(tmp_path, text)
    assert (retention.idempotency, retention.payload_bodies, retention.purge_every) == (None, 90 * DAY, 600)


@pytest.mark.parametrize(
    "retention", ["{idempotency: 0s}", "{payload_bodies: soon}", "{purge_every: null}", "{keep: 1d}"]
)
def test_an_invalid_retention_stops_start_up(tmp_path: Path, retention: str) -> None:
    with pytest.raises(ConfigError):
        _retention(tmp_path, f"retention: {retention}\n")
