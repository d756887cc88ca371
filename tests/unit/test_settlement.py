"""The settle rule (gateway/domain/settlement.py): its table, every place that settles held to it,
and the settlements each of them builds."""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from gateway.adapters import OutcomeKind
from gateway.domain import MAX_MONEY, ActionStatus, SettleKind, Settlement, settle_effects, settled_row
from gateway.domain import settlement as settlement_module
from gateway.domain.lifecycle import ACTION_TRANSITIONS
from gateway.domain.settlement import (
    ENDINGS,
    RULES,
    SETTLE_RULES,
    Charged,
    SettledRow,
    SettleEffects,
    SettleRule,
    Spend,
    rule_for,
)

GATEWAY = Path(__file__).resolve().parents[2] / "gateway"
S, F, U = SettleKind.SUCCEEDED, SettleKind.FAILED, SettleKind.UNKNOWN
A = ActionStatus


@dataclass(frozen=True)
class _Action:
    effect: str = "write"
    reserved: dict[str, int] = field(default_factory=lambda: {"spend": 500, "tool_calls": 1, "writes": 1})
    approval_id: str | None = None


def _read() -> _Action:
    return _Action(effect="read", reserved={"spend": 0, "tool_calls": 1, "writes": 0})


def _effects(
    settlement: Settlement,
    action: _Action | None = None,
    *,
    previous: ActionStatus = A.ADMITTED,
    cancelled: bool = False,
    spend_spent: int = 0,
) -> SettleEffects:
    return settle_effects(
        settlement,
        settled_row(settlement),
        previous=previous,
        action=action or _Action(),
        run_cancelled=cancelled,
        spend_spent=spend_spent,
    )


# The table, written out again here so that it is checked, not echoed.
EXPECTED_RULES = [
    # kind, sent, status, default code, spend, calls, writes, releases, restores approval, happened
    (S, None, A.SUCCEEDED, None, Spend.ACTUAL_OR_ESTIMATE, True, True, True, False, True),
    (F, True, A.FAILED, None, Spend.ACTUAL_OR_ZERO, True, False, True, False, False),
    (F, False, A.FAILED, "not_sent", Spend.ZERO, False, False, True, True, False),
    (U, None, A.UNKNOWN, None, Spend.NONE, False, False, False, False, False),
]


def _fields(rule: SettleRule) -> tuple[object, ...]:
    return (
        rule.kind,
        rule.sent,
        rule.status,
        rule.default_code,
        rule.spend,
        rule.charges_calls,
        rule.charges_writes,
        rule.releases,
        rule.restores_approval,
        rule.happened,
    )


def test_the_settle_table_is_the_designed_one() -> None:
    assert [_fields(rule) for rule in SETTLE_RULES] == EXPECTED_RULES


@pytest.mark.parametrize(("kind", "sent"), list(itertools.product(SettleKind, (True, False))))
def test_every_kind_and_sent_meets_exactly_one_row_and_its_status_is_the_kind(kind: SettleKind, sent: bool) -> None:
    rows = [rule for rule in SETTLE_RULES if rule.kind is kind and rule.sent in (None, sent)]
    assert len(rows) == 1
    assert RULES[(kind, sent)] is rows[0] is rule_for(Settlement(kind, sent=sent))
    assert rows[0].status.value == kind.value


def test_every_status_the_rule_settles_to_is_one_the_lifecycle_reaches_from_admitted_and_unknown() -> None:
    targets = {rule.status for rule in SETTLE_RULES}
    assert targets == {target for (current, target) in ACTION_TRANSITIONS if current is A.ADMITTED}
    assert {(A.UNKNOWN, t) for t in targets if t is not A.UNKNOWN} <= ACTION_TRANSITIONS


def test_the_module_docstring_shows_the_same_table() -> None:
    doc = settlement_module.__doc__ or ""
    table = doc[doc.index("| kind") :].split("\n\n", 1)[0]
    rows = [[cell.strip() for cell in line.strip("|").split("|")] for line in table.splitlines()[2:]]
    assert len(rows) == len(SETTLE_RULES)
    for row, rule in zip(rows, SETTLE_RULES, strict=True):
        kind, sent, code, _spend, calls, writes, reservation, approval, happened = row
        assert kind == f"`{rule.kind.value}`"
        assert sent == {None: "any", True: "yes", False: "no"}[rule.sent]
        assert ("`not_sent`" in code) is (rule.default_code == "not_sent")
        assert (calls == "charged", writes == "charged") == (rule.charges_calls, rule.charges_writes)
        assert reservation == ("released" if rule.releases else "held")
        assert approval == ("restored" if rule.restores_approval else "used")
        assert happened == ("yes" if rule.happened else "no")


