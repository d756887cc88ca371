"""The gate's decision table: every refusal this layer produces, each from the smallest input that causes it.

In every case the refused call reaches no tool (the tools' record is unchanged), admits no intent,
and, where the gate records refusals, leaves a `rejected` action carrying the code.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from gateway.domain import WAITING_CODES, ActionStatus
from gateway.errors import Unauthenticated
from gateway.gate import META_ACTION_ID, META_CODE, CallResult
from tests.harness import OPS, Run, World, code_of, op

pytestmark = pytest.mark.anyio

Step = Callable[[World, Run], Awaitable[Any]]


async def _nothing(w: World, run: Run) -> None:
    return None


@dataclass(frozen=True)
class Case:
    id: str
    code: str
    refused: Step  # the one call that must be refused
    setup: Step = _nothing  # may cause side effects of its own; the refused call must add none
    contract: dict[str, Any] = field(default_factory=dict)
    recorded: bool = True  # the gate records this refusal as a `rejected` action
    details: dict[str, Any] = field(default_factory=dict)  # expected in structuredContent.error


async def _pause(w: World, run: Run) -> None:
    await w.store.pause(OPS, run.run_id, "an operator looks at it")


async def _cancel(w: World, run: Run) -> None:
    await w.store.cancel(OPS, run.run_id, "no longer needed", hard=False)


async def _take_over(w: World, run: Run) -> None:
    await w.takeover(run)


def _advance(seconds: float) -> Step:
    async def step(w: World, run: Run) -> None:
        w.clock.advance(seconds)

    return step


async def _ask_approval(w: World, run: Run) -> None:
    assert code_of(await w.call(run.token, "t__approve", {"text": "big"})) == "approval_required"


async def _deny(w: World, run: Run) -> None:
    await w.decide(await w.call(run.token, "t__approve", {"text": "big"}), approve=False)


async def _let_pending_lapse(w: World, run: Run) -> None:
    assert code_of(await w.call(run.token, "t__write", {"text": "big"})) == "approval_required"
    w.clock.advance(120)  # the contract rule's decide_within


async def _let_approval_lapse(w: World, run: Run) -> None:
    await w.decide(await w.call(run.token, "t__approve", {"text": "big"}))
    w.clock.advance(60)  # the policy's valid_for


async def _write_under_operation(w: World, run: Run) -> None:
    assert code_of(await w.call(run.token, "t__write", {"text": "a"}, op("order-1"))) is None


async def _write_in_flight(w: World, run: Run) -> None:
    w.tools.modes["write"] = "block"
    w.spawn(w.gate.call(run.token, "t__write", {"text": "a"}))
    await w.tools.wait_for_effects(1)


async def _write_with_unknown_outcome(w: World, run: Run) -> None:
    w.tools.modes["write"] = "crash"
    assert code_of(await w.call(run.token, "t__write", {"text": "a"})) == "outcome_unknown"


def _calling(tool: str, arguments: Any, meta: dict[str, Any] | None = None) -> Step:
    async def step(w: World, run: Run) -> CallResult:
        return await w.call(run.token, tool, arguments, meta)

    return step


CASES = [
    Case("tool_not_found", "tool_not_found", _calling("t__missing", {})),
    Case("invalid_arguments", "invalid_arguments", _calling("t__write", {})),
    Case("invalid_operation_id", "invalid_arguments", _calling("t__write", {"text": "a"}, op("no spaces allowed"))),
    Case("forbidden_without_policy", "forbidden", _calling("t__nopolicy", {})),
    Case("forbidden_by_contract_deny", "forbidden", _calling("t__denied", {})),
    Case("forbidden_outside_allow", "forbidden", _calling("x__read", {})),
    Case("constraint_violated", "constraint_violated", _calling("t__constrained", {"to": "eve@evil.example"})),
    Case("run_paused", "run_paused", _calling("t__read", {}), setup=_pause),
    Case("run_waiting", "run_waiting", _calling("t__write", {"text": "a"}), setup=_ask_approval),
    Case(
        "run_waiting_approval_gated",
        "run_waiting",
        _calling("t__write", {"text": "a"}),
        setup=_ask_approval,
        contract={"approvals": [{"tool": "t__write"}]},  # refused while asking for its own approval
    ),
    Case("run_cancelled", "run_cancelled", _calling("t__read", {}), setup=_cancel),
    Case("run_expired", "run_expired", _calling("t__read", {}), setup=_advance(60), contract={"expires_in": "1m"}),
    Case("lease_superseded", "lease_superseded", _calling("t__read", {}), setup=_take_over),
    Case(
        "budget_exhausted_spend",
        "budget_exhausted",
        _calling("t__paid", {"text": "a"}),
        contract={"budgets": {"spend": "0.09"}},  # the call reserves its cost.max, 0.10
        details={"dimension": "spend"},
    ),
    Case(
        "budget_exhausted_tool_calls",
        "budget_exhausted",
        _calling("t__read", {}),
        contract={"budgets": {"tool_calls": 0}},
        details={"dimension": "tool_calls"},
    ),
    Case(
        "budget_exhausted_writes",
        "budget_exhausted",
        _calling("t__write", {"text": "a"}),
        contract={"budgets": {"writes": 0}},
        details={"dimension": "writes"},
    ),
    Case(
        "budget_exhausted_active_seconds",
        "budget_exhausted",
        _calling("t__read", {}),
        setup=_advance(60),
        contract={"budgets": {"active_seconds": 60}},
        details={"dimension": "active_seconds"},
    ),
    Case("approval_required", "approval_required", _calling("t__approve", {"text": "big"}), recorded=False),
    Case("approval_denied", "approval_denied", _calling("t__approve", {"text": "big"}), setup=_deny),
    Case(
        "approval_expired_undecided",
        "approval_expired",
        _calling("t__write", {"text": "big"}),
        setup=_let_pending_lapse,
        # on_expiry: resume lets the run go on, so the next ask meets the lapsed approval (pause: run_paused).
        # On t__write, which the policy does not gate: on t__approve the policy's pause would win.
        contract={"approvals": [{"tool": "t__write", "decide_within": "2m", "on_expiry": "resume"}]},
        recorded=False,
    ),
    Case(
        "approval_expired_unused",
        "approval_expired",
        _calling("t__approve", {"text": "big"}),
        setup=_let_approval_lapse,
        recorded=False,
    ),
    Case(
        "idempotency_conflict",
        "idempotency_conflict",
        _calling("t__write", {"text": "b"}, op("order-1")),
        setup=_write_under_operation,
    ),
    Case(
        "operation_in_progress",
        "operation_in_progress",
        _calling("t__write", {"text": "a"}),
        setup=_write_in_flight,
    ),
    Case(
        "outcome_unknown",
        "outcome_unknown",
        _calling("t__write", {"text": "a"}),
        setup=_write_with_unknown_outcome,
    ),
]

# Every code a tools/call can meet at this layer (no upstream, no revisions, no completion yet).
GATE_CODES = {
    "unauthenticated",
    "tool_not_found",
    "invalid_arguments",
    "forbidden",
    "constraint_violated",
    "run_paused",
    "run_waiting",
    "run_cancelled",
    "run_expired",
    "lease_superseded",  # (lease_expired: time never refuses the holder, gateway/domain/lease_rules.py)
    "budget_exhausted",
    "approval_required",
    "approval_denied",
    "approval_expired",
    "idempotency_conflict",
    "operation_in_progress",
    "outcome_unknown",
}


def test_the_decision_table_covers_every_code_the_gate_produces_at_this_layer() -> None:
    assert {case.code for case in CASES} | {"unauthenticated"} == GATE_CODES
    dimensions = {case.details.get("dimension") for case in CASES if case.code == "budget_exhausted"}
    assert dimensions == {"spend", "tool_calls", "writes", "active_seconds"}


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
async def test_a_refused_call_reaches_no_tool_and_is_answered_with_its_code(world: World, case: Case) -> None:
    run = await world.new_run(**case.contract)
    await case.setup(world, run)
    calls, effects = list(world.tools.calls), list(world.tools.effects)
    actions_before = await world.actions(run.run_id)

    result = await case.refused(world, run)

    # A waiting answer is not an error result (docs/decisions/0021-answers-a-model-can-act-on.md).
    assert result.is_error is (case.code not in WAITING_CODES) and result.code == case.code
    assert result.meta[META_CODE] == case.code
    assert result.structured is not None
    error = result.structured["error"]
    assert error["code"] == case.code
    assert {key: error.get(key) for key in case.details} == case.details
    assert result.content[0]["text"].startswith(f"[{case.code}]")
    assert world.tools.calls == calls
    assert world.tools.effects == effects
    new = [a for a in await world.actions(run.run_id) if a.action_id not in {b.action_id for b in actions_before}]
    assert all(action.status is ActionStatus.REJECTED for action in new), "a refused call admitted an intent"
    if case.recorded:
        rejected = await world.action(result.meta[META_ACTION_ID])
        assert (rejected.status, rejected.code, rejected.run_id) == (ActionStatus.REJECTED, case.code, run.run_id)
        assert rejected.worker == "worker-1"  # the worker that called, never the key that granted its lease
        assert "action_rejected" in await world.event_types(run.run_id)


@pytest.mark.parametrize("token", [None, "", "not-a-lease-token", "wl_" + "A" * 43])
async def test_a_missing_or_unknown_token_is_unauthenticated_and_reaches_no_tool(
    world: World, token: str | None
) -> None:
    run = await world.new_run()
    with pytest.raises(Unauthenticated) as raised:
        await world.call(token, "t__write", {"text": "a"})
    assert raised.value.code == "unauthenticated"
    assert world.tools.calls == []
    assert await world.actions(run.run_id) == []


async def test_a_call_after_the_deadline_is_refused_run_expired_even_when_the_lease_lapsed_too(world: World) -> None:
    run = await world.new_run(expires_in="10m")
    world.clock.advance(600)
    result = await world.call(run.token, "t__read", {})
    assert code_of(result) == "run_expired"
    assert world.tools.calls == []
