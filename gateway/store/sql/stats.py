"""The store's reports: evidence exports, metrics gauges, refusals dropped.

Reports that may take long (a whole run's action rows, counting unknown actions across a
tenant) are long reads (`SqlBase._aside`): one read snapshot each, and the gate's transactions
never wait for them (on SQLite a connection of their own on a worker thread, under WAL; on
PostgreSQL a pooled REPEATABLE READ snapshot, a bounded share of the pool). Health is each back
end's own (sqlite/store.py, postgres/store.py).
"""

from __future__ import annotations

from collections.abc import Sequence

from gateway.domain.lifecycle import RunStatus
from gateway.store import action_spool
from gateway.store.action_spool import ActionSpool
from gateway.store.chain import EntryRow, Head
from gateway.store.reports import BY_EPOCH_SHOWN, DroppedRefusals, Gauges, RunExport
from gateway.store.sql.base import SqlBase
from gateway.store.sql.connection import Conn
from gateway.store.sql.rows import action_from_row, run_from_row, runs_from_rows

_ACTIVE = tuple(s.value for s in RunStatus if not s.terminal)
_ACTIVE_SQL = f"status IN ({', '.join('?' for _ in _ACTIVE)})"
_BLOBS_PER_QUERY = 500


class StatsOps(SqlBase):
    async def export_snapshot(self, tenant: str, run_id: str) -> RunExport:
        def read(conn: Conn) -> RunExport:
            row = self._run_row(conn, run_id, tenant)
            head = Head(run_id, row["head_seq"], row["head_hash"], row["head_mac"]) if row["head_mac"] else None
            run = run_from_row(row)
            spool = ActionSpool()
            try:
                after = 0  # seq counts from 1 on both stores
                while True:  # a page at a time (psycopg would buffer one whole result), one snapshot
                    rows = conn.execute(
                        "SELECT * FROM actions WHERE run_id = ? AND seq > ? ORDER BY seq LIMIT ?",
                        (run_id, after, action_spool.ACTIONS_PER_PAGE),
                    ).fetchall()
                    spool.write_page([action_from_row(a) for a in rows])
                    if len(rows) < action_spool.ACTIONS_PER_PAGE:
                        return RunExport(run, head, spool)
                    after = rows[-1]["seq"]
            except BaseException:
                spool.close()
                raise

        return await self._aside(read)

    async def ledger_entries(self, run_id: str, *, after: int, upto: int, limit: int) -> list[EntryRow]:
        def read(conn: Conn) -> list[EntryRow]:
            rows = conn.execute(
                "SELECT run_id, seq, type, body, prev_hash, hash FROM events "
                "WHERE run_id = ? AND seq > ? AND seq <= ? ORDER BY seq LIMIT ?",
                (run_id, after, upto, limit),
            )
            return [EntryRow(*r) for r in rows]

        return await self._aside(read)

    async def blob_texts(self, sha256s: Sequence[str]) -> dict[str, str | None]:
        wanted = list(dict.fromkeys(sha256s))

        def read(conn: Conn) -> dict[str, str | None]:
            found: dict[str, str | None] = dict.fromkeys(wanted)
            for i in range(0, len(wanted), _BLOBS_PER_QUERY):
                chunk = wanted[i : i + _BLOBS_PER_QUERY]
                marks = ", ".join("?" for _ in chunk)
                for sha, body in conn.execute(f"SELECT sha256, body FROM blobs WHERE sha256 IN ({marks})", chunk):
                    found[sha] = body.decode("utf-8") if isinstance(body, bytes) else body
            return found

        return await self._aside(read)

    async def gauges(self, tenant: str, *, limit: int) -> Gauges:
        def read(conn: Conn) -> Gauges:
            pending, oldest = conn.execute(
                "SELECT COUNT(*), MIN(created_at) FROM approvals WHERE tenant = ? AND status = 'pending'", (tenant,)
            ).fetchone()
            unknown = conn.execute(
                "SELECT COUNT(*) FROM actions WHERE tenant = ? AND status = 'unknown'", (tenant,)
            ).fetchone()[0]
            active = conn.execute(
                f"SELECT COUNT(*) FROM runs WHERE tenant = ? AND {_ACTIVE_SQL}", (tenant, *_ACTIVE)
            ).fetchone()[0]
            rows = conn.execute(
                f"SELECT * FROM runs WHERE tenant = ? AND {_ACTIVE_SQL} ORDER BY seq DESC LIMIT ?",
                (tenant, *_ACTIVE, limit),
            )
            by_rate, by_cap = conn.execute(
                "SELECT COALESCE(SUM(by_rate), 0), COALESCE(SUM(by_cap), 0) FROM refusals_dropped WHERE tenant = ?",
                (tenant,),
            ).fetchone()
            dropped = {"rate": int(by_rate), "max_per_run": int(by_cap)}
            return Gauges(pending, oldest, unknown, active, runs_from_rows(rows), dropped)

        return await self._aside(read)

    async def dropped_refusals(self, tenant: str, run_id: str) -> DroppedRefusals:
        def read(conn: Conn) -> DroppedRefusals:
            rows = conn.execute(
                "SELECT epoch, by_rate, by_cap FROM refusals_dropped WHERE run_id = ? AND tenant = ? "
                "ORDER BY epoch DESC",
                (run_id, tenant),
            ).fetchall()  # one row per lease token that had any dropped: few
            return DroppedRefusals(
                sum(r["by_rate"] for r in rows),
                sum(r["by_cap"] for r in rows),
                [(r["epoch"], r["by_rate"], r["by_cap"]) for r in rows[:BY_EPOCH_SHOWN]],
            )

        return await self._db.read(read)
