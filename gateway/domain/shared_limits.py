"""Limits shared across runs: one tool's or one destination's calls in flight and rate, however many
runs, tenants and replicas call it (docs/limits.md, "Shared limits"). Pure: time is an argument.

A shared limit is a `SharedCap` (gateway/domain/limits.py, beside the call's other limits): the
scope it is counted under (`tool:<name>` or `destination:<adapter>`), the exposed tools it counts,
and at most `max_concurrent` of their calls admitted and not yet settled, at most `rate` of them
admitted per period. Both live in the store: the calls in flight are the `admitted` actions of
those tools (a settle, or the orphan sweep that marks a dead process's calls `unknown`, frees the
slot), counted in the admit transaction; the rate is a GCRA row like every other rate.

A slot is held at most `hold_s` after its admit: the longest tool timeout of the scope and a grace.
An admitted call older than that is not in flight at the destination any more (the gate gave up
on it at its timeout), so a process that died holding it, and is never started again, does not
keep the slot forever.

A call over a shared limit is refused `shared_limit` (retryable, `retry_after_s`), never queued:
the agent decides whether to wait, and no request is held open in the gateway (docs/decisions/0028).
"""

from __future__ import annotations

from gateway.domain.limits import CONCURRENCY_RETRY_S, SHARED_PREFIX, SharedCap
from gateway.errors import Code, Refusal

SLOT_GRACE_S = 5.0  # seconds past the longest tool timeout a slot is still counted: admit to dispatch, settle


def slots_since(cap: SharedCap, now: float) -> float:
    """The oldest admit time whose call still holds a slot of `cap`."""
    return now - cap.hold_s


def concurrency_refusal(cap: SharedCap, in_flight: int) -> Refusal | None:
    """`shared_limit` when `in_flight` calls already hold every slot of `cap`."""
    if cap.max_concurrent is None or in_flight < cap.max_concurrent:
        return None
    return Refusal(
        Code.SHARED_LIMIT,
        f"{cap.scope} already has {in_flight} calls in flight across the gateway, its limit; "
        "try again when one has settled",
        limit="max_concurrent",
        scope=cap.scope,
        max=cap.max_concurrent,
        retry_after_s=CONCURRENCY_RETRY_S,
    )


def rate_refusal(rate_scope: str, wait: float) -> Refusal:
    """`shared_limit` for a call over its shared rate, `wait` seconds before one would be admitted."""
    scope = rate_scope.removeprefix(SHARED_PREFIX)
    return Refusal(
        Code.SHARED_LIMIT,
        f"too many calls for {scope} across the gateway; try again in {wait:.3g} s",
        limit="rate",
        scope=scope,
        retry_after_s=round(wait, 3),
    )
