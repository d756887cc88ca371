"""The approval rule combination as a decision table (gateway/domain/approvals.py, docs/policy.md).

Each row: a field, the policy's value, the contract's value, and what the combined rule holds. Both
orders are checked, so neither side wins by position. A meta-test keeps the table complete: a new
field of ApprovalRule without rows here (and without a combination) fails the suite.
"""

from typing import Any

import pytest

from gateway.domain import ApprovalRule, Requirement, combine, parse_duration, policy_problems, role_satisfies
from gateway.domain.approvals import COMBINE, looser_than
from gateway.policy import approval_rule
from tests.unit.test_policy_engine import _spec, _terms

TABLE: list[tuple[str, Any, Any, Any]] = [
    ("role", "admin", "approver", "admin"),
    ("role", "approver", "admin", "admin"),
    ("role", "approver", "approver", "approver"),
    ("decide_within", "1h", "4h", "1h"),
    ("decide_within", "4h", "30m", "30m"),
    ("valid_for", "1h", "3650d", "1h"),
    ("valid_for", "1h", "10m", "10m"),
    ("valid_for", "3600s", "1h", "3600s"),  # one length: either spelling
    ("on_expiry", "pause", "resume", "pause"),
    ("on_expiry", "resume", "pause", "pause"),
    ("on_expiry", "resume", "resume", "resume"),
    ("when", None, "args.amount > 100", None),  # no condition: always required
    ("when", "args.amount > 100", None, None),
    ("when", "args.amount > 100", "args.amount > 100", "args.amount > 100"),
    ("when", "args.to == 'x'", "args.amount > 100", "(args.amount > 100) || (args.to == 'x')"),
    ("tool", "*", "email__*", "email__send"),  # the combined rule names the tool it was combined for
    # docs/decisions/0029-approvals-reach.md: the run waits if either side says so.
    ("blocks_run", True, False, True),
    ("blocks_run", False, True, True),
    ("blocks_run", False, False, False),
    ("approvers", None, ["ana"], ["ana"]),  # no list: anyone with the role
    ("approvers", ["ana", "bo"], ["bo", "cy"], ["bo"]),  # only the names both list
    ("approvers", ["ana"], ["bo"], []),  # none in common: nobody may decide (it expires)
    ("escalate_after", None, "2h", "2h"),  # none: never escalated
    ("escalate_after", "2h", "30m", "30m"),
]


@pytest.mark.parametrize(("field", "policy", "contract", "combined"), TABLE)
def test_the_stricter_value_of_each_field_wins_whichever_side_holds_it(
    field: str, policy: Any, contract: Any, combined: Any
) -> None:
    a = ApprovalRule.model_validate({"tool": "*", field: policy})
    b = ApprovalRule.model_validate({"tool": "email__send", field: contract})
    for rules in ([a, b], [b, a]):
        rule = combine("email__send", rules)
        assert rule is not None
        assert _same(field, getattr(rule, field), combined)
        others = {n for n in COMBINE if n not in (field, "tool")}
        assert all(getattr(rule, n) == ApprovalRule.model_fields[n].default for n in others)


def _same(field: str, got: Any, want: Any) -> bool:
    if field in ("decide_within", "valid_for", "escalate_after") and got is not None and want is not None:
        return bool(parse_duration(got) == parse_duration(want))
    return bool(got == want)


def test_every_field_of_the_approval_rule_has_a_combination_and_rows_in_the_table() -> None:
    fields = set(ApprovalRule.model_fields)
    assert set(COMBINE) == fields
    assert {row[0] for row in TABLE} == fields


def test_no_rules_combine_to_no_approval_and_one_rule_to_itself() -> None:
    assert combine("email__send", []) is None
    only = ApprovalRule(tool="email__*", role="admin", valid_for="5m")
    assert combine("email__send", [only]) == only.model_copy(update={"tool": "email__send"})


def test_the_issues_scenario_combines_to_the_policys_admin_and_one_hour() -> None:
    policy = ApprovalRule(tool="*", role="admin", valid_for="1h")
    contract = ApprovalRule(tool="email__send", role="approver", valid_for="3650d")
    rule = combine("email__send", [contract, policy])
    assert rule is not None and (rule.role, rule.valid_for) == ("admin", "1h")


@pytest.mark.parametrize(
    ("required", "roles", "may"),
    [
        ("approver", {"approver"}, True),
        ("approver", {"admin"}, True),
        ("admin", {"admin"}, True),
        ("admin", {"approver"}, False),
        ("admin", {"approver", "operator", "auditor"}, False),
        ("approver", {"operator", "worker", "auditor"}, False),
        ("operator", {"operator", "approver", "admin"}, False),  # a role no approval may name: nobody
    ],
)
def test_a_role_decides_an_approval_needing_its_rank_or_lower(required: str, roles: set[str], may: bool) -> None:
    assert role_satisfies(required, roles) is may


