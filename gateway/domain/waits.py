"""Waits and signals (docs/decisions/0027-waits.md). Pure: what `warrant_wait` and a signal may say.

A wait is the agent's: `warrant_wait {reason, until, on_timeout, wake_on}` moves a running run to
`waiting` until a signal named in `wake_on` arrives or `until` passes (by the store's clock), when
the watchdog applies `on_timeout`. A signal is the world's: `POST /api/runs/{id}/signal {name,
payload, idempotency_key}`, recorded once per key, kept for the agent to read in warrant_status.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

from gateway.canonical import canonical_json
from gateway.domain.units import parse_duration
from gateway.errors import Code, Refusal

MAX_REASON = 512  # characters of a wait's reason
MAX_WAIT = 30 * 86400  # the longest wait, in seconds (and never past the run's deadline)
MAX_WAKE_ON = 16  # signal names one wait may name
MAX_PAYLOAD = 16 * 1024  # bytes of a signal's payload, as canonical JSON
MAX_KEY = 128  # characters of an idempotency key
SIGNALS_SHOWN = 50  # the newest signals warrant_status shows
SIGNAL_NAME = re.compile(r"[a-z0-9_.:-]{1,64}")
_KEY = re.compile(r"[A-Za-z0-9_.:-]{1,128}")


class OnTimeout(StrEnum):
    RESUME = "resume"  # back to running
    PAUSE = "pause"  # paused: an operator decides
    FAIL = "fail"  # the failed end (docs/decisions/0024-failed-end.md)


class WaitCause(StrEnum):
    """Why a wait ended (`wait_ended`'s `cause`)."""

    SIGNAL = "signal"  # a signal named in wake_on
    TIMEOUT = "timeout"  # `until` passed: on_timeout applied
    # The run left waiting otherwise (an operator's pause, a cancel, a fail, the deadline): the
    # lifecycle event that moved it.
    PAUSE = "pause"
    CANCEL = "cancel"
    FAIL = "fail"
    EXPIRE = "expire"


@dataclass(frozen=True)
class WaitSpec:
    reason: str
    until: float
    on_timeout: OnTimeout
    wake_on: tuple[str, ...]

    def to_wire(self) -> dict[str, Any]:
        return {"reason": self.reason, "until": self.until, "on_timeout": self.on_timeout.value,
                "wake_on": list(self.wake_on)}  # fmt: skip


def _invalid(field: str, problem: str) -> Refusal:
    return Refusal(
        Code.WAIT_INVALID,
        f"not waiting: {field} {problem}; warrant_wait takes {{reason, until, on_timeout: resume | pause | fail, "
        "wake_on: [signal names]}",
        field=field,
    )


def parse_until(value: object, now: float) -> float:
    """`until`: an RFC 3339 timestamp, or a duration from now (`90s`, `2h`, `3d`).

    Raises: ValueError when it is neither."""
    if isinstance(value, str) and ("T" in value or "-" in value):
        try:
            at = datetime.fromisoformat(value)
        except ValueError:
            raise ValueError("is not an RFC 3339 timestamp") from None
        if at.tzinfo is None:
            raise ValueError("names no time zone (end it with Z)")
        return at.timestamp()
    return now + parse_duration(value)


def parse_wait(arguments: Mapping[str, Any], now: float, deadline: float) -> WaitSpec:
    """The wait `warrant_wait`'s arguments ask for.

    Raises: Refusal `wait_invalid` naming the first field that is wrong."""
    reason = arguments.get("reason")
    if not isinstance(reason, str) or not reason.strip() or len(reason) > MAX_REASON:
        raise _invalid("reason", f"must be a non-empty string of at most {MAX_REASON} characters")
    try:
        until = parse_until(arguments.get("until"), now)
    except ValueError as exc:
        raise _invalid("until", f"{exc}: give an RFC 3339 timestamp or a duration like 90s, 2h, 3d") from None
    if until <= now:
        raise _invalid("until", "has passed already")
    if until - now > MAX_WAIT:
        raise _invalid("until", "is more than 30 days away")
    if until > deadline:
        raise _invalid("until", "is past the run's deadline")
    on_timeout = arguments.get("on_timeout", OnTimeout.RESUME.value)
    if on_timeout not in {o.value for o in OnTimeout}:
        raise _invalid("on_timeout", "must be one of resume, pause, fail")
    wake_on = arguments.get("wake_on", [])
    if not isinstance(wake_on, list) or len(wake_on) > MAX_WAKE_ON:
        raise _invalid("wake_on", f"must be a list of at most {MAX_WAKE_ON} signal names")
    for name in wake_on:
        if not valid_signal_name(name):
            raise _invalid("wake_on", "names a signal not matching [a-z0-9_.:-]{1,64}")
    return WaitSpec(reason, until, OnTimeout(on_timeout), tuple(dict.fromkeys(wake_on)))


def valid_signal_name(name: object) -> bool:
    return isinstance(name, str) and SIGNAL_NAME.fullmatch(name) is not None


def signal_problems(name: object, payload: object, key: object) -> list[dict[str, str]]:
    """What is wrong with a signal, as `{field, problem}` (empty: nothing)."""
    problems = []
    if not valid_signal_name(name):
        problems.append({"field": "name", "problem": "must match [a-z0-9_.:-]{1,64}"})
    if not isinstance(key, str) or _KEY.fullmatch(key) is None:
        problems.append({"field": "idempotency_key", "problem": f"must match [A-Za-z0-9_.:-]{{1,{MAX_KEY}}}"})
    try:
        size = len(canonical_json(payload))
    except ValueError:
        problems.append({"field": "payload", "problem": "is not representable as canonical JSON"})
    else:
        if size > MAX_PAYLOAD:
            problem = f"is {size} bytes as canonical JSON; at most {MAX_PAYLOAD}"
            problems.append({"field": "payload", "problem": problem})
    return problems
