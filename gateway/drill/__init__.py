"""The failure drill (`warrant drill`): a world of real processes, the cases of DRILL.md, the judge."""

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gateway.drill.case import MODES, REGISTRY, Case, Findings, Mode
    from gateway.drill.postgres import DEFAULT_SERVER, redact
    from gateway.drill.report import summary, summary_lines, table
    from gateway.drill.runner import run_all
    from gateway.drill.world import CONTRACT, ROOT, TOOL_TIMEOUT, WAIT, Agent, DrillError, Reply, Service, World
else:
    from gateway.faces import lazy as _lazy

    __getattr__, __dir__ = _lazy(__name__)

__all__ = [
    "CONTRACT",
    "DEFAULT_SERVER",
    "MODES",
    "REGISTRY",
    "ROOT",
    "TOOL_TIMEOUT",
    "WAIT",
    "Agent",
    "Case",
    "DrillError",
    "Findings",
    "Mode",
    "Reply",
    "Service",
    "World",
    "redact",
    "run_all",
    "summary",
    "summary_lines",
    "table",
]
