"""The gateway's own `warrant_*` tools: progress, evidence."""

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gateway.tools.evidence import Fetcher, build_fetcher, run_checks
    from gateway.tools.progress import Progress, recheck_view
else:
    from gateway.faces import lazy as _lazy

    __getattr__, __dir__ = _lazy(__name__)

__all__ = [
    "Fetcher",
    "Progress",
    "build_fetcher",
    "recheck_view",
    "run_checks",
]
