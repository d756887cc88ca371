"""Services that run beside the gate: watchdog, webhooks, retention, cancel relay, shutdown."""

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gateway.runtime.cancel_relay import CancelRelay, relaying
    from gateway.runtime.retention import Purger
    from gateway.runtime.shutdown import CLOSE_WAIT_S, FORCED_EXIT, Drain, DrainGuard, DrainingServer
    from gateway.runtime.watchdog import Watchdog, watching
    from gateway.runtime.webhooks import Deliverer, sign, verify
else:
    from gateway.faces import lazy as _lazy

    __getattr__, __dir__ = _lazy(__name__)

__all__ = [
    "CLOSE_WAIT_S",
    "FORCED_EXIT",
    "CancelRelay",
    "Deliverer",
    "Drain",
    "DrainGuard",
    "DrainingServer",
    "Purger",
    "Watchdog",
    "relaying",
    "sign",
    "verify",
    "watching",
]
