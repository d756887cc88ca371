"""Compensation through the gate: `warrant_compensate` (an agent, fenced by its lease) and
`POST /api/actions/{id}/compensate` (an operator, gateway/gate/operator_calls.py).

Both ask the same question first (`plan`): is the original a confirmed write with a `compensate:`
in the policy, and what exactly does undoing it call. The tool and its arguments come only from
the policy and the original's recorded payload and receipt, never from the caller; the operation
id only from the original's id, so every request to undo one action is one compensating call
(docs/decisions/0031-compensation.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gateway.canonical import canonical_json, sha256_hex
from gateway.domain.compensation import (
    MappingFailed,
    compensation_arguments,
    compensation_operation_id,
    not_compensable,
)
from gateway.domain.lifecycle import ActionStatus
from gateway.errors import Code, Refusal, WarrantError
from gateway.gate.operator_calls import call_for_operator
from gateway.gate.pipeline import CallResult, Gate
from gateway.store.records import ActionRecord, Principal
from gateway.text import escape_nul

REASON_MAX = 512


@dataclass(frozen=True)
class Planned:
    """What compensating one original calls: the tool, its arguments, the operation id."""

    original: ActionRecord
    tool: str
    arguments: dict[str, Any]
    operation_id: str


@dataclass
class Compensations:
    gate: Gate

    async def plan(self, original: ActionRecord) -> Planned | CallResult:
        """The compensating call of `original`, or the refusal (nothing dispatched) that answers now.

        A compensated original is planned all the same: its compensation's operation id answers
        the recorded compensation (a replay), as a second request of one operation always does."""
        action_id = original.action_id
        if original.effect != "write":
            return _refused(not_compensable(action_id, "it is a read"))
        if original.status is ActionStatus.UNKNOWN:
            return _refused(
                Refusal(
                    Code.OUTCOME_UNKNOWN,
                    f"not executed: the outcome of {action_id} is unknown; reconcile it first (POST "
                    "/api/runs/{id}/reconcile, or resolve it): only a confirmed effect is compensated",
                    action_id=action_id,
                )
            )
        if original.status not in (ActionStatus.SUCCEEDED, ActionStatus.COMPENSATED):
            why = f"it is {original.status.value}: only a succeeded write has an effect to undo"
            return _refused(not_compensable(action_id, why, status=original.status.value))
        found = self.gate.catalog.compensation_of(original.tool)
        if found is None:
            why = f"the policy names no compensating call for {original.tool}"
            return _refused(not_compensable(action_id, why, status=original.status.value))
        compensation, _ = found
        payload = await self.gate.store.get_blob(original.payload_sha256)
        try:
            arguments = compensation_arguments(
                compensation, payload if isinstance(payload, dict) else None, original.receipt
            )
        except MappingFailed as exc:
            return _refused(Refusal(Code.COMPENSATION_MAPPING, f"not executed: {exc}", tool=compensation.tool))
        operation_id = compensation_operation_id(original.lineage_id, action_id)
        return Planned(original, compensation.tool, arguments, operation_id)

    async def for_agent(self, token: str | None, action_id: str, reason: str) -> CallResult:
        """`warrant_compensate {action_id, reason}`: an action of the caller's own run, through the
        whole gate (lease, authority of its contract, approval, budget). Raises: Unauthenticated."""
        gate = self.gate
        info = await gate.authenticate(token)
        reason = escape_nul(reason)
        if not reason.strip() or len(reason) > REASON_MAX:
            return _refused(_no_reason())
        try:
            original = await gate.store.get_action(info.run.tenant, action_id)
        except WarrantError:
            original = None
        if original is None or original.run_id != info.run.run_id:
            # Another run's action (or another tenant's) is not this worker's to undo, nor to learn of.
            return _refused(not_compensable(action_id, "no such write in this run"))
        planned = await self.plan(original)
        if isinstance(planned, CallResult):
            return planned
        body = canonical_json(planned.arguments)
        return await gate._call(
            info,
            planned.tool,
            planned.arguments,
            sha256_hex(body),
            planned.operation_id,
            size=len(body),
            compensates=action_id,
            reason=reason,
        )

    async def for_operator(self, principal: Principal, action_id: str, reason: str) -> CallResult:
        """`POST /api/actions/{id}/compensate`: an action of the principal's tenant, in its own run,
        whatever that run's state allows (gateway/domain/compensation.py `OPERATOR_STATES`).

        Raises: NotFound for another tenant's or a missing action."""
        reason = escape_nul(reason)
        if not reason.strip() or len(reason) > REASON_MAX:
            return _refused(_no_reason())
        original = await self.gate.store.get_action(principal.tenant, action_id)
        planned = await self.plan(original)
        if isinstance(planned, CallResult):
            return planned
        run = await self.gate.store.get_run(principal.tenant, original.run_id)
        return await call_for_operator(
            self.gate,
            run,
            planned.tool,
            planned.arguments,
            planned.operation_id,
            principal,
            reason,
            compensates=action_id,
        )


def _no_reason() -> Refusal:
    return Refusal(Code.INVALID_ARGUMENTS, f"a compensation needs a reason (1-{REASON_MAX} characters)")


def _refused(refusal: Refusal) -> CallResult:
    return CallResult.refused(refusal)
