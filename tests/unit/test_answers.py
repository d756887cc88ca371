"""Each refusal's words name what a model needs to change (docs/refusals.md), in the pure core."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from gateway.domain import (
    CallFacts,
    Reservation,
    RunSnapshot,
    RunStatus,
    call_refusal,
    constraint_refusal,
    forbidden_refusal,
    schema_refusal,
    status_refusal,
)
from gateway.domain.answers import MAX_SHOWN, argument_names, shown
from gateway.errors import CALL_CODES
from gateway.gate import CallResult
from gateway.gate.pipeline import replay_structured

DOCS = Path(__file__).resolve().parents[2] / "docs" / "refusals.md"
LIMITS = {"spend": 2000, "tool_calls": 100, "writes": 10, "active_seconds": 7200}
NONE = dict.fromkeys(LIMITS, 0)


def run(**changes: Any) -> RunSnapshot:
    body: dict[str, Any] = {
        "run_id": "run_1",
        "tenant": "acme",
        "lineage_id": "lin_1",
        "status": RunStatus.RUNNING,
        "spec_version": "v1",
        "epoch": 1,
        "lease_expires_at": 1e12,
        "deadline": 1e12,
        "limits": LIMITS,
        "reserved": NONE,
        "spent": NONE,
    }
    return RunSnapshot(**{**body, **changes})


def said(refusal: Any) -> str:
    """What the model reads: the text content (the answer: the message and its echo)."""
    return str(CallResult.refused(refusal).content[0]["text"])


def test_the_arguments_an_expression_reads_are_named_in_order() -> None:
    assert argument_names("args.to.endsWith('@acme.example') && size(args['cc']) < 3 || args.to == ''") == [
        "to",
        "cc",
    ]
    assert argument_names("true") == []


def test_a_value_is_quoted_as_json_and_cut() -> None:
    assert shown("bob@x.example") == '"bob@x.example"'
    assert len(shown("x" * 500)) == MAX_SHOWN and shown("x" * 500).endswith("…")
    assert shown({"a": 1}) == "an object with 1 key(s)" and shown([1, 2]) == "a list of 2 item(s)"


def test_a_constraint_refusal_names_the_expression_and_argument_and_echoes_the_value() -> None:
    refusal = constraint_refusal("email__send", "args.to.endsWith('@acme.example')", {"to": "eve@evil.example"},
                                 evaluated=True)  # fmt: skip
    text = said(refusal)
    assert text.startswith("[constraint_violated] not executed: email__send")
    assert "args.to.endsWith('@acme.example')" in text and "`to`" in text and '"eve@evil.example"' in text
    assert "evil" not in refusal.message  # the recorded message quotes nothing of the payload
    assert refusal.to_dict()["message"] == text.removeprefix("[constraint_violated] ")
    assert refusal.details["arguments"] == ["to"]


def test_a_constraint_that_cannot_be_evaluated_names_the_missing_argument() -> None:
    refusal = constraint_refusal("email__send", "args.to.endsWith('@a')", {}, evaluated=False)
    assert "could not be evaluated" in refusal.message and "`to` missing" in refusal.message
    assert refusal.echo is None


def test_a_forbidden_tool_names_the_pattern_and_what_is_allowed_instead() -> None:
    denied = forbidden_refusal("crm__delete_contact", ["crm__*", "email__send"], ["crm__delete_*"], "crm__delete_*")
    assert "denies it (pattern `crm__delete_*`)" in denied.message
    assert "it allows `crm__*`, `email__send` except `crm__delete_*`" in denied.message
    unmatched = forbidden_refusal("files__read", ["crm__*"], [], None)
    assert "no allow pattern" in unmatched.message and "tools/list" in unmatched.message


def test_invalid_arguments_name_each_field_and_schema_rule() -> None:
    faults = [
        {"field": "to", "rule": "required", "problem": "'to' is a required property"},
        {"field": "subject", "rule": "type", "problem": "5 is not of type 'string'"},
    ]
    refusal = schema_refusal("email__send", faults)
    assert "`to` (required), `subject` (type)" in refusal.message
    assert "5 is not of type" in said(refusal) and "5 is not" not in refusal.message
    assert refusal.details["fields"] == [{"field": "to", "rule": "required"}, {"field": "subject", "rule": "type"}]


@pytest.mark.parametrize(
    ("dim", "need", "still"),
    [
        ("spend", Reservation(spend=500), "calls that cost nothing"),
        ("writes", Reservation(writes=1), "reads are still admitted"),
        ("tool_calls", Reservation(), "no further tool call"),
    ],
)
def test_an_exhausted_budget_names_the_dimension_what_is_left_and_what_still_works(
    dim: str, need: Reservation, still: str
) -> None:
    spent = {**NONE, dim: LIMITS[dim] if dim != "spend" else 1700}
    refusal = call_refusal(run(spent=spent), CallFacts(epoch=1, is_write=True, reservation=need), 0.0)
    assert refusal is not None and refusal.code == "budget_exhausted"
    assert refusal.details["dimension"] == dim
    left = "3.00" if dim == "spend" else 0
    assert refusal.details["left"] == left
    assert f"the run's {dim} budget" in refusal.message and f"{left} of" in refusal.message
    assert still in refusal.message


def test_used_up_active_time_says_nothing_is_left() -> None:
    refusal = call_refusal(run(active_seconds_spent=7200.0), CallFacts(epoch=1, is_write=False), 0.0)
    assert refusal is not None and refusal.details["left"] == 0 and "7200 s" in refusal.message


def test_a_run_state_refusal_says_what_to_do() -> None:
    assert "warrant_status" in status_refusal(RunStatus.WAITING).message
    assert "resumes" in status_refusal(RunStatus.PAUSED).message
    for status in (RunStatus.COMPLETED, RunStatus.CANCELLED, RunStatus.EXPIRED):
        assert "no further call" in status_refusal(status).message


def test_a_replay_marker_never_overwrites_the_tools_own_keys() -> None:
    merged = replay_structured("act_1", "not executed again", {"id": "c1"}, [])
    assert merged == {"id": "c1", "replayed": True, "action_id": "act_1", "not_executed_again": "not executed again"}
    clashing = replay_structured("act_1", "n", {"action_id": "theirs"}, [])
    assert clashing["result"] == {"action_id": "theirs"} and clashing["action_id"] == "act_1"
    textual = replay_structured("act_1", "n", None, [{"type": "text", "text": "sent"}])
    assert textual["content"] == [{"type": "text", "text": "sent"}] and textual["replayed"] is True


def test_every_call_code_is_in_the_refusal_catalogue() -> None:
    first_cells = re.findall(r"^\| (`[a-z_]+`(?:, `[a-z_]+`)*) \|", DOCS.read_text(), flags=re.M)
    documented = {code for cell in first_cells for code in re.findall(r"`([a-z_]+)`", cell)}
    assert CALL_CODES <= documented, sorted(CALL_CODES - documented)
