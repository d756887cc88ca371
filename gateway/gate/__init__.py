"""The gate: one tools/call from the lease token to the settled outcome, and what it needs
at run time (limits, held leases, reconciliation)."""

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gateway.gate.held_leases import held_token_for, hold
    from gateway.gate.limits import BodyCap, LimitSettings, RateLimited, check_api_rate, too_large
    from gateway.gate.pipeline import (
        META_ACTION_ID,
        META_BUDGET,
        META_CODE,
        META_RECEIPT,
        META_REPLAYED,
        META_RESULT_PURGED,
        CallResult,
        Gate,
        budget_remaining,
    )
    from gateway.gate.reconcile import reconcile_action, reconcile_run
else:
    from gateway.faces import lazy as _lazy

    __getattr__, __dir__ = _lazy(__name__)

__all__ = [
    "META_ACTION_ID",
    "META_BUDGET",
    "META_CODE",
    "META_RECEIPT",
    "META_REPLAYED",
    "META_RESULT_PURGED",
    "BodyCap",
    "CallResult",
    "Gate",
    "LimitSettings",
    "RateLimited",
    "budget_remaining",
    "check_api_rate",
    "held_token_for",
    "hold",
    "reconcile_action",
    "reconcile_run",
    "too_large",
]
