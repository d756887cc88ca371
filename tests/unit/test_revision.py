"""Revisions and delegation as pure functions (gateway/domain/revision.py): merge patch, pattern
coverage, the narrowing/widening table, and a child's contract narrowed to its parent's."""

from __future__ import annotations

import fnmatch
import itertools
from typing import Any

import pytest

from gateway.domain import Contract, Effect, child_refusal, classify, invalidated_milestones, merge_patch, narrow_child
from gateway.domain.revision import Narrowed, covers
from gateway.errors import InvalidRequest, Refusal
from tests.contracts import DROP
from tests.contracts import contract as base

BASE: dict[str, Any] = base(
    goal="compare vendors",
    budgets={"spend": "20.00", "tool_calls": 500, "writes": 20},
    authority={
        "allow": ["crm__*", "email__send"],
        "deny": ["crm__delete_*"],
        "constraints": {"email__send": "args.to.endsWith('@acme.example')"},
    },
    approvals=[{"tool": "crm__create_contact"}],
    milestones=[{"id": "inventory", "checks": [{"artifact": "inventory"}]}, {"id": "draft"}],
)


def contract(patch: dict[str, Any] | None = None) -> Contract:
    return Contract.model_validate(merge_patch(BASE, {"spec_version": "v2", **(patch or {})}))


def effects(patch: dict[str, Any]) -> dict[str, Effect]:
    return {c.field: c.effect for c in classify(Contract.model_validate(BASE), contract(patch))}


# -- RFC 7396 --------------------------------------------------------------------------------
# The examples of RFC 7396, Appendix A.
RFC_EXAMPLES = [
    ({"a": "b"}, {"a": "c"}, {"a": "c"}),
    ({"a": "b"}, {"b": "c"}, {"a": "b", "b": "c"}),
    ({"a": "b"}, {"a": None}, {}),
    ({"a": "b", "b": "c"}, {"a": None}, {"b": "c"}),
    ({"a": ["b"]}, {"a": "c"}, {"a": "c"}),
    ({"a": "c"}, {"a": ["b"]}, {"a": ["b"]}),
    ({"a": {"b": "c"}}, {"a": {"b": "d", "c": None}}, {"a": {"b": "d"}}),
    ({"a": [{"b": "c"}]}, {"a": [1]}, {"a": [1]}),
    (["a", "b"], ["c", "d"], ["c", "d"]),
    ({"a": "b"}, ["c"], ["c"]),
    ({"a": "foo"}, None, None),
    ({"a": "foo"}, "bar", "bar"),
    ({"e": None}, {"a": 1}, {"e": None, "a": 1}),
    ([1, 2], {"a": "b", "c": None}, {"a": "b"}),
    ({}, {"a": {"bb": {"ccc": None}}}, {"a": {"bb": {}}}),
]


@pytest.mark.parametrize(("target", "patch", "result"), RFC_EXAMPLES)
def test_merge_patch_gives_every_result_of_rfc_7396_appendix_a(target: Any, patch: Any, result: Any) -> None:
    assert merge_patch(target, patch) == result


def test_merge_patch_changes_neither_argument() -> None:
    target, patch = {"a": {"b": 1}}, {"a": {"c": 2}}
    merge_patch(target, patch)["a"]["b"] = 99
    assert target == {"a": {"b": 1}} and patch == {"a": {"c": 2}}


# -- pattern coverage ------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("outer", "inner", "expected"),
    [
        ("crm__*", "crm__create_*", True),
        ("crm__*", "crm__create_contact", True),
        ("crm__*", "crm__*", True),
        ("*", "anything_*", True),
        ("crm__create_*", "crm__*", False),
        ("crm__?", "crm__*", False),  # fnmatch on the text says True: "*" is one character
        ("crm__??", "crm__?*", False),
        ("crm__?", "crm__a", True),
        ("crm__?", "crm__[ab]", True),
        ("crm__[ab]", "crm__a", True),
        ("crm__[ab]", "crm__[a]", True),
        ("crm__[a-c]", "crm__[ab]", True),
        ("crm__[ab]", "crm__[a-c]", False),
        ("crm__[!a]", "crm__b", True),
        ("crm__[!a]", "crm__a", False),
        ("crm__[ab]", "crm__?", False),
        ("a*b*c", "a*b*c", True),
        ("a*c", "ab*bc", True),
        ("a*c", "a*b", False),
        ("email__send", "email__send", True),
        ("email__send", "email__sen", False),
        ("email__sen", "email__send", False),
        ("*_send", "email__send", True),
    ],
)
def test_covers_decides_pattern_containment(outer: str, inner: str, expected: bool) -> None:
    assert covers(outer, inner) is expected


