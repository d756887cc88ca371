"""The store's part for the watchdog: its lease, the expiry sweep, alerts once, the webhook outbox.

Everything that must happen once across gateway processes is decided here, in transactions:
who holds the watchdog lease, whether an alert's episode was raised before (a UNIQUE row), which
process may attempt a delivery now (a claim with an expiry). Process memory decides nothing.
"""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Sequence
from typing import Any

from gateway.clock import isoformat
from gateway.domain.lifecycle import RunStatus
from gateway.domain.units import parse_duration
from gateway.domain.watch import RAISED_KINDS, BlockedTask, PendingApproval, RunWatch, UnknownAction
from gateway.errors import DamagedRecord
from gateway.ids import new_id
from gateway.store.records import AlertDraft, AlertRecord, Delivery, RaisedAlert, Sweep, WatchState
from gateway.store.sql.base import queue_deliveries
from gateway.store.sql.connection import Conn, Row
from gateway.store.sql.rows import approval_from_row, run_from_row
from gateway.store.sql.waits import WaitOps

log = logging.getLogger("warrant.watchdog")

LEASE = "watchdog"
# The terms of the partial indexes of migration 0006, repeated so that SQLite may use them.
_LIVE = "status IN ('running', 'waiting', 'paused')"
_OPEN = "status IN ('pending', 'approved')"


