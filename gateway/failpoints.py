"""Named failpoints and sabotage switches, for the failure drill (`warrant drill`) only.

Off unless the configuration's `drill:` section turns them on; a gateway that has any on says so
loudly at start-up. Nothing here is meant for a deployment: the drill writes its own configuration.

Failpoints are places in the gateway where the drill can stop the process at an exact moment,
instead of hoping a timer lands there:

    after_admit     the intent is committed; nothing has been sent          (gate)
    after_dispatch  the adapter answered; the outcome is only in memory     (gate)
    before_settle   the settlement is built; the store has not been asked   (gate)
    inside_settle   inside the settle transaction, before it commits        (store)
    during_resume   a lookup proved an outcome; it is not recorded yet      (reconciliation)

Each entry names its action (`kill`: SIGKILL this process; `hang`: never return, so that the
drill can kill it from outside), optionally the one tool it applies to and how many matching
hits pass first (`skip`). A failpoint fires once.

Sabotage turns one safeguard off, so that the drill can prove it fails without it:

    fencing      a superseded lease's epoch is admitted as if current
    budget       budget_exhausted is never decided: calls are admitted past the limits
    idempotency  every write gets a fresh operation id and no downstream idempotency key
    approval     no approval is asked for

The registry is process-wide, as failpoints are in the databases that have them: the drill kills
whole processes, and the hooks sit in code that has no settings at hand (the store's transactions).
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Final, Literal

log = logging.getLogger("warrant.failpoints")

POINTS: Final = ("after_admit", "after_dispatch", "before_settle", "inside_settle", "during_resume")
SAFEGUARDS: Final = ("fencing", "budget", "idempotency", "approval")
Action = Literal["kill", "hang"]


@dataclass
class Failpoint:
    name: str
    action: Action = "kill"
    tool: str | None = None  # only calls of this tool; None: any
    skip: int = 0  # matching hits that pass before it fires
    fired: bool = False


_lock = threading.Lock()
_armed: dict[str, Failpoint] = {}
_sabotaged: frozenset[str] = frozenset()


def configure(points: Mapping[str, Failpoint], sabotage: Iterable[str]) -> None:
    """Arm these failpoints and sabotage these safeguards, replacing whatever was set.

    Raises: ValueError for an unknown failpoint or safeguard.
    """
    global _armed, _sabotaged
    unknown = sorted(set(points) - set(POINTS)) + sorted(set(sabotage) - set(SAFEGUARDS))
    if unknown:
        raise ValueError(f"unknown failpoints or safeguards: {', '.join(unknown)}")
    with _lock:
        _armed = dict(points)
        _sabotaged = frozenset(sabotage)
    if _armed or _sabotaged:
        log.warning(
            "DRILL MODE: failpoints %s, sabotaged safeguards %s; never run a deployment like this",
            ", ".join(sorted(_armed)) or "none",
            ", ".join(sorted(_sabotaged)) or "none",
        )


def reset() -> None:
    configure({}, ())


def active() -> bool:
    return bool(_armed or _sabotaged)


def sabotaged(safeguard: str) -> bool:
    """Whether the drill turned this safeguard off (always False in a deployment)."""
    return safeguard in _sabotaged


def hit(name: str, tool: str | None = None) -> None:
    """Pass the failpoint `name` (for a call of `tool`): returns at once unless it is armed and due."""
    if not _armed:
        return
    with _lock:
        point = _armed.get(name)
        if point is None or point.fired or (point.tool is not None and point.tool != tool):
            return
        if point.skip > 0:
            point.skip -= 1
            return
        point.fired = True
    # One line the drill looks for in the log: the process died exactly here.
    sys.stderr.write(f"warrant failpoint {name} fired ({point.action}, tool {tool})\n")
    sys.stderr.flush()
    if point.action == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    while True:  # hang: the drill kills this process from outside
        time.sleep(3600)
