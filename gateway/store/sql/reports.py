"""What the pilot report reads (gateway/domain/report.py): one run's records, or many runs' at once,
bounded; and the replay counter the gate moves.

A report over runs (a lineage, or the tenant's filtered by tag, status and time) reads each run as
for its own report, newest first, in ONE long read, and stops at `MAX_REPORT_RUNS` runs or `MAX_REPORT_ROWS`
rows (charges, tool calls and ledger facts together): then `truncated` says so.
"""

from __future__ import annotations

import json
from typing import Any

from gateway.domain.report import PREVENTING_CODES, Charge, Fact, ReportInputs, ToolCost
from gateway.store.reports import MAX_REPORT_ROWS, MAX_REPORT_RUNS, ManyInputs, ReportFilter
from gateway.store.sql.base import SqlBase
from gateway.store.sql.connection import Conn, Row
from gateway.store.sql.rows import run_from_row

_CHARGE_COLUMNS = "charge_id, run_id, kind, tag, amount, note, ref, principal, created_at"
# The ledger entries a report reads: status changes, approvals, ended children, leases,
# progress (what ends a recovery episode: gateway/domain/recovery.py) and settled actions
# (`_kept` keeps only those a measure reads: JSON is read in Python, the same on both back ends).
_FACTS = (
    "SELECT type, at, body FROM events WHERE run_id = ? AND (type LIKE 'run\\_%' ESCAPE '\\' "
    "OR type IN ('approval_requested', 'approval_approved', 'approval_denied', 'child_ended', 'action_settled', "
    "'lease_granted', 'checkpoint_saved', 'task_started', 'task_resumed', 'task_completed', 'milestone_verified')) "
    "ORDER BY seq"
)
_PREVENTED = ", ".join(f"'{code}'" for code in PREVENTING_CODES)


def charge_of(row: Row) -> Charge:
    return Charge(*(row[name] for name in _CHARGE_COLUMNS.split(", ")))


def _kept(fact: Fact) -> bool:
    if fact.type != "action_settled":
        return True
    data = fact.data
    receipt = data.get("receipt")
    return bool(
        data.get("previous") == "unknown"
        or data.get("orphaned")
        or (isinstance(receipt, dict) and receipt.get("duplicate") is True)
    )


def _tags(contract_json: str) -> tuple[str, ...]:
    tags = json.loads(contract_json).get("tags") or []
    return tuple(t for t in tags if isinstance(t, str))


def read_inputs(conn: Conn, row: Row) -> ReportInputs:
    """One run's report inputs, from its row, inside the caller's read."""
    run_id = row["run_id"]
    charges = conn.execute(f"SELECT {_CHARGE_COLUMNS} FROM charges WHERE run_id = ? ORDER BY seq", (run_id,)).fetchall()
    costs = conn.execute(
        "SELECT created_at, actual_spend FROM actions WHERE run_id = ? AND status != 'rejected' ORDER BY seq",
        (run_id,),
    ).fetchall()
    facts = [Fact(r["type"], r["at"], json.loads(r["body"])["data"]) for r in conn.execute(_FACTS, (run_id,))]
    (refused,) = conn.execute(
        f"SELECT COUNT(*) FROM actions WHERE run_id = ? AND status = 'rejected' AND code IN ({_PREVENTED})", (run_id,)
    ).fetchone()
    (unknown,) = conn.execute(
        "SELECT COUNT(*) FROM actions WHERE run_id = ? AND status = 'unknown'", (run_id,)
    ).fetchone()
    return ReportInputs(
        run=run_from_row(row).snapshot(),
        charges=[charge_of(c) for c in charges],
        tool_costs=[ToolCost(c["created_at"], c["actual_spend"] or 0) for c in costs],
        facts=[f for f in facts if _kept(f)],
        last_checkpoint_at=row["last_checkpoint_at"],
        tags=_tags(row["contract"]),
        replays=row["replays"],
        refused_repeats=refused,
        unknown_actions=unknown,
    )


def _rows(inputs: ReportInputs) -> int:
    return len(inputs.charges) + len(inputs.tool_costs) + len(inputs.facts) + 1


def _like(tag: str) -> str:
    """A LIKE pattern finding the tag as a JSON string in the contract's canonical JSON (a
    candidate only: the caller checks the parsed tags)."""
    escaped = tag.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f'%"{escaped}"%'


class ReportOps(SqlBase):
    async def report_inputs(self, tenant: str, run_id: str) -> ReportInputs:
        # A long read (every charge, cost and fact of the run): off the gate's connection.
        return await self._aside(lambda conn: read_inputs(conn, self._run_row(conn, run_id, tenant)))

    async def reports_inputs(self, tenant: str, where: ReportFilter) -> ManyInputs:
        limit = max(1, min(where.limit, MAX_REPORT_RUNS))
        sql, args = "SELECT * FROM runs WHERE tenant = ?", list[Any]([tenant])
        if where.lineage_id is not None:
            sql, args = sql + " AND lineage_id = ?", [*args, where.lineage_id]
        if where.tag is not None:
            sql, args = sql + " AND contract LIKE ? ESCAPE '\\'", [*args, _like(where.tag)]
        if where.since is not None:
            sql, args = sql + " AND created_at >= ?", [*args, where.since]
        if where.until is not None:
            sql, args = sql + " AND created_at < ?", [*args, where.until]
        if where.statuses:
            sql += f" AND status IN ({', '.join('?' * len(where.statuses))})"
            args += list(where.statuses)
        sql += " ORDER BY seq DESC LIMIT ?"

        def read(conn: Conn) -> ManyInputs:
            items: list[ReportInputs] = []
            rows, cursor_seq = 0, None
            while True:
                page_sql, page_args = sql, [*args, 500]
                if cursor_seq is not None:
                    page_sql = sql.replace(" ORDER BY", " AND seq < ? ORDER BY")
                    page_args = [*args, cursor_seq, 500]
                page = conn.execute(page_sql, tuple(page_args)).fetchall()
                for row in page:
                    cursor_seq = row["seq"]
                    if where.tag is not None and where.tag not in _tags(row["contract"]):
                        continue  # the pattern matched another string of the contract
                    if len(items) == limit:
                        return ManyInputs(items, truncated=True)
                    inputs = read_inputs(conn, row)
                    if rows + _rows(inputs) > MAX_REPORT_ROWS and items:
                        return ManyInputs(items, truncated=True)
                    rows += _rows(inputs)
                    items.append(inputs)
                if len(page) < 500:
                    return ManyInputs(items, truncated=False)

        return await self._aside(read)

    async def note_replay(self, run_id: str) -> None:
        def tx(conn: Conn) -> None:
            conn.execute("UPDATE runs SET replays = replays + 1 WHERE run_id = ?", (run_id,))

        await self._db.transaction(tx, durable=False)
