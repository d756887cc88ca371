"""Metrics and traces: what the gate counts and how its work shows in OpenTelemetry."""

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gateway.observe.metrics import BUDGET_RUNS, CONTENT_TYPE, Metrics
else:
    from gateway.faces import lazy as _lazy

    __getattr__, __dir__ = _lazy(__name__)

__all__ = [
    "BUDGET_RUNS",
    "CONTENT_TYPE",
    "Metrics",
]