class WatchOps(WaitOps):
    async def hold_watch_lease(self, holder: str, ttl: float) -> bool:
        def tx(conn: Conn) -> bool:
            now = self._clock.now()
            row = conn.execute("SELECT holder, expires_at FROM watch_leases WHERE name = ?", (LEASE,)).fetchone()
            if row is None:
                conn.execute(
                    "INSERT INTO watch_leases (name, holder, expires_at, acquired_at) VALUES (?, ?, ?, ?)",
                    (LEASE, holder, now + ttl, now),
                )
                return True
            if row["holder"] == holder:
                conn.execute("UPDATE watch_leases SET expires_at = ? WHERE name = ?", (now + ttl, LEASE))
                return True
            if row["expires_at"] <= now:
                conn.execute(
                    "UPDATE watch_leases SET holder = ?, expires_at = ?, acquired_at = ? WHERE name = ?",
                    (holder, now + ttl, now, LEASE),
                )
                return True
            return False

        return await self._db.transaction(tx, durable=False)

    async def sweep_expiries(self, *, limit: int = 500) -> Sweep:
        def due(conn: Conn) -> list[str]:
            now = self._clock.now()
            runs = conn.execute(
                f"SELECT run_id FROM runs WHERE {_LIVE} AND deadline <= ? ORDER BY deadline LIMIT ?", (now, limit)
            ).fetchall()
            approvals = conn.execute(
                f"SELECT DISTINCT run_id FROM approvals WHERE {_OPEN} AND "
                "((status = 'pending' AND decide_by <= ?) OR (status = 'approved' AND valid_until <= ?)) LIMIT ?",
                (now, now, limit),
            ).fetchall()
            waits = conn.execute(  # a warrant_wait whose until has passed: on_timeout (docs/decisions/0027-waits.md)
                "SELECT run_id FROM waits WHERE ended_at IS NULL AND until_at <= ? ORDER BY until_at LIMIT ?",
                (now, limit),
            ).fetchall()
            return list(dict.fromkeys(r[0] for r in [*runs, *approvals, *waits]))

        sweep = Sweep([], [], [])
        for run_id in await self._db.read(due):
            try:
                await self._db.transaction(functools.partial(self._sweep_run, run_id=run_id, sweep=sweep), durable=True)
            except DamagedRecord as exc:
                # One run's damaged row must not stop the sweep of every other run (of every tenant).
                log.error("the sweep passed over run %s: %s", run_id, exc.message)
                sweep.failed.append(run_id)
        return sweep

    def _sweep_run(self, conn: Conn, run_id: str, sweep: Sweep) -> None:
        now = self._clock.now()
        before = run_from_row(self._run_row(conn, run_id))
        open_before = {
            r[0] for r in conn.execute(f"SELECT approval_id FROM approvals WHERE run_id = ? AND {_OPEN}", (run_id,))
        }
        run = self._expire_if_due(conn, before, now)
        if not run.status.terminal:
            self._expire_approvals_due(conn, run_id, now)
            if self._time_out_wait(conn, run_id, now):
                sweep.waits_timed_out.append(run_id)
        after = run_from_row(self._run_row(conn, run_id))
        if after.status is RunStatus.EXPIRED and before.status is not RunStatus.EXPIRED:
            sweep.runs_expired.append(run_id)
        elif after.status is RunStatus.PAUSED and before.status is not RunStatus.PAUSED:
            sweep.runs_paused.append(run_id)
        if not run.status.terminal:
            expired = conn.execute(
                "SELECT approval_id FROM approvals WHERE run_id = ? AND status = 'expired'", (run_id,)
            ).fetchall()
            sweep.approvals_expired.extend(r[0] for r in expired if r[0] in open_before)

    async def watch_state(self, *, limit: int = 5000, tenant: str | None = None) -> WatchState:
        only, only_args = (" AND tenant = ?", (tenant,)) if tenant is not None else ("", ())

        def read(conn: Conn) -> WatchState:
            now = self._clock.now()
            rows = conn.execute(
                f"SELECT * FROM runs WHERE {_LIVE}{only} ORDER BY seq LIMIT ?",
                (*only_args, limit),
            ).fetchall()
            pending: dict[str, list[PendingApproval]] = {}
            for a in conn.execute(
                f"SELECT * FROM approvals WHERE {_OPEN} AND status = 'pending'{only} ORDER BY seq",
                only_args,
            ):
                approval = approval_from_row(a)
                reach = self._approval_reach(approval) if approval.escalate_at is not None else {}
                pending.setdefault(a["run_id"], []).append(
                    PendingApproval(
                        approval.approval_id, approval.tool, approval.created_at, approval.decide_by,
                        approval.escalate_at, reach,
                    )
                )  # fmt: skip
            blocked: dict[str, list[tuple[str, float, int | None]]] = {}
            for t in conn.execute(
                "SELECT t.run_id, t.task_id, t.updated_at, t.blocked_expectation FROM tasks t JOIN runs r "
                "ON r.run_id = t.run_id WHERE t.status = 'blocked' AND r.status IN ('running', 'waiting', 'paused')"
                f"{' AND r.tenant = ?' if tenant is not None else ''} ORDER BY t.run_id, t.position",
                only_args,
            ):
                blocked.setdefault(t["run_id"], []).append((t["task_id"], t["updated_at"], t["blocked_expectation"]))
            waiting = {
                w["run_id"]
                for w in conn.execute(
                    "SELECT w.run_id FROM waits w JOIN runs r ON r.run_id = w.run_id WHERE w.ended_at IS NULL "
                    f"AND r.status = 'waiting'{' AND r.tenant = ?' if tenant is not None else ''}",
                    only_args,
                )
            }  # the runs in a warrant_wait: their silent worker is expected (docs/leases.md)
            runs = []
            for row in rows:
                try:
                    runs.append(
                        self._watch(
                            row, now, tuple(pending.get(row["run_id"], ())), blocked.get(row["run_id"], []),
                            wait_open=row["run_id"] in waiting,
                        )
                    )  # fmt: skip
                except DamagedRecord as exc:  # one damaged row must not blind the watchdog to the rest
                    log.error("the watchdog passed over run %s: %s", row["run_id"], exc.message)
            unknown = [
                UnknownAction(a["action_id"], a["run_id"], a["tenant"], a["tool"], a["created_at"])
                for a in conn.execute(
                    f"SELECT action_id, run_id, tenant, tool, created_at FROM actions WHERE status = 'unknown'{only} "
                    "ORDER BY run_id, seq LIMIT ?",
                    (*only_args, limit),
                )
            ]
            return WatchState(runs, unknown)

        return await self._db.read(read)

    @staticmethod
    def _watch(
        row: Row,
        now: float,
        approvals: tuple[PendingApproval, ...],
        blocked: list[tuple[str, float, int | None]],
        *,
        wait_open: bool = False,
    ) -> RunWatch:
        run = run_from_row(row)
        expectation = run.contract.get("progress_expectation")  # JSON read in Python: the same on both back ends
        default = (run.contract.get("plan") or {}).get("blocked_expectation")
        fallback = float(parse_duration(default)) if default is not None else None
        waits = []
        for task_id, since, own in blocked:
            limit = float(own) if own is not None else fallback
            if limit is not None:  # a task without an expectation is never "blocked too long"
                waits.append(BlockedTask(task_id, since, limit))
        return RunWatch(
            run_id=run.run_id,
            tenant=run.tenant,
            status=run.status,
            currency=run.currency,
            epoch=run.epoch,
            lease_worker=run.lease_worker,
            lease_expires_at=run.lease_expires_at,
            progress_at=row["progress_at"] if row["progress_at"] is not None else run.created_at,
            progress_expectation=float(parse_duration(expectation)) if expectation is not None else None,
            limits=run.limits,
            remaining=run.snapshot().remaining(now),
            approvals=approvals,
            blocked=tuple(waits),
            wait_open=wait_open,
        )

    async def raise_alerts(self, alerts: Sequence[AlertDraft], *, max_attempts: int) -> list[RaisedAlert]:
        def tx(conn: Conn) -> list[RaisedAlert]:
            now = self._clock.now()
            raised: list[RaisedAlert] = []
            for draft in alerts:
                alert_id = self._raise_alert(conn, draft.alert, now, targets=draft.targets, max_attempts=max_attempts)
                if alert_id is not None:  # else this episode was raised before, by this process or another
                    raised.append(RaisedAlert(alert_id, draft.alert, now))
            return raised

        if not alerts:
            return []
        return await self._db.transaction(tx, durable=False)

    async def list_alerts(self, tenant: str, *, run_id: str | None = None, limit: int = 100) -> list[AlertRecord]:
        def read(conn: Conn) -> list[AlertRecord]:
            sql, args = "SELECT * FROM watch_alerts WHERE tenant = ?", [tenant]
            if run_id is not None:
                sql += " AND run_id = ?"
                args.append(run_id)
            rows = conn.execute(sql + " ORDER BY seq DESC LIMIT ?", (*args, limit)).fetchall()
            return [
                AlertRecord(r["alert_id"], r["run_id"], r["tenant"], r["kind"], r["at"], json.loads(r["data"]))
                for r in rows
            ]

        return await self._db.read(read)

    async def open_raised_alerts(self, tenant: str, *, run_id: str | None = None) -> list[AlertRecord]:
        kinds = ", ".join(f"'{k}'" for k in RAISED_KINDS)

        def read(conn: Conn) -> list[AlertRecord]:
            # Open: raised since the run's last verified progress; a run_failed one while the run is failed.
            sql = (
                "SELECT a.* FROM watch_alerts a JOIN runs r ON r.run_id = a.run_id WHERE a.tenant = ? "
                f"AND a.kind IN ({kinds}) AND (a.at >= COALESCE(r.progress_at, r.created_at) "
                "OR (a.kind = 'run_failed' AND r.status = 'failed'))"
            )
            args: list[Any] = [tenant]
            if run_id is not None:
                sql += " AND a.run_id = ?"
                args.append(run_id)
            rows = conn.execute(sql + " ORDER BY a.seq LIMIT 1000", args).fetchall()
            return [
                AlertRecord(r["alert_id"], r["run_id"], r["tenant"], r["kind"], r["at"], json.loads(r["data"]))
                for r in rows
            ]

        return await self._db.read(read)

    async def queue_heartbeat(self, holder: str, every: float, targets: Sequence[str], data: dict[str, Any]) -> bool:
        def tx(conn: Conn) -> bool:
            now = self._clock.now()
            row = conn.execute(
                "SELECT holder, expires_at, heartbeat_at FROM watch_leases WHERE name = ?", (LEASE,)
            ).fetchone()
            if row is None or row["holder"] != holder or row["expires_at"] <= now:
                return False
            if row["heartbeat_at"] is not None and now - row["heartbeat_at"] < every:
                return False
            conn.execute("UPDATE watch_leases SET heartbeat_at = ? WHERE name = ?", (now, LEASE))
            body = {"id": new_id("hb"), "kind": "heartbeat", "run_id": None, "tenant": None, "at": isoformat(now)}
            queue_deliveries(conn, tuple(targets), "heartbeat", {**body, "data": data}, now, 1)
            return True

        return await self._db.transaction(tx, durable=False)

    async def claim_deliveries(self, claimer: str, *, hold: float, limit: int) -> list[Delivery]:
        def tx(conn: Conn) -> list[Delivery]:
            now = self._clock.now()
            # A claim that lapsed on its last attempt (its process died mid-send): nobody knows the outcome.
            conn.execute(
                "UPDATE webhook_deliveries SET status = 'failed', done_at = ?, claimed_by = NULL, "
                "last_error = 'the last attempt ended without an outcome' WHERE status = 'pending' "
                "AND attempts >= max_attempts AND claimed_until <= ?",
                (now, now),
            )
            rows = conn.execute(
                "SELECT delivery_id FROM webhook_deliveries WHERE status = 'pending' AND next_at <= ? "
                "AND (claimed_until IS NULL OR claimed_until <= ?) ORDER BY next_at, seq LIMIT ?",
                (now, now, limit),
            ).fetchall()
            claimed = []
            for row in rows:
                updated = conn.execute(
                    "UPDATE webhook_deliveries SET claimed_by = ?, claimed_until = ?, attempts = attempts + 1 "
                    "WHERE delivery_id = ? RETURNING *",
                    (claimer, now + hold, row[0]),
                ).fetchone()
                claimed.append(_delivery(updated))
            return claimed

        return await self._db.transaction(tx, durable=False)

    async def finish_delivery(
        self, delivery_id: str, claimer: str, *, ok: bool, error: str | None, retry_at: float | None
    ) -> None:
        def tx(conn: Conn) -> None:
            now = self._clock.now()
            row = conn.execute(
                "SELECT attempts, max_attempts FROM webhook_deliveries "
                "WHERE delivery_id = ? AND claimed_by = ? AND status = 'pending'",
                (delivery_id, claimer),
            ).fetchone()
            if row is None:
                return  # the claim lapsed and another process took the delivery over
            if ok:
                status, next_at = "delivered", None
            elif retry_at is None or row["attempts"] >= row["max_attempts"]:
                status, next_at = "failed", None
            else:
                status, next_at = "pending", retry_at
            conn.execute(
                "UPDATE webhook_deliveries SET status = ?, next_at = COALESCE(?, next_at), claimed_by = NULL, "
                "claimed_until = NULL, last_error = ?, done_at = ? WHERE delivery_id = ?",
                (status, next_at, error, None if status == "pending" else now, delivery_id),
            )

        await self._db.transaction(tx, durable=False)

    async def list_deliveries(self, *, status: str | None = None, limit: int = 100) -> list[Delivery]:
        def read(conn: Conn) -> list[Delivery]:
            if status is None:
                rows = conn.execute("SELECT * FROM webhook_deliveries ORDER BY seq LIMIT ?", (limit,))
            else:
                rows = conn.execute(
                    "SELECT * FROM webhook_deliveries WHERE status = ? ORDER BY seq LIMIT ?", (status, limit)
                )
            return [_delivery(r) for r in rows]

        return await self._db.read(read)


def _delivery(row: Row) -> Delivery:
    return Delivery(
        delivery_id=row["delivery_id"],
        target=row["target"],
        kind=row["kind"],
        body=row["body"],
        status=row["status"],
        attempts=row["attempts"],
        max_attempts=row["max_attempts"],
        next_at=row["next_at"],
        last_error=row["last_error"],
        created_at=row["created_at"],
        done_at=row["done_at"],
    )
