"""What warrant_wait and a signal may say (gateway/domain/waits.py): every bad input refused with
its stable code and the field it names."""

from __future__ import annotations

from typing import Any

import pytest

from gateway.clock import isoformat
from gateway.domain.waits import MAX_PAYLOAD, MAX_WAKE_ON, OnTimeout, parse_wait, signal_problems
from gateway.errors import Refusal

NOW = 1_800_000_000.0
DEADLINE = NOW + 40 * 86400
GOOD = {"reason": "waiting for quotes", "until": "2s", "on_timeout": "fail", "wake_on": ["quote.received"]}


def test_a_good_wait_is_parsed_with_its_until_from_a_duration_or_a_timestamp() -> None:
    wait = parse_wait(GOOD, NOW, DEADLINE)
    assert (wait.until, wait.on_timeout, wait.wake_on) == (NOW + 2, OnTimeout.FAIL, ("quote.received",))
    at = parse_wait({**GOOD, "until": isoformat(NOW + 3600)}, NOW, DEADLINE)
    assert at.until == pytest.approx(NOW + 3600)
    assert parse_wait({"reason": "r", "until": "1h"}, NOW, DEADLINE).on_timeout is OnTimeout.RESUME


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"reason": ""}, "reason"),
        ({"reason": "x" * 513}, "reason"),
        ({"reason": 3}, "reason"),
        ({"until": "soon"}, "until"),
        ({"until": "2026-13-01T00:00:00Z"}, "until"),
        ({"until": "2027-01-01T00:00:00"}, "until"),  # no time zone
        ({"until": isoformat(NOW - 1)}, "until"),  # passed
        ({"until": "31d"}, "until"),  # past 30 days
        ({"until": None}, "until"),
        ({"on_timeout": "retry"}, "on_timeout"),
        ({"wake_on": "quote"}, "wake_on"),
        ({"wake_on": [f"s{i}" for i in range(MAX_WAKE_ON + 1)]}, "wake_on"),
        ({"wake_on": ["Quote"]}, "wake_on"),
        ({"wake_on": ["x" * 65]}, "wake_on"),
    ],
)
def test_a_bad_wait_is_refused_wait_invalid_naming_its_field(change: dict[str, Any], field: str) -> None:
    with pytest.raises(Refusal) as refused:
        parse_wait({**GOOD, **change}, NOW, DEADLINE)
    assert (refused.value.code, refused.value.details["field"]) == ("wait_invalid", field)


def test_a_wait_past_the_runs_deadline_is_refused() -> None:
    with pytest.raises(Refusal) as refused:
        parse_wait({**GOOD, "until": "2h"}, NOW, NOW + 3600)
    assert (refused.value.code, refused.value.details["field"]) == ("wait_invalid", "until")


def test_a_signals_name_key_and_payload_size_are_bounded() -> None:
    assert signal_problems("quote.received", {"a": 1}, "k-1") == []
    assert [p["field"] for p in signal_problems("Bad Name", None, "k")] == ["name"]
    assert [p["field"] for p in signal_problems("ok", None, "")] == ["idempotency_key"]
    assert [p["field"] for p in signal_problems("ok", "x" * MAX_PAYLOAD, "k")] == ["payload"]
    assert [p["field"] for p in signal_problems("ok", float("nan"), "k")] == ["payload"]