def test_covers_is_sound_on_every_name_of_a_small_alphabet() -> None:
    patterns = ["a*", "*b", "a?", "??", "?*", "*", "ab", "a[ab]", "[!a]*", "a*b", "*a*", "b"]
    names = ["".join(p) for n in range(4) for p in itertools.product("ab", repeat=n)]
    for outer, inner in itertools.product(patterns, repeat=2):
        if covers(outer, inner):
            leaks = [n for n in names if fnmatch.fnmatchcase(n, inner) and not fnmatch.fnmatchcase(n, outer)]
            assert leaks == [], (outer, inner)


# -- classify --------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("patch", "field", "effect"),
    [
        ({"budgets": {"spend": "10.00"}}, "budgets.spend", Effect.NARROWS),
        ({"budgets": {"spend": "30"}}, "budgets.spend", Effect.WIDENS),
        ({"budgets": {"tool_calls": 100}}, "budgets.tool_calls", Effect.NARROWS),
        ({"budgets": {"writes": 21}}, "budgets.writes", Effect.WIDENS),
        ({"budgets": {"active_seconds": 60}}, "budgets.active_seconds", Effect.NARROWS),
        ({"budgets": {"active_seconds": 9000}}, "budgets.active_seconds", Effect.WIDENS),
        ({"budgets": {"count_waiting": True}}, "budgets.count_waiting", Effect.NARROWS),
        ({"expires_in": "24h"}, "expires_in", Effect.NARROWS),
        ({"expires_in": "73h"}, "expires_in", Effect.WIDENS),
        ({"lease_ttl": "1m"}, "lease_ttl", Effect.NEUTRAL),
        ({"progress_expectation": "1h"}, "progress_expectation", Effect.NEUTRAL),
        ({"authority": {"allow": ["crm__search_*"]}}, "authority.allow", Effect.NARROWS),
        ({"authority": {"allow": ["crm__*", "email__send", "files__*"]}}, "authority.allow", Effect.WIDENS),
        ({"authority": {"allow": ["*"]}}, "authority.allow", Effect.WIDENS),
        ({"authority": {"deny": ["crm__delete_*", "crm__merge"]}}, "authority.deny", Effect.NARROWS),
        ({"authority": {"deny": ["crm__delete*"]}}, "authority.deny", Effect.NARROWS),
        ({"authority": {"deny": []}}, "authority.deny", Effect.WIDENS),
        ({"authority": {"constraints": {"crm__x": "true"}}}, "authority.constraints.crm__x", Effect.NARROWS),
        ({"authority": {"constraints": {"email__send": None}}}, "authority.constraints.email__send", Effect.WIDENS),
        (
            {"authority": {"constraints": {"email__send": "args.to == 'a@acme.example'"}}},
            "authority.constraints.email__send",
            Effect.WIDENS,
        ),
        (
            {"approvals": [{"tool": "crm__create_contact"}, {"tool": "email__send"}]},
            "approvals",
            Effect.NARROWS,
        ),
        ({"approvals": [{"tool": "email__send"}, {"tool": "crm__create_contact"}]}, "approvals", Effect.NARROWS),
        ({"approvals": []}, "approvals", Effect.WIDENS),
        ({"approvals": [{"tool": "crm__create_contact", "role": "admin"}]}, "approvals", Effect.NARROWS),
        ({"goal": "something else"}, "goal", Effect.WIDENS),
        ({"owner": "bob@acme.example"}, "owner", Effect.WIDENS),
        ({"workers": ["w1"]}, "workers", Effect.NARROWS),
        ({"forbid_creator_approval": True}, "forbid_creator_approval", Effect.NARROWS),
        (
            {"milestones": [{"id": "inventory", "checks": [{"artifact": "other"}]}]},
            "milestones.inventory",
            Effect.NEUTRAL,
        ),
    ],
)
def test_each_change_is_classified(patch: dict[str, Any], field: str, effect: Effect) -> None:
    assert effects(patch)[field] is effect


# One approval rule before, one after: each field tightened narrows, each loosened widens (the
# combination is gateway/domain/approvals.py; tests/unit/test_approval_combination.py has its table).
RULE = {
    "tool": "crm__create_contact",
    "role": "approver",
    "decide_within": "4h",
    "valid_for": "1h",
    "on_expiry": "resume",
    "when": "args.email.endsWith('@vip.example')",
}


