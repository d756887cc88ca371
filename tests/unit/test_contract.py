from typing import Any

import pytest

from gateway.domain import DIMENSIONS, Contract, parse_contract
from gateway.errors import InvalidRequest


def _problems(data: Any) -> list[dict[str, str]]:
    with pytest.raises(InvalidRequest) as caught:
        parse_contract(data)
    assert caught.value.code == "invalid_contract"
    problems: list[dict[str, str]] = caught.value.details["problems"]
    return problems


def _fields(data: Any) -> set[str]:
    return {p["field"] for p in _problems(data)}


def test_the_design_example_contract_parses(contract: dict[str, Any]) -> None:
    parsed = parse_contract(contract)
    assert isinstance(parsed, Contract)
    assert parsed.spec_version == "v1"
    assert parsed.budgets.spend == "20.00"
    assert parsed.authority.constraints == {"email__send": "args.to.endsWith('@acme.example')"}


def test_a_contract_with_many_problems_lists_every_one_with_its_field(contract: dict[str, Any]) -> None:
    del contract["budgets"]["writes"]
    contract["expires_in"] = "3 days"
    contract["budgets"]["spend"] = 20.5
    contract["authority"]["constraints"]["email__send"] = "args.to.endsWith("
    contract["approvals"][0]["valid_for"] = "soon"
    contract["surprise"] = True

    problems = _problems(contract)

    assert len(problems) >= 4
    assert {p["field"] for p in problems} >= {
        "budgets.writes",
        "expires_in",
        "budgets.spend",
        "authority.constraints",
        "approvals.0.valid_for",
        "surprise",
    }
    assert all(p["problem"] for p in problems)


def test_cross_field_problems_are_listed_with_the_others(contract: dict[str, Any]) -> None:
    contract["currency"] = "JPY"
    contract["budgets"]["spend"] = "20.50"
    contract["milestones"].append({"id": "inventory"})
    contract["goal"] = ""

    assert _fields(contract) == {"budgets", "milestones", "goal"}


def test_each_bad_duration_is_a_problem_of_its_own(contract: dict[str, Any]) -> None:
    contract["expires_in"] = "soon"
    contract["lease_ttl"] = "0s"
    assert len(_problems(contract)) == 2


@pytest.mark.parametrize("dimension", DIMENSIONS)
def test_every_budget_dimension_is_required(contract: dict[str, Any], dimension: str) -> None:
    del contract["budgets"][dimension]
    assert _fields(contract) == {f"budgets.{dimension}"}


def test_a_contract_without_budgets_is_refused(contract: dict[str, Any]) -> None:
    del contract["budgets"]
    assert _fields(contract) == {"budgets"}


@pytest.mark.parametrize("dimension", ["tool_calls", "writes", "active_seconds"])
def test_a_negative_or_huge_count_budget_is_refused(contract: dict[str, Any], dimension: str) -> None:
    contract["budgets"][dimension] = -1
    assert _fields(contract) == {f"budgets.{dimension}"}
    contract["budgets"][dimension] = 10**30
    assert _fields(contract) == {f"budgets.{dimension}"}


@pytest.mark.parametrize(
    ("where", "key"),
    [((), "extra"), (("budgets",), "tokens"), (("authority",), "require"), (("approvals", 0), "auto_approve")],
)
def test_extra_fields_are_refused(contract: dict[str, Any], where: tuple[Any, ...], key: str) -> None:
    target: Any = contract
    for part in where:
        target = target[part]
    target[key] = 1
    assert _fields(contract) == {".".join(str(p) for p in (*where, key))}


@pytest.mark.parametrize("value", [20.0, "-1.00", "20.001", "twenty"])
def test_bad_money_in_the_budget_is_refused(contract: dict[str, Any], value: object) -> None:
    contract["budgets"]["spend"] = value
    assert _fields(contract) == {"budgets.spend"}


def test_a_whole_number_spend_is_accepted_as_money(contract: dict[str, Any]) -> None:
    contract["budgets"]["spend"] = 20
    assert parse_contract(contract).terms().limits["spend"] == 2000


def test_an_empty_allow_list_is_refused(contract: dict[str, Any]) -> None:
    contract["authority"]["allow"] = []
    assert _fields(contract) == {"authority.allow"}


