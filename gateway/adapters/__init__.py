"""Adapters: the engines that reach real tools. The gate talks to them through `Adapter`."""

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gateway.adapters.base import Adapter, CallRequest, Listener, Outcome, OutcomeKind, ToolDefinition
    from gateway.adapters.python import NotSent, PythonAdapter, ToolFailed
else:
    from gateway.faces import lazy as _lazy

    __getattr__, __dir__ = _lazy(__name__)

__all__ = [
    "Adapter",
    "CallRequest",
    "Listener",
    "NotSent",
    "Outcome",
    "OutcomeKind",
    "PythonAdapter",
    "ToolDefinition",
    "ToolFailed",
]
