"""The operator HTTP API under /api: JSON in, JSON out, errors as {"error": {code, message, ...}}."""

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gateway.api.bodies import DecisionBody
    from gateway.api.connections import connection_view
    from gateway.api.events import run_events
    from gateway.api.export import bundle_lines
    from gateway.api.health import healthz, metrics
    from gateway.api.host_guard import HostGuard, guards
    from gateway.api.openapi import document
    from gateway.api.routes import (
        authenticate_key,
        bearer,
        error_response,
        gateway_of,
        query_limit,
        run_to_act_for,
    )
    from gateway.api.views import action_view, approval_view, event_view, run_view
else:
    from gateway.faces import lazy as _lazy

    __getattr__, __dir__ = _lazy(__name__)

__all__ = [
    "DecisionBody",
    "HostGuard",
    "action_view",
    "approval_view",
    "authenticate_key",
    "bearer",
    "bundle_lines",
    "connection_view",
    "document",
    "error_response",
    "event_view",
    "gateway_of",
    "guards",
    "healthz",
    "metrics",
    "query_limit",
    "run_events",
    "run_to_act_for",
    "run_view",
]
