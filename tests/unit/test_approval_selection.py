"""Approval selection (gateway/domain/approval_selection.py): which approval a call meets, whether
the admit may consume it, what a call never sent gives back, and what a new request supersedes."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, replace

import pytest

from gateway.domain import (
    ApprovalCall,
    ApprovalChoice,
    ApprovalStatus,
    BoundApproval,
    Consumption,
    Requirement,
    choose_approval,
    consumable,
    consume_refusal,
    restored_approval,
    superseded_by_request,
)
from gateway.domain import approval_selection as selection_module
from gateway.domain.approval_selection import CHOICE_RULES, ChosenApproval, speaks_for

NOW = 1_800_000_000.0
HOUR = 3600.0
RULE = Requirement(role="approver", decide_within=4 * HOUR, valid_for=HOUR, on_expiry="pause")
CALL = ApprovalCall(spec_version="v1", tool_def_sha256="d" * 64, required=RULE)
St = ApprovalStatus


@dataclass(frozen=True)
class _Approval:
    approval_id: str = "apr_1"
    status: ApprovalStatus = St.PENDING
    spec_version: str = "v1"
    tool_def_sha256: str = "d" * 64
    requirement: Requirement = RULE
    decide_by: float = NOW + HOUR
    valid_until: float | None = None
    payload_sha256: str = "p" * 64


def _approved(approval_id: str = "apr_1", valid_until: float = NOW + HOUR) -> _Approval:
    return _Approval(approval_id, St.APPROVED, valid_until=valid_until)


def _choice(*approvals: _Approval, call: ApprovalCall = CALL) -> tuple[ApprovalChoice, str | None]:
    chosen = choose_approval(list(approvals), call, NOW)
    return chosen.choice, chosen.approval.approval_id if chosen.approval is not None else None


# The table, written out again here so that it is checked, not echoed.
EXPECTED_RULES = [
    (ApprovalChoice.USE, None),
    (ApprovalChoice.WAIT, "approval_required"),
    (ApprovalChoice.EDITED, "approval_edited"),
    (ApprovalChoice.DENIED, "approval_denied"),
    (ApprovalChoice.RENEW, "approval_expired"),
    (ApprovalChoice.REQUEST, "approval_required"),
]


def test_the_choice_table_is_the_designed_one() -> None:
    assert [(rule.choice, rule.answer) for rule in CHOICE_RULES] == EXPECTED_RULES
    assert [rule.choice for rule in CHOICE_RULES] == list(ApprovalChoice)


def test_the_module_docstring_shows_the_same_table() -> None:
    doc = selection_module.__doc__ or ""
    table = doc[doc.index("| among them") :].split("\n\n", 1)[0]
    rows = [[cell.strip() for cell in line.strip("|").split("|")] for line in table.splitlines()[2:]]
    assert [(when, choice) for when, choice, _ in rows] == [(r.when, f"`{r.choice.value}`") for r in CHOICE_RULES]
    for (_, _, answer), rule in zip(rows, CHOICE_RULES, strict=True):
        assert rule.answer is None or f"`{rule.answer}`" in answer


# -- an edit approved in the payload's place (docs/decisions/0032-approve-edited.md) -------------
PROPOSED = replace(CALL, payload_sha256="p" * 64)  # the call sends the payload the agent proposed
EDIT = "e" * 64


def _edit(status: ApprovalStatus = St.APPROVED, approval_id: str = "apr_e") -> _Approval:
    return _Approval(approval_id, status, valid_until=NOW + HOUR, payload_sha256=EDIT)


@pytest.mark.parametrize("status", [St.APPROVED, St.USED, St.EXPIRED])
def test_the_payload_an_edit_replaced_is_answered_with_the_edit_never_admitted(status: ApprovalStatus) -> None:
    assert _choice(_edit(status), call=PROPOSED) == (ApprovalChoice.EDITED, "apr_e")


def test_the_edited_payload_itself_uses_the_approval() -> None:
    assert _choice(_edit(), call=replace(CALL, payload_sha256=EDIT)) == (ApprovalChoice.USE, "apr_e")


def test_an_edit_is_never_used_for_the_payload_it_replaced_even_beside_an_older_approval() -> None:
    # An older approval of the proposed payload, still valid: the edit, newer, is what the person said last.
    assert _choice(_edit(), _approved("apr_old"), call=PROPOSED) == (ApprovalChoice.USE, "apr_old")
    assert _choice(_edit(St.USED), _approved("apr_old"), call=PROPOSED) == (ApprovalChoice.USE, "apr_old")
    assert _choice(_edit(), _Approval("apr_d", St.DENIED), call=PROPOSED) == (ApprovalChoice.EDITED, "apr_e")


def test_an_edit_asked_under_other_terms_does_not_answer() -> None:
    stale = replace(_edit(), spec_version="v0")
    assert _choice(stale, call=PROPOSED) == (ApprovalChoice.REQUEST, None)


def test_an_approved_approval_still_valid_is_used() -> None:
    assert _choice(_approved()) == (ApprovalChoice.USE, "apr_1")


def test_an_approved_one_is_used_before_a_newer_pending_one_is_waited_on() -> None:
    assert _choice(_Approval("apr_2"), _approved("apr_1")) == (ApprovalChoice.USE, "apr_1")


def test_an_approval_past_its_validity_is_not_used_and_is_renewed() -> None:
    assert _choice(_approved(valid_until=NOW)) == (ApprovalChoice.RENEW, "apr_1")


def test_a_pending_approval_in_time_is_waited_on() -> None:
    assert _choice(_Approval()) == (ApprovalChoice.WAIT, "apr_1")


def test_a_pending_approval_past_its_decision_time_is_renewed() -> None:
    assert _choice(_Approval(decide_by=NOW)) == (ApprovalChoice.RENEW, "apr_1")


def test_a_denial_stands_and_is_not_renewed() -> None:
    assert _choice(_Approval(status=St.DENIED)) == (ApprovalChoice.DENIED, "apr_1")


def test_a_denial_stands_whatever_rule_it_was_asked_under() -> None:
    looser = replace(RULE, role="approver", valid_for=10 * HOUR)
    assert _choice(_Approval(status=St.DENIED, requirement=looser)) == (ApprovalChoice.DENIED, "apr_1")


def test_an_older_denial_does_not_refuse_a_newer_payloads_fresh_request() -> None:
    assert _choice(_Approval("apr_2", St.SUPERSEDED), _Approval("apr_1", St.DENIED)) == (ApprovalChoice.REQUEST, None)


def test_an_expired_approval_is_renewed() -> None:
    assert _choice(_Approval(status=St.EXPIRED)) == (ApprovalChoice.RENEW, "apr_1")


@pytest.mark.parametrize("status", [St.SUPERSEDED, St.USED])
def test_a_superseded_or_used_approval_leads_to_a_first_request(status: ApprovalStatus) -> None:
    assert _choice(_Approval(status=status)) == (ApprovalChoice.REQUEST, None)


def test_no_approval_leads_to_a_first_request() -> None:
    assert _choice() == (ApprovalChoice.REQUEST, None)


@pytest.mark.parametrize(
    "other",
    [
        {"spec_version": "v2"},  # asked under another contract
        {"tool_def_sha256": "e" * 64},  # the tool's definition changed since
        {"requirement": replace(RULE, valid_for=2 * HOUR)},  # asked under a looser rule
    ],
    ids=["contract", "definition", "looser rule"],
)
def test_an_approval_asked_under_other_terms_is_neither_used_nor_waited_on(other: dict[str, object]) -> None:
    approved = replace(_approved(), **other)  # type: ignore[arg-type]
    assert not speaks_for(approved, CALL)
    assert _choice(approved) == (ApprovalChoice.REQUEST, None)
    assert _choice(replace(_Approval(), **other)) == (ApprovalChoice.REQUEST, None)  # type: ignore[arg-type]


def test_an_approval_asked_under_a_stricter_rule_speaks_for_the_call() -> None:
    stricter = replace(RULE, role="admin", valid_for=HOUR / 2)
    assert _choice(replace(_approved(), requirement=stricter)) == (ApprovalChoice.USE, "apr_1")


# Every status at each time that matters, alone and under a newer one: the choice is the one the
# gate made before it was a table (its step 5, written out here as it read).
STATES = [
    _Approval(status=status, decide_by=decide_by, valid_until=valid_until)
    for status in ApprovalStatus
    for decide_by in (NOW, NOW + HOUR)
    for valid_until in (None, NOW, NOW + HOUR)
]


def _as_the_gate_chose(approvals: list[_Approval]) -> tuple[ApprovalChoice, str | None]:
    matching = [a for a in approvals if speaks_for(a, CALL)]
    for a in matching:
        if a.status is St.APPROVED and (a.valid_until or 0) > NOW:
            return ApprovalChoice.USE, a.approval_id
    for a in matching:
        if a.status is St.PENDING and a.decide_by > NOW:
            return ApprovalChoice.WAIT, a.approval_id
    latest = matching[0] if matching else None
    if latest is not None and latest.status is St.DENIED:
        return ApprovalChoice.DENIED, latest.approval_id
    if latest is not None and latest.status in (St.EXPIRED, St.APPROVED, St.PENDING):
        return ApprovalChoice.RENEW, latest.approval_id
    return ApprovalChoice.REQUEST, None


def test_every_pair_of_approvals_meets_the_choice_the_gate_made() -> None:
    for newer, older in itertools.product(STATES, [None, *STATES]):
        approvals = [replace(newer, approval_id="apr_2")] + ([older] if older is not None else [])
        assert _choice(*approvals) == _as_the_gate_chose(approvals), approvals


def test_the_chosen_approval_is_the_callers_own_record() -> None:
    mine = _approved()
    chosen: ChosenApproval[_Approval] = choose_approval([mine], CALL, NOW)
    assert chosen.approval is mine


# -- the admit's check ---------------------------------------------------------------------------

BOUND = BoundApproval(
    approval_id="apr_1",
    run_id="run_1",
    tool="crm__create_contact",
    payload_sha256="a" * 64,
    spec_version="v1",
    status="approved",
    valid_until=NOW + HOUR,
)


def _check(bound: BoundApproval | None, now: float = NOW) -> Consumption:
    return consumable(
        bound, run_id="run_1", tool="crm__create_contact", payload_sha256="a" * 64, spec_version="v1", now=now
    )


@pytest.mark.parametrize(
    ("bound", "now", "expected", "code"),
    [
        (BOUND, NOW, Consumption.CONSUME, None),
        (replace(BOUND, valid_until=None), NOW, Consumption.CONSUME, None),  # no validity limit
        (None, NOW, Consumption.UNBOUND, "approval_required"),  # no such approval
        (replace(BOUND, run_id="run_2"), NOW, Consumption.UNBOUND, "approval_required"),
        (replace(BOUND, tool="crm__delete_contact"), NOW, Consumption.UNBOUND, "approval_required"),
        (replace(BOUND, payload_sha256="b" * 64), NOW, Consumption.UNBOUND, "approval_required"),
        (replace(BOUND, spec_version="v2"), NOW, Consumption.UNBOUND, "approval_required"),  # the contract moved
        (replace(BOUND, status="used"), NOW, Consumption.NOT_APPROVED, "approval_required"),  # used once already
        (replace(BOUND, status="pending"), NOW, Consumption.NOT_APPROVED, "approval_required"),
        (replace(BOUND, status="denied"), NOW, Consumption.NOT_APPROVED, "approval_required"),
        (BOUND, NOW + HOUR, Consumption.LAPSED, "approval_expired"),  # valid until, not a moment longer
        (replace(BOUND, status="used", valid_until=NOW), NOW, Consumption.NOT_APPROVED, "approval_required"),
        (replace(BOUND, run_id="run_2", status="pending"), NOW, Consumption.UNBOUND, "approval_required"),
    ],
    ids=[
        "an approval binding the call in time is consumed",
        "an approval with no validity limit is consumed",
        "no such approval",
        "another run's",
        "another tool's",
        "another payload's",
        "asked under an older contract",
        "used once already",
        "still pending",
        "denied",
        "lapsed at its valid_until",
        "a used one past its time is not approved, not lapsed",
        "one that binds nothing is named as such first",
    ],
)
def test_the_admit_consumes_only_an_approval_that_binds_the_call_and_is_approved_in_time(
    bound: BoundApproval | None, now: float, expected: Consumption, code: str | None
) -> None:
    check = _check(bound, now)
    assert check is expected
    refusal = consume_refusal(check, bound, "crm__create_contact")
    assert (refusal.code if refusal is not None else None) == code
    if refusal is not None and check is not Consumption.UNBOUND:
        assert refusal.details["approval_id"] == "apr_1"


def test_every_admit_check_has_its_answer() -> None:
    codes = {check: consume_refusal(check, BOUND, "t") for check in Consumption}
    assert codes[Consumption.CONSUME] is None
    assert all(refusal is not None for check, refusal in codes.items() if check is not Consumption.CONSUME)


# -- what follows a call --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "valid_until", "expected"),
    [
        (St.USED, NOW + 1, St.APPROVED),
        (St.USED, None, St.APPROVED),
        (St.USED, NOW, St.EXPIRED),  # its validity passed meanwhile
        *[(status, NOW + 1, None) for status in ApprovalStatus if status is not St.USED],
    ],
)
def test_a_call_never_sent_gives_its_approval_back_while_it_is_still_valid(
    status: ApprovalStatus, valid_until: float | None, expected: ApprovalStatus | None
) -> None:
    assert restored_approval(status.value, valid_until, NOW) is expected


@pytest.mark.parametrize(
    ("same_payload", "mine", "expected"),
    [
        (None, None, (None, None)),  # nothing pending: the new one replaces nothing
        (None, "apr_mine", ("apr_mine", None)),  # the requester's proposal for the tool is replaced
        ("apr_same", None, ("apr_same", None)),  # one for the same payload, under a looser rule
        ("apr_same", "apr_same", ("apr_same", None)),  # both at once
        ("apr_same", "apr_mine", ("apr_mine", "apr_same")),  # the looser one is superseded beside it
    ],
)
def test_a_new_request_supersedes_the_requesters_proposal_and_a_looser_one_for_the_payload(
    same_payload: str | None, mine: str | None, expected: tuple[str | None, str | None]
) -> None:
    assert superseded_by_request(same_payload, mine) == expected
