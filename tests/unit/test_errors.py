import pytest

from gateway.errors import (
    CALL_CODES,
    RETRYABLE_CODES,
    Conflict,
    Forbidden,
    InvalidRequest,
    NotFound,
    Refusal,
    StoreError,
    Unauthenticated,
    WarrantError,
)

# DESIGN.md "Refusals and errors": stable API, written out so a removed code fails here.
DESIGN_CODES = """
unauthenticated tool_not_found invalid_arguments forbidden constraint_violated
run_paused run_waiting run_cancelled run_completed run_expired lease_superseded
lease_expired budget_exhausted approval_required approval_denied approval_expired idempotency_conflict
idempotency_expired operation_in_progress outcome_unknown upstream_failed upstream_unauthorized
upstream_unavailable spec_version_mismatch tool_definition_changed rate_limited payload_too_large
checkpoint_conflict completion_refused lease_revoked draining
""".split()
# Beyond DESIGN.md's list: a call whose contract was revised twice while it was decided; the plan
# and its tasks (issue 23, docs/tasks.md); a failed run (issue 23, docs/decisions/0024-failed-end.md);
# waits (issue 24, docs/decisions/0027-waits.md).
BEYOND_DESIGN = {
    "contract_revised",
    "run_failed",
    "plan_invalid",
    "plan_conflict",
    "plan_revision_limit",
    "plan_over_budget",
    "plan_required",
    "invalid_task_transition",
    "task_check_failed",
    "task_attempts_exhausted",
    "unknown_task",
    "task_not_running",
    "shared_limit",  # docs/decisions/0028-shared-limits.md
    "wait_invalid",
    "wait_open",
    "approval_edited",  # docs/decisions/0032-approve-edited.md
    "retry_limit",  # docs/decisions/0030-retries.md
    "not_compensable",  # docs/decisions/0031-compensation.md
    "compensation_mapping",
}


def test_the_call_codes_are_the_design_codes() -> None:
    assert set(DESIGN_CODES) | BEYOND_DESIGN == CALL_CODES


def test_retryable_codes_are_call_codes_but_a_busy_store() -> None:
    assert RETRYABLE_CODES - {"store_unavailable"} <= CALL_CODES


@pytest.mark.parametrize("code", sorted(CALL_CODES))
def test_every_call_code_makes_a_refusal_with_the_design_shape(code: str) -> None:
    refusal = Refusal(code, "one line", dimension="spend")
    assert refusal.code == code
    assert isinstance(refusal, WarrantError)
    body = refusal.to_dict()
    assert list(body)[:3] == ["code", "message", "retryable"]
    assert body == {"code": code, "message": "one line", "retryable": code in RETRYABLE_CODES, "dimension": "spend"}


@pytest.mark.parametrize("code", ["", "not_a_code", "invalid_transition", "RUN_PAUSED", "internal_error"])
def test_a_refusal_with_an_unknown_code_is_a_programming_error(code: str) -> None:
    with pytest.raises(ValueError):
        Refusal(code, "x")


@pytest.mark.parametrize("code", ["operation_in_progress", "upstream_unavailable", "rate_limited"])
def test_transient_refusals_are_retryable(code: str) -> None:
    assert Refusal(code, "x").retryable


@pytest.mark.parametrize("code", ["budget_exhausted", "lease_superseded", "run_cancelled", "outcome_unknown"])
def test_refusals_that_need_a_decision_are_not_retryable(code: str) -> None:
    assert not Refusal(code, "x").retryable


def test_details_never_overwrite_retryable() -> None:
    body = InvalidRequest("bad", problems=[], retryable=True).to_dict()
    assert (body["code"], body["message"], body["retryable"]) == ("invalid_request", "bad", False)
    assert body["problems"] == []


def test_details_stay_as_given() -> None:
    refusal = Refusal("approval_required", "ask", approval_id="apv_1", payload_sha256="ab" * 32)
    assert refusal.details == {"approval_id": "apv_1", "payload_sha256": "ab" * 32}


@pytest.mark.parametrize(
    ("error", "code", "status"),
    [
        (Unauthenticated("x"), "unauthenticated", 401),
        (Forbidden("x"), "forbidden", 403),
        (NotFound("x"), "not_found", 404),
        (InvalidRequest("x"), "invalid_request", 422),
        (InvalidRequest("x", code="invalid_contract"), "invalid_contract", 422),
        (Conflict("x", code="lease_held"), "lease_held", 409),
        (Refusal("run_paused", "x"), "run_paused", 409),
        (StoreError("x"), "store_unavailable", 503),
    ],
)
def test_each_error_class_has_its_code_and_http_status(error: WarrantError, code: str, status: int) -> None:
    assert (error.code, error.http_status) == (code, status)


def test_a_busy_store_is_retryable() -> None:
    assert StoreError("busy").retryable
    assert StoreError("busy").to_dict()["retryable"] is True


def test_a_code_given_to_one_error_does_not_change_its_class() -> None:
    InvalidRequest("x", code="invalid_contract")
    assert InvalidRequest("y").code == "invalid_request"
