"""The pilot report over runs, and the drill history (docs/decisions/0026-reports.md).

    GET /api/lineages/{lineage_id}/report   every run of the lineage, summed (404: no run of this tenant)
    GET /api/reports?tag&since&until&status&limit
                                            the tenant's runs, newest first, filtered and summed
    GET /api/drills?cursor&limit            the drill runs recorded against this store, newest first

All `runs.read`, each tenant's own. A report reads at most MAX_REPORT_RUNS runs and MAX_REPORT_ROWS
rows (gateway/store/reports.py); past either, `truncated: true`.
"""

from __future__ import annotations

import re
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from gateway.api.audit import parse_time
from gateway.api.routes import endpoint, query_limit
from gateway.clock import isoformat
from gateway.domain.contract import TAG_PATTERN
from gateway.domain.lifecycle import RunStatus
from gateway.domain.report import build_report
from gateway.domain.report_sums import summarize
from gateway.errors import InvalidRequest, NotFound
from gateway.service import Gateway
from gateway.store.records import Principal
from gateway.store.reports import MAX_REPORT_RUNS, DrillRun, ManyInputs, ReportFilter

STATUSES = tuple(s.value for s in RunStatus)  # whatever statuses the lifecycle has


def _summed(found: ManyInputs, gateway: Gateway, **extra: Any) -> dict[str, Any]:
    now = gateway.clock.now()
    return {**extra, **summarize([build_report(i, now) for i in found.items], truncated=found.truncated)}


@endpoint("runs.read")
async def lineage_report(request: Request, principal: Principal, gateway: Gateway) -> Response:
    lineage_id = request.path_params["lineage_id"]
    found = await gateway.store.reports_inputs(principal.tenant, ReportFilter(lineage_id=lineage_id))
    if not found.items:
        raise NotFound(f"no lineage {lineage_id}")
    return JSONResponse(_summed(found, gateway, lineage_id=lineage_id))


def report_filter(query: Any, limit: int) -> ReportFilter:
    """The query of GET /api/reports. Raises: InvalidRequest listing every problem."""
    problems: list[dict[str, str]] = []
    tag = query.get("tag")
    if tag is not None and not re.fullmatch(TAG_PATTERN, tag):
        problems.append({"field": "tag", "problem": f"must match {TAG_PATTERN}"})
    times: dict[str, float | None] = {"since": None, "until": None}
    for name in times:
        raw = query.get(name)
        if raw is not None:
            try:
                times[name] = parse_time(raw)
            except ValueError as exc:
                problems.append({"field": name, "problem": str(exc)})
    statuses: tuple[str, ...] = ()
    raw_status = query.get("status")
    if raw_status is not None:
        statuses = tuple(dict.fromkeys(s.strip() for s in raw_status.split(",")))
        if not statuses or any(s not in STATUSES for s in statuses):
            problems.append({"field": "status", "problem": f"a comma-separated list of {', '.join(STATUSES)}"})
    if problems:
        raise InvalidRequest(f"the query has {len(problems)} problem(s)", problems=problems)
    return ReportFilter(tag=tag, since=times["since"], until=times["until"], statuses=statuses, limit=limit)


@endpoint("runs.read")
async def reports(request: Request, principal: Principal, gateway: Gateway) -> Response:
    where = report_filter(request.query_params, query_limit(request, 50, MAX_REPORT_RUNS))
    found = await gateway.store.reports_inputs(principal.tenant, where)
    query = {
        "tag": where.tag,
        "since": isoformat(where.since),
        "until": isoformat(where.until),
        "status": list(where.statuses),
        "limit": where.limit,
    }
    return JSONResponse(_summed(found, gateway, query=query))


def drill_view(drill: DrillRun) -> dict[str, Any]:
    return {
        "drill_id": drill.drill_id,
        "started_at": isoformat(drill.started_at),
        "seconds": drill.seconds,
        "profile": drill.profile,
        "modes": drill.modes,
        "sabotage": drill.sabotage,
        "passed": drill.passed,
        "failed": drill.failed,
        "skipped": drill.skipped,
        "ok": drill.ok,
        "summary": drill.summary,
        "results": drill.results,
        "recorded_by": drill.recorded_by,
    }


@endpoint("runs.read")
async def drills(request: Request, principal: Principal, gateway: Gateway) -> Response:
    page = await gateway.store.list_drills(
        principal.tenant, cursor=request.query_params.get("cursor"), limit=query_limit(request, 20, 100)
    )
    return JSONResponse({"items": [drill_view(d) for d in page.items], "next_cursor": page.next_cursor})


routes = [
    Route("/api/lineages/{lineage_id}/report", lineage_report, methods=["GET"]),
    Route("/api/reports", reports, methods=["GET"]),
    Route("/api/drills", drills, methods=["GET"]),
]
