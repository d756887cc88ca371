"""`compensate:` (gateway/domain/compensation.py): the references, the mapping, the operation id,
the run states an operator's compensation is admitted in, and the catalog's checks at load."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from gateway.adapters import CallRequest, PythonAdapter
from gateway.catalog import Catalog
from gateway.domain.compensation import (
    OPERATOR_STATES,
    Compensation,
    MappingFailed,
    compensation_arguments,
    compensation_operation_id,
    operator_run_refusal,
)
from gateway.domain.lifecycle import RunStatus
from gateway.errors import ConfigError
from gateway.policy import ToolPolicy

DELETE = Compensation(tool="crm__delete_contact", arguments={"contact_id": "receipt.id", "email": "payload.email"})


def test_the_arguments_come_from_the_originals_receipt_and_payload() -> None:
    payload = {"email": "ana@lead.example", "name": "Ana"}
    receipt = {"id": "ct_1", "status": 201, "digest": "0" * 64}
    assert compensation_arguments(DELETE, payload, receipt) == {"contact_id": "ct_1", "email": "ana@lead.example"}


def test_a_nested_reference_reads_into_objects() -> None:
    nested = Compensation(tool="t", arguments={"id": "receipt.data.id"})
    assert compensation_arguments(nested, {}, {"data": {"id": 7}}) == {"id": 7}


@pytest.mark.parametrize(
    ("payload", "receipt", "missing"),
    [
        ({"email": "a@b.example"}, {"status": 201}, "contact_id"),  # a receipt without the id
        ({"email": "a@b.example"}, None, "contact_id"),  # no receipt at all
        (None, {"id": "ct_1"}, "email"),  # the payload purged
    ],
)
def test_a_reference_that_names_nothing_fails_naming_the_argument_not_a_value(
    payload: Any, receipt: Any, missing: str
) -> None:
    with pytest.raises(MappingFailed) as failed:
        compensation_arguments(DELETE, payload, receipt)
    assert repr(missing) in str(failed.value)
    assert "a@b.example" not in str(failed.value) and "ct_1" not in str(failed.value)


@pytest.mark.parametrize(
    "reference",
    ["receipt", "args.id", "receipt.id + 1", "{receipt.id}", "receipt..id", "run.tenant", "payload.a b", ""],
)
def test_only_payload_and_receipt_references_load(reference: str) -> None:
    with pytest.raises(ValidationError):
        Compensation(tool="t", arguments={"id": reference})


def test_a_literal_is_no_reference() -> None:
    with pytest.raises(ValidationError):
        Compensation.model_validate({"tool": "t", "arguments": {"id": 7}})


def test_one_operation_per_original_whoever_asks() -> None:
    one = compensation_operation_id("lin_1", "act_1")
    assert one == compensation_operation_id("lin_1", "act_1")
    assert one != compensation_operation_id("lin_1", "act_2")
    assert one != compensation_operation_id("lin_2", "act_1")


@pytest.mark.parametrize("status", list(RunStatus))
def test_an_operator_compensates_on_live_and_on_ended_runs_but_a_completed_one(status: RunStatus) -> None:
    refusal = operator_run_refusal(status)
    if status is RunStatus.COMPLETED:
        assert refusal is not None and refusal.code == "run_completed"
    else:
        assert status in OPERATOR_STATES and refusal is None


def _catalog(policies: dict[str, dict[str, Any]]) -> Catalog:
    crm = PythonAdapter("crm")

    async def noop(args: dict[str, Any], call: CallRequest) -> str:
        return "ok"

    for name in ("create_contact", "delete_contact", "search_contacts"):
        crm.tool(input_schema={"type": "object"}, description=name, name=name)(noop)
    return Catalog([crm], {name: ToolPolicy.model_validate(p) for name, p in policies.items()})


COMPENSATE = {"tool": "crm__delete_contact", "arguments": {"contact_id": "receipt.id"}}


def test_a_compensation_naming_a_write_of_the_catalog_loads() -> None:
    catalog = _catalog(
        {
            "crm__create_contact": {"effect": "write", "compensate": COMPENSATE},
            "crm__delete_contact": {"effect": "write"},
        }
    )
    catalog.check()
    assert catalog.compensating_tools() == {"crm__create_contact": "crm__delete_contact"}


@pytest.mark.parametrize(
    ("policies", "problem"),
    [
        ({"crm__create_contact": {"effect": "write", "compensate": COMPENSATE}}, "has no policy"),
        (
            {"crm__create_contact": {"effect": "write", "compensate": {**COMPENSATE, "tool": "crm__nothing"}}},
            "is not a tool of the catalog",
        ),
        (
            {
                "crm__create_contact": {"effect": "write", "compensate": COMPENSATE},
                "crm__delete_contact": {"effect": "read"},
            },
            "is not a write",
        ),
        (
            {
                "crm__search_contacts": {"effect": "read", "compensate": COMPENSATE},
                "crm__delete_contact": {"effect": "write"},
            },
            "only a write has a compensating call",
        ),
    ],
)
def test_a_compensation_the_catalog_cannot_run_stops_loading(policies: dict[str, Any], problem: str) -> None:
    with pytest.raises(ConfigError, match=problem):
        _catalog(policies).check()


def test_a_compensation_in_the_policy_of_a_tool_this_gateway_does_not_front_is_inert() -> None:
    # policies/default.yaml names crm__create_contact's undo; a gateway fronting only notes loads it.
    catalog = _catalog({"mail__send": {"effect": "write", "compensate": {**COMPENSATE, "tool": "mail__unsend"}}})
    catalog.check()
    assert catalog.compensating_tools() == {"mail__send": "mail__unsend"}
