"""What the operator commands show a person: bars, tables, times, payload diffs, event lines, run and
approval pages, contracts read from files. Pure functions over the API's JSON; no server."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from gateway.canonical import payload_sha256
from gateway.cli.approvals import describe_approval, hash_matches, previous_of
from gateway.cli.format import (
    bar,
    budget_lines,
    event_line,
    payload_diff,
    short_time,
    summarize,
    table,
)
from gateway.cli.http import ApiFailed, api_path
from gateway.cli.runs import contract_problems, describe_run, read_contract

CONTRACT_YAML = """\
goal: Collect vendor notes
spec_version: v1
owner: ana@acme.example
expires_in: 72h
budgets: {spend: "5.00", tool_calls: 100, writes: 10, active_seconds: 7200}
authority: {allow: ["notes__*"]}
"""


# -- bars ------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("spent", "reserved", "limit", "shown"),
    [
        ("0.00", "0.00", "5.00", "[----------]"),
        ("2.50", "0.00", "5.00", "[#####-----]"),
        ("2.00", "1.00", "5.00", "[####++----]"),
        ("5.00", "0.00", "5.00", "[##########]"),
        ("6.00", "0.00", "5.00", "[##########]"),  # an overrun: full, the numbers say by how much
        (0, 0, 0, "[----------]"),
        (1, 0, 0, "[##########]"),
    ],
)
def test_a_bar_shows_spent_reserved_and_free_tenths(spent: Any, reserved: Any, limit: Any, shown: str) -> None:
    assert bar(spent, reserved, limit) == shown


def test_a_bar_is_empty_only_when_nothing_is_used_and_full_only_when_all_is() -> None:
    assert bar("0.01", "0.00", "100.00") == "[#---------]"
    assert bar(99, 0, 100) == "[#########-]"
    assert bar(0, 1, 1000) == "[+---------]"


def test_budget_lines_align_the_dimensions_and_name_what_is_reserved() -> None:
    budgets = {
        "spend": {"limit": "5.00", "reserved": "0.10", "spent": "2.10", "remaining": "2.80"},
        "tool_calls": {"limit": 100, "reserved": 0, "spent": 7, "remaining": 93},
    }
    assert budget_lines(budgets) == [
        "spend       [####------] 2.10 / 5.00 (reserved 0.10)",
        "tool_calls  [#---------] 7 / 100",
    ]


# -- tables and times ------------------------------------------------------------------------
def test_a_table_aligns_its_columns_shows_nothing_as_a_dash_and_ends_no_line_in_blanks() -> None:
    text = table(["ID", "STATUS", "NOTE"], [["run_1", "running", None], ["run_22", None, "x"]])
    assert text.splitlines() == [
        "ID      STATUS   NOTE",
        "run_1   running  -",
        "run_22  -        x",
    ]


def test_times_are_shown_to_the_second_in_utc() -> None:
    assert short_time("2026-03-01T12:00:05.123456Z") == "2026-03-01 12:00:05Z"
    assert short_time(None) == "-"


def test_a_caller_given_id_is_quoted_into_one_path_segment() -> None:
    assert api_path("runs", "run_1", "cancel") == "/api/runs/run_1/cancel"
    assert api_path("runs", "../keys?x=1") == "/api/runs/..%2Fkeys%3Fx%3D1"


# -- payloads and their diffs ----------------------------------------------------------------
def test_a_payload_diff_is_unified_and_ignores_key_order() -> None:
    old = {"to": "bob@elsewhere.example", "note_id": "note-1"}
    new = {"note_id": "note-1", "to": "carol@elsewhere.example"}
    lines = payload_diff(old, new, "apr_1", "apr_2").splitlines()
    assert lines[:2] == ["--- apr_1", "+++ apr_2"]
    assert '-  "to": "bob@elsewhere.example"' in lines
    assert '+  "to": "carol@elsewhere.example"' in lines
    assert payload_diff(old, dict(reversed(list(old.items()))), "a", "b") == ""


def approval(approval_id: str, tool: str, payload: Any, **fields: Any) -> dict[str, Any]:
    return {
        "approval_id": approval_id,
        "run_id": "run_1",
        "tool": tool,
        "status": "pending",
        "payload": payload,
        "payload_sha256": payload_sha256(payload),
        "created_at": "2026-03-01T12:00:00.000000Z",
        **fields,
    }


def test_the_previous_approval_is_the_last_earlier_one_of_the_same_tool() -> None:
    first = approval("apr_1", "notes__send", {"to": "a@x.example"})
    other = approval("apr_2", "notes__append", {"title": "t"})
    second = approval("apr_3", "notes__send", {"to": "b@x.example"})
    third = approval("apr_4", "notes__send", {"to": "c@x.example"})
    listed = [first, other, second, third]
    assert previous_of(third, listed) == second
    assert previous_of(second, listed) == first
    assert previous_of(first, listed) is None
    assert previous_of(other, listed) is None


def test_an_approval_page_shows_the_exact_payload_its_hash_the_evidence_and_the_diff() -> None:
    before = approval("apr_1", "notes__send", {"note_id": "n1", "to": "bob@x.example"}, status="denied")
    now = approval("apr_2", "notes__send", {"note_id": "n1", "to": "carol@x.example"}, evidence={"source": "crm://c/9"})
    text = describe_approval(now, before)
    assert f"payload sha256 {now['payload_sha256']}  (the payload below hashes to it)" in text
    assert '    "to": "carol@x.example"' in text
    assert '    "source": "crm://c/9"' in text
    assert "diff against apr_1 (denied" in text
    assert '  -  "to": "bob@x.example"' in text and '  +  "to": "carol@x.example"' in text
    assert "no earlier approval of notes__send" in describe_approval(before, None)


def test_a_payload_that_does_not_hash_to_the_stated_sha256_is_called_out() -> None:
    shown = approval("apr_1", "notes__send", {"to": "a@x.example"})
    assert hash_matches(shown) is True
    forged = {**shown, "payload": {"to": "eve@x.example"}}
    assert hash_matches(forged) is False
    assert "DOES NOT HASH" in describe_approval(forged, None)
    assert hash_matches({**shown, "payload": None}) is None
    # The hash is the RFC 8785 form's, not the pretty one's.
    assert shown["payload_sha256"] == hashlib.sha256(b'{"to":"a@x.example"}').hexdigest()


# -- events ----------------------------------------------------------------------------------
def test_an_event_line_has_seq_time_type_and_a_compact_summary() -> None:
    event = {
        "seq": 7,
        "type": "action_settled",
        "at": "2026-03-01T12:00:05.123456Z",
        "data": {"action_id": "act_1", "status": "succeeded", "code": None, "result_sha256": "ab" * 32},
    }
    assert event_line(event) == (
        "    7  2026-03-01 12:00:05Z  action_settled        action_id=act_1 status=succeeded result_sha256=abababababab"
    )


def test_a_summary_quotes_text_with_spaces_and_stays_on_one_bounded_line() -> None:
    assert summarize({"reason": "the job is off", "hard": False}) == 'reason="the job is off" hard=false'
    assert summarize({"message": "x" * 500}) == "message=" + "x" * 45 + "..."
    assert summarize({"receipt": {"id": "x" * 500}}) == 'receipt={"id":"' + "x" * 38 + "..."
    assert summarize({"note": "two\nlines"}) == 'note="two\\nlines"'
    long = summarize({f"key{i}": f"value{i}" for i in range(40)}, width=80)
    assert len(long) == 80 and long.endswith("...")


# -- runs ------------------------------------------------------------------------------------
def run_view(**fields: Any) -> dict[str, Any]:
    view: dict[str, Any] = {
        "run_id": "run_1",
        "status": "waiting",
        "status_reason": None,
        "goal": "Collect vendor notes",
        "owner": "ana@acme.example",
        "created_by": "op",
        "created_at": "2026-03-01T12:00:00.000000Z",
        "deadline": "2026-03-04T12:00:00.000000Z",
        "spec_version": "v1",
        "lineage_id": "lin_1",
        "parent_run_id": None,
        "currency": "USD",
        "budgets": {
            "spend": {"limit": "5.00", "reserved": "0.10", "spent": "2.10", "remaining": "2.80"},
            "writes": {"limit": 10, "reserved": 1, "spent": 3, "remaining": 6},
        },
        "lease": {"worker": "agent-1", "epoch": 2, "expires_at": "2026-03-01T12:05:00.000000Z", "live": True},
        "approvals": [approval("apr_1", "notes__send", {"to": "a@x.example"}, requested_by="agent-1")],
        "milestones": [{"id": "inventory", "required": True, "status": "pending"}],
    }
    return view | fields


def test_a_run_page_shows_budgets_as_bars_the_lease_pending_approvals_and_milestones() -> None:
    lines = describe_run(run_view()).splitlines()
    assert lines[0] == "run_1  waiting"
    assert "  lease         agent-1, epoch 2, expires 2026-03-01 12:05:00Z (live)" in lines
    assert "  spend   [####------] 2.10 / 5.00 (reserved 0.10)" in lines
    assert "  writes  [###+------] 3 / 10 (reserved 1)" in lines
    assert "pending approvals (1)" in lines
    assert any(line.split()[:2] == ["apr_1", "notes__send"] for line in lines)
    assert "  inventory  required  pending" in lines


def test_a_run_without_a_lease_says_so() -> None:
    text = describe_run(run_view(lease={"worker": None, "epoch": 0, "expires_at": None, "live": False}))
    assert "  lease         none" in text.splitlines()


# -- contracts -------------------------------------------------------------------------------
def test_a_yaml_contract_is_read_with_the_safe_loader_and_a_json_one_as_json(tmp_path: Path) -> None:
    yaml_file = tmp_path / "c.yaml"
    yaml_file.write_text(CONTRACT_YAML)
    contract = read_contract(str(yaml_file))
    assert contract["budgets"]["spend"] == "5.00" and contract_problems(contract) == []
    json_file = tmp_path / "c.json"
    json_file.write_text(json.dumps(contract))
    assert read_contract(str(json_file)) == contract


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("goal: a\ngoal: b\n", "invalid_contract"),  # a key named twice
        ("!!python/object/apply:os.system ['true']\n", "invalid_contract"),  # the safe loader refuses
        ("- a list\n", "invalid_contract"),
        ("goal: x\ndeadline: 2026-03-01\n", "invalid_contract"),  # a date has no JSON form
    ],
)
def test_a_contract_that_is_not_a_json_mapping_is_refused_before_sending(tmp_path: Path, text: str, code: str) -> None:
    path = tmp_path / "c.yml"
    path.write_text(text)
    with pytest.raises(ApiFailed) as refused:
        read_contract(str(path))
    assert refused.value.code == code


def test_a_missing_contract_file_is_unreadable(tmp_path: Path) -> None:
    with pytest.raises(ApiFailed) as refused:
        read_contract(str(tmp_path / "missing.yaml"))
    assert refused.value.code == "unreadable"


def test_contract_problems_name_each_field_a_yaml_float_among_them(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(CONTRACT_YAML.replace('spend: "5.00"', "spend: 5.00").replace("owner: ana@acme.example\n", ""))
    problems = contract_problems(read_contract(str(path)))
    assert [p.split(":")[0] for p in problems] == ["owner", "budgets.spend"]
