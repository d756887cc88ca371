"""The limits' arithmetic and parsing (gateway/domain/limits.py), the `limits:` section, the result cap."""

from __future__ import annotations

from pathlib import Path

import pytest

from gateway.adapters import Outcome, OutcomeKind
from gateway.config import load_settings
from gateway.domain import Rate, parse_rate, parse_size, retry_after_header, step
from gateway.errors import ConfigError
from gateway.gate import LimitSettings
from gateway.gate.limits import cap_result, result_size

ENV = {"WARRANT_LEDGER_KEY": "k"}


@pytest.mark.parametrize(
    ("text", "size"),
    [(1024, 1024), ("1MiB", 2**20), ("512KiB", 512 * 1024), ("8MB", 8_000_000), ("2 GiB", 2 * 2**30), ("10", 10)],
)
def test_sizes_are_read_in_bytes(text: object, size: int) -> None:
    assert parse_size(text) == size


@pytest.mark.parametrize("text", ["", "1 MiBs", "-1", 0, "0KiB", "big", True, 1.5])
def test_a_size_that_is_not_one_is_refused(text: object) -> None:
    with pytest.raises(ValueError):
        parse_size(text)


@pytest.mark.parametrize(
    ("text", "rate"),
    [("6000/m", Rate(6000, 60)), ("100/s", Rate(100, 1)), ("20/10s", Rate(20, 10)), ("10/5m", Rate(10, 300))],
)
def test_rates_are_a_count_per_period(text: str, rate: Rate) -> None:
    assert parse_rate(text) == rate
    assert parse_rate(str(rate)) == rate  # what the config keeps reads back the same


@pytest.mark.parametrize("text", ["6000", "0/m", "5/0s", "x/m", "5/fortnight", 5])
def test_a_rate_that_is_not_one_is_refused(text: object) -> None:
    with pytest.raises(ValueError):
        parse_rate(text)


def test_a_quiet_scope_takes_a_burst_of_its_count_then_one_call_per_interval() -> None:
    rate, now = Rate(3, 60.0), 1000.0
    tat = None
    for _ in range(3):
        decided = step(rate, tat, now)
        assert decided.admitted
        tat = decided.tat
    refused = step(rate, tat, now)
    assert (refused.admitted, refused.tat, refused.retry_after) == (False, tat, 20.0)
    assert not step(rate, tat, now + 19.999).admitted
    assert step(rate, tat, now + 20.0).admitted
    # A whole period later the scope is quiet again: a full burst.
    later = now + 60.0
    for _ in range(3):
        decided = step(rate, tat, later)
        assert decided.admitted
        tat = decided.tat
    assert not step(rate, tat, later).admitted


def test_a_scope_never_gets_more_than_its_burst_plus_the_rate_over_any_stretch_of_time() -> None:
    rate = Rate(5, 10.0)
    tat, admitted = None, []
    for tick in range(400):  # a call every 0.1 s for 40 s
        now = tick * 0.1
        decided = step(rate, tat, now)
        if decided.admitted:
            tat = decided.tat
            admitted.append(now)
    # A token bucket of 5, refilled at one per 2 s: over any 10 s at most 5 + 10 / 2 calls.
    for i, at in enumerate(admitted):
        assert len([t for t in admitted[i:] if t < at + 10.0]) <= 5 + 5
    assert len(admitted) == 5 + 39.9 // 2  # and it keeps admitting at the rate, no slower


@pytest.mark.parametrize(("seconds", "header"), [(0.001, "1"), (1.0, "1"), (1.2, "2"), (20.0, "20")])
def test_retry_after_is_whole_seconds_rounded_up(seconds: float, header: str) -> None:
    assert retry_after_header(seconds) == header


def _config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "warrant.yaml"
    path.write_text(text)
    return path


def test_limits_default_to_size_and_concurrency_caps_with_no_rates(tmp_path: Path) -> None:
    limits = load_settings(_config(tmp_path, "database: sqlite:///w.db\n"), ENV).limits
    assert limits == LimitSettings(max_request_body=2**20, max_tool_result=8 * 2**20, run_concurrency=16)
    assert (limits.rate.per_tenant, limits.rate.per_key) == (None, None)


def test_the_limits_section_is_read(tmp_path: Path) -> None:
    text = (
        "limits:\n  max_request_body: 64KiB\n  max_tool_result: 1MB\n  run_concurrency: null\n"
        "  rate: {per_tenant: 6000/m, per_key: 20/10s}\n"
    )
    limits = load_settings(_config(tmp_path, text), ENV).limits
    assert (limits.max_request_body, limits.max_tool_result, limits.run_concurrency) == (65536, 10**6, None)
    assert (limits.rate.per_tenant, limits.rate.per_key) == (Rate(6000, 60), Rate(20, 10))


@pytest.mark.parametrize(
    "section",
    ["max_request_body: lots", "run_concurrency: 0", "rate: {per_tenant: fast}", "rate: {per_run: 5/s}", "burst: 3"],
)
def test_a_bad_limits_section_stops_start_up(tmp_path: Path, section: str) -> None:
    with pytest.raises(ConfigError):
        load_settings(_config(tmp_path, f"limits:\n  {section}\n"), ENV)


def test_a_result_over_the_cap_is_withheld_and_one_within_it_passes_untouched() -> None:
    outcome = Outcome(OutcomeKind.SUCCEEDED, [{"type": "text", "text": "x" * 100}], {"n": 1}, {"id": "o-1"})
    size = result_size(outcome)
    assert cap_result(outcome, size) is outcome
    capped = cap_result(outcome, size - 1)
    assert (capped.content, capped.structured, capped.withheld) == ([], None, size)
    assert capped.receipt == {"id": "o-1", "withheld": True, "result_bytes": size}
    failed = Outcome(OutcomeKind.FAILED, [{"type": "text", "text": "x" * 100}], code="upstream_failed")
    assert cap_result(failed, 1) is failed
