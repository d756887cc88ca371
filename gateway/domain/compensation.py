"""Compensation: the call that undoes a confirmed write, named by the policy (docs/compensation.md,
docs/decisions/0031-compensation.md).

    crm__create_contact:
      effect: write
      compensate: {tool: crm__delete_contact, arguments: {contact_id: receipt.id}}

The mapping is not a template language: each argument of the compensating call is one dotted
reference into the original's recorded `payload` (its arguments) or `receipt` (what the
destination answered), the same dotted field form as an HTTP adapter's `receipt_id`. Nothing else
can be named, so the compensating call's arguments come only from the original and the policy,
never from whoever asks for it.

Pure: the gate (gateway/gate/compensations.py) reads the original and its payload, this module says
what to call and under which operation id, and which run states admit it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, field_validator

from gateway.canonical import canonical_json, sha256_hex
from gateway.domain.lifecycle import RunStatus, status_refusal
from gateway.errors import Code, Refusal

_REFERENCE = re.compile(r"(payload|receipt)((?:\.[A-Za-z0-9_-]+)+)")
# The run states an operator's compensation is admitted in: every live one, and the ends where
# undoing is the point (a cancel, a failure, a deadline). A completed run's agent said it was done;
# undoing one of its effects is a new run's work, not a compensation of this one.
OPERATOR_STATES = frozenset(
    {
        RunStatus.RUNNING,
        RunStatus.WAITING,
        RunStatus.PAUSED,
        RunStatus.CANCELLED,
        RunStatus.FAILED,
        RunStatus.EXPIRED,
    }
)


class Compensation(BaseModel):
    """`compensate:` of one tool's policy: the compensating tool (an exposed name, a write of the
    catalog: the catalog checks at load) and its arguments as references."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    tool: str
    arguments: dict[str, str]

    @field_validator("arguments")
    @classmethod
    def _references(cls, value: dict[str, str]) -> dict[str, str]:
        for name, reference in value.items():
            if not isinstance(reference, str) or _REFERENCE.fullmatch(reference) is None:
                raise ValueError(
                    f"compensate.arguments.{name}: {reference!r} is not a reference: write payload.<field> or "
                    "receipt.<field> (dotted for nesting: receipt.data.id)"
                )
        return value


class MappingFailed(ValueError):
    """A reference names nothing in the original (a field missing, a receipt that was purged)."""


def compensation_arguments(
    compensation: Compensation, payload: Mapping[str, Any] | None, receipt: Mapping[str, Any] | None
) -> dict[str, Any]:
    """The compensating call's arguments, from the original's payload and receipt.

    Raises: MappingFailed naming the argument and its reference (never a value)."""
    sources: dict[str, Any] = {"payload": payload, "receipt": receipt}
    arguments: dict[str, Any] = {}
    for name, reference in compensation.arguments.items():
        match = _REFERENCE.fullmatch(reference)
        assert match is not None, "validated at load"
        value: Any = sources[match.group(1)]
        for part in match.group(2).split(".")[1:]:
            if not isinstance(value, Mapping) or part not in value:
                raise MappingFailed(f"argument {name!r}: {reference} names nothing in the original action")
            value = value[part]
        arguments[name] = value
    return arguments


def compensation_operation_id(lineage_id: str, action_id: str) -> str:
    """One compensation per original: every request to undo `action_id` (the agent's, twice, an
    operator's) is the same operation, so it is done once and the later ones replay it."""
    return "op_" + sha256_hex(canonical_json(["compensate", lineage_id, action_id]))[:40]


def operator_run_refusal(status: RunStatus) -> Refusal | None:
    """Whether a run in `status` admits an operator's compensation (OPERATOR_STATES)."""
    if status in OPERATOR_STATES:
        return None
    refusal = status_refusal(status)
    assert refusal is not None, "every state outside OPERATOR_STATES is terminal"
    return refusal


def not_compensable(original: str, why: str, **details: Any) -> Refusal:
    """`not_compensable` for the action `original` (named in its details), saying why."""
    text = f"not executed: action {original} cannot be compensated: {why}"
    return Refusal(Code.NOT_COMPENSABLE, text, action_id=original, **details)
