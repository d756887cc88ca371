"""The store's runs: create, read, list, and the controls (pause, resume, cancel, hard cancels); the
cancel's transaction and the fail's are in ending.py."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gateway.domain.contract import Contract
from gateway.domain.lifecycle import RunEvent, RunStatus
from gateway.errors import Refusal
from gateway.store.records import (
    Page,
    Principal,
    RunRecord,
)
from gateway.store.sql.base import cursor_after
from gateway.store.sql.connection import Conn
from gateway.store.sql.ending import EndingOps
from gateway.store.sql.lineage import LineageOps
from gateway.store.sql.rows import (
    encode_cursor,
    run_from_row,
    runs_and_damaged,
)


class RunOps(LineageOps, EndingOps):
    # -- runs ------------------------------------------------------------------------------
    async def create_run(self, principal: Principal, contract: Contract) -> RunRecord:
        def tx(conn: Conn) -> RunRecord:
            return self._insert_run(conn, principal, contract, self._clock.now())

        return await self._db.transaction(tx, durable=True)

    async def get_run(self, tenant: str, run_id: str) -> RunRecord:
        return await self._db.read(lambda conn: run_from_row(self._run_row(conn, run_id, tenant)))

    async def list_runs(
        self, tenant: str, *, status: str | None = None, cursor: str | None = None, limit: int = 50
    ) -> Page[RunRecord]:
        after = cursor_after(cursor)

        def read(conn: Conn) -> Page[RunRecord]:
            sql = "SELECT * FROM runs WHERE tenant = ? AND seq > ?"
            args: list[Any] = [tenant, after]
            if status is not None:
                sql += " AND status = ?"
                args.append(status)
            rows = conn.execute(sql + " ORDER BY seq LIMIT ?", (*args, limit + 1)).fetchall()
            more = len(rows) > limit
            rows = rows[:limit]
            runs, damaged = runs_and_damaged(rows)
            return Page(runs, encode_cursor(rows[-1]["seq"]) if more else None, damaged)

        return await self._db.read(read)

    async def _control(
        self, principal: Principal, run_id: str, event: RunEvent, reason: str | None, **data: Any
    ) -> RunRecord:
        def tx(conn: Conn) -> RunRecord | Refusal:
            now = self._clock.now()
            run = self._expire_if_due(conn, run_from_row(self._run_row(conn, run_id, principal.tenant)), now)
            try:
                if event is RunEvent.RESUME and run.status is RunStatus.PAUSED:
                    # Approvals that lapsed while paused expire first: their on_expiry finds the run paused.
                    self._expire_approvals_due(conn, run_id, now)
                    self._set_status(conn, run, event, now, by=principal.name, reason=reason, **data)
                    pending = conn.execute(
                        "SELECT 1 FROM approvals WHERE run_id = ? AND status = 'pending' "
                        "AND milestone_id IS NULL AND blocks_run = 1 LIMIT 1",
                        (run_id,),
                    ).fetchone()
                    if pending is not None:
                        resumed = run_from_row(self._run_row(conn, run_id))
                        self._set_status(
                            conn, resumed, RunEvent.APPROVAL_PENDING, now, by="gateway", reason="approvals are pending"
                        )
                    # Charges from here to the next checkpoint are recovery (gateway/domain/report.py).
                    conn.execute("UPDATE runs SET last_resumed_at = ? WHERE run_id = ?", (now, run_id))
                elif event is RunEvent.CANCEL:
                    self._cancel(conn, run, now, principal.name, reason, **data)
                else:
                    self._set_status(conn, run, event, now, by=principal.name, reason=reason, **data)
            except Refusal as refusal:
                # Record the expiry that may have just happened, then refuse.
                return refusal
            return run_from_row(self._run_row(conn, run_id))

        result = await self._db.transaction(tx, durable=True)
        if isinstance(result, Refusal):
            raise result
        return result

    async def hard_cancelled_among(self, run_ids: Sequence[str]) -> set[str]:
        wanted = list(dict.fromkeys(run_ids))
        if not wanted:
            return set()

        def read(conn: Conn) -> set[str]:
            found: set[str] = set()
            for run_id in wanted:  # a few runs at most: the ones this process has calls in flight for
                row = conn.execute("SELECT cancelled_hard FROM runs WHERE run_id = ?", (run_id,)).fetchone()
                if row is not None and row[0]:
                    found.add(run_id)
            return found

        return await self._db.read(read)

    async def pause(self, principal: Principal, run_id: str, reason: str | None) -> RunRecord:
        return await self._control(principal, run_id, RunEvent.PAUSE, reason)

    async def resume(self, principal: Principal, run_id: str, reason: str | None) -> RunRecord:
        return await self._control(principal, run_id, RunEvent.RESUME, reason)

    async def cancel(self, principal: Principal, run_id: str, reason: str | None, *, hard: bool) -> RunRecord:
        return await self._control(principal, run_id, RunEvent.CANCEL, reason, hard=hard)
