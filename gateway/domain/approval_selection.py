"""Gate step 5: which approval of a run a call meets, as tables. Pure: no I/O, no clock (`now` is
passed in); the gate and the store read the approvals, ask, and write what follows.

Which approvals speak for a call: those of its run, tool and exact payload (the store's look-up),
asked under the run's current contract (`spec_version`) and the tool's current definition, and
under a rule at least as strict as the one in force (approvals.Requirement; a denial stands
whatever rule it was asked under). Of those, newest first, the first row that holds decides
(`CHOICE_RULES`). The look-up also finds the approvals a person approved in an edited version
(`proposed_sha256` is the call's payload, `payload_sha256` the edit's): such an approval is never
used for the payload it replaced, only answered with (docs/decisions/0032-approve-edited.md).

| among them                                     | choice    | the call                                           |
| ---                                            | ---       | ---                                                |
| one approved whose validity has not passed     | `use`     | admitted, consuming it                             |
| one pending whose decision time has not passed | `wait`    | refused `approval_required`, naming it             |
| the newest is an edit approved in its place    | `edited`  | refused `approval_edited`, with the approved arguments |
| the newest is denied                           | `denied`  | refused `approval_denied`                          |
| the newest is approved, pending or expired     | `renew`   | a fresh approval is asked for: `approval_expired`  |
| anything else (none; superseded, used)         | `request` | a fresh approval is asked for: `approval_required` |

The admit consumes the approval it was handed only if it still binds the call (`consumable`):
the same run, tool, payload and contract, approved, and not past its validity (then the admit
marks it expired). A call consumed it and was never sent: it is given back, approved while still
valid, else expired (`restored_approval`). Asking for one: a pending one for the same payload
asked under a rule as strict is answered instead; otherwise the new one supersedes the
requester's pending proposal for the tool, and one for the same payload under a looser rule
(`superseded_by_request`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Generic, Protocol, TypeVar

from gateway.domain.approvals import Requirement
from gateway.domain.lifecycle import ApprovalStatus
from gateway.errors import Code, Refusal


class ApprovalFacts(Protocol):
    """What the choice reads of an approval (store.records.ApprovalRecord has it)."""

    @property
    def approval_id(self) -> str: ...
    @property
    def status(self) -> ApprovalStatus: ...
    @property
    def spec_version(self) -> str: ...
    @property
    def tool_def_sha256(self) -> str: ...
    @property
    def requirement(self) -> Requirement: ...
    @property
    def decide_by(self) -> float: ...
    @property
    def valid_until(self) -> float | None: ...
    @property
    def payload_sha256(self) -> str: ...


A = TypeVar("A", bound=ApprovalFacts)


class ApprovalChoice(StrEnum):
    USE = "use"
    WAIT = "wait"
    EDITED = "edited"
    DENIED = "denied"
    RENEW = "renew"
    REQUEST = "request"


@dataclass(frozen=True)
class ChosenApproval(Generic[A]):
    choice: ApprovalChoice
    approval: A | None  # use, wait: the approval; edited, denied, renew: the newest one; request: None


@dataclass(frozen=True)
class ApprovalCall:
    """The call, as the approvals that speak for it must have been asked under."""

    spec_version: str
    tool_def_sha256: str
    required: Requirement
    # The call's payload hash; None: every approval handed to the choice is of this payload (none edited).
    payload_sha256: str | None = None

    def edited_away(self, approval: ApprovalFacts) -> bool:
        """`approval` was found by the payload it replaced: a person approved an edit in its place."""
        return self.payload_sha256 is not None and approval.payload_sha256 != self.payload_sha256


def speaks_for(approval: ApprovalFacts, call: ApprovalCall) -> bool:
    """Whether `approval` (of the call's run, tool and payload) counts for `call`: asked under the
    same contract and tool definition, and a rule at least as strict. One asked under a looser rule
    (the policy tightened since) is neither used nor waited on; a denial stands whatever rule it
    was asked under."""
    return (
        approval.spec_version == call.spec_version
        and approval.tool_def_sha256 == call.tool_def_sha256
        and (approval.status is ApprovalStatus.DENIED or call.required.met_by(approval.requirement))
    )


# The index, among the approvals that speak for the call (newest first), of the one a row is about.
Condition = Callable[[Sequence[ApprovalFacts], ApprovalCall, float], int | None]


def _usable(matching: Sequence[ApprovalFacts], call: ApprovalCall, now: float) -> int | None:
    found = (
        i
        for i, a in enumerate(matching)
        if a.status is ApprovalStatus.APPROVED and (a.valid_until or 0) > now and not call.edited_away(a)
    )
    return next(found, None)


def _waiting(matching: Sequence[ApprovalFacts], call: ApprovalCall, now: float) -> int | None:
    found = (
        i
        for i, a in enumerate(matching)
        if a.status is ApprovalStatus.PENDING and a.decide_by > now and not call.edited_away(a)
    )
    return next(found, None)


def _edited(matching: Sequence[ApprovalFacts], call: ApprovalCall, now: float) -> int | None:
    return 0 if matching and call.edited_away(matching[0]) else None


def _newest(*statuses: ApprovalStatus) -> Condition:
    def newest(matching: Sequence[ApprovalFacts], call: ApprovalCall, now: float) -> int | None:
        return 0 if matching and matching[0].status in statuses else None

    return newest


def _nothing(matching: Sequence[ApprovalFacts], call: ApprovalCall, now: float) -> int | None:
    return None


@dataclass(frozen=True)
class ChoiceRule:
    choice: ApprovalChoice
    when: str  # the condition in words (the module's table)
    finds: Condition  # the approval the row is about, if the row holds (`request`: it holds when none does)
    answer: Code | None  # the code the call is answered with; None: admitted


# In order: the first row that finds its approval decides; `request` when none does.
CHOICE_RULES: tuple[ChoiceRule, ...] = (
    ChoiceRule(ApprovalChoice.USE, "one approved whose validity has not passed", _usable, None),
    ChoiceRule(ApprovalChoice.WAIT, "one pending whose decision time has not passed", _waiting, Code.APPROVAL_REQUIRED),
    ChoiceRule(ApprovalChoice.EDITED, "the newest is an edit approved in its place", _edited, Code.APPROVAL_EDITED),
    ChoiceRule(ApprovalChoice.DENIED, "the newest is denied", _newest(ApprovalStatus.DENIED), Code.APPROVAL_DENIED),
    ChoiceRule(
        ApprovalChoice.RENEW,
        "the newest is approved, pending or expired",
        _newest(ApprovalStatus.APPROVED, ApprovalStatus.PENDING, ApprovalStatus.EXPIRED),
        Code.APPROVAL_EXPIRED,
    ),
    ChoiceRule(ApprovalChoice.REQUEST, "anything else (none; superseded, used)", _nothing, Code.APPROVAL_REQUIRED),
)


def choose_approval(approvals: Sequence[A], call: ApprovalCall, now: float) -> ChosenApproval[A]:
    """The approval `call` meets among `approvals` (its run's, for its tool and exact payload, or
    approved in an edited version of it, newest first)."""
    matching = [a for a in approvals if speaks_for(a, call)]
    for rule in CHOICE_RULES:
        found = rule.finds(matching, call, now)
        if found is not None:
            return ChosenApproval(rule.choice, matching[found])
    return ChosenApproval(ApprovalChoice.REQUEST, None)


# -- the admit's check, and what follows a call ------------------------------------------------


@dataclass(frozen=True)
class BoundApproval:
    """The approval an admit was handed, as the store reads it in its transaction."""

    approval_id: str
    run_id: str
    tool: str
    payload_sha256: str
    spec_version: str
    status: str
    valid_until: float | None


class Consumption(StrEnum):
    CONSUME = "consume"  # the admit consumes it (marks it used by the action)
    UNBOUND = "unbound"  # refused approval_required: it does not bind this call
    NOT_APPROVED = "not_approved"  # refused approval_required: not (or no longer) approved
    LAPSED = "lapsed"  # refused approval_expired: the admit marks it expired


def consumable(
    approval: BoundApproval | None, *, run_id: str, tool: str, payload_sha256: str, spec_version: str, now: float
) -> Consumption:
    """Whether the admit of this call may consume `approval` (None: no such approval)."""
    if (
        approval is None
        or approval.run_id != run_id
        or approval.tool != tool
        or approval.payload_sha256 != payload_sha256
        or approval.spec_version != spec_version
    ):
        return Consumption.UNBOUND
    if approval.status != ApprovalStatus.APPROVED.value:
        return Consumption.NOT_APPROVED
    if approval.valid_until is not None and now >= approval.valid_until:
        return Consumption.LAPSED
    return Consumption.CONSUME


def consume_refusal(check: Consumption, approval: BoundApproval | None, tool: str) -> Refusal | None:
    """The refusal an admit answers with after `check` (None: it consumes the approval)."""
    if check is Consumption.CONSUME:
        return None
    if check is Consumption.UNBOUND or approval is None:
        return Refusal(
            Code.APPROVAL_REQUIRED,
            "not executed: no approval binds this exact payload under the run's current contract"
            "; call again with the same arguments: a fresh approval is asked for if one is needed",
            tool=tool,
        )
    if check is Consumption.NOT_APPROVED:
        return Refusal(
            Code.APPROVAL_REQUIRED,
            f"not executed: approval {approval.approval_id} is {approval.status}, not approved; check with "
            "warrant_status, and call again with the same arguments once it is approved",
            approval_id=approval.approval_id,
        )
    return Refusal(
        Code.APPROVAL_EXPIRED,
        f"not executed: approval {approval.approval_id} lapsed before it was used; call again with the same "
        "arguments to ask for a fresh approval",
        approval_id=approval.approval_id,
    )


def restored_approval(status: str, valid_until: float | None, now: float) -> ApprovalStatus | None:
    """What an approval consumed by a call that was never sent becomes: approved again while still
    valid, else expired; None when it is not `used` (nothing to give back)."""
    if status != ApprovalStatus.USED.value:
        return None
    still_valid = valid_until is None or now < valid_until
    return ApprovalStatus.APPROVED if still_valid else ApprovalStatus.EXPIRED


def superseded_by_request(same_payload: str | None, mine: str | None) -> tuple[str | None, str | None]:
    """The pending approvals a new request supersedes, as (replaced, stale): the requester's newest
    pending proposal for the tool (`mine`, never a milestone's review) is replaced by the new one;
    the newest pending one for the exact payload (`same_payload`), asked under a looser rule than
    the one in force (else it would have been reused), is replaced when the requester has none,
    and superseded beside it otherwise."""
    replaced = mine if mine is not None else same_payload
    stale = same_payload if same_payload is not None and same_payload != replaced else None
    return replaced, stale
