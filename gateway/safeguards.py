"""The failure drill's switches (`warrant drill`): named failpoints and sabotaged safeguards.

One `Safeguards` object is built by the composition root (gateway/app.py) from the
configuration's `drill:` section and handed to what reads it: the store (inside its admit and
settle transactions), the gate and reconciliation. The default, `Safeguards()`, has every
safeguard on and no failpoint armed: what a deployment runs. A gateway that has any switch on
says so loudly at start-up (`announce`). Nothing here is meant for a deployment: the drill
writes its own configuration.

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
    checks       the gateway's completion checks (milestones and tasks) are not run: the agent's
                 word is taken, every check counted verified

This module sits at the root of the package, below the store: it imports nothing of the gateway.
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
SAFEGUARDS: Final = ("fencing", "budget", "idempotency", "approval", "checks")
Action = Literal["kill", "hang"]
Point = Literal["after_admit", "after_dispatch", "before_settle", "inside_settle", "during_resume"]
Safeguard = Literal["fencing", "budget", "idempotency", "approval", "checks"]


@dataclass
class Failpoint:
    name: str
    action: Action = "kill"
    tool: str | None = None  # only calls of this tool; None: any
    skip: int = 0  # matching hits that pass before it fires
    fired: bool = False


class Safeguards:
    """The drill's failpoints armed and safeguards sabotaged in this process; by default none.

    Raises (on construction): ValueError for an unknown failpoint or safeguard.
    """

    def __init__(self, points: Mapping[str, Failpoint] | None = None, sabotage: Iterable[str] = ()) -> None:
        armed = dict(points or {})
        off = frozenset(sabotage)
        unknown = sorted(set(armed) - set(POINTS)) + sorted(off - set(SAFEGUARDS))
        if unknown:
            raise ValueError(f"unknown failpoints or safeguards: {', '.join(unknown)}")
        self._lock = threading.Lock()
        self._armed = armed
        self._sabotaged = off

    @property
    def active(self) -> bool:
        """Whether any failpoint is armed or any safeguard sabotaged (never in a deployment)."""
        return bool(self._armed or self._sabotaged)

    def announce(self) -> None:
        """Say loudly, once at start-up, that this process runs in drill mode (when it does)."""
        if self.active:
            log.warning(
                "DRILL MODE: failpoints %s, sabotaged safeguards %s; never run a deployment like this",
                ", ".join(sorted(self._armed)) or "none",
                ", ".join(sorted(self._sabotaged)) or "none",
            )

    def sabotaged(self, safeguard: Safeguard) -> bool:
        """Whether the drill turned this safeguard off (always False in a deployment)."""
        return safeguard in self._sabotaged

    def hit(self, name: Point, tool: str | None = None) -> None:
        """Pass the failpoint `name` (for a call of `tool`): returns at once unless it is armed and due."""
        if not self._armed:
            return
        with self._lock:
            point = self._armed.get(name)
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


ALL_ON: Final = Safeguards()  # every safeguard on, no failpoint: the default everywhere


__all__ = ["ALL_ON", "POINTS", "SAFEGUARDS", "Failpoint", "Safeguards"]
