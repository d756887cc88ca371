"""The store's audit query: actions across a tenant's runs, filtered, newest first.

No index of its own. With `run_id` the query walks `actions_run (run_id, seq)` backwards; without
it, the table by rowid backwards, stopping at the page's last match. An audit index (tenant,
seq) would make the tenant-wide walk skip other tenants' rows, at the price of one more index
write on every admit: the gate's hot path pays for it, the rare audit read gains. Add it when a
store's size makes the audit slow, not before.

Meanwhile a rare filter walks the whole table before it fills a page, so the query is a long read
(`SqlBase._aside`): its own connection and snapshot, never the gate's connection.
"""

from __future__ import annotations

from typing import Any

from gateway.errors import Code, InvalidRequest
from gateway.store.records import ActionRecord, Page
from gateway.store.sql.base import SqlBase, cursor_after
from gateway.store.sql.connection import Conn
from gateway.store.sql.rows import action_from_row, encode_cursor

MAX_SEQ = (1 << 63) - 1  # SQLite's INTEGER; a larger cursor is not one this store handed out


class AuditOps(SqlBase):
    async def audit_actions(
        self,
        tenant: str,
        *,
        tool: str | None = None,
        status: str | None = None,
        code: str | None = None,
        principal: str | None = None,
        run_id: str | None = None,
        since: float | None = None,
        until: float | None = None,
        cursor: str | None = None,
        limit: int = 100,
    ) -> Page[ActionRecord]:
        clauses = ["a.tenant = ?"]
        params: list[Any] = [tenant]
        if cursor:
            before = cursor_after(cursor)  # this list goes backwards: the cursor is the last action shown
            if before > MAX_SEQ:
                raise InvalidRequest("the cursor is not one this API handed out", code=Code.INVALID_CURSOR)
            clauses.append("a.seq < ?")
            params.append(before)
        for column, value in (("run_id", run_id), ("tool", tool), ("status", status), ("code", code)):
            if value is not None:
                clauses.append(f"a.{column} = ?")
                params.append(value)
        if principal is not None:
            clauses.append(
                "(a.worker = ? OR EXISTS (SELECT 1 FROM leases l "
                "WHERE l.run_id = a.run_id AND l.epoch = a.epoch AND l.granted_by = ?))"
            )
            params += [principal, principal]
        if since is not None:
            clauses.append("a.created_at >= ?")
            params.append(since)
        if until is not None:
            clauses.append("a.created_at < ?")
            params.append(until)
        sql = f"SELECT a.* FROM actions a WHERE {' AND '.join(clauses)} ORDER BY a.seq DESC LIMIT ?"
        params.append(limit + 1)

        def read(conn: Conn) -> Page[ActionRecord]:
            rows = conn.execute(sql, params).fetchall()
            more = len(rows) > limit
            rows = rows[:limit]
            return Page([action_from_row(r) for r in rows], encode_cursor(rows[-1]["seq"]) if more else None)

        return await self._aside(read)