@pytest.mark.parametrize(
    ("change", "effect"),
    [
        ({"role": "admin"}, Effect.NARROWS),
        ({"decide_within": "1h"}, Effect.NARROWS),
        ({"decide_within": "8h"}, Effect.WIDENS),
        ({"valid_for": "10m"}, Effect.NARROWS),
        ({"valid_for": "3650d"}, Effect.WIDENS),
        ({"on_expiry": "pause"}, Effect.NARROWS),
        ({"when": None}, Effect.NARROWS),  # always, where it was sometimes
        ({"when": "args.email.endsWith('@other.example')"}, Effect.WIDENS),
        ({"tool": "crm__*"}, Effect.NARROWS),  # a pattern covering the old one
        ({"tool": "crm__create_*"}, Effect.NARROWS),
        ({"tool": "email__send"}, Effect.WIDENS),  # the old tool no longer gated
    ],
)
def test_a_revised_approval_rule_is_narrowing_when_tightened_and_widening_when_loosened(
    change: dict[str, Any], effect: Effect
) -> None:
    before = Contract.model_validate(merge_patch(BASE, {"approvals": [RULE]}))
    after = contract({"approvals": [{**RULE, **change}]})
    assert [(c.field, c.effect) for c in classify(before, after)] == [("approvals", effect)]


def test_a_revision_loosening_an_approval_rule_widens_even_when_it_adds_another() -> None:
    before = Contract.model_validate(merge_patch(BASE, {"approvals": [RULE]}))
    after = contract({"approvals": [{"tool": "email__send", "role": "admin"}, {**RULE, "valid_for": "3650d"}]})
    assert effects_of(before, after) == {"approvals": Effect.WIDENS}


def test_a_revision_removing_an_approval_rule_widens_and_one_adding_a_stricter_rule_narrows() -> None:
    before = Contract.model_validate(merge_patch(BASE, {"approvals": [RULE]}))
    assert effects_of(before, contract({"approvals": []})) == {"approvals": Effect.WIDENS}
    tighter = {"tool": "crm__*", "role": "admin", "valid_for": "5m"}
    assert effects_of(before, contract({"approvals": [RULE, tighter]})) == {"approvals": Effect.NARROWS}
    # A rule with no `when` on a covering pattern, stricter on every field, may take the old one's place.
    assert effects_of(before, contract({"approvals": [tighter]})) == {"approvals": Effect.NARROWS}


def test_reordering_the_approval_rules_changes_nothing() -> None:
    two = [RULE, {"tool": "email__send", "role": "admin"}]
    before = Contract.model_validate(merge_patch(BASE, {"approvals": two}))
    assert effects_of(before, contract({"approvals": two[::-1]})) == {"approvals": Effect.NEUTRAL}


def effects_of(before: Contract, after: Contract) -> dict[str, Effect]:
    return {c.field: c.effect for c in classify(before, after)}


def test_workers_subset_narrows_and_a_new_name_or_any_worker_widens() -> None:
    named = Contract.model_validate(merge_patch(BASE, {"workers": ["w1", "w2"]}))
    for workers, effect in ((["w1"], Effect.NARROWS), (["w1", "w3"], Effect.WIDENS), ([], Effect.WIDENS)):
        after = Contract.model_validate(merge_patch(BASE, {"spec_version": "v2", "workers": workers}))
        assert [(c.field, c.effect) for c in classify(named, after)] == [("workers", effect)]


def test_count_waiting_turned_off_widens() -> None:
    counting = Contract.model_validate(merge_patch(BASE, {"budgets": {"count_waiting": True}}))
    assert [c.effect for c in classify(counting, contract())] == [Effect.WIDENS]


def test_forbid_creator_approval_turned_off_widens() -> None:
    strict = Contract.model_validate(merge_patch(BASE, {"forbid_creator_approval": True}))
    assert [c.effect for c in classify(strict, contract())] == [Effect.WIDENS]


def test_same_contract_under_a_new_version_has_no_changes_and_equal_amounts_are_equal() -> None:
    assert classify(Contract.model_validate(BASE), contract()) == []
    assert classify(Contract.model_validate(BASE), contract({"budgets": {"spend": "20"}, "expires_in": "3d"})) == []


def test_a_currency_change_is_refused() -> None:
    with pytest.raises(InvalidRequest) as refused:
        classify(Contract.model_validate(BASE), contract({"currency": "EUR"}))
    assert refused.value.code == "invalid_contract"
    assert refused.value.details["problems"][0]["field"] == "currency"


def test_a_narrowing_and_a_widening_change_are_both_named() -> None:
    changes = classify(Contract.model_validate(BASE), contract({"budgets": {"spend": "5.00", "writes": 40}}))
    assert {c.field: c.widens for c in changes} == {"budgets.spend": False, "budgets.writes": True}
    assert changes[0].as_dict() == {"field": "budgets.spend", "effect": "narrows", "was": "20.00", "now": "5.00"}


def test_invalidated_milestones_are_the_removed_ones_and_those_with_changed_checks() -> None:
    patch = {
        "milestones": [
            {"id": "inventory", "checks": [{"artifact": "other"}]},
            {"id": "review", "checks": []},
        ]
    }
    changes = classify(Contract.model_validate(BASE), contract(patch))
    assert invalidated_milestones(changes) == ["draft", "inventory"]
    required_only = contract(
        {"milestones": [{"id": "inventory", "checks": [{"artifact": "inventory"}]}, {"id": "draft", "required": False}]}
    )
    assert invalidated_milestones(classify(Contract.model_validate(BASE), required_only)) == []


