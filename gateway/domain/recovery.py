"""Recovery episodes: when a run lost its footing, why, and what getting it back cost. Pure.

An episode starts at one of three causes, read from the run's ledger:

| cause      | the entry that starts it                                                          |
| ---        | ---                                                                               |
| `takeover` | `lease_granted` with epoch >= 2: a new lease replaced a dead or superseded worker |
| `restart`  | `action_settled` marked `orphaned` (`restart`: a gateway start-up swept actions a |
|            | dead process left in flight; `restore`: a restore from backup did)                |
| `resume`   | `run_running` from `paused`: an operator resumed a paused run                     |

It ends `recovered` at the first entry that shows the run making progress again (PROGRESS: a
checkpoint, a task started, resumed or completed, a milestone verified, the run completed), or
`run_ended` when the run ends otherwise; until then it is `open`. A cause that arrives while an
episode is open joins it (`triggers` counts them): one outage is one episode, however many
entries it left. An episode's cost is what its window [start, end) held: the tool calls admitted
in it, their settled spend and the charges reported in it, whatever their tag.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from gateway.domain.lifecycle import RunStatus

Cause = Literal["takeover", "restart", "resume"]
CAUSES: tuple[Cause, ...] = ("takeover", "restart", "resume")
ORPHAN_MARKS = ("restart", "restore")  # `action_settled.orphaned`: who swept the action
PROGRESS = frozenset(
    {"checkpoint_saved", "task_started", "task_resumed", "task_completed", "milestone_verified", "run_completed"}
)
_ENDED = frozenset(f"run_{s.value}" for s in RunStatus if s.terminal)


class Entry(Protocol):
    @property
    def type(self) -> str: ...
    @property
    def at(self) -> float: ...
    @property
    def data(self) -> dict[str, Any]: ...


def cause_of(entry: Entry) -> Cause | None:
    """The cause an entry starts (or joins) an episode with, if any."""
    if entry.type == "lease_granted" and int(entry.data.get("epoch") or 0) >= 2:
        return "takeover"
    if entry.type == "action_settled" and entry.data.get("orphaned") in ORPHAN_MARKS:
        return "restart"
    if entry.type == "run_running" and entry.data.get("previous") == RunStatus.PAUSED.value:
        return "resume"
    return None


@dataclass
class Episode:
    cause: Cause
    started_at: float
    ended_at: float | None = None  # None: still open
    outcome: Literal["open", "recovered", "run_ended"] = "open"
    triggers: int = 1
    joined: list[Cause] = field(default_factory=list)  # later causes that arrived while it was open
    detail: dict[str, Any] = field(default_factory=dict)
    tool_calls: int = 0
    spend: int = 0

    def stop(self, now: float) -> float:
        return self.ended_at if self.ended_at is not None else now

    def seconds(self, now: float) -> float:
        return round(max(0.0, self.stop(now) - self.started_at), 3)

    def holds(self, at: float) -> bool:
        return self.started_at <= at < (self.ended_at if self.ended_at is not None else float("inf"))


def _detail(cause: Cause, entry: Entry) -> dict[str, Any]:
    data = entry.data
    if cause == "takeover":
        return {
            "epoch": data.get("epoch"),
            "worker": data.get("worker"),
            "previous_worker": data.get("previous_worker"),
        }
    if cause == "restart":
        return {"by": data.get("orphaned"), "actions_orphaned": 1}
    return {"by": data.get("by")}


def episodes_of(entries: Iterable[Entry], checkpoints: Sequence[float] = ()) -> list[Episode]:
    """The run's episodes, oldest first, from its ledger entries (oldest first). `checkpoints`: times
    of checkpoints known without their entries (the run row's last one), counted as progress."""
    timeline: list[tuple[float, int, Entry | None]] = [(e.at, i, e) for i, e in enumerate(entries)]
    timeline += [(at, -1, None) for at in checkpoints]  # a checkpoint at a start's instant ends it
    timeline.sort(key=lambda t: (t[0], t[1] if t[2] is not None else float("inf")))
    out: list[Episode] = []
    open_: Episode | None = None
    for at, _, entry in timeline:
        if entry is None or entry.type in PROGRESS:
            if open_ is not None:
                open_.ended_at, open_.outcome, open_ = at, "recovered", None
            continue
        if entry.type in _ENDED:
            if open_ is not None:
                open_.ended_at, open_.outcome, open_ = at, "run_ended", None
            continue
        cause = cause_of(entry)
        if cause is None:
            continue
        if open_ is None:
            open_ = Episode(cause, at, detail=_detail(cause, entry))
            out.append(open_)
            continue
        open_.triggers += 1
        if cause == open_.cause == "restart":
            open_.detail["actions_orphaned"] = int(open_.detail.get("actions_orphaned", 0)) + 1
        elif cause not in open_.joined and cause != open_.cause:
            open_.joined.append(cause)
    return out


def cost_episodes(
    episodes: Sequence[Episode], calls: Iterable[tuple[float, int]], charges: Iterable[tuple[float, int]]
) -> None:
    """Count into each episode the calls admitted and the spend (settled tool cost, charges) in its window.
    `calls`: (admitted_at, settled spend) of every tool call; `charges`: (reported_at, amount)."""
    for at, amount in calls:
        for episode in episodes:
            if episode.holds(at):
                episode.tool_calls += 1
                episode.spend += amount
                break
    for at, amount in charges:
        for episode in episodes:
            if episode.holds(at):
                episode.spend += amount
                break


def in_episode(at: float, episodes: Sequence[Episode]) -> bool:
    return any(e.holds(at) for e in episodes)
