"""The embedded store: one SQLite file, WAL, every decision in one `BEGIN IMMEDIATE` transaction."""

from __future__ import annotations

import json
import os
import socket
import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from gateway.canonical import canonical_json
from gateway.clock import Clock, isoformat
from gateway.domain import lifecycle
from gateway.domain.admission import CallFacts, RunSnapshot, call_refusal, lease_refusal, refusal_for
from gateway.domain.contract import DIMENSIONS, Contract
from gateway.domain.leases import mint_token
from gateway.domain.leases import token_hash as hash_token
from gateway.domain.lifecycle import ActionStatus, RunEvent, RunStatus
from gateway.domain.units import format_money
from gateway.errors import Conflict, Forbidden, InvalidRequest, NotFound, Refusal
from gateway.ids import new_id
from gateway.store.base import AdmitResult, Admitted, ApprovalPending, Held, Refused, Stale, Store, log_if_failed
from gateway.store.chain import EntryRow, Head, VerifyReport, verify_run
from gateway.store.records import (
    ActionRecord,
    ApprovalRecord,
    ApprovalRequest,
    ApprovalStatus,
    EventRecord,
    Intent,
    LeaseGrant,
    Page,
    Principal,
    RunRecord,
    SettleKind,
    Settlement,
    SettleResult,
    TokenInfo,
    ToolPin,
    ToolPins,
)
from gateway.store.sqlite_db import Database
from gateway.store.sqlite_rows import (
    action_from_row,
    append_event,
    approval_from_row,
    decode_cursor,
    encode_cursor,
    event_from_row,
    put_blob,
    run_from_row,
)

Conn = sqlite3.Connection


def default_process_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{new_id('p')[2:10]}"


