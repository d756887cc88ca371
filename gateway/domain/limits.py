"""Limits: sizes, rates and the rate arithmetic. Pure: no I/O, time is an argument.

A rate `N/period` is kept with the generic cell rate algorithm (GCRA): each scope (a tenant, an
API key, a run) has one number, its theoretical arrival time `tat`. A call at `now` moves it to
`max(tat, now) + period/N`; the call is admitted while that stays within one `period` of `now`.
That is a token bucket of N calls refilled at N per period: a scope idle for a whole period may
make N calls at once, then one every `period/N` (so at most 2N-1 in any one period, N per
period sustained); a refused call learns exactly when the next one would be admitted
(`retry_after`), and takes nothing. One row per scope in the store, updated in place.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace

from gateway.domain.units import parse_duration

# What a refusal of the per-run concurrency cap tells the caller to wait: a call in flight usually
# settles within seconds, and there is no window to compute.
CONCURRENCY_RETRY_S = 1.0

_SIZE = re.compile(r"(\d+)\s*(B|KB|KIB|MB|MIB|GB|GIB)?", re.IGNORECASE)
_UNITS = {"": 1, "B": 1, "KB": 10**3, "KIB": 2**10, "MB": 10**6, "MIB": 2**20, "GB": 10**9, "GIB": 2**30}
_RATE = re.compile(r"(\d+)\s*/\s*(\d*)\s*([a-z]+)", re.IGNORECASE)
_PERIODS = {"s": 1, "sec": 1, "second": 1, "m": 60, "min": 60, "minute": 60, "h": 3600, "hour": 3600, "d": 86400}


def parse_size(value: object) -> int:
    """Bytes from `1048576`, `"512KiB"`, `"1MiB"`, `"8MB"` (KiB/MiB/GiB: powers of 2; KB/MB/GB: of 10).

    Raises: ValueError for anything else, or a size of zero.
    """
    if isinstance(value, int) and not isinstance(value, bool):
        size = value
    else:
        match = _SIZE.fullmatch(str(value).strip()) if isinstance(value, str) else None
        if match is None:
            raise ValueError(f"{value!r} is not a size (examples: 1048576, 512KiB, 1MiB, 8MB)")
        size = int(match.group(1)) * _UNITS[(match.group(2) or "").upper()]
    if size <= 0:
        raise ValueError(f"a size must be at least one byte, not {value!r}")
    return size


@dataclass(frozen=True)
class Rate:
    """At most `count` calls per `period` seconds (a burst of `count` after a quiet period)."""

    count: int
    period: float

    @property
    def interval(self) -> float:
        return self.period / self.count

    def __str__(self) -> str:
        return f"{self.count}/{self.period:g}s"


def parse_rate(value: object) -> Rate:
    """A rate from `"6000/m"`, `"100/s"`, `"20/10s"`, `"50000/h"`, `"10/5m"`.

    Raises: ValueError for anything else, or a count or period of zero.
    """
    match = _RATE.fullmatch(value.strip()) if isinstance(value, str) else None
    if match is None:
        raise ValueError(f"{value!r} is not a rate (examples: 6000/m, 100/s, 20/10s)")
    count, times, unit = int(match.group(1)), match.group(2), match.group(3).lower()
    if unit in _PERIODS:
        period = _PERIODS[unit] * (int(times) if times else 1)
    else:
        period = parse_duration(f"{times or 1}{unit}")
    if count <= 0 or period <= 0:
        raise ValueError(f"a rate needs a count and a period above zero, not {value!r}")
    return Rate(count, float(period))


@dataclass(frozen=True)
class Step:
    """One call against one scope's rate: admitted (with the scope's new `tat`) or not (with how
    long until it would be)."""

    admitted: bool
    tat: float
    retry_after: float


def step(rate: Rate, tat: float | None, now: float) -> Step:
    """GCRA: take one call from a scope whose stored arrival time is `tat` (None: never seen)."""
    start = now if tat is None or tat < now else tat
    new = start + rate.interval
    earliest = new - rate.period  # the moment this call would fit in the period before `new`
    if earliest > now:
        return Step(False, tat if tat is not None else now, earliest - now)
    return Step(True, new, 0.0)


def retry_after_header(seconds: float) -> str:
    """`Retry-After` in whole seconds, rounded up, at least 1 (RFC 9110 allows no fractions)."""
    return str(max(1, math.ceil(seconds - 1e-9)))


@dataclass(frozen=True)
class RateLimits:
    """`limits.rate` in warrant.yaml; a None rate is not limited."""

    per_tenant: Rate | None = None
    per_key: Rate | None = None


SHARED_PREFIX = "shared:"  # the rate scopes of shared limits, among the other rate scopes


@dataclass(frozen=True)
class SharedCap:
    """One limit shared by every run, as the admit enforces it for one call (the rule:
    gateway/domain/shared_limits.py)."""

    scope: str  # "tool:<exposed name>" or "destination:<adapter name>"
    tools: tuple[str, ...]  # the exposed tools whose calls it counts (sorted)
    max_concurrent: int | None
    rate: Rate | None
    hold_s: float  # an admitted call older than this holds no slot

    @property
    def rate_scope(self) -> str:
        return SHARED_PREFIX + self.scope


@dataclass(frozen=True)
class CallLimits:
    """What the admit transaction enforces for one tools/call, besides the contract."""

    run_concurrency: int | None = None  # calls of the run admitted and not settled; None: no cap
    rates: tuple[tuple[str, Rate], ...] = ()  # (scope, rate): each takes one call, or none does
    shared: tuple[SharedCap, ...] = ()  # the tool's limits shared by every run (gateway/domain/shared_limits.py)

    def sharing(self, caps: tuple[SharedCap, ...]) -> CallLimits:
        """These limits and the tool's shared ones: their caps, and their rates among the others."""
        if not caps:
            return self
        rates = tuple((cap.rate_scope, cap.rate) for cap in caps if cap.rate is not None)
        return replace(self, shared=self.shared + caps, rates=self.rates + rates)
