"""The lease rules, as one table (`LEASE_RULES`): what a lease token's request meets, and what the
store writes for it. docs/leases.md shows the same table; tests/unit/test_lease_rules.py holds it,
the admission decision (`admission.lease_refusal`) and the watchdog (`watch.run_alerts`) to it.

Fencing is the epoch (gateway/domain/leases.py): only a takeover (which bumps it), a cancel, the
revocation of the granting key or a run that is over kills a token. Time never does: the holder
of the current epoch is never stranded by time spent thinking or waiting on people.

- Every authenticated request of the token renews: tool calls admitted or refused, `tools/list`,
  `warrant_status` and the other `warrant_*` tools, `POST /api/leases/renew`. A renewal sets the
  lease's time to now + `lease_ttl`; it is written only once a tenth of the TTL has passed since
  the last one (`RENEW_AFTER`), so reads stay cheap; the API's renewal always writes.
- Re-establishment: the same renewal under the same epoch, recorded as its own run event
  `lease_reestablished` with how long the lease had lapsed.
- `held`: another worker's acquire needs `takeover` (else `lease_held`). Where it does not, the
  acquire bumps the epoch and the old token is `lease_superseded` from then on, in every mode.
- `missed`: the watchdog alerts `lease_missed` (the holder is silent past its TTL). Not while the
  run is in a warrant_wait: the agent said it would be silent until a signal or `until`, so its
  silence is expected, as a paused run's is (the `wait` row).
- When a waiting or paused run goes back to running, its lease's time starts again
  (`resumed_expiry`): the time spent waiting on people is not held against the worker. So does a
  warrant_wait's end that leaves the run waiting on an approval (`wait_ended_expiry`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol

from gateway.domain.admission import RunSnapshot
from gateway.domain.lifecycle import RunStatus

RENEW_AFTER = 0.1  # the share of the TTL that must pass since the last renewal before one is written again


class LeaseState(StrEnum):
    ENDED = "ended"
    SUPERSEDED = "superseded"
    REVOKED = "revoked"
    LIVE = "live"
    WAIT = "wait"
    WAITING = "waiting"
    PAUSED = "paused"
    LAPSED = "lapsed"


class LeaseWrite(StrEnum):
    """What the store writes for a request of the token."""

    NOTHING = "nothing"
    RENEW = "renew"  # the lease's time becomes now + lease_ttl (throttled by RENEW_AFTER)
    REESTABLISH = "reestablish"  # the same, always, and the run event `lease_reestablished`


Condition = Callable[[RunSnapshot, int, float], bool]


def _ended(run: RunSnapshot, epoch: int, now: float) -> bool:
    return run.status.terminal or now >= run.deadline


def _superseded(run: RunSnapshot, epoch: int, now: float) -> bool:
    return epoch != run.epoch


def _revoked(run: RunSnapshot, epoch: int, now: float) -> bool:
    return run.lease_revoked_at is not None


def _unexpired(run: RunSnapshot, epoch: int, now: float) -> bool:
    return run.lease_expires_at is not None and now < run.lease_expires_at


def _in_wait(run: RunSnapshot, epoch: int, now: float) -> bool:
    return run.status is RunStatus.WAITING and run.wait_open


def _waiting(run: RunSnapshot, epoch: int, now: float) -> bool:
    return run.status is RunStatus.WAITING


def _paused(run: RunSnapshot, epoch: int, now: float) -> bool:
    return run.status is RunStatus.PAUSED


def _always(run: RunSnapshot, epoch: int, now: float) -> bool:
    return True


@dataclass(frozen=True)
class LeaseRule:
    state: LeaseState
    when: str  # the condition in words (docs/leases.md shows the same table)
    condition: Condition
    refusal: str | None  # the code every request of the token is refused with; None: the lease holds
    write: LeaseWrite
    held: bool  # another worker's acquire needs `takeover`
    missed: bool  # the watchdog alerts `lease_missed`
    dead: bool  # the token is dead for good

    @property
    def alive(self) -> bool:
        return not self.dead


# In order: the first row whose condition holds decides. The three fencing rows come first, so no
# rule about time can bring a dead token back.
LEASE_RULES: tuple[LeaseRule, ...] = (
    LeaseRule(
        LeaseState.ENDED, "the run is over, or past its deadline", _ended,
        refusal="run_<status>", write=LeaseWrite.NOTHING, held=False, missed=False, dead=True,
    ),
    LeaseRule(
        LeaseState.SUPERSEDED, "the token's epoch is not the run's (a takeover or a cancel bumped it)", _superseded,
        refusal="lease_superseded", write=LeaseWrite.NOTHING, held=False, missed=False, dead=True,
    ),
    LeaseRule(
        LeaseState.REVOKED, "its granting API key, or the sign-in holding it, was revoked", _revoked,
        refusal="lease_revoked", write=LeaseWrite.NOTHING, held=False, missed=False, dead=True,
    ),
    LeaseRule(
        LeaseState.LIVE, "the lease's time has not passed", _unexpired,
        refusal=None, write=LeaseWrite.RENEW, held=True, missed=False, dead=False,
    ),
    LeaseRule(
        LeaseState.WAIT, "the lease's time passed while the run is in a warrant_wait", _in_wait,
        refusal=None, write=LeaseWrite.RENEW, held=True, missed=False, dead=False,
    ),
    LeaseRule(
        LeaseState.WAITING, "the lease's time passed while the run waits on an approval", _waiting,
        refusal=None, write=LeaseWrite.RENEW, held=True, missed=True, dead=False,
    ),
    LeaseRule(
        LeaseState.PAUSED, "the lease's time passed while the run is paused", _paused,
        refusal=None, write=LeaseWrite.RENEW, held=True, missed=False, dead=False,
    ),
    LeaseRule(
        LeaseState.LAPSED, "the lease's time passed while the run runs, and nobody took it over", _always,
        refusal=None, write=LeaseWrite.REESTABLISH, held=False, missed=True, dead=False,
    ),
)  # fmt: skip
RULES: dict[LeaseState, LeaseRule] = {rule.state: rule for rule in LEASE_RULES}


def lease_rule(run: RunSnapshot, epoch: int, now: float) -> LeaseRule:
    """The row of the table a request of a token of `epoch` meets at `now`."""
    return next(rule for rule in LEASE_RULES if rule.condition(run, epoch, now))


def lease_write(run: RunSnapshot, epoch: int, now: float, ttl: float, *, throttled: bool = True) -> LeaseWrite:
    """What the store writes for a request of the token: a renewal only once RENEW_AFTER of the
    TTL has passed since the last one (`throttled`), a re-establishment always."""
    if throttled and not renewal_due(run, now, ttl):
        return LeaseWrite.NOTHING  # renewed within RENEW_AFTER: live (or dead), either way nothing to write
    return lease_rule(run, epoch, now).write


class LeaseTime(Protocol):
    @property
    def lease_expires_at(self) -> float | None: ...


def renewal_due(run: LeaseTime, now: float, ttl: float) -> bool:
    """Whether a tenth of the TTL has passed since the lease was last renewed (its time is that plus
    the TTL). When it has not, the lease is unexpired, so no row of the table writes anything: the
    gate asks this first, on the run record it holds, before it builds a snapshot."""
    if run.lease_expires_at is None:
        return True
    return run.lease_expires_at - now <= ttl * (1 - RENEW_AFTER)


def reestablishes(run: RunSnapshot, epoch: int, now: float) -> bool:
    """Whether a request of the token re-establishes the lease (the `lapsed` row). Asked by every
    admit: an unexpired lease answers at once, without walking the table."""
    if run.lease_expires_at is not None and now < run.lease_expires_at:
        return False
    return lease_rule(run, epoch, now).write is LeaseWrite.REESTABLISH


def lease_held(run: RunSnapshot, now: float) -> bool:
    """Whether the run's current lease holds against another worker's acquire (which then needs `takeover`)."""
    return lease_rule(run, run.epoch, now).held


def lapsed_for(run: RunSnapshot, now: float) -> float:
    """How long a lapsed lease has been lapsed, in seconds."""
    return max(0.0, now - run.lease_expires_at) if run.lease_expires_at is not None else 0.0


def resumed_expiry(
    before: RunStatus, after: RunStatus, expires_at: float | None, ttl: float, now: float
) -> float | None:
    """The lease's time when a run moves from `before` to `after`: leaving waiting or paused for
    running starts it again (never earlier than it was); otherwise it stays."""
    leaving = before in (RunStatus.WAITING, RunStatus.PAUSED) and after is RunStatus.RUNNING
    if not leaving or expires_at is None:
        return expires_at
    return max(expires_at, now + ttl)


def wait_ended_expiry(expires_at: float | None, ttl: float, now: float) -> float | None:
    """The lease's time when a warrant_wait ends and an approval still holds the run waiting: it
    starts again (never earlier than it was), as on going back to running. The worker was silent
    by its own declaration until now; from now on the approval's row (`waiting`) watches it."""
    if expires_at is None:
        return None
    return max(expires_at, now + ttl)
