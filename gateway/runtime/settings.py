"""The runtime services' settings, as warrant.yaml gives them (gateway/config.py reads the file):
`watchdog:` (gateway/runtime/watchdog.py), `webhooks:` (gateway/runtime/webhooks.py) and
`retention:` (gateway/runtime/retention.py).

A module of their own, not in the services' modules: every `warrant` command reads the
configuration, and none should load the services (the store's interface, the metrics) for it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gateway.domain.events import HEARTBEAT, wants


@dataclass(frozen=True)
class WatchdogSettings:
    """`watchdog:` in warrant.yaml, durations in seconds (gateway/runtime/watchdog.py)."""

    enabled: bool = True
    tick: float = 5.0
    heartbeat: float = 60.0
    approval_warning: float = 900.0
    approval_warning_share: float = 0.1
    delivery_attempts: int = 8
    delivery_timeout: float = 10.0
    reconcile_every: float = 60.0


@dataclass(frozen=True)
class Webhook:
    """A receiver of alerts, heartbeats and any ledger entry (`webhooks:` in warrant.yaml, the secret
    from `secret_env`; docs/events.md, "Webhooks")."""

    name: str
    url: str
    secret: bytes = field(repr=False)
    events: frozenset[str] | None  # aliases resolved (gateway/domain/events.py); None: every alert and heartbeat

    def wants(self, kind: str) -> bool:
        """Whether it takes an alert of `kind`, or the heartbeat."""
        if kind == HEARTBEAT:
            return wants(self.events, HEARTBEAT)
        return wants(self.events, "alert", kind)


@dataclass(frozen=True)
class RetentionSettings:
    """`retention:` in warrant.yaml, in seconds; None keeps forever. `idempotency` is the gate's
    (how long a settled write's operation id replays), the others this purge's."""

    idempotency: float | None = 30 * 86_400.0
    payload_bodies: float | None = None
    purge_every: float = 3600.0
