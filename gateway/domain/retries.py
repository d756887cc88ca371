"""Retry policies: which failed attempts the gate tries again, how long it waits, and when an
operation id is given up to a dead letter (docs/retries.md, docs/decisions/0030-retries.md). Pure.

A tool's policy may say `retries: {max_attempts, backoff: {initial, max, multiplier, jitter},
retry_on: [codes]}`; a contract may say the same per tool, only narrower (`narrowing_problems`).
Only transient codes may be retried (`TRANSIENT`): a destination that is unavailable or timed out
(`upstream_unavailable`) or that rate-limited the call (`rate_limited`). Invalid input and refused
credentials or permissions are never retried: naming one is an error when the policy loads.

An attempt is tried again (`retry_decision`) only when its code is in `retry_on`, the attempts
are not used up, and trying again cannot do the effect twice: a read; a write whose attempt
proved nothing happened (`not_sent`, or `failed`: the destination said no); or a write whose
destination deduplicates on the gateway's idempotency key (`keyed`) and whose adapter marked the
attempt transient. A write that may have acted without a key stays `unknown`, never retried.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from gateway.errors import Code

TRANSIENT: frozenset[str] = frozenset({Code.UPSTREAM_UNAVAILABLE, Code.RATE_LIMITED})
MAX_ATTEMPTS = 10
MAX_BACKOFF_S = 60.0


class Backoff(BaseModel):
    """Seconds before attempt n+1: `initial * multiplier**(n-1)`, at most `max`; with `jitter`, a
    draw from [half, all] of that, so runs that lost one destination do not come back in step."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    initial: float = Field(default=0.2, gt=0, le=MAX_BACKOFF_S)
    max: float = Field(default=5.0, gt=0, le=MAX_BACKOFF_S)
    multiplier: float = Field(default=2.0, ge=1, le=10)
    jitter: bool = True

    @model_validator(mode="after")
    def _ordered(self) -> Backoff:
        if self.initial > self.max:
            raise ValueError("backoff.initial must not be above backoff.max")
        return self


class RetryPolicy(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    max_attempts: int = Field(ge=1, le=MAX_ATTEMPTS)
    backoff: Backoff = Backoff()
    retry_on: list[str] = Field(default=[Code.UPSTREAM_UNAVAILABLE, Code.RATE_LIMITED], max_length=len(TRANSIENT))

    @field_validator("retry_on")
    @classmethod
    def _transient(cls, value: list[str]) -> list[str]:
        other = sorted(set(value) - TRANSIENT)
        if other:
            raise ValueError(
                f"only transient codes may be retried ({', '.join(sorted(TRANSIENT))}); not {', '.join(other)}: "
                "invalid input and refused credentials fail the same way every time"
            )
        if len(value) != len(set(value)):
            raise ValueError("each code once")
        return value


def narrowing_problems(
    contract: Mapping[str, RetryPolicy], policy: Mapping[str, RetryPolicy | None]
) -> list[dict[str, Any]]:
    """Every field on which a contract's `retries` for a tool pattern asks more than the policy of a
    tool it matches: more attempts, a code the policy does not retry, or a tool whose policy has no
    retries at all. `policy` maps each tool name to its policy's retries."""
    problems: list[dict[str, Any]] = []
    for pattern, mine in contract.items():
        for tool in sorted(policy_tools(policy, pattern)):
            floor = policy.get(tool)
            where = f"retries.{pattern}"
            if floor is None:
                if not any(ch in pattern for ch in "*?["):  # a pattern may match tools that never retry
                    problems.append({"field": where, "problem": f"{tool}: the policy does not retry it"})
                continue
            if mine.max_attempts > floor.max_attempts:
                problems.append(
                    {
                        "field": f"{where}.max_attempts",
                        "problem": f"{tool}: more than the policy's {floor.max_attempts}",
                    }
                )
            extra = sorted(set(mine.retry_on) - set(floor.retry_on))
            if extra:
                problems.append(
                    {"field": f"{where}.retry_on", "problem": f"{tool}: the policy does not retry {', '.join(extra)}"}
                )
    return problems


def policy_tools(policy: Mapping[str, RetryPolicy | None], pattern: str) -> list[str]:
    return [tool for tool in policy if fnmatch.fnmatchcase(tool, pattern)]


def effective(policy: RetryPolicy | None, contract: Mapping[str, RetryPolicy], tool: str) -> RetryPolicy | None:
    """The retries in force for `tool`: the policy's, narrowed by every contract entry matching it
    (fewest attempts, common codes, the policy's backoff)."""
    if policy is None:
        return None
    narrowed = policy
    for pattern, mine in contract.items():
        if fnmatch.fnmatchcase(tool, pattern):
            codes = [c for c in narrowed.retry_on if c in mine.retry_on]
            narrowed = narrowed.model_copy(
                update={"max_attempts": min(narrowed.max_attempts, mine.max_attempts), "retry_on": codes}
            )
    return narrowed


def delay(backoff: Backoff, attempt: int, retry_after: float | None, rng: Callable[[], float]) -> float:
    """Seconds to wait after failed attempt `attempt` (1, 2, ...): the destination's `Retry-After`
    when it sent one, else the backoff; at most `backoff.max` either way."""
    if retry_after is not None:
        return min(max(retry_after, 0.0), backoff.max)
    base = min(backoff.max, backoff.initial * backoff.multiplier ** min(attempt - 1, 64))
    return base * (0.5 + 0.5 * rng()) if backoff.jitter else base


@dataclass(frozen=True)
class Attempt:
    """How one attempt ended, as the retry decision reads it."""

    kind: str  # an OutcomeKind value: succeeded, failed, not_sent, unknown
    code: str | None  # the transient cause when the adapter marked one, else the outcome's code
    write: bool
    keyed: bool  # the destination deduplicates writes on the gateway's idempotency key
    transient: bool  # the adapter said this attempt is worth asking again


def retryable(policy: RetryPolicy, attempt: Attempt) -> bool:
    """Whether this attempt may be tried again under `policy` (attempts left is the caller's count)."""
    if attempt.kind == "succeeded" or attempt.code not in policy.retry_on:
        return False
    if not attempt.write or attempt.kind in ("not_sent", "failed"):
        return True
    return attempt.kind == "unknown" and attempt.keyed and attempt.transient


def dead_lettered(failed_attempts: int, policy: RetryPolicy | None) -> bool:
    """An operation id whose failed attempts reached the policy's `max_attempts` is given up."""
    return policy is not None and failed_attempts >= policy.max_attempts


def parse_contract_retries(data: Any) -> dict[str, RetryPolicy]:
    """The `retries` of a stored contract (its wire form); empty when it names none."""
    body = data.get("retries") if isinstance(data, dict) else None
    return {tool: RetryPolicy.model_validate(v) for tool, v in (body or {}).items()}