def test_the_call_needs_approval_when_either_sides_condition_holds(contract: dict[str, Any]) -> None:
    # The policy gates email__send when the recipient is outside acme; the contract adds big amounts.
    contract["approvals"].append({"tool": "email__send", "role": "admin", "when": "args.amount > 100"})
    spec, terms = _spec("email__send"), _terms(contract)
    assert approval_rule("email__send", spec, terms, {"to": "bo@acme.example", "amount": 1}) is None
    external = approval_rule("email__send", spec, terms, {"to": "bo@other.example", "amount": 1})
    assert external is not None and external.role == "approver"  # only the policy's rule applies
    big = approval_rule("email__send", spec, terms, {"to": "bo@acme.example", "amount": 500})
    assert big is not None and big.role == "admin"
    both = approval_rule("email__send", spec, terms, {"to": "bo@other.example", "amount": 500})
    assert both is not None and both.role == "admin"


def test_every_contract_rule_matching_the_tool_combines_not_only_the_first(contract: dict[str, Any]) -> None:
    contract["approvals"] += [{"tool": "email__*", "valid_for": "2h"}, {"tool": "email__send", "decide_within": "5m"}]
    rule = approval_rule("email__send", _spec("email__send"), _terms(contract), {"to": "bo@other.example"})
    assert rule is not None and (rule.decide_within, rule.valid_for) == ("5m", "1h")


def test_a_looser_field_is_named_and_an_equal_or_stricter_one_is_not() -> None:
    floor = ApprovalRule(tool="*", role="admin", decide_within="1h", valid_for="1h", on_expiry="pause")
    loose = ApprovalRule(tool="x", role="approver", decide_within="30m", valid_for="3650d", on_expiry="resume")
    assert looser_than(loose, floor) == ["role", "valid_for", "on_expiry"]
    assert looser_than(floor, floor) == []


def test_only_the_fields_a_contract_wrote_are_held_against_the_policy() -> None:
    policy = {"email__send": ApprovalRule(tool="*", role="admin", decide_within="10m")}
    silent = ApprovalRule.model_validate({"tool": "email__send", "valid_for": "5m"})  # role, decide_within defaulted
    assert policy_problems([silent], policy) == []
    written = ApprovalRule.model_validate({"tool": "email__*", "role": "approver", "decide_within": "4h"})
    problems = policy_problems([silent, written], policy)
    assert [(p["field"], p["tool"]) for p in problems] == [
        ("approvals.1.role", "email__send"),
        ("approvals.1.decide_within", "email__send"),
    ]
    assert policy_problems([silent, written], policy, accepted=[written]) == []
    assert policy_problems([written], {"crm__create_contact": policy["email__send"]}) == []  # not its tool


@pytest.mark.parametrize(
    ("recorded", "met"),
    [
        (Requirement("admin", 3600, 3600, "pause"), True),
        (Requirement("admin", 3600.0000001, 3600, "pause"), True),  # decide_by less created_at, as floats
        (Requirement("approver", 3600, 3600, "pause"), False),
        (Requirement("admin", 14400, 3600, "pause"), False),
        (Requirement("admin", 3600, 36000, "pause"), False),
        (Requirement("admin", 3600, 3600, "resume"), False),
        (Requirement("admin", 60, 60, "pause"), True),  # stricter everywhere
    ],
)
def test_an_approval_meets_the_rule_in_force_only_when_it_was_asked_under_one_as_strict(
    recorded: Requirement, met: bool
) -> None:
    required = Requirement.of(ApprovalRule(tool="*", role="admin", decide_within="1h", valid_for="1h"))
    assert required.met_by(recorded) is met


def test_a_contract_may_not_unblock_the_run_nor_widen_the_approvers_the_policy_names() -> None:
    # docs/decisions/0029-approvals-reach.md: `blocks_run: false` lets writes go on that the policy
    # holds back, so a contract may say it only where the policy does.
    floor = {"email__send": ApprovalRule(tool="email__send", approvers=["ana"], escalate_after="1h")}
    loose = [ApprovalRule.model_validate({"tool": "email__*", "blocks_run": False, "approvers": ["ana", "bo"]})]
    assert {p["field"] for p in policy_problems(loose, floor)} == {"approvals.0.blocks_run", "approvals.0.approvers"}
    unblocking = {"email__send": ApprovalRule(tool="email__send", blocks_run=False)}
    free = [ApprovalRule.model_validate({"tool": "email__send", "blocks_run": False})]
    assert policy_problems(free, unblocking) == []
    never = [ApprovalRule.model_validate({"tool": "email__send", "escalate_after": None})]
    assert {p["field"] for p in policy_problems(never, floor)} == {"approvals.0.escalate_after"}


def test_an_approval_that_blocks_or_names_fewer_approvers_meets_a_looser_requirement_not_the_reverse() -> None:
    blocking = Requirement.of(ApprovalRule(tool="t"))
    free = Requirement.of(ApprovalRule(tool="t", blocks_run=False))
    assert blocking.met_by(blocking) and free.met_by(blocking) and not blocking.met_by(free)
    ana = Requirement.of(ApprovalRule(tool="t", approvers=["ana"]))
    assert ana.met_by(Requirement.of(ApprovalRule(tool="t", approvers=["ana"])))
    assert blocking.met_by(ana) and not ana.met_by(blocking)
