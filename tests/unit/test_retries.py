"""Retry policies in the pure core (gateway/domain/retries.py): what may be retried, how long the
gate waits, what a contract may narrow."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from gateway.domain.retries import (
    Attempt,
    Backoff,
    RetryPolicy,
    dead_lettered,
    delay,
    effective,
    narrowing_problems,
    retryable,
)

POLICY = RetryPolicy(max_attempts=3)


@pytest.mark.parametrize("code", ["invalid_arguments", "upstream_unauthorized", "forbidden", "upstream_failed"])
def test_a_non_transient_code_is_refused_at_load(code: str) -> None:
    with pytest.raises(ValidationError, match="only transient codes"):
        RetryPolicy(max_attempts=2, retry_on=[code])


@pytest.mark.parametrize(
    "body", [{"max_attempts": 0}, {"max_attempts": 11}, {"max_attempts": 2, "backoff": {"max": 61}}]
)
def test_bounds(body: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        RetryPolicy.model_validate(body)


def test_initial_above_max_is_refused() -> None:
    with pytest.raises(ValidationError, match="initial"):
        Backoff(initial=2, max=1)


@pytest.mark.parametrize(
    ("attempt", "expected"),
    [
        (Attempt("failed", "upstream_unavailable", write=False, keyed=False, transient=True), True),
        (Attempt("failed", "upstream_failed", write=False, keyed=False, transient=False), False),
        (Attempt("succeeded", None, write=False, keyed=False, transient=False), False),
        (Attempt("not_sent", "upstream_unavailable", write=True, keyed=False, transient=True), True),
        (Attempt("failed", "rate_limited", write=True, keyed=False, transient=False), True),  # the destination said no
        (Attempt("unknown", "upstream_unavailable", write=True, keyed=False, transient=True), False),  # may have acted
        (Attempt("unknown", "upstream_unavailable", write=True, keyed=True, transient=True), True),  # deduplicated
        (Attempt("unknown", "outcome_unknown", write=True, keyed=True, transient=False), False),  # a timeout
        (Attempt("failed", "upstream_unauthorized", write=True, keyed=True, transient=False), False),
    ],
)
def test_what_is_tried_again(attempt: Attempt, expected: bool) -> None:
    assert retryable(POLICY, attempt) is expected


def test_a_code_left_out_of_retry_on_is_not_retried() -> None:
    only = RetryPolicy(max_attempts=3, retry_on=["rate_limited"])
    assert not retryable(only, Attempt("failed", "upstream_unavailable", write=False, keyed=False, transient=True))


def test_delay_grows_is_capped_and_honours_retry_after_up_to_the_cap() -> None:
    b = Backoff(initial=0.5, max=3, multiplier=2, jitter=False)
    assert [delay(b, n, None, lambda: 0.0) for n in (1, 2, 3, 4)] == [0.5, 1.0, 2.0, 3.0]
    assert delay(b, 1, 1.5, lambda: 0.0) == 1.5
    assert delay(b, 1, 3600, lambda: 0.0) == 3.0
    jittered = Backoff(initial=1, max=10, jitter=True)
    assert delay(jittered, 1, None, lambda: 0.0) == 0.5 and delay(jittered, 1, None, lambda: 1.0) == 1.0


def test_a_contract_may_only_narrow() -> None:
    policy = {"crm__create": POLICY, "crm__read": None}
    assert narrowing_problems({"crm__create": RetryPolicy(max_attempts=2, retry_on=["rate_limited"])}, policy) == []
    more = narrowing_problems({"crm__create": RetryPolicy(max_attempts=5)}, policy)
    assert [p["field"] for p in more] == ["retries.crm__create.max_attempts"]
    assert [p["field"] for p in narrowing_problems({"crm__read": RetryPolicy(max_attempts=1)}, policy)] == [
        "retries.crm__read"
    ]
    assert (
        narrowing_problems({"crm__*": RetryPolicy(max_attempts=2)}, policy) == []
    )  # a pattern skips the never-retried


def test_effective_takes_the_fewest_attempts_and_the_common_codes() -> None:
    narrowed = effective(POLICY, {"crm__*": RetryPolicy(max_attempts=2, retry_on=["rate_limited"])}, "crm__create")
    assert narrowed is not None and narrowed.max_attempts == 2 and narrowed.retry_on == ["rate_limited"]
    assert effective(None, {"crm__*": POLICY}, "crm__create") is None
    assert effective(POLICY, {}, "crm__create") == POLICY


def test_dead_lettered_at_max_attempts() -> None:
    assert not dead_lettered(2, POLICY) and dead_lettered(3, POLICY) and not dead_lettered(9, None)
