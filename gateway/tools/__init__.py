"""The gateway's own `warrant_*` tools: progress, evidence, the plan and its tasks."""

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gateway.tools.evidence import Fetcher, build_fetcher, run_checks
    from gateway.tools.plan_view import plan_summary, task_view
    from gateway.tools.progress import Progress, recheck_view
    from gateway.tools.tasks import Planning
else:
    from gateway.faces import lazy as _lazy

    __getattr__, __dir__ = _lazy(__name__)

__all__ = [
    "Fetcher",
    "Planning",
    "Progress",
    "build_fetcher",
    "plan_summary",
    "recheck_view",
    "run_checks",
    "task_view",
]
