"""The replay decision of gate step 4 (gateway/domain/replay.py): a write whose operation id the
lineage already holds is replayed, refused or goes on, as its table says."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, replace

import pytest

from gateway.domain import ActionStatus, Replay, ReplayCall, operation_expired, replay_refusal, replay_rule
from gateway.domain import replay as replay_module
from gateway.domain.lifecycle import HOLDS_OPERATION
from gateway.domain.replay import REPLAY_RULES, RULES
from gateway.domain.retention import REPLAYS

NOW = 1_800_000_000.0
DAY = 86_400.0
CALL = ReplayCall(tool="crm__create_contact", payload_sha256="a" * 64)


@dataclass(frozen=True)
class _Holder:
    action_id: str = "act_1"
    operation_id: str | None = "op_1"
    tool: str = CALL.tool
    payload_sha256: str = CALL.payload_sha256
    status: ActionStatus = ActionStatus.SUCCEEDED
    created_at: float = NOW - 2 * DAY


def _decision(holder: _Holder | None, call: ReplayCall = CALL, expired: bool = False) -> Replay:
    return replay_rule(holder, call, expired).decision


# The table, written out again here so that it is checked, not echoed.
EXPECTED_RULES = [
    (Replay.PROCEED, None),
    (Replay.CONFLICT, "idempotency_conflict"),
    (Replay.EXPIRED, "idempotency_expired"),
    (Replay.REPLAY, None),
    (Replay.IN_PROGRESS, "operation_in_progress"),
    (Replay.UNKNOWN, "outcome_unknown"),
]


def test_the_replay_table_is_the_designed_one() -> None:
    assert [(rule.decision, rule.refusal) for rule in REPLAY_RULES] == EXPECTED_RULES
    assert [rule.decision for rule in REPLAY_RULES] == list(Replay)
    assert all(RULES[rule.decision] is rule for rule in REPLAY_RULES)


def test_the_module_docstring_shows_the_same_table() -> None:
    doc = replay_module.__doc__ or ""
    table = doc[doc.index("| the holder") :].split("\n\n", 1)[0]
    rows = [[cell.strip() for cell in line.strip("|").split("|")] for line in table.splitlines()[2:]]
    assert [(when, decision) for when, decision, _ in rows] == [(r.when, f"`{r.decision.value}`") for r in REPLAY_RULES]
    for (_, _, answer), rule in zip(rows, REPLAY_RULES, strict=True):
        assert (rule.refusal is None) is ("refused" not in answer)
        assert rule.refusal is None or f"`{rule.refusal}`" in answer


def test_a_call_whose_operation_id_nothing_holds_goes_on() -> None:
    assert _decision(None) is Replay.PROCEED


@pytest.mark.parametrize("status", [ActionStatus.FAILED, ActionStatus.REJECTED])
def test_a_failed_or_rejected_attempt_frees_the_operation_id_for_a_new_one(status: ActionStatus) -> None:
    assert _decision(_Holder(status=status, payload_sha256="b" * 64)) is Replay.PROCEED


@pytest.mark.parametrize("status", sorted(HOLDS_OPERATION))
def test_another_payload_or_tool_under_a_held_id_is_a_conflict_whatever_the_holders_state(
    status: ActionStatus,
) -> None:
    assert _decision(_Holder(status=status, payload_sha256="b" * 64)) is Replay.CONFLICT
    assert _decision(_Holder(status=status, tool="crm__delete_contact")) is Replay.CONFLICT
    assert _decision(_Holder(status=status, payload_sha256="b" * 64), expired=True) is Replay.CONFLICT


def test_the_same_write_replays_a_succeeded_or_compensated_holder_until_its_id_expires() -> None:
    for status in (ActionStatus.SUCCEEDED, ActionStatus.COMPENSATED):
        assert _decision(_Holder(status=status)) is Replay.REPLAY
        assert _decision(_Holder(status=status), expired=True) is Replay.EXPIRED


def test_the_same_write_while_its_holder_is_in_flight_is_in_progress() -> None:
    assert _decision(_Holder(status=ActionStatus.ADMITTED)) is Replay.IN_PROGRESS


def test_the_same_write_whose_holders_outcome_is_unknown_is_never_retried() -> None:
    assert _decision(_Holder(status=ActionStatus.UNKNOWN)) is Replay.UNKNOWN


GRID = list(
    itertools.product(
        list(ActionStatus),
        (CALL.payload_sha256, "b" * 64),  # the holder's payload
        (CALL.tool, "crm__delete_contact"),  # the holder's tool
        (None, DAY),  # retention.idempotency
    )
)


@pytest.mark.parametrize(("status", "payload", "tool", "kept_for"), GRID)
def test_every_holder_meets_exactly_the_row_the_gate_decided_before(
    status: ActionStatus, payload: str, tool: str, kept_for: float | None
) -> None:
    holder = _Holder(status=status, payload_sha256=payload, tool=tool)
    expired = operation_expired(status, holder.created_at, kept_for, NOW)  # as the store finds it
    same = payload == CALL.payload_sha256 and tool == CALL.tool
    if status not in HOLDS_OPERATION:
        expected = Replay.PROCEED
    elif not same:
        expected = Replay.CONFLICT
    elif expired:
        expected = Replay.EXPIRED
    elif status in REPLAYS:
        expected = Replay.REPLAY
    elif status is ActionStatus.ADMITTED:
        expected = Replay.IN_PROGRESS
    else:
        expected = Replay.UNKNOWN
    assert _decision(holder, expired=expired) is expected
    rows = [rule for rule in REPLAY_RULES if rule.condition(holder, CALL, expired)]
    assert rows[0].decision is expected  # the first row that holds decides


@pytest.mark.parametrize("decision", list(Replay))
def test_each_refusal_carries_its_rows_code_and_names_the_holders_action(decision: Replay) -> None:
    holder = _Holder()
    refusal = replay_refusal(decision, holder)
    code = RULES[decision].refusal
    if code is None:
        assert refusal is None
        return
    assert refusal is not None and refusal.code == code
    assert refusal.details["action_id"] == holder.action_id
    assert "not executed" in refusal.message or "neither replayed nor executed again" in refusal.message


def test_an_expired_id_names_when_it_was_first_recorded_and_in_progress_says_when_to_call_again() -> None:
    expired = replay_refusal(Replay.EXPIRED, _Holder(created_at=NOW))
    assert expired is not None and expired.details["recorded_at"] == "2027-01-15T08:00:00.000000Z"
    in_progress = replay_refusal(Replay.IN_PROGRESS, replace(_Holder(), status=ActionStatus.ADMITTED))
    assert in_progress is not None and in_progress.details["retry_after_s"] == 2
