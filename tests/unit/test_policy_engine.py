from typing import Any

import pytest

from gateway.adapters import CallRequest, PythonAdapter
from gateway.catalog import Catalog, ToolSpec
from gateway.domain import Terms, parse_contract
from gateway.policy import ToolPolicy, approval_rule, authority_refusal

SEND_SCHEMA = {
    "type": "object",
    "properties": {"to": {"type": "string"}, "subject": {"type": "string"}, "amount": {"type": "integer"}},
    "required": ["to"],
    "additionalProperties": False,
}


def _catalog() -> Catalog:
    email = PythonAdapter("email")
    crm = PythonAdapter("crm")

    async def noop(args: dict[str, Any], call: CallRequest) -> str:
        return "ok"

    email.tool(input_schema=SEND_SCHEMA, description="Send an email.", name="send")(noop)
    email.tool(input_schema={"type": "object"}, description="List drafts.", name="drafts")(noop)
    crm.tool(input_schema={"type": "object"}, description="Search.", name="search_contacts")(noop)
    crm.tool(input_schema={"type": "object"}, description="Create.", name="create_contact")(noop)
    crm.tool(input_schema={"type": "object"}, description="Delete.", name="delete_contact")(noop)
    crm.tool(input_schema={"type": "object"}, description="Merge.", name="merge_contacts")(noop)  # no policy
    policies = {
        "email__send": ToolPolicy.model_validate(
            {
                "effect": "write",
                "cost": {"spend": "0.01"},
                "approval": {"role": "approver", "when": "!args.to.endsWith('@acme.example')"},
            }
        ),
        "email__drafts": ToolPolicy.model_validate({"effect": "read"}),
        "crm__search_contacts": ToolPolicy.model_validate({"effect": "read"}),
        "crm__create_contact": ToolPolicy.model_validate({"effect": "write"}),
        "crm__delete_contact": ToolPolicy.model_validate({"effect": "write"}),
    }
    return Catalog([email, crm], policies)


CATALOG = _catalog()


def _spec(name: str) -> ToolSpec:
    spec = CATALOG.get(name)
    assert spec is not None
    return spec


def _terms(contract: dict[str, Any]) -> Terms:
    return parse_contract(contract).terms()


def _code(name: str, contract: dict[str, Any], arguments: Any) -> str | None:
    refusal = authority_refusal(name, CATALOG.get(name), _terms(contract), arguments)
    return None if refusal is None else refusal.code


def test_an_allowed_call_with_valid_arguments_that_meets_its_constraint_is_admitted(contract: dict[str, Any]) -> None:
    assert _code("email__send", contract, {"to": "bo@acme.example"}) is None
    assert _code("crm__search_contacts", contract, {"q": "bo"}) is None


def test_an_unknown_tool_is_not_found(contract: dict[str, Any]) -> None:
    refusal = authority_refusal("crm__nope", None, _terms(contract), {})
    assert refusal is not None and refusal.code == "tool_not_found"


def test_a_tool_without_a_policy_is_forbidden_even_when_the_contract_allows_it(contract: dict[str, Any]) -> None:
    assert _terms(contract).allows("crm__merge_contacts")
    assert _code("crm__merge_contacts", contract, {}) == "forbidden"


def test_a_tool_without_a_policy_counts_as_a_write() -> None:
    assert _spec("crm__merge_contacts").is_write
    assert not _spec("crm__search_contacts").is_write


def test_a_tool_the_contract_denies_is_forbidden(contract: dict[str, Any]) -> None:
    assert _code("crm__delete_contact", contract, {}) == "forbidden"


def test_a_tool_the_contract_does_not_allow_is_forbidden(contract: dict[str, Any]) -> None:
    assert _code("email__drafts", contract, {}) == "forbidden"


def test_arguments_that_break_the_schema_are_invalid_with_every_problem_listed(contract: dict[str, Any]) -> None:
    refusal = authority_refusal("email__send", _spec("email__send"), _terms(contract), {"subject": 3, "cc": "x"})
    assert refusal is not None and refusal.code == "invalid_arguments"
    assert len(refusal.details["problems"]) == 3  # `to` missing, `subject` not a string, `cc` not allowed


@pytest.mark.parametrize("arguments", [None, [], "to", 3])
def test_arguments_that_are_not_an_object_are_invalid(contract: dict[str, Any], arguments: Any) -> None:
    assert _code("email__send", contract, arguments) == "invalid_arguments"


def test_arguments_that_break_a_constraint_are_refused(contract: dict[str, Any]) -> None:
    refusal = authority_refusal("email__send", _spec("email__send"), _terms(contract), {"to": "bo@evil.example"})
    assert refusal is not None and refusal.code == "constraint_violated"
    assert refusal.details["constraint"] == "args.to.endsWith('@acme.example')"


def test_a_constraint_that_cannot_be_evaluated_refuses(contract: dict[str, Any]) -> None:
    # `subject` is optional in the schema, so the constraint meets a missing field: fail closed.
    contract["authority"]["constraints"]["email__send"] = "args.subject.startsWith('[ok]')"
    assert _code("email__send", contract, {"to": "bo@acme.example"}) == "constraint_violated"


def test_a_constraint_that_yields_no_boolean_refuses(contract: dict[str, Any]) -> None:
    contract["authority"]["constraints"]["email__send"] = "args.to"
    assert _code("email__send", contract, {"to": "bo@acme.example"}) == "constraint_violated"


def test_the_policys_approval_rule_applies_when_its_condition_holds(contract: dict[str, Any]) -> None:
    spec, terms = _spec("email__send"), _terms(contract)
    assert approval_rule("email__send", spec, terms, {"to": "bo@acme.example"}) is None
    rule = approval_rule("email__send", spec, terms, {"to": "bo@elsewhere.example"})
    assert rule is not None and rule.role == "approver"


def test_an_approval_condition_that_cannot_be_evaluated_requires_approval(contract: dict[str, Any]) -> None:
    assert approval_rule("email__send", _spec("email__send"), _terms(contract), {"subject": "no recipient"}) is not None


def test_the_contracts_approval_rule_applies_to_a_tool_the_policy_does_not_gate(contract: dict[str, Any]) -> None:
    spec, terms = _spec("crm__create_contact"), _terms(contract)
    rule = approval_rule("crm__create_contact", spec, terms, {"email": "bo@acme.example"})
    assert rule is not None and rule.tool == "crm__create_contact"
    assert approval_rule("crm__search_contacts", _spec("crm__search_contacts"), terms, {}) is None


def test_a_contract_cannot_remove_an_approval_the_policy_requires(contract: dict[str, Any]) -> None:
    contract["approvals"].append({"tool": "email__send", "when": "args.to == 'never'"})
    rule = approval_rule("email__send", _spec("email__send"), _terms(contract), {"to": "bo@elsewhere.example"})
    assert rule is not None and rule.when == "!args.to.endsWith('@acme.example')"  # the policy's rule alone


def test_a_stricter_contract_rule_tightens_the_policys_when_both_apply(contract: dict[str, Any]) -> None:
    contract["approvals"].append({"tool": "email__send", "role": "admin", "valid_for": "10m"})
    rule = approval_rule("email__send", _spec("email__send"), _terms(contract), {"to": "bo@elsewhere.example"})
    assert rule is not None and (rule.role, rule.valid_for) == ("admin", "10m")


def test_a_write_reserves_its_cost_and_one_write() -> None:
    assert _spec("email__send").reservation().as_dict() == {"spend": 1, "tool_calls": 1, "writes": 1}
    assert _spec("crm__search_contacts").reservation().as_dict() == {"spend": 0, "tool_calls": 1, "writes": 0}