# Each row: a behaviour, the settlement, and the row and charge it must come to (a write holding
# 5.00, one call and one write, settled from admitted on a running run that has spent nothing).
@dataclass(frozen=True)
class Case:
    sentence: str
    settlement: Settlement
    row: SettledRow
    charge: Charged


CASES = [
    Case(
        "a success with no reported cost spends the tool's estimate and charges its call and its write",
        Settlement(S, estimate_spend=300),
        SettledRow(A.SUCCEEDED, None, 300),
        Charged(300, 1, 1),
    ),
    Case(
        "a success spends what the destination reported, not the estimate",
        Settlement(S, actual_spend=120, estimate_spend=300),
        SettledRow(A.SUCCEEDED, None, 120),
        Charged(120, 1, 1),
    ),
    Case(
        "a success reported free spends nothing, whatever the estimate",
        Settlement(S, actual_spend=0, estimate_spend=300),
        SettledRow(A.SUCCEEDED, None, 0),
        Charged(0, 1, 1),
    ),
    Case(
        "a cost above what one value may hold is recorded as MAX_MONEY",
        Settlement(S, actual_spend=MAX_MONEY * 10),
        SettledRow(A.SUCCEEDED, None, MAX_MONEY),
        Charged(MAX_MONEY, 1, 1),
    ),
    Case(
        "a failure that was sent spends what it reported and charges its call, never its write",
        Settlement(F, code="upstream_failed", actual_spend=40, estimate_spend=300),
        SettledRow(A.FAILED, "upstream_failed", 40),
        Charged(40, 1, 0),
    ),
    Case(
        "a failure that was sent and reported no cost spends nothing, not the estimate",
        Settlement(F, code="upstream_failed", estimate_spend=300),
        SettledRow(A.FAILED, "upstream_failed", 0),
        Charged(0, 1, 0),
    ),
    Case(
        "a call never sent spends nothing, charges nothing and is coded not_sent",
        Settlement(F, sent=False, actual_spend=40, estimate_spend=300),
        SettledRow(A.FAILED, "not_sent", 0),
        Charged(0, 0, 0),
    ),
    Case(
        "a call never sent keeps the code it was given",
        Settlement(F, sent=False, code="upstream_unavailable"),
        SettledRow(A.FAILED, "upstream_unavailable", 0),
        Charged(0, 0, 0),
    ),
    Case(
        "an unknown outcome records no spend and charges nothing: the reservation stays held",
        Settlement(U, code="outcome_unknown", actual_spend=40, estimate_spend=300),
        SettledRow(A.UNKNOWN, "outcome_unknown", None),
        Charged(0, 0, 0),
    ),
    Case(
        "an unknown outcome of a call never sent is unknown all the same",
        Settlement(U, sent=False, code="outcome_unknown"),
        SettledRow(A.UNKNOWN, "outcome_unknown", None),
        Charged(0, 0, 0),
    ),
    Case(
        "a success whose request never left is charged as a success",
        Settlement(S, sent=False, estimate_spend=300),
        SettledRow(A.SUCCEEDED, None, 300),
        Charged(300, 1, 1),
    ),
]


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.sentence)
def test_each_settlement_comes_to_its_row_and_its_charge(case: Case) -> None:
    assert settled_row(case.settlement) == case.row
    effects = _effects(case.settlement)
    assert effects.charge == case.charge
    assert effects.releases is rule_for(case.settlement).releases


def test_the_sentences_reach_every_row_of_the_table() -> None:
    assert {id(rule_for(case.settlement)) for case in CASES} == {id(rule) for rule in SETTLE_RULES}
    assert {(case.settlement.kind, case.settlement.sent) for case in CASES} == set(RULES)


def test_only_a_success_keeps_its_result_for_replay() -> None:
    for kind, sent in RULES:
        assert settled_row(Settlement(kind, sent=sent, result={"content": []})).keeps_result is (kind is S)
    assert not settled_row(Settlement(S)).keeps_result  # nothing to keep: a read's success


def test_the_runs_spend_counter_saturates_while_the_action_records_the_whole_cost() -> None:
    done = Settlement(S, actual_spend=900)
    assert settled_row(done).actual_spend == 900
    assert _effects(done, spend_spent=MAX_MONEY - 100).charge.spend == 100
    assert _effects(done, spend_spent=MAX_MONEY).charge.spend == 0


