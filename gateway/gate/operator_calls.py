"""Calls an operator makes through the gate, not an agent: every gate step of an agent's call but
the lease's own check (gateway/gate/pipeline.py has them). Two ways, for two needs:

`call_for_operator` (compensation, gateway/gate/compensations.py): no lease at all.

    authority (the policy, the run's contract) → operation id (replay, in progress) → approval
    → admit in one store transaction (the run's state, the budget, the intent) → dispatch → settle

The caller decides the tool, the arguments and the operation id, never the operator's request body.
The run's state is checked in the admit transaction by `operator_run_refusal`
(gateway/domain/compensation.py): an operator's call may land on a cancelled, failed or expired
run, which is why only compensations come this way.

`call_as_lease_holder` (a dead letter's retry, docs/retries.md): the dead letter's original call
(its tool, its stored payload) under a fresh operation id through `Gate._call` itself, as the run's
CURRENT lease holder (never renewing it): fenced by that epoch and a live run, budgeted, approval
where the policy asks, replayed when sent twice (`retry_operation_id` is one per dead letter). A
run with no live lease refuses it (`lease_expired`): a retry is the run's own work, done while a
worker holds it.
"""

from __future__ import annotations

from typing import Any

from gateway.canonical import canonical_json, sha256_hex
from gateway.domain.admission import CallFacts
from gateway.domain.compensation import not_compensable
from gateway.domain.operations import idempotency_key
from gateway.domain.replay import Replay, ReplayCall, replay_refusal, replay_rule
from gateway.errors import Code, Refusal
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


def retry_operation_id(dead_letter_id: str) -> str:
    """The fresh operation id a dead letter is retried under: one per dead letter."""
    return f"retry:{dead_letter_id}"


async def call_as_lease_holder(gate: Gate, run_id: str, tool: str, arguments: Any, operation_id: str) -> CallResult:
    """`tool(arguments)` through the gate under `operation_id`, as the run's current lease holder."""
    digest = await gate.store.current_lease_hash(run_id)
    info = None if digest is None else await gate.store.authenticate(digest)
    if info is None:
        refusal = Refusal(Code.LEASE_EXPIRED, "not executed: the run has no lease to fence the call by")
        return CallResult.refused(refusal)
    return await gate.call_as(info, tool, arguments, operation_id)
