"""The drill's cases: every module of this package registers its cases on import
(gateway/drill/case.py `REGISTRY`); `ORDER` puts them in DRILL.md's order."""

from __future__ import annotations

import importlib
import pkgutil

ORDER = (
    "crash",
    "lease",
    "authority",
    "clock",
    "cancel",
    "budget",
    "payload",
    "duplicate",
    "results",
    "approval_restart",
    "wait_restart",
    "retry_storm",
    "compensation",
    "completion",
    "task_claim",
    "hang",
    "watchdog",
)

_present = {m.name for m in pkgutil.iter_modules(__path__) if m.name != "common"}
for _name in (*(n for n in ORDER if n in _present), *sorted(_present - set(ORDER))):
    importlib.import_module(f"{__name__}.{_name}")

__all__ = ["ORDER"]