def test_a_cost_over_the_tools_max_spend_is_an_overrun_only_when_the_effect_happened() -> None:
    assert _effects(Settlement(S, actual_spend=101, max_spend=100)).overrun
    assert not _effects(Settlement(S, actual_spend=100, max_spend=100)).overrun
    assert not _effects(Settlement(S, actual_spend=101)).overrun  # no max: nothing to overrun
    assert not _effects(Settlement(F, actual_spend=101, max_spend=100)).overrun
    assert not _effects(Settlement(U, actual_spend=101, max_spend=100)).overrun
    assert _effects(Settlement(S, estimate_spend=101, max_spend=100)).overrun  # the estimate stands in


def test_a_success_while_the_run_is_cancelled_is_an_effect_after_cancel_and_nothing_else_is() -> None:
    for cancelled, kind in itertools.product((False, True), SettleKind):
        after = _effects(Settlement(kind), cancelled=cancelled).after_cancel
        assert after is (kind is S and cancelled)


def test_a_reads_settle_from_admitted_writes_its_one_entry_and_nothing_else_does() -> None:
    for kind, previous in itertools.product(SettleKind, (A.ADMITTED, A.UNKNOWN)):
        assert _effects(Settlement(kind), _read(), previous=previous).read_entry is (previous is A.ADMITTED)
        assert not _effects(Settlement(kind), previous=previous).read_entry


def test_only_a_call_never_sent_gives_its_approval_back() -> None:
    approved = _Action(approval_id="apr_1")
    for kind, sent in RULES:
        given_back = _effects(Settlement(kind, sent=sent), approved).restore_approval
        assert given_back == ("apr_1" if (kind, sent) == (F, False) else None)
    assert _effects(Settlement(F, sent=False)).restore_approval is None  # no approval: nothing to give back


def test_an_outcome_coded_upstream_unauthorized_alerts_whatever_its_kind() -> None:
    for kind, sent in RULES:
        assert _effects(Settlement(kind, sent=sent, code="upstream_unauthorized")).alert
        assert not _effects(Settlement(kind, sent=sent, code="upstream_failed")).alert


GRID = list(
    itertools.product(
        SettleKind,
        (True, False),  # sent
        (A.ADMITTED, A.UNKNOWN),  # previous
        ("read", "write"),
        (None, "apr_1"),  # the approval it consumed
        (False, True),  # the run is cancelled
    )
)


@pytest.mark.parametrize(("kind", "sent", "previous", "effect", "approval", "cancelled"), GRID)
def test_the_effects_follow_the_row(
    kind: SettleKind, sent: bool, previous: ActionStatus, effect: str, approval: str | None, cancelled: bool
) -> None:
    held = {"spend": 500, "tool_calls": 1, "writes": int(effect == "write")}
    settlement = Settlement(kind, sent=sent, actual_spend=200, max_spend=100)
    action = _Action(effect, held, approval)
    effects = _effects(settlement, action, previous=previous, cancelled=cancelled, spend_spent=7)
    rule = rule_for(settlement)
    assert effects.releases is rule.releases
    if rule.releases:
        spend = settled_row(settlement).actual_spend or 0
        calls, writes = held["tool_calls"] * rule.charges_calls, held["writes"] * rule.charges_writes
        assert effects.charge == Charged(spend, calls, writes)
    else:
        assert effects.charge == Charged()
    assert effects.restore_approval == (approval if rule.restores_approval else None)
    assert effects.overrun is rule.happened
    assert effects.after_cancel is (rule.happened and cancelled)
    assert effects.read_entry is (effect == "read" and previous is A.ADMITTED)


# -- the settlements, as each place that settles builds them ----------------------------------


def test_every_adapter_outcome_has_its_ending() -> None:
    assert set(ENDINGS) == {kind.value for kind in OutcomeKind}
    assert ENDINGS["not_sent"] == (F, False)
    assert all(sent for name, (_, sent) in ENDINGS.items() if name != "not_sent")


def test_nothing_outside_the_domain_builds_a_settlement_of_its_own() -> None:
    """Every place that settles takes its Settlement from gateway/domain/settlement.py."""
    builds = re.compile(r"\bSettlement\(")
    offenders = [
        str(path.relative_to(GATEWAY))
        for path in GATEWAY.rglob("*.py")
        if path.name != "settlement.py" and builds.search(path.read_text())
    ]
    assert offenders == []


def test_a_dispatched_write_keeps_its_result_for_replay_and_is_durable() -> None:
    done = Settlement.dispatched(
        OutcomeKind.SUCCEEDED,
        write=True,
        receipt={"id": "r1"},
        content=[{"type": "text", "text": "ok"}],
        structured={"id": 1},
        actual_spend=5,
        estimate_spend=7,
        max_spend=9,
    )
    assert done == Settlement(
        S,
        receipt={"id": "r1"},
        result={"content": [{"type": "text", "text": "ok"}], "structured": {"id": 1}},
        actual_spend=5,
        estimate_spend=7,
        max_spend=9,
        durable=True,
    )


