"""The contract's rules over a run's setbacks (gateway/domain/completion.py): every setting of every
rule is exactly one row of the table; what each does to the run and which alerts it raises; the
contract's validation of `completion:` and `escalation:`, and a revision of them classified."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from gateway.domain import Contract, Effect, classify, merge_patch, parse_contract
from gateway.domain.completion import (
    OUTCOME_ALERTS,
    RULE_OF,
    TABLE,
    Outcome,
    Setback,
    decide,
    serious_refusals,
    task_failure_is_final,
)
from gateway.errors import CALL_CODES, InvalidRequest
from tests.contracts import contract

SETTINGS: dict[Setback, tuple[str, ...]] = {
    Setback.VERIFICATION_FAILED: ("continue", "pause", "fail"),
    Setback.COMPLETION_REFUSED: ("within", "used_up"),
    Setback.TASK_FAILED: ("keep_run", "fail_run"),
}


def test_every_setting_of_every_rule_is_exactly_one_row() -> None:
    expected = {(setback, s) for setback, settings in SETTINGS.items() for s in settings}
    assert set(TABLE) == expected
    assert set(RULE_OF) == set(Setback)


def test_only_a_stated_rule_ends_or_pauses_a_run() -> None:
    ending = {pair for pair, outcome in TABLE.items() if outcome is not Outcome.CONTINUE}
    assert ending == {
        (Setback.VERIFICATION_FAILED, "pause"),
        (Setback.VERIFICATION_FAILED, "fail"),
        (Setback.COMPLETION_REFUSED, "used_up"),
        (Setback.TASK_FAILED, "fail_run"),
    }


def test_a_contract_without_rules_keeps_todays_behaviour() -> None:
    body = contract()
    for setback in Setback:
        verdict = decide(body, setback, refusals=100)
        assert verdict.outcome is Outcome.CONTINUE
        assert "run_failed" not in verdict.alerts


@pytest.mark.parametrize(
    ("setting", "outcome", "alerts"),
    [
        ("continue", Outcome.CONTINUE, ()),
        ("pause", Outcome.PAUSE, ("verification_failed",)),
        ("fail", Outcome.FAIL, ("run_failed",)),
    ],
)
def test_on_verification_failed_decides_and_alerts(setting: str, outcome: Outcome, alerts: tuple[str, ...]) -> None:
    verdict = decide(contract(completion={"on_verification_failed": setting}), Setback.VERIFICATION_FAILED)
    assert (verdict.outcome, verdict.alerts, verdict.rule) == (outcome, alerts, "completion.on_verification_failed")


@pytest.mark.parametrize(
    ("refusals", "outcome"), [(1, Outcome.CONTINUE), (2, Outcome.CONTINUE), (3, Outcome.FAIL), (4, Outcome.FAIL)]
)
def test_the_claim_that_uses_the_last_completion_attempt_fails_the_run(refusals: int, outcome: Outcome) -> None:
    verdict = decide(contract(completion={"max_completion_attempts": 3}), Setback.COMPLETION_REFUSED, refusals=refusals)
    assert verdict.outcome is outcome
    assert verdict.alerts[0] == "completion_refused"  # every refused claim alerts
    assert ("run_failed" in verdict.alerts) is (outcome is Outcome.FAIL)


def test_every_outcome_has_its_alert_or_none() -> None:
    assert set(OUTCOME_ALERTS) == set(Outcome)


@pytest.mark.parametrize(
    ("status", "attempts", "max_attempts", "final"),
    [("failed", 3, 3, True), ("failed", 1, 3, False), ("retrying", 3, 3, False), ("completed", 3, 3, False)],
)
def test_only_a_task_failed_with_no_attempt_left_is_a_task_failure(
    status: str, attempts: int, max_attempts: int, final: bool
) -> None:
    assert task_failure_is_final(status, attempts, max_attempts) is final


# -- the contract's validation -------------------------------------------------------------------
@pytest.mark.parametrize(
    "changes",
    [
        {"completion": {"on_verification_failed": "explode"}},
        {"completion": {"max_completion_attempts": 0}},
        {"completion": {"retries": 3}},
        {"escalation": {"serious_refusals": ["not_a_code"]}},
        {"escalation": {"serious_refusals": ["not_found"]}},  # the operator API's, never a call's
        {"escalation": {"serious_refusals": ["forbidden", "forbidden"]}},
        {"plan": {"fail_run_on_task_failure": "sometimes"}},
    ],
)
def test_bad_rules_are_invalid_contracts_naming_the_field(changes: dict[str, Any]) -> None:
    with pytest.raises(InvalidRequest) as refused:
        parse_contract(contract(**changes))
    assert refused.value.code == "invalid_contract"
    assert {p["field"].split(".")[0] for p in refused.value.details["problems"]} == set(changes)


def test_every_call_code_may_be_named_serious() -> None:
    body = contract(escalation={"serious_refusals": sorted(CALL_CODES)})
    parse_contract(body)
    assert serious_refusals(Contract.model_validate(body).model_dump_json(exclude_none=True)) == CALL_CODES


def test_a_contract_naming_no_serious_codes_has_none() -> None:
    assert serious_refusals(Contract.model_validate(contract()).model_dump_json(exclude_none=True)) == frozenset()


# -- revisions: a contract's rules may be tightened by an operator, loosened only by an admin -----
def _effects(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Effect]:
    a = Contract.model_validate(contract(**old))
    b = Contract.model_validate(merge_patch(contract(**old), {"spec_version": "v2", **new}))
    return {c.field: c.effect for c in classify(a, b)}


ORDER = ("continue", "pause", "fail")


@pytest.mark.parametrize(("was", "now"), list(itertools.permutations(ORDER, 2)))
def test_on_verification_failed_toward_fail_narrows_toward_continue_widens(was: str, now: str) -> None:
    effect = _effects({"completion": {"on_verification_failed": was}}, {"completion": {"on_verification_failed": now}})
    expected = Effect.NARROWS if ORDER.index(now) > ORDER.index(was) else Effect.WIDENS
    assert effect == {"completion.on_verification_failed": expected}


@pytest.mark.parametrize(
    ("was", "now", "effect"),
    [(None, 3, Effect.NARROWS), (3, 2, Effect.NARROWS), (2, 3, Effect.WIDENS), (3, None, Effect.WIDENS)],
)
def test_max_completion_attempts_lowered_narrows_raised_or_lifted_widens(was: Any, now: Any, effect: Effect) -> None:
    old = {"completion": {"max_completion_attempts": was}} if was is not None else {}
    assert _effects(old, {"completion": {"max_completion_attempts": now}}) == {
        "completion.max_completion_attempts": effect
    }


def test_serious_refusals_added_narrow_and_removed_widen() -> None:
    more = _effects(
        {"escalation": {"serious_refusals": ["forbidden"]}},
        {"escalation": {"serious_refusals": ["forbidden", "constraint_violated"]}},
    )
    assert more == {"escalation.serious_refusals": Effect.NARROWS}
    fewer = _effects({"escalation": {"serious_refusals": ["forbidden"]}}, {"escalation": {"serious_refusals": []}})
    assert fewer == {"escalation.serious_refusals": Effect.WIDENS}


def test_fail_run_on_task_failure_turned_on_narrows_and_off_widens() -> None:
    assert _effects({}, {"plan": {"fail_run_on_task_failure": True}}) == {
        "plan.fail_run_on_task_failure": Effect.NARROWS
    }
    on = {"plan": {"fail_run_on_task_failure": True}}
    assert _effects(on, {"plan": {"fail_run_on_task_failure": False}}) == {
        "plan.fail_run_on_task_failure": Effect.WIDENS
    }
