"""The one source of time. Expiries are decided by comparing against `Clock.now()`.

Tests move a `ManualClock` instead of sleeping. Times are float seconds since the Unix epoch
(UTC); the store compares them inside its transactions.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Protocol


class Clock(Protocol):
    def now(self) -> float: ...


class SystemClock:
    def now(self) -> float:
        return time.time()


class OffsetClock:
    """Another clock moved by a fixed offset: the drill's replica whose clock is wrong
    (`drill: {clock_offset_s: ...}`); never in a deployment."""

    def __init__(self, base: Clock, offset: float) -> None:
        self._base = base
        self.offset = offset

    def now(self) -> float:
        return self._base.now() + self.offset


class ManualClock:
    """A clock that only moves when told to."""

    def __init__(self, start: float = 1_800_000_000.0) -> None:
        self._now = start

    def now(self) -> float:
        return self._now

    def advance(self, seconds: float) -> None:
        if seconds < 0:
            raise ValueError("time does not go backwards")
        self._now += seconds

    def set(self, at: float) -> None:
        self._now = at


def isoformat(at: float | None) -> str | None:
    """An RFC 3339 UTC timestamp with microseconds, the form used on the wire."""
    if at is None:
        return None
    return datetime.fromtimestamp(at, tz=UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")