def test_an_approval_rule_with_a_bad_when_expression_is_refused(contract: dict[str, Any]) -> None:
    contract["approvals"][0]["when"] = "args.amount >"
    assert _fields(contract) == {"approvals.0.when"}


def test_an_unknown_on_expiry_is_refused(contract: dict[str, Any]) -> None:
    contract["approvals"][0]["on_expiry"] = "approve"
    assert _fields(contract) == {"approvals.0.on_expiry"}


@pytest.mark.parametrize("data", [None, [], "contract", 42])
def test_a_contract_that_is_not_an_object_is_refused(data: Any) -> None:
    assert _problems(data)


def test_terms_hold_money_in_minor_units_and_durations_in_seconds(contract: dict[str, Any]) -> None:
    terms = parse_contract(contract).terms()
    assert terms.limits == {"spend": 2000, "tool_calls": 500, "writes": 20, "active_seconds": 7200}
    assert terms.expires_in == 72 * 3600
    assert terms.lease_ttl == 300
    assert terms.currency == "USD"
    assert terms.spec_version == "v1"
    assert terms.count_waiting is False
    assert terms.constraints["email__send"].evaluate({"to": "bo@acme.example"}) is True


def test_terms_use_the_contracts_currency(contract: dict[str, Any]) -> None:
    contract["currency"] = "JPY"
    contract["budgets"]["spend"] = "2000"
    assert parse_contract(contract).terms().limits["spend"] == 2000


def test_the_default_lease_ttl_is_five_minutes(contract: dict[str, Any]) -> None:
    del contract["lease_ttl"]
    assert parse_contract(contract).terms().lease_ttl == 300


@pytest.mark.parametrize(
    ("tool", "allowed"),
    [
        ("crm__search_contacts", True),
        ("crm__create_contact", True),
        ("email__send", True),
        ("crm__delete_contact", False),  # allowed by crm__* but denied: deny wins
        ("email__send_bulk", False),
        ("files__read", False),
        ("CRM__search_contacts", False),  # patterns are case-sensitive
    ],
)
def test_authority_globs_allow_and_deny_with_deny_winning(contract: dict[str, Any], tool: str, allowed: bool) -> None:
    assert parse_contract(contract).terms().allows(tool) is allowed


def test_a_deny_pattern_wins_over_an_exact_allow(contract: dict[str, Any]) -> None:
    contract["authority"] = {"allow": ["email__send"], "deny": ["email__*"]}
    assert parse_contract(contract).terms().allows("email__send") is False


def test_every_approval_rule_matching_a_tool_speaks_about_it_not_only_the_first(contract: dict[str, Any]) -> None:
    contract["approvals"].append({"tool": "crm__*", "role": "admin"})
    terms = parse_contract(contract).terms()
    assert [r.role for r in terms.approval_rules("crm__create_contact")] == ["approver", "admin"]
    assert [r.role for r in terms.approval_rules("crm__update_contact")] == ["admin"]
    assert terms.approval_rules("email__send") == ()


def test_an_approval_rule_may_name_only_a_role_that_decides_approvals(contract: dict[str, Any]) -> None:
    contract["approvals"].append({"tool": "crm__*", "role": "operator"})
    with pytest.raises(InvalidRequest) as caught:
        parse_contract(contract)
    assert caught.value.code == "invalid_contract"
    assert [p["field"] for p in caught.value.details["problems"]] == ["approvals.1.role"]


def test_tags_are_kept_and_a_revision_of_them_is_neutral(contract: dict[str, Any]) -> None:
    from gateway.domain.revision import classify

    tagged = parse_contract({**contract, "tags": ["team:sales", "pilot-3", "q4.eu_west"]})
    assert tagged.tags == ["team:sales", "pilot-3", "q4.eu_west"]
    assert parse_contract(contract).tags == []
    retagged = parse_contract({**contract, "tags": ["team:ops"]})
    (change,) = classify(tagged, retagged)
    assert (change.field, change.effect.value) == ("tags", "neutral")


@pytest.mark.parametrize(
    "tags",
    [["Team"], ["a b"], [""], ["x" * 65], ["dup", "dup"], [f"t{i}" for i in range(17)], "pilot", [7]],
)
def test_a_bad_tag_list_is_refused_naming_tags(contract: dict[str, Any], tags: Any) -> None:
    assert {f.split(".")[0] for f in _fields({**contract, "tags": tags})} == {"tags"}