class SQLiteStore(Store):
    def __init__(self, path: str, *, clock: Clock, ledger_key: bytes, process_id: str | None = None) -> None:
        if not ledger_key:
            raise ValueError("a ledger key is required")
        self._db = Database(path)
        self._clock = clock
        self._key = ledger_key
        self._process_id = process_id or default_process_id()

    @property
    def process_id(self) -> str:
        return self._process_id

    async def open(self) -> None:
        await self._db.open()

    async def close(self) -> None:
        await self._db.close()

    # -- helpers (database thread) ---------------------------------------------------------
    def _event(self, conn: Conn, run_id: str, type_: str, now: float, **data: Any) -> None:
        append_event(conn, self._key, run_id, type_, now, data)

    @staticmethod
    def _run_row(conn: Conn, run_id: str, tenant: str | None = None) -> sqlite3.Row:
        if tenant is None:
            row = conn.execute("SELECT * FROM runs WHERE run_id = ?", (run_id,)).fetchone()
        else:
            row = conn.execute("SELECT * FROM runs WHERE run_id = ? AND tenant = ?", (run_id, tenant)).fetchone()
        if row is None:
            raise NotFound(f"no run {run_id}")
        return row  # type: ignore[no-any-return]

    def _set_status(
        self, conn: Conn, run: RunRecord, event: RunEvent, now: float, *, by: str, reason: str | None, **data: Any
    ) -> RunStatus:
        """Move a run by the lifecycle table, fold its active time, record the change."""
        target = lifecycle.transition(run.status, event)
        if target is run.status:
            return target
        spent = run.active_seconds_spent
        if run.active_since is not None:
            spent += max(0.0, now - run.active_since)
        accrues = target is RunStatus.RUNNING or (target is RunStatus.WAITING and run.count_waiting)
        conn.execute(
            "UPDATE runs SET status = ?, status_reason = ?, active_seconds_spent = ?, active_since = ?, "
            "updated_at = ? WHERE run_id = ?",
            (target.value, reason, spent, now if accrues else None, now, run.run_id),
        )
        self._event(
            conn, run.run_id, f"run_{target.value}", now, previous=run.status.value, by=by, reason=reason, **data
        )
        return target

    def _expire_if_due(self, conn: Conn, run: RunRecord, now: float) -> RunRecord:
        if run.status.terminal or now < run.deadline:
            return run
        self._set_status(conn, run, RunEvent.EXPIRE, now, by="gateway", reason="the deadline passed")
        self._close_approvals(conn, run.run_id, now, ApprovalStatus.SUPERSEDED, "the run expired")
        return run_from_row(self._run_row(conn, run.run_id))

    def _close_approvals(self, conn: Conn, run_id: str, now: float, status: ApprovalStatus, reason: str) -> None:
        rows = conn.execute(
            "SELECT approval_id FROM approvals WHERE run_id = ? AND status IN ('pending', 'approved')", (run_id,)
        ).fetchall()
        for row in rows:
            conn.execute(
                "UPDATE approvals SET status = ?, decided_at = ?, note = ? WHERE approval_id = ?",
                (status.value, now, reason, row["approval_id"]),
            )
            self._event(conn, run_id, f"approval_{status.value}", now, approval_id=row["approval_id"], reason=reason)

    def _settle_waiting(self, conn: Conn, run_id: str, now: float, by: str) -> None:
        """After approvals close: a waiting run with nothing left pending goes back to running."""
        pending = conn.execute(
            "SELECT 1 FROM approvals WHERE run_id = ? AND status = 'pending' LIMIT 1", (run_id,)
        ).fetchone()
        if pending is None:
            run = run_from_row(self._run_row(conn, run_id))
            if not run.status.terminal:
                self._set_status(conn, run, RunEvent.APPROVALS_SETTLED, now, by=by, reason="no approval pending")

    def _expire_approvals_due(self, conn: Conn, run_id: str, now: float) -> None:
        rows = conn.execute(
            "SELECT approval_id, status FROM approvals WHERE run_id = ? AND "
            "((status = 'pending' AND decide_by <= ?) OR (status = 'approved' AND valid_until <= ?))",
            (run_id, now, now),
        ).fetchall()
        for row in rows:
            conn.execute("UPDATE approvals SET status = 'expired' WHERE approval_id = ?", (row["approval_id"],))
            self._event(conn, run_id, "approval_expired", now, approval_id=row["approval_id"], was=row["status"])
        if rows:
            self._settle_waiting(conn, run_id, now, "gateway")

    # -- runs ------------------------------------------------------------------------------
    async def create_run(self, principal: Principal, contract: Contract) -> RunRecord:
        terms = contract.terms()
        body = contract.model_dump(mode="json")

        def tx(conn: Conn) -> RunRecord:
            now = self._clock.now()
            run_id, lineage_id = new_id("run"), new_id("lin")
            limits = terms.limits
            conn.execute(
                "INSERT INTO runs (run_id, tenant, lineage_id, status, spec_version, contract, currency, owner, "
                "created_by, created_at, updated_at, deadline, lease_ttl, spend_limit, tool_calls_limit, "
                "writes_limit, active_seconds_limit, active_since, count_waiting) "
                "VALUES (?, ?, ?, 'running', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    run_id,
                    principal.tenant,
                    lineage_id,
                    terms.spec_version,
                    canonical_json(body).decode(),
                    terms.currency,
                    contract.owner,
                    principal.name,
                    now,
                    now,
                    now + terms.expires_in,
                    terms.lease_ttl,
                    limits["spend"],
                    limits["tool_calls"],
                    limits["writes"],
                    limits["active_seconds"],
                    now,
                    int(terms.count_waiting),
                ),
            )
            contract_sha = put_blob(conn, body, now)
            self._event(
                conn,
                run_id,
                "run_created",
                now,
                by=principal.name,
                tenant=principal.tenant,
                lineage_id=lineage_id,
                contract_sha256=contract_sha,
                spec_version=terms.spec_version,
                deadline=isoformat(now + terms.expires_in),
            )
            return run_from_row(self._run_row(conn, run_id))

        return await self._db.transaction(tx, durable=True)

    async def get_run(self, tenant: str, run_id: str) -> RunRecord:
        return await self._db.read(lambda conn: run_from_row(self._run_row(conn, run_id, tenant)))

    async def list_runs(
        self, tenant: str, *, status: str | None = None, cursor: str | None = None, limit: int = 50
    ) -> Page[RunRecord]:
        after = _cursor(cursor)

        def read(conn: Conn) -> Page[RunRecord]:
            sql = "SELECT * FROM runs WHERE tenant = ? AND seq > ?"
            args: list[Any] = [tenant, after]
            if status is not None:
                sql += " AND status = ?"
                args.append(status)
            rows = conn.execute(sql + " ORDER BY seq LIMIT ?", (*args, limit + 1)).fetchall()
            more = len(rows) > limit
            rows = rows[:limit]
            return Page([run_from_row(r) for r in rows], encode_cursor(rows[-1]["seq"]) if more else None)

        return await self._db.read(read)

    async def _control(
        self, principal: Principal, run_id: str, event: RunEvent, reason: str | None, **data: Any
    ) -> RunRecord:
        def tx(conn: Conn) -> RunRecord | Refusal:
            now = self._clock.now()
            run = self._expire_if_due(conn, run_from_row(self._run_row(conn, run_id, principal.tenant)), now)
            try:
                if event is RunEvent.RESUME and run.status is RunStatus.PAUSED:
                    self._set_status(conn, run, event, now, by=principal.name, reason=reason, **data)
                    self._expire_approvals_due(conn, run_id, now)
                    pending = conn.execute(
                        "SELECT 1 FROM approvals WHERE run_id = ? AND status = 'pending' LIMIT 1", (run_id,)
                    ).fetchone()
                    if pending is not None:
                        resumed = run_from_row(self._run_row(conn, run_id))
                        self._set_status(
                            conn, resumed, RunEvent.APPROVAL_PENDING, now, by="gateway", reason="approvals are pending"
                        )
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

    def _cancel(self, conn: Conn, run: RunRecord, now: float, by: str, reason: str | None, **data: Any) -> None:
        if run.status is RunStatus.CANCELLED:
            return
        self._set_status(conn, run, RunEvent.CANCEL, now, by=by, reason=reason, **data)
        # Every outstanding token dies at once: its epoch is no longer the run's.
        conn.execute("UPDATE runs SET epoch = epoch + 1 WHERE run_id = ?", (run.run_id,))
        self._close_approvals(conn, run.run_id, now, ApprovalStatus.SUPERSEDED, "the run was cancelled")
        children = conn.execute(
            "SELECT * FROM runs WHERE parent_run_id = ? AND status NOT IN ('completed', 'cancelled', 'expired')",
            (run.run_id,),
        ).fetchall()
        for child in children:
            self._cancel(conn, run_from_row(child), now, by, f"parent run {run.run_id} was cancelled", **data)

    async def pause(self, principal: Principal, run_id: str, reason: str | None) -> RunRecord:
        return await self._control(principal, run_id, RunEvent.PAUSE, reason)

    async def resume(self, principal: Principal, run_id: str, reason: str | None) -> RunRecord:
        return await self._control(principal, run_id, RunEvent.RESUME, reason)

    async def cancel(self, principal: Principal, run_id: str, reason: str | None, *, hard: bool) -> RunRecord:
        return await self._control(principal, run_id, RunEvent.CANCEL, reason, hard=hard)

    # -- leases ----------------------------------------------------------------------------
    async def acquire_lease(self, principal: Principal, run_id: str, worker: str, *, takeover: bool) -> LeaseGrant:
        token = mint_token()

        def tx(conn: Conn) -> LeaseGrant | Refusal:
            now = self._clock.now()
            run = self._expire_if_due(conn, run_from_row(self._run_row(conn, run_id, principal.tenant)), now)
            if run.status.terminal:
                return lifecycle.status_refusal(run.status)
            held = run.lease_expires_at is not None and now < run.lease_expires_at
            if held and not takeover:
                raise Conflict(
                    f"the lease is held by {run.lease_worker} until {isoformat(run.lease_expires_at)}; "
                    "take it over explicitly to replace that worker",
                    code="lease_held",
                    worker=run.lease_worker,
                    expires_at=isoformat(run.lease_expires_at),
                )
            epoch = run.epoch + 1
            expires = now + run.lease_ttl
            conn.execute(
                "INSERT INTO leases (token_hash, run_id, epoch, worker, granted_by, granted_at) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (hash_token(token), run_id, epoch, worker, principal.name, now),
            )
            conn.execute(
                "UPDATE runs SET epoch = ?, lease_worker = ?, lease_granted_by = ?, lease_expires_at = ?, "
                "updated_at = ? WHERE run_id = ?",
                (epoch, worker, principal.name, expires, now, run_id),
            )
            self._event(
                conn,
                run_id,
                "lease_granted",
                now,
                epoch=epoch,
                worker=worker,
                by=principal.name,
                takeover=held,
                previous_worker=run.lease_worker if held else None,
            )
            return LeaseGrant(run_id=run_id, token=token, epoch=epoch, worker=worker, expires_at=expires)

        result = await self._db.transaction(tx, durable=True)
        if isinstance(result, Refusal):
            raise result
        return result

    async def renew_lease(self, token_hash: str) -> LeaseGrant:
        def tx(conn: Conn) -> LeaseGrant | Refusal:
            now = self._clock.now()
            lease = conn.execute("SELECT * FROM leases WHERE token_hash = ?", (token_hash,)).fetchone()
            if lease is None:
                raise NotFound("unknown lease token")
            run = self._expire_if_due(conn, run_from_row(self._run_row(conn, lease["run_id"])), now)
            if run.status.terminal:
                return lifecycle.status_refusal(run.status)
            if lease["epoch"] != run.epoch:
                return Refusal(
                    "lease_superseded",
                    "this lease was taken over by another worker",
                    epoch=lease["epoch"],
                    current_epoch=run.epoch,
                )
            expires = now + run.lease_ttl
            conn.execute("UPDATE runs SET lease_expires_at = ? WHERE run_id = ?", (expires, run.run_id))
            return LeaseGrant(run_id=run.run_id, token="", epoch=run.epoch, worker=lease["worker"], expires_at=expires)

        result = await self._db.transaction(tx, durable=False)
        if isinstance(result, Refusal):
            raise result
        return result

    async def authenticate(self, token_hash: str) -> TokenInfo | None:
        def read(conn: Conn) -> TokenInfo | None:
            lease = conn.execute("SELECT * FROM leases WHERE token_hash = ?", (token_hash,)).fetchone()
            if lease is None:
                return None
            run = run_from_row(self._run_row(conn, lease["run_id"]))
            return TokenInfo(
                run=run,
                epoch=lease["epoch"],
                worker=lease["worker"],
                granted_by=lease["granted_by"],
                token_hash=token_hash,
            )

        return await self._db.read(read)

    # -- the gate --------------------------------------------------------------------------
    def _snapshot(self, conn: Conn, run_id: str) -> RunSnapshot:
        return run_from_row(self._run_row(conn, run_id)).snapshot()

    def _reject(
        self,
        conn: Conn,
        run: RunRecord | RunSnapshot,
        now: float,
        *,
        tool: str,
        payload_sha256: str,
        refusal: Refusal,
        epoch: int | None,
        worker: str | None,
        effect: str = "unknown",
    ) -> str:
        action_id = new_id("act")
        conn.execute(
            "INSERT INTO actions (action_id, run_id, tenant, lineage_id, tool, effect, payload_sha256, status, code, "
            "reason, epoch, worker, created_at, settled_at) VALUES (?, ?, ?, ?, ?, ?, ?, 'rejected', ?, ?, ?, ?, ?, ?)",
            (
                action_id,
                run.run_id,
                run.tenant,
                run.lineage_id,
                tool,
                effect,
                payload_sha256,
                refusal.code,
                refusal.message,
                epoch,
                worker,
                now,
                now,
            ),
        )
        self._event(
            conn,
            run.run_id,
            "action_rejected",
            now,
            action_id=action_id,
            tool=tool,
            payload_sha256=payload_sha256,
            code=refusal.code,
            epoch=epoch,
            worker=worker,
        )
        return action_id

    async def precheck(self, run_id: str, facts: CallFacts) -> Refusal | None:
        def read(conn: Conn) -> Refusal | None:
            return refusal_for(self._snapshot(conn, run_id), facts, self._clock.now())

        return await self._db.read(read)

    async def admit(self, intent: Intent, facts: CallFacts) -> AdmitResult:
        def tx(conn: Conn) -> AdmitResult:
            now = self._clock.now()
            run = self._expire_if_due(conn, run_from_row(self._run_row(conn, intent.run_id)), now)
            snapshot = run.snapshot()
            # Step 1's refusals come before any replay: a dead lease learns nothing about operations.
            refusal = lease_refusal(snapshot, facts.epoch, now)
            if refusal is None and intent.spec_version is not None and intent.spec_version != run.spec_version:
                return Stale(run.spec_version)
            if refusal is None and intent.operation_id is not None:
                holder = conn.execute(
                    "SELECT * FROM actions WHERE lineage_id = ? AND operation_id = ? AND status IN "
                    "('admitted', 'succeeded', 'unknown', 'compensated')",
                    (run.lineage_id, intent.operation_id),
                ).fetchone()
                if holder is not None:
                    return Held(action_from_row(holder))
            if refusal is None:
                refusal = call_refusal(snapshot, facts, now)
            if refusal is None and intent.approval_id is not None:
                refusal = self._check_approval(conn, intent, run, now)
            if refusal is not None:
                action_id = self._reject(
                    conn,
                    run,
                    now,
                    tool=intent.tool,
                    payload_sha256=intent.payload_sha256,
                    refusal=refusal,
                    epoch=intent.epoch,
                    worker=intent.worker,
                    effect=intent.effect,
                )
                return Refused(refusal, action_id)
            action_id = new_id("act")
            r = intent.reservation
            put_blob(conn, intent.payload, now)
            conn.execute(
                "INSERT INTO actions (action_id, run_id, tenant, lineage_id, tool, effect, operation_id, "
                "payload_sha256, idempotency_key, status, epoch, worker, approval_id, repeat_of, reserved_spend, "
                "reserved_calls, reserved_writes, process_id, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'admitted', ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    action_id,
                    run.run_id,
                    run.tenant,
                    run.lineage_id,
                    intent.tool,
                    intent.effect,
                    intent.operation_id,
                    intent.payload_sha256,
                    intent.idempotency_key,
                    intent.epoch,
                    intent.worker,
                    intent.approval_id,
                    intent.repeat_of,
                    r.spend,
                    r.tool_calls,
                    r.writes,
                    intent.process_id,
                    now,
                ),
            )
            # Every admitted call renews the lease.
            conn.execute(
                "UPDATE runs SET spend_reserved = spend_reserved + ?, tool_calls_reserved = tool_calls_reserved + ?, "
                "writes_reserved = writes_reserved + ?, lease_expires_at = ? WHERE run_id = ?",
                (r.spend, r.tool_calls, r.writes, now + run.lease_ttl, run.run_id),
            )
            if intent.approval_id is not None:
                conn.execute(
                    "UPDATE approvals SET status = 'used', action_id = ? WHERE approval_id = ?",
                    (action_id, intent.approval_id),
                )
            if intent.effect == "write":
                # A read's one ledger entry is written when it settles: it changes nothing outside.
                self._admitted_event(conn, run, action_id, intent, now)
            reserved = r.as_dict()
            remaining = snapshot.remaining(now)
            # The row just inserted, as `SELECT *` would read it back (REAL created_at as float).
            return Admitted(
                ActionRecord(
                    action_id=action_id,
                    run_id=run.run_id,
                    tenant=run.tenant,
                    lineage_id=run.lineage_id,
                    tool=intent.tool,
                    effect=intent.effect,
                    operation_id=intent.operation_id,
                    payload_sha256=intent.payload_sha256,
                    idempotency_key=intent.idempotency_key,
                    status=ActionStatus.ADMITTED,
                    code=None,
                    reason=None,
                    epoch=intent.epoch,
                    worker=intent.worker,
                    approval_id=intent.approval_id,
                    repeat_of=intent.repeat_of,
                    reserved=reserved,
                    actual_spend=None,
                    receipt=None,
                    result_sha256=None,
                    process_id=intent.process_id,
                    created_at=float(now),
                    settled_at=None,
                ),
                remaining={dim: left - reserved.get(dim, 0) for dim, left in remaining.items()},
                currency=run.currency,
            )

        return await self._db.transaction(tx, durable=intent.effect == "write")

    def _admitted_event(self, conn: Conn, run: RunRecord, action_id: str, intent: Intent, now: float) -> None:
        r = intent.reservation
        self._event(
            conn,
            run.run_id,
            "action_admitted",
            now,
            action_id=action_id,
            tool=intent.tool,
            effect=intent.effect,
            operation_id=intent.operation_id,
            payload_sha256=intent.payload_sha256,
            epoch=intent.epoch,
            worker=intent.worker,
            approval_id=intent.approval_id,
            repeat_of=intent.repeat_of,
            reserved=_wire_reservation(r.as_dict(), run.currency),
            process_id=intent.process_id,
        )

    def _check_approval(self, conn: Conn, intent: Intent, run: RunRecord, now: float) -> Refusal | None:
        row = conn.execute("SELECT * FROM approvals WHERE approval_id = ?", (intent.approval_id,)).fetchone()
        if (
            row is None
            or row["run_id"] != run.run_id
            or row["tool"] != intent.tool
            or (row["payload_sha256"] != intent.payload_sha256 or row["spec_version"] != run.spec_version)
        ):
            return Refusal("approval_required", "no approval binds this exact payload", tool=intent.tool)
        if row["status"] != ApprovalStatus.APPROVED.value:
            return Refusal(
                "approval_required", f"the approval is {row['status']}, not approved", approval_id=row["approval_id"]
            )
        if row["valid_until"] is not None and now >= row["valid_until"]:
            conn.execute("UPDATE approvals SET status = 'expired' WHERE approval_id = ?", (row["approval_id"],))
            self._event(conn, run.run_id, "approval_expired", now, approval_id=row["approval_id"], was="approved")
            return Refusal(
                "approval_expired", "the approval expired before it was used", approval_id=row["approval_id"]
            )
        return None

    async def record_rejection(
        self, run_id: str, *, tool: str, payload_sha256: str, refusal: Refusal, epoch: int | None, worker: str | None
    ) -> str:
        def tx(conn: Conn) -> str:
            run = self._expire_if_due(conn, run_from_row(self._run_row(conn, run_id)), self._clock.now())
            return self._reject(
                conn,
                run,
                self._clock.now(),
                tool=tool,
                payload_sha256=payload_sha256,
                refusal=refusal,
                epoch=epoch,
                worker=worker,
            )

        return await self._db.transaction(tx, durable=False)

    async def settle(self, action_id: str, settlement: Settlement) -> SettleResult:
        # A write's outcome is durable before the caller hears of it; a read's need not wait on a disk.
        return await self._db.transaction(self._settle_tx(action_id, settlement), durable=settlement.durable)

    def settle_soon(self, action_id: str, settlement: Settlement) -> None:
        future = self._db.submit(
            self._settle_tx(action_id, settlement, want_run=False), durable=settlement.durable, lazy=True
        )
        future.add_done_callback(log_if_failed(action_id))

    def _settle_tx(
        self, action_id: str, settlement: Settlement, *, want_run: bool = True
    ) -> Callable[[Conn], SettleResult]:
        def tx(conn: Conn) -> SettleResult:
            now = self._clock.now()
            row = conn.execute("SELECT * FROM actions WHERE action_id = ?", (action_id,)).fetchone()
            if row is None:
                raise NotFound(f"no action {action_id}")
            action = action_from_row(row)
            target = ActionStatus(settlement.kind.value)
            lifecycle.check_action_transition(action.status, target)
            run = run_from_row(self._run_row(conn, action.run_id))
            held = action.reserved
            spend = calls = writes = 0
            actual: int | None = None
            result_sha: str | None = None
            if settlement.kind is SettleKind.SUCCEEDED:
                actual = settlement.actual_spend if settlement.actual_spend is not None else settlement.estimate_spend
                spend, calls, writes = actual, held["tool_calls"], held["writes"]
                if settlement.result is not None:
                    result_sha = put_blob(conn, settlement.result, now)
            elif settlement.kind is SettleKind.FAILED and settlement.sent:
                actual = settlement.actual_spend or 0
                spend, calls = actual, held["tool_calls"]
            elif settlement.kind is SettleKind.FAILED:
                actual = 0
            release = settlement.kind is not SettleKind.UNKNOWN
            if release:
                conn.execute(
                    "UPDATE runs SET spend_reserved = spend_reserved - ?, "
                    "tool_calls_reserved = tool_calls_reserved - ?, writes_reserved = writes_reserved - ?, "
                    "spend_spent = spend_spent + ?, tool_calls_spent = tool_calls_spent + ?, "
                    "writes_spent = writes_spent + ?, updated_at = ? WHERE run_id = ?",
                    (held["spend"], held["tool_calls"], held["writes"], spend, calls, writes, now, run.run_id),
                )
            code = settlement.code
            if settlement.kind is SettleKind.FAILED and not settlement.sent:
                code = code or "not_sent"
            receipt = json.dumps(settlement.receipt, sort_keys=True) if settlement.receipt is not None else None
            conn.execute(
                "UPDATE actions SET status = ?, code = ?, reason = ?, receipt = ?, actual_spend = ?, "
                "result_sha256 = ?, settled_at = ? WHERE action_id = ?",
                (
                    target.value,
                    code,
                    settlement.reason,
                    receipt,
                    actual,
                    result_sha,
                    now,
                    action_id,
                ),
            )
            intent: dict[str, Any] = {}
            if action.effect != "write" and action.status is ActionStatus.ADMITTED:
                # A read's only ledger entry: what was asked, under which lease, and how it ended.
                intent = {
                    "tool": action.tool,
                    "effect": action.effect,
                    "payload_sha256": action.payload_sha256,
                    "epoch": action.epoch,
                    "worker": action.worker,
                    "process_id": action.process_id,
                }
            self._event(
                conn,
                run.run_id,
                "action_settled",
                now,
                action_id=action_id,
                status=target.value,
                code=code,
                sent=settlement.sent,
                receipt=settlement.receipt,
                result_sha256=result_sha,
                actual_spend=format_money(actual, run.currency) if actual is not None else None,
                previous=action.status.value,
                **intent,
            )
            if settlement.kind is SettleKind.FAILED and not settlement.sent and action.approval_id:
                self._restore_approval(conn, action.approval_id, run.run_id, now)
            overrun = (
                settlement.kind is SettleKind.SUCCEEDED
                and settlement.max_spend is not None
                and actual is not None
                and actual > settlement.max_spend
            )
            if overrun:
                self._event(
                    conn,
                    run.run_id,
                    "budget_overrun",
                    now,
                    action_id=action_id,
                    actual_spend=format_money(actual or 0, run.currency),
                    max_spend=format_money(settlement.max_spend or 0, run.currency),
                )
            after_cancel = settlement.kind is SettleKind.SUCCEEDED and run.status is RunStatus.CANCELLED
            if after_cancel:
                self._event(
                    conn,
                    run.run_id,
                    "effect_after_cancel",
                    now,
                    action_id=action_id,
                    tool=action.tool,
                    receipt=settlement.receipt,
                )
            # The row as updated above, as `SELECT *` would read it back (nothing else here writes it).
            updated = replace(
                action,
                status=target,
                code=code,
                reason=settlement.reason,
                receipt=json.loads(receipt) if receipt else None,
                actual_spend=actual,
                result_sha256=result_sha,
                settled_at=float(now),
            )
            after = run_from_row(self._run_row(conn, action.run_id)) if want_run else None
            return SettleResult(updated, after, overrun=overrun, after_cancel=after_cancel)

        return tx

    def _restore_approval(self, conn: Conn, approval_id: str, run_id: str, now: float) -> None:
        row = conn.execute("SELECT * FROM approvals WHERE approval_id = ?", (approval_id,)).fetchone()
        if row is None or row["status"] != ApprovalStatus.USED.value:
            return
        still_valid = row["valid_until"] is None or now < row["valid_until"]
        status = ApprovalStatus.APPROVED if still_valid else ApprovalStatus.EXPIRED
        conn.execute(
            "UPDATE approvals SET status = ?, action_id = NULL WHERE approval_id = ?", (status.value, approval_id)
        )
        self._event(conn, run_id, "approval_restored", now, approval_id=approval_id, status=status.value)

    async def find_operation(self, lineage_id: str, operation_id: str) -> ActionRecord | None:
        def read(conn: Conn) -> ActionRecord | None:
            row = conn.execute(
                "SELECT * FROM actions WHERE lineage_id = ? AND operation_id = ? AND status IN "
                "('admitted', 'succeeded', 'unknown', 'compensated')",
                (lineage_id, operation_id),
            ).fetchone()
            return action_from_row(row) if row else None

        return await self._db.read(read)

    async def mark_orphans_unknown(self) -> list[str]:
        def tx(conn: Conn) -> list[str]:
            now = self._clock.now()
            rows = conn.execute(
                "SELECT action_id, run_id, process_id FROM actions WHERE status = 'admitted' AND "
                "(process_id IS NULL OR process_id != ?)",
                (self._process_id,),
            ).fetchall()
            for row in rows:
                reason = "the gateway process that dispatched it ended before its outcome was recorded"
                conn.execute(
                    "UPDATE actions SET status = 'unknown', code = 'outcome_unknown', reason = ? WHERE action_id = ?",
                    (reason, row["action_id"]),
                )
                self._event(
                    conn,
                    row["run_id"],
                    "action_settled",
                    now,
                    action_id=row["action_id"],
                    status="unknown",
                    code="outcome_unknown",
                    previous="admitted",
                    process_id=row["process_id"],
                    reason=reason,
                )
            return [row["action_id"] for row in rows]

        return await self._db.transaction(tx, durable=True)

    # -- approvals -------------------------------------------------------------------------
    async def approvals_for(self, run_id: str, tool: str, payload_sha256: str) -> list[ApprovalRecord]:
        def read(conn: Conn) -> list[ApprovalRecord]:
            rows = conn.execute(
                "SELECT * FROM approvals WHERE run_id = ? AND tool = ? AND payload_sha256 = ? ORDER BY seq DESC",
                (run_id, tool, payload_sha256),
            ).fetchall()
            return [approval_from_row(r) for r in rows]

        return await self._db.read(read)

    async def request_approval(self, request: ApprovalRequest, facts: CallFacts) -> ApprovalPending | Refused:
        def tx(conn: Conn) -> ApprovalPending | Refused:
            now = self._clock.now()
            run = self._expire_if_due(conn, run_from_row(self._run_row(conn, request.run_id)), now)
            self._expire_approvals_due(conn, run.run_id, now)
            existing = conn.execute(
                "SELECT * FROM approvals WHERE run_id = ? AND tool = ? AND payload_sha256 = ? AND spec_version = ? "
                "AND tool_def_sha256 = ? AND status = 'pending' ORDER BY seq DESC LIMIT 1",
                (run.run_id, request.tool, request.payload_sha256, run.spec_version, request.tool_def_sha256),
            ).fetchone()
            if existing is not None:
                return ApprovalPending(approval_from_row(existing), created=False)
            run = run_from_row(self._run_row(conn, run.run_id))
            refusal = refusal_for(run.snapshot(), facts, now)
            if refusal is not None:
                action_id = self._reject(
                    conn,
                    run,
                    now,
                    tool=request.tool,
                    payload_sha256=request.payload_sha256,
                    refusal=refusal,
                    epoch=facts.epoch,
                    worker=request.requested_by,
                    effect="write",
                )
                return Refused(refusal, action_id)
            approval_id = new_id("apr")
            put_blob(conn, request.payload, now)
            conn.execute(
                "INSERT INTO approvals (approval_id, run_id, tenant, tool, payload_sha256, spec_version, "
                "tool_def_sha256, status, role, on_expiry, valid_for, requested_by, evidence, rationale, created_at, "
                "decide_by) VALUES (?, ?, ?, ?, ?, ?, ?, 'pending', ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    approval_id,
                    run.run_id,
                    run.tenant,
                    request.tool,
                    request.payload_sha256,
                    run.spec_version,
                    request.tool_def_sha256,
                    request.role,
                    request.on_expiry,
                    request.valid_for,
                    request.requested_by,
                    json.dumps(request.evidence) if request.evidence is not None else None,
                    request.rationale,
                    now,
                    now + request.decide_within,
                ),
            )
            self._event(
                conn,
                run.run_id,
                "approval_requested",
                now,
                approval_id=approval_id,
                tool=request.tool,
                payload_sha256=request.payload_sha256,
                spec_version=run.spec_version,
                tool_def_sha256=request.tool_def_sha256,
                requested_by=request.requested_by,
                decide_by=isoformat(now + request.decide_within),
            )
            self._set_status(
                conn,
                run,
                RunEvent.APPROVAL_PENDING,
                now,
                by="gateway",
                reason=f"approval {approval_id} is pending",
                approval_id=approval_id,
            )
            row = conn.execute("SELECT * FROM approvals WHERE approval_id = ?", (approval_id,)).fetchone()
            return ApprovalPending(approval_from_row(row), created=True)

        return await self._db.transaction(tx, durable=True)

    async def decide_approval(
        self, principal: Principal, approval_id: str, *, approve: bool, note: str | None, expected_sha256: str | None
    ) -> ApprovalRecord:
        def tx(conn: Conn) -> ApprovalRecord | Conflict:
            now = self._clock.now()
            row = conn.execute(
                "SELECT * FROM approvals WHERE approval_id = ? AND tenant = ?", (approval_id, principal.tenant)
            ).fetchone()
            if row is None:
                raise NotFound(f"no approval {approval_id}")
            approval = approval_from_row(row)
            if approval.status is not ApprovalStatus.PENDING:
                raise Conflict(
                    f"the approval is {approval.status.value}, not pending",
                    code="approval_not_pending",
                    status=approval.status.value,
                )
            if expected_sha256 is not None and expected_sha256 != approval.payload_sha256:
                raise InvalidRequest(
                    "the payload is not the one you were shown",
                    code="payload_mismatch",
                    payload_sha256=approval.payload_sha256,
                ).with_status(409)
            if approval.requested_by == principal.name:
                raise Forbidden("a principal never decides an approval it asked for")
            run = run_from_row(self._run_row(conn, approval.run_id))
            if run.contract.get("forbid_creator_approval") and run.created_by == principal.name:
                raise Forbidden("this run's contract forbids its creator from deciding its approvals")
            if approval.role not in principal.roles and "admin" not in principal.roles:
                raise Forbidden(f"this approval needs the {approval.role} role")
            if now >= approval.decide_by:
                self._expire_approvals_due(conn, run.run_id, now)
                return Conflict("the approval was not decided in time and has expired", code="approval_expired")
            status = ApprovalStatus.APPROVED if approve else ApprovalStatus.DENIED
            conn.execute(
                "UPDATE approvals SET status = ?, decided_by = ?, decided_at = ?, note = ?, valid_until = ? "
                "WHERE approval_id = ?",
                (status.value, principal.name, now, note, now + approval.valid_for if approve else None, approval_id),
            )
            self._event(
                conn,
                run.run_id,
                f"approval_{status.value}",
                now,
                approval_id=approval_id,
                by=principal.name,
                note=note,
                payload_sha256=approval.payload_sha256,
                valid_until=isoformat(now + approval.valid_for) if approve else None,
            )
            self._settle_waiting(conn, run.run_id, now, principal.name)
            return approval_from_row(
                conn.execute("SELECT * FROM approvals WHERE approval_id = ?", (approval_id,)).fetchone()
            )

        result = await self._db.transaction(tx, durable=True)
        if isinstance(result, Conflict):
            raise result
        return result

    async def get_approval(self, tenant: str, approval_id: str) -> ApprovalRecord:
        def read(conn: Conn) -> ApprovalRecord:
            row = conn.execute(
                "SELECT * FROM approvals WHERE approval_id = ? AND tenant = ?", (approval_id, tenant)
            ).fetchone()
            if row is None:
                raise NotFound(f"no approval {approval_id}")
            return approval_from_row(row)

        return await self._db.read(read)

    async def list_approvals(
        self,
        tenant: str,
        *,
        status: ApprovalStatus | None = None,
        run_id: str | None = None,
        cursor: str | None = None,
        limit: int = 50,
    ) -> Page[ApprovalRecord]:
        after = _cursor(cursor)

        def read(conn: Conn) -> Page[ApprovalRecord]:
            sql, args = "SELECT * FROM approvals WHERE tenant = ? AND seq > ?", [tenant, after]
            if status is not None:
                sql, args = sql + " AND status = ?", [*args, status.value]
            if run_id is not None:
                sql, args = sql + " AND run_id = ?", [*args, run_id]
            rows = conn.execute(sql + " ORDER BY seq LIMIT ?", (*args, limit + 1)).fetchall()
            more = len(rows) > limit
            rows = rows[:limit]
            return Page([approval_from_row(r) for r in rows], encode_cursor(rows[-1]["seq"]) if more else None)

        return await self._db.read(read)

    # -- the record ------------------------------------------------------------------------
    async def get_action(self, tenant: str, action_id: str) -> ActionRecord:
        def read(conn: Conn) -> ActionRecord:
            row = conn.execute(
                "SELECT * FROM actions WHERE action_id = ? AND tenant = ?", (action_id, tenant)
            ).fetchone()
            if row is None:
                raise NotFound(f"no action {action_id}")
            return action_from_row(row)

        return await self._db.read(read)

    async def list_actions(
        self, tenant: str, run_id: str, *, cursor: str | None = None, limit: int = 100
    ) -> Page[ActionRecord]:
        after = _cursor(cursor)

        def read(conn: Conn) -> Page[ActionRecord]:
            self._run_row(conn, run_id, tenant)
            rows = conn.execute(
                "SELECT * FROM actions WHERE run_id = ? AND tenant = ? AND seq > ? ORDER BY seq LIMIT ?",
                (run_id, tenant, after, limit + 1),
            ).fetchall()
            more = len(rows) > limit
            rows = rows[:limit]
            return Page([action_from_row(r) for r in rows], encode_cursor(rows[-1]["seq"]) if more else None)

        return await self._db.read(read)

    async def list_events(self, tenant: str, run_id: str, *, after: int = 0, limit: int = 100) -> list[EventRecord]:
        def read(conn: Conn) -> list[EventRecord]:
            self._run_row(conn, run_id, tenant)
            rows = conn.execute(
                "SELECT * FROM events WHERE run_id = ? AND seq > ? ORDER BY seq LIMIT ?", (run_id, after, limit)
            ).fetchall()
            return [event_from_row(r) for r in rows]

        return await self._db.read(read)

    async def get_blob(self, sha256: str) -> Any:
        def read(conn: Conn) -> Any:
            row = conn.execute("SELECT body FROM blobs WHERE sha256 = ?", (sha256,)).fetchone()
            return json.loads(row["body"]) if row else None

        return await self._db.read(read)

    async def verify_ledger(self, tenant: str | None = None) -> VerifyReport:
        def read(conn: Conn) -> VerifyReport:
            if tenant is None:
                run_ids = [r[0] for r in conn.execute("SELECT run_id FROM runs ORDER BY seq")]
            else:
                run_ids = [
                    r[0] for r in conn.execute("SELECT run_id FROM runs WHERE tenant = ? ORDER BY seq", (tenant,))
                ]
            total = 0
            for run_id in run_ids:
                rows = (
                    EntryRow(r["run_id"], r["seq"], r["type"], r["body"], r["prev_hash"], r["hash"])
                    for r in conn.execute("SELECT * FROM events WHERE run_id = ? ORDER BY seq", (run_id,))
                )
                h = conn.execute("SELECT * FROM chain_heads WHERE run_id = ?", (run_id,)).fetchone()
                head = Head(h["run_id"], h["seq"], h["hash"], h["mac"]) if h else None
                count, bad = verify_run(run_id, rows, head, self._key)
                total += count
                if bad is not None:
                    return VerifyReport(ok=False, runs=len(run_ids), entries=total, first_bad=bad)
            return VerifyReport(ok=True, runs=len(run_ids), entries=total, first_bad=None)

        return await self._db.read(read)

    # -- tool pins -------------------------------------------------------------------------
    async def tool_pins(self) -> ToolPins:
        def read(conn: Conn) -> ToolPins:
            pins = {r["tool"]: _pin_from_row(r) for r in conn.execute("SELECT * FROM tool_pins")}
            adapters = frozenset(r[0] for r in conn.execute("SELECT adapter FROM tool_pin_adapters"))
            return ToolPins(pins, adapters)

        return await self._db.read(read)

    async def pin_first_use(self, adapter: str, pins: Sequence[ToolPin]) -> bool:
        def tx(conn: Conn) -> bool:
            now = self._clock.now()
            done = conn.execute("SELECT 1 FROM tool_pin_adapters WHERE adapter = ?", (adapter,)).fetchone()
            if done is not None:
                return False
            conn.execute("INSERT INTO tool_pin_adapters (adapter, first_pinned_at) VALUES (?, ?)", (adapter, now))
            for pin in pins:
                conn.execute(
                    "INSERT OR IGNORE INTO tool_pins (tool, adapter, definition_sha256, definition, pinned_by, "
                    "pinned_at, previous_sha256) VALUES (?, ?, ?, ?, ?, ?, NULL)",
                    (pin.tool, adapter, pin.definition_sha256, _definition_json(pin), "first_use", now),
                )
            return True

        return await self._db.transaction(tx, durable=True)

    async def accept_tool_pin(self, pin: ToolPin, *, replaces: str | None) -> ToolPin:
        def tx(conn: Conn) -> ToolPin:
            now = self._clock.now()
            row = conn.execute("SELECT definition_sha256 FROM tool_pins WHERE tool = ?", (pin.tool,)).fetchone()
            current = row["definition_sha256"] if row is not None else None
            if current == pin.definition_sha256:
                return _pin_from_row(conn.execute("SELECT * FROM tool_pins WHERE tool = ?", (pin.tool,)).fetchone())
            if current != replaces:
                raise InvalidRequest(
                    f"the pin of {pin.tool} changed meanwhile", code="payload_mismatch", pinned_sha256=current
                ).with_status(409)
            conn.execute(
                "INSERT INTO tool_pins (tool, adapter, definition_sha256, definition, pinned_by, pinned_at, "
                "previous_sha256) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (tool) DO UPDATE SET "
                "adapter = excluded.adapter, definition_sha256 = excluded.definition_sha256, "
                "definition = excluded.definition, pinned_by = excluded.pinned_by, pinned_at = excluded.pinned_at, "
                "previous_sha256 = excluded.previous_sha256",
                (
                    pin.tool,
                    pin.adapter,
                    pin.definition_sha256,
                    _definition_json(pin),
                    pin.pinned_by,
                    now,
                    current,
                ),
            )
            return _pin_from_row(conn.execute("SELECT * FROM tool_pins WHERE tool = ?", (pin.tool,)).fetchone())

        return await self._db.transaction(tx, durable=True)


def _definition_json(pin: ToolPin) -> str:
    return canonical_json(pin.definition).decode()


def _pin_from_row(row: sqlite3.Row) -> ToolPin:
    return ToolPin(
        tool=row["tool"],
        adapter=row["adapter"],
        definition_sha256=row["definition_sha256"],
        definition=json.loads(row["definition"]),
        pinned_by=row["pinned_by"],
        pinned_at=row["pinned_at"],
        previous_sha256=row["previous_sha256"],
    )


def _cursor(cursor: str | None) -> int:
    try:
        return decode_cursor(cursor)
    except (ValueError, UnicodeDecodeError) as exc:
        raise InvalidRequest("the cursor is not one this API handed out", code="invalid_cursor") from exc


def _wire_reservation(reserved: dict[str, int], currency: str) -> dict[str, Any]:
    return {
        dim: (format_money(v, currency) if dim == "spend" else v) for dim, v in reserved.items() if dim in DIMENSIONS
    }