# -- narrow_child ----------------------------------------------------------------------------
REMAINING = {"spend": 1000, "tool_calls": 100, "writes": 10, "active_seconds": 3600}
CHILD: dict[str, Any] = base(
    goal="draft the email",
    spec_version="c1",
    expires_in="1h",
    lease_ttl=DROP,
    budgets={"spend": "10.00", "tool_calls": 100, "writes": 10, "active_seconds": 3600},
    authority={
        "allow": ["crm__search_*", "email__send"],
        "constraints": {"email__send": "size(args.to) < 40", "crm__search_x": "true"},
    },
    approvals=[{"tool": "email__send"}],
)


def child(patch: dict[str, Any] | None = None) -> Contract:
    return Contract.model_validate(merge_patch(CHILD, patch or {}))


def test_a_child_gets_the_parents_deny_constraints_and_approval_rules() -> None:
    got = narrow_child(Contract.model_validate(BASE), child(), REMAINING, 7200)
    assert isinstance(got, Narrowed)
    authority = got.contract.authority
    assert authority.allow == ["crm__search_*", "email__send"]
    assert authority.deny == ["crm__delete_*"]
    assert authority.constraints == {
        "email__send": "(args.to.endsWith('@acme.example')) && (size(args.to) < 40)",
        "crm__search_x": "true",
    }
    assert [r.tool for r in got.contract.approvals] == ["crm__create_contact", "email__send"]
    assert got.carve == {"spend": 1000, "tool_calls": 100, "writes": 10}
    assert got.clamped is False and got.contract.expires_in == "1h"
    terms = got.contract.terms()
    assert terms.constraints["email__send"].evaluate({"to": "x@acme.example"}) is True
    assert terms.constraints["email__send"].evaluate({"to": "x@other.example"}) is False


def test_a_child_allow_pattern_the_parent_does_not_cover_is_a_problem() -> None:
    got = narrow_child(
        Contract.model_validate(BASE), child({"authority": {"allow": ["crm__?", "files__*"]}}), REMAINING, 7200
    )
    assert isinstance(got, list)
    assert [p["field"] for p in got] == ["authority.allow"]
    narrower = narrow_child(
        Contract.model_validate(BASE), child({"authority": {"allow": ["email__*"]}}), REMAINING, 7200
    )
    assert isinstance(narrower, list)
    assert isinstance(child_refusal(narrower), InvalidRequest)


@pytest.mark.parametrize("dim", ["spend", "tool_calls", "writes", "active_seconds"])
def test_a_child_budget_past_the_parents_remaining_names_the_dimension(dim: str) -> None:
    remaining = dict(REMAINING) | {dim: REMAINING[dim] - 1}
    got = narrow_child(Contract.model_validate(BASE), child(), remaining, 7200)
    assert isinstance(got, list)
    assert [p["dimension"] for p in got] == [dim]
    error = child_refusal(got)
    assert isinstance(error, Refusal)
    assert (error.code, error.details["dimension"]) == ("budget_exhausted", dim)


def test_a_child_budget_that_just_fits_is_carved() -> None:
    assert isinstance(narrow_child(Contract.model_validate(BASE), child(), REMAINING, 7200), Narrowed)


def test_a_child_budget_and_an_authority_problem_together_are_invalid_contract() -> None:
    patch = {"authority": {"allow": ["files__*"]}, "budgets": {"writes": 11}}
    got = narrow_child(Contract.model_validate(BASE), child(patch), REMAINING, 7200)
    assert isinstance(got, list) and len(got) == 2
    assert child_refusal(got).code == "invalid_contract"


def test_a_child_deadline_past_the_parents_is_clamped() -> None:
    got = narrow_child(Contract.model_validate(BASE), child({"expires_in": "10h"}), REMAINING, 1800.7)
    assert isinstance(got, Narrowed)
    assert got.clamped is True and got.contract.expires_in == "1800s"


def test_a_child_in_another_currency_is_refused() -> None:
    got = narrow_child(Contract.model_validate(BASE), child({"currency": "EUR"}), REMAINING, 7200)
    assert isinstance(got, list) and got[0]["field"] == "currency"
    assert child_refusal(got).code == "invalid_contract"


def test_a_child_keeps_the_parents_creator_rule() -> None:
    parent = Contract.model_validate(merge_patch(BASE, {"forbid_creator_approval": True}))
    got = narrow_child(parent, child(), REMAINING, 7200)
    assert isinstance(got, Narrowed) and got.contract.forbid_creator_approval is True
