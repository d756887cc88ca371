"""One call an operator makes through the gate, for a run whose worker does not make it: every gate
step of an agent's call but the lease (gateway/gate/pipeline.py has them).

    authority (the policy, the run's contract) → operation id (replay, in progress) → approval
    → admit in one store transaction (the run's state, the budget, the intent) → dispatch → settle

Used by compensation (gateway/gate/compensations.py); the caller decides the tool, the arguments
and the operation id, never the operator's request body. The run's state is checked in the admit
transaction by `operator_run_refusal` (gateway/domain/compensation.py): an operator's call may land
on a cancelled, failed or expired run, which is why only compensations come this way.
"""

from __future__ import annotations

from typing import Any

from gateway.canonical import canonical_json, sha256_hex
from gateway.domain.admission import CallFacts
from gateway.domain.compensation import not_compensable
from gateway.domain.operations import idempotency_key
from gateway.domain.replay import Replay, ReplayCall, replay_refusal, replay_rule
from gateway.errors import Refusal
from gateway.gate.pipeline import CallResult, Gate
from gateway.policy.engine import approval_rule, authority_refusal
from gateway.store.records import Held, Intent, Refused, RunRecord, Stale

OPERATOR_EPOCH = 0  # an operator's call holds no lease: recorded under epoch 0, its worker "operator:<name>"


async def call_for_operator(
    gate: Gate,
    run: RunRecord,
    tool: str,
    arguments: dict[str, Any],
    operation_id: str,
    principal: Any,
    reason: str,
    *,
    compensates: str,
) -> CallResult:
    """The call, admitted in `run`'s name and answered as the gate answers an agent. `principal`:
    who asks (recorded as the action's worker); `reason`: why (in the action_admitted entry)."""
    body = canonical_json(arguments)
    digest, size = sha256_hex(body), len(body)
    refusing = gate.in_flight.refusing
    if refusing is not None:
        return CallResult.refused(refusing)
    terms = gate.terms_of(run)
    spec = await gate._spec(tool)
    refusal = authority_refusal(tool, spec, terms, arguments)
    if refusal is not None or spec is None:
        assert refusal is not None
        return CallResult.refused(refusal)
    held = await gate.store.find_operation(run.lineage_id, operation_id, kept_for=gate.idempotency_for)
    if held is not None:
        return await _held(gate, held, tool, digest)
    if approval_rule(tool, spec, terms, arguments) is not None:
        # Fail closed: an operator's compensation that the policy puts before a person is not yet
        # routed to an approval (docs/decisions/0031-compensation.md, "Not done").
        why = f"its compensating call {tool} needs an approval, and an operator's compensation cannot ask for one yet"
        return CallResult.refused(not_compensable(compensates, why))
    worker = f"operator:{principal.name}"
    facts = CallFacts(epoch=OPERATOR_EPOCH, is_write=spec.is_write, reservation=spec.reservation(), operator=True)
    intent = Intent(
        run_id=run.run_id,
        tool=tool,
        effect="write" if spec.is_write else "read",
        payload=arguments,
        payload_sha256=digest,
        payload_bytes=size,
        operation_id=operation_id,
        idempotency_key=idempotency_key(run.tenant, run.lineage_id, operation_id),
        epoch=OPERATOR_EPOCH,
        worker=worker,
        process_id=gate.store.process_id,
        reservation=facts.reservation,
        operation_kept_for=gate.idempotency_for,
        compensates=compensates,
        reason=reason,
    )
    admitted = await gate.store.admit(intent, facts)
    if isinstance(admitted, Stale):  # no spec_version is given: never stale
        raise AssertionError("an operator's intent names no contract version")
    if isinstance(admitted, Refused):
        return CallResult.refused(admitted.refusal, admitted.action_id)
    if isinstance(admitted, Held):
        return await _held(gate, admitted, tool, digest)
    return await gate._dispatch_and_settle(spec, admitted, arguments)


async def _held(gate: Gate, held: Held, tool: str, digest: str) -> CallResult:
    """The operation id is taken: the recorded call answers (a replay), or why it cannot yet."""
    holder = held.action
    decision = replay_rule(holder, ReplayCall(tool, digest), held.expired).decision
    if decision is Replay.REPLAY:
        return await gate._replay(holder)
    refusal: Refusal | None = replay_refusal(decision, holder)
    assert refusal is not None, "the store's holder holds the operation id"
    return CallResult.refused(refusal, holder.action_id)
