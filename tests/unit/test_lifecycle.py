import itertools

import pytest

from gateway.domain import ActionStatus, RunEvent, RunStatus, status_refusal, transition
from gateway.domain.lifecycle import ACTION_TRANSITIONS, HOLDS_OPERATION, TERMINAL, TRANSITIONS, check_action_transition
from gateway.errors import Conflict, Refusal, WarrantError

R, W, P = RunStatus.RUNNING, RunStatus.WAITING, RunStatus.PAUSED
C, X, E = RunStatus.COMPLETED, RunStatus.CANCELLED, RunStatus.EXPIRED
F = RunStatus.FAILED

# The run lifecycle of DESIGN.md, written out again here so the table is checked, not echoed.
EXPECTED_RUN_TRANSITIONS = {
    (R, RunEvent.APPROVAL_PENDING): W,
    (W, RunEvent.APPROVAL_PENDING): W,
    (P, RunEvent.APPROVAL_PENDING): P,
    (W, RunEvent.APPROVALS_SETTLED): R,
    (R, RunEvent.APPROVALS_SETTLED): R,
    (P, RunEvent.APPROVALS_SETTLED): P,
    (R, RunEvent.PAUSE): P,
    (W, RunEvent.PAUSE): P,
    (P, RunEvent.PAUSE): P,
    (P, RunEvent.RESUME): R,
    (R, RunEvent.CANCEL): X,
    (W, RunEvent.CANCEL): X,
    (P, RunEvent.CANCEL): X,
    (X, RunEvent.CANCEL): X,
    (R, RunEvent.COMPLETE): C,
    (R, RunEvent.EXPIRE): E,
    (W, RunEvent.EXPIRE): E,
    (P, RunEvent.EXPIRE): E,
    (E, RunEvent.EXPIRE): E,
    (R, RunEvent.FAIL): F,
    (W, RunEvent.FAIL): F,
    (P, RunEvent.FAIL): F,
    (R, RunEvent.WAIT): W,
    (W, RunEvent.WAIT_ENDED): R,
}

ALL_RUN_PAIRS = list(itertools.product(RunStatus, RunEvent))
ALL_ACTION_PAIRS = list(itertools.product(ActionStatus, ActionStatus))


def test_the_run_table_is_the_designed_one() -> None:
    assert TRANSITIONS == EXPECTED_RUN_TRANSITIONS


def test_the_terminal_states_are_completed_cancelled_expired_and_failed() -> None:
    assert {C, X, E, F} == TERMINAL
    assert [s for s in RunStatus if s.terminal] == [C, X, E, F]
    assert [s for s in RunStatus if s.live] == [R, W]


def _expected_refusal_code(current: RunStatus, event: RunEvent) -> str:
    if current.terminal or (event is RunEvent.COMPLETE and current in (W, P)):
        return f"run_{current.value}"
    return "invalid_transition"


@pytest.mark.parametrize(("current", "event"), ALL_RUN_PAIRS, ids=lambda v: str(v))
def test_every_run_status_and_event_pair_moves_or_is_refused_with_a_stable_code(
    current: RunStatus, event: RunEvent
) -> None:
    if (current, event) in EXPECTED_RUN_TRANSITIONS:
        assert transition(current, event) is EXPECTED_RUN_TRANSITIONS[(current, event)]
        return
    expected = _expected_refusal_code(current, event)
    with pytest.raises(WarrantError) as caught:
        transition(current, event)
    assert caught.value.code == expected
    assert isinstance(caught.value, Refusal if expected.startswith("run_") else Conflict)


@pytest.mark.parametrize("terminal", sorted(TERMINAL))
def test_a_terminal_run_is_never_resumed(terminal: RunStatus) -> None:
    with pytest.raises(Refusal) as caught:
        transition(terminal, RunEvent.RESUME)
    assert caught.value.code == f"run_{terminal.value}"


@pytest.mark.parametrize(("current", "code"), [(W, "run_waiting"), (P, "run_paused")])
def test_only_a_running_run_completes(current: RunStatus, code: str) -> None:
    with pytest.raises(Refusal) as caught:
        transition(current, RunEvent.COMPLETE)
    assert caught.value.code == code


@pytest.mark.parametrize("current", [R, W])
def test_resuming_a_run_that_is_not_paused_is_an_invalid_transition(current: RunStatus) -> None:
    with pytest.raises(Conflict) as caught:
        transition(current, RunEvent.RESUME)
    assert caught.value.code == "invalid_transition"


def test_a_cancelled_run_cannot_expire_and_an_expired_run_cannot_be_cancelled() -> None:
    with pytest.raises(Refusal) as cancelled:
        transition(X, RunEvent.EXPIRE)
    with pytest.raises(Refusal) as expired:
        transition(E, RunEvent.CANCEL)
    assert (cancelled.value.code, expired.value.code) == ("run_cancelled", "run_expired")


@pytest.mark.parametrize("status", [W, P, C, X, E])
def test_the_status_refusal_names_the_status(status: RunStatus) -> None:
    refusal = status_refusal(status)
    assert refusal.code == f"run_{status.value}"
    assert refusal.details["status"] == status.value


EXPECTED_ACTION_TRANSITIONS = {
    (ActionStatus.ADMITTED, ActionStatus.SUCCEEDED),
    (ActionStatus.ADMITTED, ActionStatus.FAILED),
    (ActionStatus.ADMITTED, ActionStatus.UNKNOWN),
    (ActionStatus.UNKNOWN, ActionStatus.SUCCEEDED),
    (ActionStatus.UNKNOWN, ActionStatus.FAILED),
    (ActionStatus.SUCCEEDED, ActionStatus.COMPENSATED),
}


def test_the_action_table_is_the_designed_one() -> None:
    assert ACTION_TRANSITIONS == EXPECTED_ACTION_TRANSITIONS


@pytest.mark.parametrize(("current", "target"), ALL_ACTION_PAIRS, ids=lambda v: str(v))
def test_every_action_status_pair_moves_or_is_refused_as_an_invalid_transition(
    current: ActionStatus, target: ActionStatus
) -> None:
    if (current, target) in EXPECTED_ACTION_TRANSITIONS:
        check_action_transition(current, target)
        return
    with pytest.raises(Conflict) as caught:
        check_action_transition(current, target)
    assert caught.value.code == "invalid_transition"


def test_an_unknown_action_is_never_turned_back_into_admitted_or_rejected() -> None:
    for target in (ActionStatus.ADMITTED, ActionStatus.REJECTED, ActionStatus.COMPENSATED):
        with pytest.raises(Conflict):
            check_action_transition(ActionStatus.UNKNOWN, target)


def test_failed_and_rejected_actions_free_their_operation_id() -> None:
    assert {ActionStatus.FAILED, ActionStatus.REJECTED}.isdisjoint(HOLDS_OPERATION)
    assert {ActionStatus.ADMITTED, ActionStatus.UNKNOWN, ActionStatus.SUCCEEDED} <= HOLDS_OPERATION


def test_a_failed_run_is_failed_again_refused_run_failed_not_an_idempotent_success() -> None:
    with pytest.raises(Refusal) as caught:
        transition(F, RunEvent.FAIL)
    assert caught.value.code == "run_failed"


@pytest.mark.parametrize("ended", [C, X, E])
def test_a_run_ended_otherwise_cannot_fail(ended: RunStatus) -> None:
    with pytest.raises(Refusal) as caught:
        transition(ended, RunEvent.FAIL)
    assert caught.value.code == f"run_{ended.value}"
