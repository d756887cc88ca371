"""Exponential backoff with jitter, in one place: reconnecting adapters and retried reads use it."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable

# Jitter from a generator of its own: drawing from the `random` module's shared state would disturb
# anything in the process that seeds it (property-based tests among them) and be disturbed by it.
JITTER = random.Random()


def backoff_delay(
    attempt: int,
    *,
    initial: float = 0.1,
    factor: float = 2.0,
    cap: float = 30.0,
    rng: Callable[[], float] = JITTER.random,
) -> float:
    """Seconds to wait before retry number `attempt` (1, 2, ...).

    The delay doubles from `initial` up to `cap`; each one is drawn from [half, all] of that, so
    several gateways that lost the same downstream do not come back in step.
    """
    steps = min(max(attempt, 1) - 1, 64)
    return min(cap, initial * factor**steps) * (0.5 + 0.5 * rng())


async def sleep(seconds: float) -> None:
    """Wait before a retry. The one place tests replace (`monkeypatch.setattr(backoff, "sleep", ...)`)
    to retry without waiting; callers use it as `backoff.sleep`, never imported by name."""
    await asyncio.sleep(seconds)
