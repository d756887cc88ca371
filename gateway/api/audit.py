"""`GET /api/actions`: the audit query's filters, read from the query string.

    tool, status, code, principal, run_id   exact matches
    since, until                            ISO 8601 times with an offset (since inclusive, until exclusive)

Every filter given must hold; a bad value is `422 invalid_request` naming the parameter.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

from starlette.datastructures import QueryParams

from gateway.domain.lifecycle import ActionStatus
from gateway.errors import InvalidRequest

MAX_TEXT = 256  # longer than any tool name, code, worker or id this gateway makes


@dataclass(frozen=True)
class AuditFilters:
    tool: str | None = None
    status: str | None = None
    code: str | None = None
    principal: str | None = None
    run_id: str | None = None
    since: float | None = None
    until: float | None = None

    def as_kwargs(self) -> dict[str, Any]:
        return asdict(self)


def audit_filters(query: QueryParams) -> AuditFilters:
    """Raises: InvalidRequest `invalid_request` listing every bad parameter in `problems`."""
    problems: list[dict[str, str]] = []
    text: dict[str, str | None] = {}
    for name in ("tool", "status", "code", "principal", "run_id"):
        value = query.get(name)
        if value is not None and not 1 <= len(value) <= MAX_TEXT:
            problems.append({"field": name, "problem": f"must be 1 to {MAX_TEXT} characters"})
            value = None
        text[name] = value
    statuses = [s.value for s in ActionStatus]
    if text["status"] is not None and text["status"] not in statuses:
        problems.append({"field": "status", "problem": f"must be one of {', '.join(statuses)}"})
    times: dict[str, float | None] = {}
    for name in ("since", "until"):
        raw = query.get(name)
        times[name] = None
        if raw is not None:
            try:
                times[name] = parse_time(raw)
            except ValueError as exc:
                problems.append({"field": name, "problem": str(exc)})
    if problems:
        raise InvalidRequest(f"the query has {len(problems)} problem(s)", problems=problems)
    return AuditFilters(
        tool=text["tool"],
        status=text["status"],
        code=text["code"],
        principal=text["principal"],
        run_id=text["run_id"],
        since=times["since"],
        until=times["until"],
    )


def parse_time(raw: str) -> float:
    """An ISO 8601 date-time with an offset (`Z` or `+02:00`) as seconds since the epoch.

    Raises: ValueError for anything else, a time without an offset included (whose zone?).
    """
    try:
        # RFC 3339 allows a lower-case `t` and `z`; Python's parser wants them upper-case.
        at = datetime.fromisoformat(raw.upper())
    except ValueError:
        raise ValueError("must be an ISO 8601 date-time, e.g. 2026-01-31T09:00:00Z") from None
    if at.tzinfo is None:
        raise ValueError("must be an ISO 8601 date-time with an offset, e.g. 2026-01-31T09:00:00Z")
    try:
        seconds = at.timestamp()
    except (OverflowError, OSError, ValueError):
        raise ValueError("is out of range") from None
    if not math.isfinite(seconds):
        raise ValueError("is out of range")
    return seconds