def test_a_dispatched_read_keeps_no_result_and_need_not_be_durable() -> None:
    done = Settlement.dispatched(OutcomeKind.SUCCEEDED, write=False, content=[{"type": "text", "text": "ok"}])
    assert (done.kind, done.result, done.durable) == (S, None, False)


@pytest.mark.parametrize("write", [True, False])
def test_a_dispatched_call_never_sent_fails_unsent_and_one_that_failed_or_is_unknown_was_sent(write: bool) -> None:
    assert (
        Settlement.dispatched(OutcomeKind.NOT_SENT, write=write).kind,
        Settlement.dispatched("not_sent", write=write).sent,
    ) == (F, False)
    failed = Settlement.dispatched(OutcomeKind.FAILED, write=write, code="rate_limited", reason="slow down")
    assert (failed.kind, failed.sent, failed.code, failed.reason, failed.result) == (
        F,
        True,
        "rate_limited",
        "slow down",
        None,
    )
    unknown = Settlement.dispatched(OutcomeKind.UNKNOWN, write=write, code="outcome_unknown")
    assert (unknown.kind, unknown.sent, unknown.durable) == (U, True, write)


def test_a_withheld_result_of_a_write_succeeded_with_a_note_and_of_a_read_failed() -> None:
    write = Settlement.dispatched(OutcomeKind.SUCCEEDED, write=True, withheld=2048, receipt={"id": "r"}, actual_spend=3)
    note = {"type": "text", "text": "[payload_too_large] the result (2048 bytes seen) was withheld"}
    assert write == Settlement(
        S,
        code="payload_too_large",
        reason="the result (2048 bytes seen) is over the gateway's cap; withheld",
        receipt={"id": "r"},
        result={"content": [note], "structured": None},
        actual_spend=3,
    )
    read = Settlement.dispatched(OutcomeKind.SUCCEEDED, write=False, withheld=2048)
    assert (read.kind, read.sent, read.code, read.result, read.durable) == (F, True, "payload_too_large", None, False)
    assert rule_for(read).charges_calls  # the call was made: it counts
    assert (
        Settlement.dispatched(OutcomeKind.FAILED, write=True, withheld=2048).code is None
    )  # only a result is withheld


def test_a_lookup_that_cannot_tell_settles_nothing_and_a_proof_settles_with_its_reason() -> None:
    assert Settlement.reconciled(OutcomeKind.UNKNOWN) is None
    happened = Settlement.reconciled(
        OutcomeKind.SUCCEEDED, receipt={"id": "r"}, content=[], structured=None, estimate_spend=4
    )
    assert happened == Settlement(
        S,
        reason="reconciled: the destination confirms it happened",
        receipt={"id": "r"},
        result={"content": [], "structured": None},
        estimate_spend=4,
    )
    not_done = Settlement.reconciled(OutcomeKind.FAILED, code="upstream_failed", actual_spend=9, receipt={"id": "r"})
    assert not_done == Settlement(
        F, code="upstream_failed", reason="reconciled: the destination confirms it did not happen"
    )
    never_left = Settlement.reconciled(OutcomeKind.NOT_SENT)
    assert never_left is not None and (never_left.kind, never_left.sent) == (F, False)


def test_an_operators_resolution_records_the_evidence_and_who_gave_it() -> None:
    done = Settlement.resolved(
        S, by="ops@acme", evidence="seen in the CRM", receipt_id="c-1", actual_spend=5, estimate_spend=7
    )
    receipt = {"resolved_by": "ops@acme", "evidence": "seen in the CRM", "status": "succeeded", "id": "c-1"}
    text = "succeeded, as resolved by ops@acme: seen in the CRM"
    assert done == Settlement(
        S,
        reason=f"resolved by an operator: {text}",
        receipt=receipt,
        result={"content": [{"type": "text", "text": text}], "structured": {"receipt": receipt}},
        actual_spend=5,
        estimate_spend=7,
    )
    failed = Settlement.resolved(F, by="ops@acme", evidence="not in the CRM")
    assert (failed.kind, failed.sent, failed.code, failed.result) == (F, True, "upstream_failed", None)
    assert failed.receipt == {"resolved_by": "ops@acme", "evidence": "not in the CRM", "status": "failed"}


def test_an_orphan_becomes_unknown_and_keeps_its_hold() -> None:
    orphan = Settlement.orphaned("the process ended")
    assert settled_row(orphan) == SettledRow(A.UNKNOWN, "outcome_unknown", None)
    assert orphan.reason == "the process ended" and not rule_for(orphan).releases
