"""Gate step 8 and reconciliation: how an admitted action's outcome becomes its settled state, as
one table (`SETTLE_RULES`). Pure: no I/O, no clock; the store reads the rows, asks, writes the answer.

Four places end an action, and each builds its `Settlement` with one constructor of it:

- `dispatched`: the gate, with the adapter's outcome of the call it sent (or aborted: a hard
  cancel, a timeout and the shutdown end in `unknown` for a write, `failed` for a read);
- `reconciled`: a lookup's proof (the watchdog, a resume, `POST /api/runs/{id}/reconcile`);
- `resolved`: an operator's evidence for an `unknown` action (`POST /api/actions/{id}/resolve`);
- `orphaned`: the start-up and restore sweeps, for an admitted action nobody will settle.

One row per kind of outcome; `sent` is told apart only where it decides something:

| kind (status) | sent | code                | spend          | calls   | writes  | reservation | approval | happened |
| ---           | ---  | ---                 | ---            | ---     | ---     | ---         | ---      | ---      |
| `succeeded`   | any  | given               | actual or est. | charged | charged | released    | used     | yes      |
| `failed`      | yes  | given               | actual or 0    | charged | —       | released    | used     | no       |
| `failed`      | no   | given or `not_sent` | 0              | —       | —       | released    | restored | no       |
| `unknown`     | any  | given               | none           | —       | —       | held        | used     | no       |

- spend: what the action row records (est.: the tool's estimate), at most `MAX_MONEY`; the run's
  counter takes it up to its own saturation (`units.headroom`): the cost happened whatever it holds.
- calls / writes: the action's held tool call and write move to spent (a read holds no write).
- reservation: released, every held dimension leaves `reserved`; held: an `unknown` action keeps
  its hold until it is reconciled or resolved.
- approval: restored, the approval the call consumed is approved again while it is still valid,
  else expired (`approval_selection.restored_approval`): the request never left, so nothing used it.
- happened: the effect is known to have taken place. Only then is its result kept (a replay
  answers with it), a cost over the tool's `max_spend` a `budget_overrun`, and the run being
  cancelled an `effect_after_cancel`.

Beside the table: a read's settle from `admitted` writes its one ledger entry (what was asked: a
read's admit writes none); any outcome coded `upstream_unauthorized` alerts the operators.

Two steps, because the usual settle writes the action row before it reads the action: the row
(`settled_row`, from the settlement alone), then what follows from the action and its run
(`settle_effects`). Which status may become which is the action lifecycle's (lifecycle.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, NamedTuple, Protocol

from gateway.domain.lifecycle import ActionStatus
from gateway.domain.units import MAX_MONEY, headroom
from gateway.errors import Code


class SettleKind(StrEnum):
    SUCCEEDED = "succeeded"
    FAILED = "failed"  # the destination said no, or nothing was sent (see `sent`)
    UNKNOWN = "unknown"


# An adapter's outcome (adapters.base.OutcomeKind, by value) -> the settlement's kind and `sent`.
ENDINGS: dict[str, tuple[SettleKind, bool]] = {
    "succeeded": (SettleKind.SUCCEEDED, True),
    "failed": (SettleKind.FAILED, True),
    "not_sent": (SettleKind.FAILED, False),
    "unknown": (SettleKind.UNKNOWN, True),
}


@dataclass(frozen=True)
class Settlement:
    """How an admitted action ended, as the gate established it."""

    kind: SettleKind
    sent: bool = True  # False: the request never left; the reservation and any approval are restored
    code: str | None = None
    reason: str | None = None
    receipt: dict[str, Any] | None = None
    result: Any = None  # stored by hash for replay (succeeded only)
    actual_spend: int | None = None  # None: the policy's estimate
    estimate_spend: int = 0
    max_spend: int | None = None
    durable: bool = True  # fsync the commit (writes); reads may skip it

    # -- one constructor per place that settles (the module's docstring) ----------------------

    @classmethod
    def dispatched(
        cls,
        ending: str,
        *,
        write: bool,
        code: str | None = None,
        reason: str | None = None,
        receipt: dict[str, Any] | None = None,
        content: list[dict[str, Any]] | None = None,
        structured: Any = None,
        withheld: int | None = None,
        actual_spend: int | None = None,
        estimate_spend: int = 0,
        max_spend: int | None = None,
    ) -> Settlement:
        """The gate's: the outcome of the call it dispatched. Only a write's result is kept (a replay
        answers with it); a read's outcome need not be durable (no replay depends on it). A result
        over the cap (`withheld`: its size) of a write that succeeded: the write was performed, and its
        replay shows a note instead of the result; of a read: failed `payload_too_large`, its call
        counted (it was made)."""
        kind, sent = ENDINGS[ending]
        if withheld is not None and kind is SettleKind.SUCCEEDED:
            note = {"type": "text", "text": f"[payload_too_large] the result ({withheld} bytes seen) was withheld"}
            return cls(
                kind=SettleKind.SUCCEEDED if write else SettleKind.FAILED,
                sent=True,
                code=Code.PAYLOAD_TOO_LARGE,
                reason=f"the result ({withheld} bytes seen) is over the gateway's cap; withheld",
                receipt=receipt,
                result={"content": [note], "structured": None} if write else None,
                actual_spend=actual_spend,
                estimate_spend=estimate_spend,
                max_spend=max_spend,
                durable=write,
            )
        result = None
        if kind is SettleKind.SUCCEEDED and write:
            result = {"content": content if content is not None else [], "structured": structured}
        return cls(
            kind=kind,
            sent=sent,
            code=code,
            reason=reason,
            receipt=receipt,
            result=result,
            actual_spend=actual_spend,
            estimate_spend=estimate_spend,
            max_spend=max_spend,
            durable=write,
        )

    @classmethod
    def reconciled(
        cls,
        ending: str,
        *,
        code: str | None = None,
        receipt: dict[str, Any] | None = None,
        content: list[dict[str, Any]] | None = None,
        structured: Any = None,
        actual_spend: int | None = None,
        estimate_spend: int = 0,
        max_spend: int | None = None,
    ) -> Settlement | None:
        """A lookup's: what it proves of an `unknown` action, or None when it cannot tell (`unknown`):
        only a proof moves an action out of `unknown`."""
        kind, sent = ENDINGS[ending]
        if kind is SettleKind.UNKNOWN:
            return None
        if kind is SettleKind.SUCCEEDED:
            return cls(
                kind=SettleKind.SUCCEEDED,
                receipt=receipt,
                reason="reconciled: the destination confirms it happened",
                result={"content": content if content is not None else [], "structured": structured},
                actual_spend=actual_spend,
                estimate_spend=estimate_spend,
                max_spend=max_spend,
            )
        return cls(
            kind=SettleKind.FAILED,
            sent=sent,
            code=code,
            reason="reconciled: the destination confirms it did not happen",
        )

    @classmethod
    def resolved(
        cls,
        kind: SettleKind,
        *,
        by: str,
        evidence: str,
        receipt_id: str | None = None,
        actual_spend: int | None = None,
        estimate_spend: int = 0,
        duplicate: bool = False,
    ) -> Settlement:
        """An operator's, for an `unknown` action no lookup can settle (`succeeded` or `failed`): the
        evidence and who gave it are the receipt and the reason, so they enter the ledger; a success
        answers a later retry of its operation with them. `duplicate`: the operator found the effect
        happened more than once (`receipt.duplicate`, the report's duplicate_effects)."""
        receipt: dict[str, Any] = {"resolved_by": by, "evidence": evidence, "status": kind.value}
        if receipt_id is not None:
            receipt["id"] = receipt_id
        if duplicate:
            receipt["duplicate"] = True
        text = f"{kind.value}, as resolved by {by}: {evidence}"
        happened = kind is SettleKind.SUCCEEDED
        return cls(
            kind=kind,
            sent=True,
            code=None if happened else Code.UPSTREAM_FAILED,
            reason=f"resolved by an operator: {text}",
            receipt=receipt,
            result={"content": [{"type": "text", "text": text}], "structured": {"receipt": receipt}}
            if happened
            else None,
            actual_spend=actual_spend,
            estimate_spend=estimate_spend,
            max_spend=None,
        )

    @classmethod
    def orphaned(cls, reason: str) -> Settlement:
        """The sweeps': an admitted action whose outcome nobody will record (its process ended; the
        store was restored from a backup taken while it was in flight)."""
        return cls(kind=SettleKind.UNKNOWN, code=Code.OUTCOME_UNKNOWN, reason=reason)


class Spend(StrEnum):
    """What the action row records as spent."""

    ACTUAL_OR_ESTIMATE = "actual, else estimate"
    ACTUAL_OR_ZERO = "actual, else 0"
    ZERO = "0"
    NONE = "none"


@dataclass(frozen=True)
class SettleRule:
    kind: SettleKind
    sent: bool | None  # None: either
    status: ActionStatus
    default_code: str | None  # the code when the settlement gives none; None: as given
    spend: Spend
    charges_calls: bool  # the held tool call moves to spent
    charges_writes: bool  # the held write moves to spent
    releases: bool  # the reservation leaves `reserved`; False: it stays held
    restores_approval: bool  # the approval the call consumed is given back
    happened: bool  # the effect took place: an overrun or an effect after a cancel is named


S, F, U = SettleKind.SUCCEEDED, SettleKind.FAILED, SettleKind.UNKNOWN

SETTLE_RULES: tuple[SettleRule, ...] = (
    SettleRule(
        S, None, ActionStatus.SUCCEEDED, None, Spend.ACTUAL_OR_ESTIMATE,
        charges_calls=True, charges_writes=True, releases=True, restores_approval=False, happened=True,
    ),
    SettleRule(
        F, True, ActionStatus.FAILED, None, Spend.ACTUAL_OR_ZERO,
        charges_calls=True, charges_writes=False, releases=True, restores_approval=False, happened=False,
    ),
    SettleRule(
        F, False, ActionStatus.FAILED, "not_sent", Spend.ZERO,
        charges_calls=False, charges_writes=False, releases=True, restores_approval=True, happened=False,
    ),
    SettleRule(
        U, None, ActionStatus.UNKNOWN, None, Spend.NONE,
        charges_calls=False, charges_writes=False, releases=False, restores_approval=False, happened=False,
    ),
)  # fmt: skip

# Every (kind, sent) pair's row, looked up once per settle.
RULES: dict[tuple[SettleKind, bool], SettleRule] = {
    (kind, sent): next(r for r in SETTLE_RULES if r.kind is kind and r.sent in (None, sent))
    for kind in SettleKind
    for sent in (True, False)
}


def rule_for(settlement: Settlement) -> SettleRule:
    """The row of the table `settlement` meets."""
    return RULES[(settlement.kind, settlement.sent)]


# The rule's answers are NamedTuples, not frozen dataclasses: every call settles, and a tuple is
# built in a third of the time (they are as immutable).
class SettledRow(NamedTuple):
    """What the action row takes, whatever it held before."""

    status: ActionStatus
    code: str | None
    actual_spend: int | None  # minor units, at most MAX_MONEY; None: no spend is recorded
    keeps_result: bool = False  # the result is stored by hash, for a replay to answer with


def settled_row(settlement: Settlement) -> SettledRow:
    rule = rule_for(settlement)
    code = settlement.code if rule.default_code is None else settlement.code or rule.default_code
    actual: int | None
    if rule.spend is Spend.ACTUAL_OR_ESTIMATE:
        actual = settlement.actual_spend if settlement.actual_spend is not None else settlement.estimate_spend
    elif rule.spend is Spend.ACTUAL_OR_ZERO:
        actual = settlement.actual_spend or 0
    elif rule.spend is Spend.ZERO:
        actual = 0
    else:
        actual = None
    if actual is not None:
        actual = min(actual, MAX_MONEY)  # what any one value may hold (units.MAX_MONEY)
    return SettledRow(rule.status, code, actual, keeps_result=rule.happened and settlement.result is not None)


class SettlingAction(Protocol):
    """What the rule reads of the action being settled (store.records.ActionRecord has it)."""

    @property
    def effect(self) -> str: ...
    @property
    def reserved(self) -> Mapping[str, int]: ...
    @property
    def approval_id(self) -> str | None: ...


class Charged(NamedTuple):
    """What moves to the run's spent counters."""

    spend: int = 0
    tool_calls: int = 0
    writes: int = 0


NOTHING_CHARGED = Charged()


class SettleEffects(NamedTuple):
    """What settling the action does beside its row: to the run's counters and to the ledger."""

    releases: bool  # the action's reservation leaves the run's `reserved`
    charge: Charged
    read_entry: bool  # a read's one ledger entry states its intent (it had no `action_admitted`)
    restore_approval: str | None  # the approval to give back, if any
    overrun: bool  # `budget_overrun`: the cost is over the tool's max_spend
    after_cancel: bool  # `effect_after_cancel`: it happened while the run is cancelled (or failed)
    alert: bool  # an `alert` for the operators: the destination refused the gateway's credentials


def settle_effects(
    settlement: Settlement,
    row: SettledRow,
    *,
    previous: ActionStatus,
    action: SettlingAction,
    run_cancelled: bool,
    spend_spent: int,
) -> SettleEffects:
    """The rest of the rule, once the action (moved from `previous` to `row`) and its run are read.
    `run_cancelled`: the run's status is `cancelled` or `failed` (over by someone's decision, not its
    own end); `spend_spent`: its spend counter before this settle."""
    rule = rule_for(settlement)
    held = action.reserved
    charge = NOTHING_CHARGED
    if rule.releases:
        charge = Charged(
            # A cost already happened and is recorded whole on the action; the run's counter
            # saturates at MAX_MONEY instead of overflowing (a destination may report any amount).
            spend=headroom(spend_spent, row.actual_spend or 0),
            tool_calls=held["tool_calls"] if rule.charges_calls else 0,
            writes=held["writes"] if rule.charges_writes else 0,
        )
    return SettleEffects(
        releases=rule.releases,
        charge=charge,
        read_entry=action.effect != "write" and previous is ActionStatus.ADMITTED,
        restore_approval=(action.approval_id or None) if rule.restores_approval else None,
        overrun=rule.happened
        and settlement.max_spend is not None
        and row.actual_spend is not None
        and row.actual_spend > settlement.max_spend,
        after_cancel=rule.happened and run_cancelled,
        alert=row.code == Code.UPSTREAM_UNAUTHORIZED,
    )
