"""The drill's results kept in a store (`warrant drill --record`): one `drill_runs` row per drill,
listed by `GET /api/drills` and `warrant drill history`. The store keeps the newest
DRILL_HISTORY_KEEP per tenant (gateway/store/sql/drills.py)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gateway.clock import SystemClock
from gateway.drill.runner import Result
from gateway.store.factory import open_store
from gateway.store.reports import DrillRun

MAX_PROBLEMS = 20  # per case kept: a failed case's problems, not its folder (that stays on the machine)


def drill_run(
    results: Sequence[Result],
    info: dict[str, Any],
    *,
    started_at: float,
    seconds: float,
    profile: str,
    modes: str,
    sabotage: str | None,
    by: str,
) -> DrillRun:
    """What a drill found, as the store keeps it: its summary and each case's result, without the
    local folders (paths of a machine the reader may never see)."""
    kept = []
    for result in results:
        row = result.as_dict()
        row.pop("folder", None)
        row["problems"] = row["problems"][:MAX_PROBLEMS]
        kept.append(row)
    sab = info.get("sabotage")
    ok = (not info["failed"]) if not sab else bool(sab["as_expected"])
    return DrillRun(
        drill_id="",
        started_at=started_at,
        seconds=seconds,
        profile=profile,
        modes=modes,
        sabotage=sabotage,
        passed=info["passed"],
        failed=info["failed"],
        skipped=info["skipped"],
        ok=ok,
        summary=info,
        results=kept,
        recorded_by=by,
    )


async def record(database: str, ledger_key: bytes, tenant: str, run: DrillRun) -> DrillRun:
    """Keep `run` in the store at `database`, for `tenant`. Raises: StoreError."""
    async with open_store(database, clock=SystemClock(), ledger_key=ledger_key) as store:
        return await store.record_drill(tenant, run)
