"""The store's drill history (drill_runs, migration 0026): what `warrant drill` found, kept to list.

Newest first. Bounded: recording one deletes the tenant's oldest past DRILL_HISTORY_KEEP, in the
same transaction, so the table never grows without end however often a drill runs.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from gateway.ids import new_id
from gateway.store.records import Page
from gateway.store.reports import DRILL_HISTORY_KEEP, DrillRun
from gateway.store.sql.base import SqlBase, cursor_after
from gateway.store.sql.connection import Conn, Row
from gateway.store.sql.rows import encode_cursor

_COLUMNS = (
    "drill_id, started_at, seconds, profile, modes, sabotage, passed, failed, skipped, ok, summary, results, "
    "recorded_by"
)


def _drill(row: Row) -> DrillRun:
    return DrillRun(
        drill_id=row["drill_id"],
        started_at=row["started_at"],
        seconds=row["seconds"],
        profile=row["profile"],
        modes=row["modes"],
        sabotage=row["sabotage"],
        passed=row["passed"],
        failed=row["failed"],
        skipped=row["skipped"],
        ok=bool(row["ok"]),
        summary=json.loads(row["summary"]),
        results=json.loads(row["results"]),
        recorded_by=row["recorded_by"],
    )


class DrillOps(SqlBase):
    async def record_drill(self, tenant: str, run: DrillRun) -> DrillRun:
        kept = replace(run, drill_id=run.drill_id or new_id("drl"))

        def tx(conn: Conn) -> DrillRun:
            values: tuple[Any, ...] = (
                kept.drill_id,
                tenant,
                kept.started_at,
                kept.seconds,
                kept.profile,
                kept.modes,
                kept.sabotage,
                kept.passed,
                kept.failed,
                kept.skipped,
                int(kept.ok),
                json.dumps(kept.summary, sort_keys=True),
                json.dumps(kept.results, sort_keys=True),
                kept.recorded_by,
            )
            conn.execute(
                f"INSERT INTO drill_runs (drill_id, tenant, {_COLUMNS.replace('drill_id, ', '', 1)}) "
                f"VALUES ({', '.join('?' * len(values))})",
                values,
            )
            cut = conn.execute(
                "SELECT seq FROM drill_runs WHERE tenant = ? ORDER BY seq DESC LIMIT 1 OFFSET ?",
                (tenant, DRILL_HISTORY_KEEP),
            ).fetchone()
            if cut is not None:
                conn.execute("DELETE FROM drill_runs WHERE tenant = ? AND seq <= ?", (tenant, cut["seq"]))
            return kept

        return await self._db.transaction(tx, durable=True)

    async def list_drills(self, tenant: str, *, cursor: str | None = None, limit: int = 50) -> Page[DrillRun]:
        before = cursor_after(cursor)

        def read(conn: Conn) -> Page[DrillRun]:
            sql = f"SELECT seq, {_COLUMNS} FROM drill_runs WHERE tenant = ?"
            args: list[Any] = [tenant]
            if before:
                sql, args = sql + " AND seq < ?", [*args, before]
            rows = conn.execute(sql + " ORDER BY seq DESC LIMIT ?", (*args, limit + 1)).fetchall()
            more = len(rows) > limit
            rows = rows[:limit]
            return Page([_drill(r) for r in rows], encode_cursor(rows[-1]["seq"]) if more else None)

        return await self._db.read(read)
