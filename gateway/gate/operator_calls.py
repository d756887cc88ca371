"""Calls an operator makes through the gate, not an agent (docs/retries.md): a dead letter's retry.

The call is the dead letter's original one (its tool, its stored payload) under a fresh operation
id, and goes through every step an agent's call does (`Gate._call`): fenced by the run's CURRENT
lease epoch and a live run, budgeted, approval where the policy asks, replayed when it is sent
twice (the operation id is derived from the dead letter, so a second retry of one dead letter
replays the first). It is made with the identity of the run's current lease, never renewing it.
"""

from __future__ import annotations

from typing import Any

from gateway.errors import Code, Refusal
from gateway.gate.pipeline import CallResult, Gate


def retry_operation_id(dead_letter_id: str) -> str:
    """The fresh operation id a dead letter is retried under: one per dead letter."""
    return f"retry:{dead_letter_id}"


async def call_for_operator(gate: Gate, run_id: str, tool: str, arguments: Any, operation_id: str) -> CallResult:
    """`tool(arguments)` through the gate under `operation_id`, as the run's current lease holder."""
    digest = await gate.store.current_lease_hash(run_id)
    info = None if digest is None else await gate.store.authenticate(digest)
    if info is None:
        refusal = Refusal(Code.LEASE_EXPIRED, "not executed: the run has no lease to fence the call by")
        return CallResult.refused(refusal)
    return await gate.call_as(info, tool, arguments, operation_id)
