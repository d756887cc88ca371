"""Gate step 4: a write whose operation id the lineage already holds, as one table
(`REPLAY_RULES`). Pure: no I/O, no clock (whether the id is past `retention.idempotency` is
decided by the store on its clock: retention.operation_expired).

An operation id names one intended side effect across a whole lineage (operations.py). An action
that holds it (lifecycle.HOLDS_OPERATION: admitted, succeeded, unknown, compensated) answers every
later call under the same id; a failed or rejected one frees it, so the call goes on as a new attempt.
The first row that holds decides:

| the holder                            | decision      | the call                                 |
| ---                                   | ---           | ---                                      |
| none (or failed, rejected)            | `proceed`     | goes on to be admitted                   |
| another payload or another tool       | `conflict`    | refused `idempotency_conflict`           |
| settled, past `retention.idempotency` | `expired`     | refused `idempotency_expired`            |
| succeeded or compensated              | `replay`      | answered with the recorded result        |
| admitted (in flight)                  | `in_progress` | refused `operation_in_progress`          |
| unknown                               | `unknown`     | refused `outcome_unknown`: never retried |

None of the refusals executes anything again; each names the holder's action.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol

from gateway.clock import isoformat
from gateway.domain.lifecycle import HOLDS_OPERATION, ActionStatus
from gateway.domain.operations import OPERATION_ID_META
from gateway.errors import Code, Refusal


class Replay(StrEnum):
    PROCEED = "proceed"
    CONFLICT = "conflict"
    EXPIRED = "expired"
    REPLAY = "replay"
    IN_PROGRESS = "in_progress"
    UNKNOWN = "unknown"


class Holder(Protocol):
    """What the decision reads of the action holding the operation id (store.records.ActionRecord has it)."""

    @property
    def action_id(self) -> str: ...
    @property
    def operation_id(self) -> str | None: ...
    @property
    def tool(self) -> str: ...
    @property
    def payload_sha256(self) -> str: ...
    @property
    def status(self) -> ActionStatus: ...
    @property
    def created_at(self) -> float: ...


@dataclass(frozen=True)
class ReplayCall:
    """The call under the held operation id."""

    tool: str
    payload_sha256: str


Condition = Callable[[Holder | None, ReplayCall, bool], bool]


def _free(holder: Holder | None, call: ReplayCall, expired: bool) -> bool:
    return holder is None or holder.status not in HOLDS_OPERATION


def _other_payload(holder: Holder | None, call: ReplayCall, expired: bool) -> bool:
    assert holder is not None
    return holder.payload_sha256 != call.payload_sha256 or holder.tool != call.tool


def _expired(holder: Holder | None, call: ReplayCall, expired: bool) -> bool:
    return expired


def _settled(holder: Holder | None, call: ReplayCall, expired: bool) -> bool:
    assert holder is not None
    return holder.status in (ActionStatus.SUCCEEDED, ActionStatus.COMPENSATED)


def _in_flight(holder: Holder | None, call: ReplayCall, expired: bool) -> bool:
    assert holder is not None
    return holder.status is ActionStatus.ADMITTED


def _always(holder: Holder | None, call: ReplayCall, expired: bool) -> bool:
    return True


@dataclass(frozen=True)
class ReplayRule:
    decision: Replay
    when: str  # the condition in words (the module's table)
    condition: Condition
    refusal: Code | None  # the code the call is refused with; None: not refused


# In order: the first row whose condition holds decides.
REPLAY_RULES: tuple[ReplayRule, ...] = (
    ReplayRule(Replay.PROCEED, "none (or failed, rejected)", _free, None),
    ReplayRule(Replay.CONFLICT, "another payload or another tool", _other_payload, Code.IDEMPOTENCY_CONFLICT),
    ReplayRule(Replay.EXPIRED, "settled, past `retention.idempotency`", _expired, Code.IDEMPOTENCY_EXPIRED),
    ReplayRule(Replay.REPLAY, "succeeded or compensated", _settled, None),
    ReplayRule(Replay.IN_PROGRESS, "admitted (in flight)", _in_flight, Code.OPERATION_IN_PROGRESS),
    ReplayRule(Replay.UNKNOWN, "unknown", _always, Code.OUTCOME_UNKNOWN),
)
RULES: dict[Replay, ReplayRule] = {rule.decision: rule for rule in REPLAY_RULES}


def replay_rule(holder: Holder | None, call: ReplayCall, expired: bool = False) -> ReplayRule:
    """The row a call meets whose operation id `holder` holds (`expired`: past retention.idempotency,
    as the store found it)."""
    return next(rule for rule in REPLAY_RULES if rule.condition(holder, call, expired))


def replay_refusal(decision: Replay, holder: Holder) -> Refusal | None:
    """The refusal a call meets under `decision` (None: it proceeds, or is answered with the replay)."""
    if decision is Replay.CONFLICT:
        return Refusal(
            Code.IDEMPOTENCY_CONFLICT,
            f"not executed: operation {holder.operation_id} was already used for another payload (action "
            f"{holder.action_id}); one operation id names one payload: send this one under a fresh "
            f"_meta[{OPERATION_ID_META!r}]",
            action_id=holder.action_id,
        )
    if decision is Replay.EXPIRED:
        return Refusal(
            Code.IDEMPOTENCY_EXPIRED,
            f"operation {holder.operation_id} was first recorded at {isoformat(holder.created_at)} (action "
            f"{holder.action_id}), longer ago than the gateway keeps operation ids; it is neither replayed nor "
            "executed again: send a fresh operation id, or warrant_repeat(action_id, reason)",
            action_id=holder.action_id,
            recorded_at=isoformat(holder.created_at),
        )
    if decision is Replay.IN_PROGRESS:
        return Refusal(
            Code.OPERATION_IN_PROGRESS,
            f"not executed again: the same operation is still in flight as action {holder.action_id}; its "
            "outcome will be recorded once: call again with the same arguments in a few seconds to get its result",
            action_id=holder.action_id,
            retry_after_s=2,
        )
    if decision is Replay.UNKNOWN:
        return Refusal(
            Code.OUTCOME_UNKNOWN,
            f"not executed again: action {holder.action_id} of the same operation may have happened (its outcome "
            "is unknown); do not retry it: an operator or the adapter's lookup reconciles it, after which this "
            "call replays its result or may be made again (warrant_status shows the run)",
            action_id=holder.action_id,
        )
    return None
