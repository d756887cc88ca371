"""The store, gate steps 6 and 8: admit, settle, rejections, operations, orphans."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from gateway.domain import lifecycle
from gateway.domain.admission import CallFacts, RunSnapshot, budget_refusal, call_refusal, lease_refusal
from gateway.domain.approval_selection import BoundApproval, Consumption, consumable, consume_refusal, restored_approval
from gateway.domain.compensation import not_compensable, operator_run_refusal
from gateway.domain.lease_rules import LeaseWrite, reestablishes
from gateway.domain.lifecycle import ActionStatus, RunStatus
from gateway.domain.retention import operation_expired
from gateway.domain.settlement import Settlement, settle_effects, settled_row
from gateway.domain.tasks import TaskStatus, call_task_refusal
from gateway.domain.units import format_money
from gateway.errors import Code, NotFound, Refusal
from gateway.ids import new_id
from gateway.store.records import (
    ActionRecord,
    AdmitResult,
    Admitted,
    Held,
    Intent,
    Refused,
    SettleResult,
    Stale,
)
from gateway.store.retry_records import RetryAccount
from gateway.store.sql.base import log_if_failed, read_intent, wire_reservation
from gateway.store.sql.connection import Conn
from gateway.store.sql.leases import LeaseOps
from gateway.store.sql.limits import LimitOps
from gateway.store.sql.retries import RetryOps
from gateway.store.sql.rows import (
    ACTION_COLUMNS,
    Chain,
    action_from_row,
    action_from_tuple,
    put_blob,
    run_from_row,
)

_OUTCOME = "status = ?, code = ?, reason = ?, receipt = ?, actual_spend = ?, result_sha256 = ?, settled_at = ?"
_SETTLE_ADMITTED = (
    f"UPDATE actions SET {_OUTCOME} WHERE action_id = ? AND status = 'admitted' RETURNING {ACTION_COLUMNS}"
)
_SETTLE_ANY = f"UPDATE actions SET {_OUTCOME} WHERE action_id = ?"
# The same, for a caller that holds the admitted action already: no RETURNING (which costs SQLite
# an ephemeral table, about twice the update itself), the row count says whether it was admitted.
_SETTLE_KNOWN = f"UPDATE actions SET {_OUTCOME} WHERE action_id = ? AND status = 'admitted'"
_SETTLE_RUN = "SELECT status, currency, head_seq, head_hash, spend_spent FROM runs WHERE run_id = ?"
_BOUND = ("approval_id", "run_id", "tool", "payload_sha256", "spec_version", "status", "valid_until")
_RELEASE = (
    "spend_reserved = spend_reserved - ?, tool_calls_reserved = tool_calls_reserved - ?, "
    "writes_reserved = writes_reserved - ?, spend_spent = spend_spent + ?, tool_calls_spent = tool_calls_spent + ?, "
    "writes_spent = writes_spent + ?, updated_at = ?, "
)


class GateOps(LeaseOps, LimitOps, RetryOps):
    async def admit(self, intent: Intent, facts: CallFacts) -> AdmitResult:
        # A read's payload body this process already stored is not encoded and offered again.
        store_body = intent.effect == "write" or intent.payload_sha256 not in self._bodies

        def tx(conn: Conn) -> AdmitResult:
            now = self._clock.now()
            state = self._run_state(conn, intent.run_id, now)
            run = state.snapshot
            # Step 1's refusals come before any replay: a dead lease learns nothing about operations.
            if facts.operator:  # no lease: the run's state alone (gateway/domain/compensation.py)
                refusal = operator_run_refusal(run.status)
            else:
                refusal = lease_refusal(run, facts.epoch, now)
            if refusal is None and not facts.operator and reestablishes(run, facts.epoch, now):
                # The holder's lease lapsed and nobody took it over: this call re-establishes it
                # (recorded first; the update of the run row below renews it as every admit does).
                self._write_lease(conn, run, state.lease_ttl, LeaseWrite.REESTABLISH, now, intent.worker)
                state = self._run_state(conn, intent.run_id, now)
                run = state.snapshot
            if refusal is None and intent.spec_version is not None and intent.spec_version != run.spec_version:
                return Stale(run.spec_version)
            if refusal is None and intent.operation_id is not None:
                holder = conn.execute(
                    "SELECT * FROM actions WHERE lineage_id = ? AND operation_id = ? AND status IN "
                    "('admitted', 'succeeded', 'unknown', 'compensated')",
                    (run.lineage_id, intent.operation_id),
                ).fetchone()
                if holder is not None:
                    held = action_from_row(holder)
                    return Held(held, operation_expired(held.status, held.created_at, intent.operation_kept_for, now))
            if refusal is None:
                refusal = budget_refusal(run, facts) if facts.operator else call_refusal(run, facts, now)
                exhausted = refusal is not None and refusal.code == Code.BUDGET_EXHAUSTED
                if exhausted and self.safeguards.sabotaged("budget"):
                    refusal = None  # the drill's negative control: the limits are not enforced
            if refusal is None and (intent.task_id is not None or intent.plan_required):
                refusal = self._task_refusal(conn, intent)
            if refusal is None and intent.compensates is not None:
                refusal = self._compensable(conn, intent)
            if refusal is None and intent.approval_id is not None:
                refusal = self._check_approval(conn, intent, run, now)
            if refusal is None and facts.limits is not None:
                refusal = self._limit_refusal(conn, run, facts.limits, now)
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
                    payload_bytes=intent.payload_bytes,
                )
                return Refused(refusal, action_id)
            action_id = new_id("act")
            r = intent.reservation
            if store_body:
                put_blob(conn, intent.payload, now)
            conn.execute(
                "INSERT INTO actions (action_id, run_id, tenant, lineage_id, tool, effect, operation_id, "
                "payload_sha256, idempotency_key, status, epoch, worker, approval_id, repeat_of, reserved_spend, "
                "reserved_calls, reserved_writes, process_id, created_at, task_id, compensates) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'admitted', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
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
                    intent.task_id,
                    intent.compensates,
                ),
            )
            if intent.approval_id is not None:
                conn.execute(
                    "UPDATE approvals SET status = 'used', action_id = ? WHERE approval_id = ?",
                    (action_id, intent.approval_id),
                )
            # Every admitted call renews the lease. A read's one ledger entry is written when it
            # settles (it changes nothing outside); a write's intent is chained here, its head
            # moved by the same update of the run row.
            head = ""
            head_params: tuple[Any, ...] = ()
            if intent.effect == "write":
                chain = Chain(self._key, run.run_id, state.head_seq, state.head_hash)
                with self._holding(chain):
                    self._admitted_event(conn, run, action_id, intent, now)
                head, head_params = ", " + Chain.head_sql, chain.head_params()
            conn.execute(
                "UPDATE runs SET spend_reserved = spend_reserved + ?, tool_calls_reserved = tool_calls_reserved + ?, "
                f"writes_reserved = writes_reserved + ?, lease_expires_at = ?{head} WHERE run_id = ?",
                (r.spend, r.tool_calls, r.writes, now + state.lease_ttl, *head_params, run.run_id),
            )
            reserved = r.as_dict()
            remaining = run.remaining(now)
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
                    task_id=intent.task_id,
                    compensates=intent.compensates,
                ),
                remaining={dim: left - reserved.get(dim, 0) for dim, left in remaining.items()},
                currency=run.currency,
            )

        admitted = await self._refusing(tx, durable=intent.effect == "write")
        if store_body and isinstance(admitted, Admitted):
            self._bodies.add(intent.payload_sha256)  # committed: the body is stored
        return admitted

    def _admitted_event(self, conn: Conn, run: RunSnapshot, action_id: str, intent: Intent, now: float) -> None:
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
            reserved=wire_reservation(r.as_dict(), run.currency),
            process_id=intent.process_id,
            **({} if intent.task_id is None else {"task_id": intent.task_id}),
            **({} if intent.compensates is None else {"compensates": intent.compensates, "reason": intent.reason}),
        )

    @staticmethod
    def _compensable(conn: Conn, intent: Intent) -> Refusal | None:
        """Gate step 6 of a compensation: its original is a confirmed write of this very run, read
        in the transaction (the gate read it before; a second compensation holds the same operation
        id and was answered above as `Held`)."""
        row = conn.execute(
            "SELECT status, run_id, effect FROM actions WHERE action_id = ?", (intent.compensates,)
        ).fetchone()
        original = str(intent.compensates)
        if row is None or row[1] != intent.run_id or row[2] != "write":
            return not_compensable(original, "no such write in this run")
        if row[0] != ActionStatus.SUCCEEDED.value:
            return not_compensable(original, f"it is {row[0]}, not succeeded", status=row[0])
        return None

    @staticmethod
    def _task_refusal(conn: Conn, intent: Intent) -> Refusal | None:
        """Gate step 6 for the task a call names, and the contract's plan before writes
        (gateway/domain/tasks.py `call_task_refusal`)."""
        (version,) = conn.execute("SELECT plan_version FROM runs WHERE run_id = ?", (intent.run_id,)).fetchone()
        status = None
        if intent.task_id is not None:
            row = conn.execute(
                "SELECT status FROM tasks WHERE run_id = ? AND task_id = ?", (intent.run_id, intent.task_id)
            ).fetchone()
            status = None if row is None else TaskStatus(row[0])
        return call_task_refusal(
            intent.task_id,
            status,
            has_plan=version > 0,
            is_write=intent.effect == "write",
            plan_required=intent.plan_required,
        )

    def _check_approval(self, conn: Conn, intent: Intent, run: RunSnapshot, now: float) -> Refusal | None:
        row = conn.execute("SELECT * FROM approvals WHERE approval_id = ?", (intent.approval_id,)).fetchone()
        bound = None if row is None else BoundApproval(**{column: row[column] for column in _BOUND})
        check = consumable(
            bound,
            run_id=run.run_id,
            tool=intent.tool,
            payload_sha256=intent.payload_sha256,
            spec_version=run.spec_version,
            now=now,
        )
        if check is Consumption.LAPSED and bound is not None:
            conn.execute("UPDATE approvals SET status = 'expired' WHERE approval_id = ?", (bound.approval_id,))
            self._event(conn, run.run_id, "approval_expired", now, approval_id=bound.approval_id, was="approved")
        return consume_refusal(check, bound, intent.tool)

    async def record_rejection(
        self,
        run_id: str,
        *,
        tool: str,
        payload_sha256: str,
        refusal: Refusal,
        epoch: int | None,
        worker: str | None,
        payload_bytes: int | None = None,
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
                payload_bytes=payload_bytes,
            )

        return await self._refusing(tx, durable=False)

    async def settle(
        self,
        action_id: str,
        settlement: Settlement,
        *,
        admitted: ActionRecord | None = None,
        retry: RetryAccount | None = None,
    ) -> SettleResult:
        # A write's outcome is durable before the caller hears of it; a read's need not wait on a disk.
        tx = self._settle_tx(action_id, settlement, admitted=admitted, retry=retry)
        return await self._db.transaction(tx, durable=settlement.durable)

    def settle_soon(
        self,
        action_id: str,
        settlement: Settlement,
        *,
        admitted: ActionRecord | None = None,
        retry: RetryAccount | None = None,
    ) -> None:
        future = self._db.submit(
            self._settle_tx(action_id, settlement, want_run=False, admitted=admitted, retry=retry),
            durable=settlement.durable,
            lazy=True,
        )
        future.add_done_callback(log_if_failed(action_id))
        self._settling_soon(action_id, future)

    def _settling_soon(self, action_id: str, future: asyncio.Future[Any]) -> None:
        """A settle nobody awaits was submitted. SQLite: nothing to do (it commits in order with
        the next batch, before any later transaction of this process)."""

    def _settle_tx(
        self,
        action_id: str,
        settlement: Settlement,
        *,
        want_run: bool = True,
        admitted: ActionRecord | None = None,
        retry: RetryAccount | None = None,
    ) -> Callable[[Conn], SettleResult]:
        # The action row's outcome, from the settlement alone (gateway/domain/settlement.py has the rule).
        row_after = settled_row(settlement)
        target, code, actual = row_after.status, row_after.code, row_after.actual_spend
        receipt = json.dumps(settlement.receipt, sort_keys=True) if settlement.receipt is not None else None

        def tx(conn: Conn) -> SettleResult:
            now = self._clock.now()
            result_sha: str | None = None
            if row_after.keeps_result:
                result_sha = put_blob(conn, settlement.result, now)
            outcome = (target.value, code, settlement.reason, receipt, actual, result_sha, now, action_id)

            def settled(action: ActionRecord) -> ActionRecord:
                return replace(
                    action,
                    status=target,
                    code=code,
                    reason=settlement.reason,
                    receipt=json.loads(receipt) if receipt else None,
                    actual_spend=actual,
                    result_sha256=result_sha,
                    settled_at=now,
                )

            # The usual case in one statement: an admitted action takes its outcome. Anything else
            # (unknown -> reconciled, a missing action, a transition the lifecycle refuses) reads first.
            updated: ActionRecord | None = None
            if admitted is not None:
                # The gate holds the action as admitted; only its outcome columns change.
                if conn.execute(_SETTLE_KNOWN, outcome).rowcount == 1:
                    updated = settled(admitted)
            else:
                row = conn.execute(_SETTLE_ADMITTED, outcome).fetchone()
                if row is not None:
                    updated = action_from_tuple(row)
            if updated is not None:
                previous = ActionStatus.ADMITTED
            else:
                row = conn.execute(f"SELECT {ACTION_COLUMNS} FROM actions WHERE action_id = ?", (action_id,)).fetchone()
                if row is None:
                    raise NotFound(f"no action {action_id}")
                action = action_from_tuple(row)
                lifecycle.check_action_transition(action.status, target)
                conn.execute(_SETTLE_ANY, outcome)
                previous = action.status
                updated = settled(action)
            run_id = updated.run_id
            status, currency, head_seq, head_hash, spend_spent = conn.execute(_SETTLE_RUN, (run_id,)).fetchone()
            effects = settle_effects(
                settlement,
                row_after,
                previous=previous,
                action=updated,
                # A failed run is over as a cancelled one is: an effect landing after it is flagged the same.
                run_cancelled=status in (RunStatus.CANCELLED.value, RunStatus.FAILED.value),
                spend_spent=spend_spent,
            )
            # A read's only ledger entry: what was asked, under which lease, and how it ended.
            intent = read_intent(updated, currency) if effects.read_entry else {}
            # Every entry below goes to this chain; its head moves with the one update of the run row.
            with self._holding(Chain(self._key, run_id, head_seq, head_hash)) as chain:
                self._event(
                    conn,
                    run_id,
                    "action_settled",
                    now,
                    action_id=action_id,
                    status=target.value,
                    code=code,
                    sent=settlement.sent,
                    receipt=settlement.receipt,
                    result_sha256=result_sha,
                    actual_spend=format_money(actual, currency) if actual is not None else None,
                    previous=previous.value,
                    **intent,
                    # The row's reason, whatever the outcome (why it is unknown: a timeout, a hard
                    # cancel, the gateway shutting down; why it failed; how it was reconciled).
                    reason=settlement.reason,
                )
                if retry is not None and target is ActionStatus.FAILED and previous is ActionStatus.ADMITTED:
                    self._settle_failed_attempt(conn, updated, retry, code, settlement.reason, now)
                if effects.restore_approval is not None:
                    self._restore_approval(conn, effects.restore_approval, run_id, now)
                if updated.compensates is not None and target is ActionStatus.SUCCEEDED:
                    self._compensated(conn, updated, now)
                if effects.overrun:
                    self._event(
                        conn,
                        run_id,
                        "budget_overrun",
                        now,
                        action_id=action_id,
                        actual_spend=format_money(actual or 0, currency),
                        max_spend=format_money(settlement.max_spend or 0, currency),
                    )
                if effects.after_cancel:
                    self._event(
                        conn,
                        run_id,
                        "effect_after_cancel",
                        now,
                        action_id=action_id,
                        tool=updated.tool,
                        receipt=settlement.receipt,
                        run_status=status,
                    )
                if effects.alert:
                    # The destination refused the gateway's own credentials: every later call will fail
                    # the same way until someone fixes them. Operators are told, not only the agent.
                    self._event(
                        conn,
                        run_id,
                        "alert",
                        now,
                        kind="upstream_unauthorized",
                        action_id=action_id,
                        tool=updated.tool,
                        message=settlement.reason,
                    )
                sets = chain.head_sql
                params: tuple[Any, ...] = chain.head_params()
            if effects.releases:  # release the reservation, spend what was used
                held, charge = updated.reserved, effects.charge
                sets = _RELEASE + sets
                params = (
                    held["spend"],
                    held["tool_calls"],
                    held["writes"],
                    charge.spend,
                    charge.tool_calls,
                    charge.writes,
                    now,
                    *params,
                )
            returning = " RETURNING *" if want_run else ""
            after = conn.execute(f"UPDATE runs SET {sets} WHERE run_id = ?{returning}", (*params, run_id)).fetchone()
            run = run_from_row(after) if want_run else None
            self.safeguards.hit("inside_settle", updated.tool)  # written, not committed
            return SettleResult(updated, run, overrun=effects.overrun, after_cancel=effects.after_cancel)

        return tx

    def _compensated(self, conn: Conn, compensation: ActionRecord, now: float) -> None:
        """The compensating call succeeded (settled, or reconciled from `unknown`): its original moves
        from succeeded to compensated, in the same transaction, with its ledger entry."""
        original = compensation.compensates
        moved = conn.execute(
            "UPDATE actions SET status = 'compensated' WHERE action_id = ? AND status = 'succeeded'", (original,)
        ).rowcount
        if moved == 1:
            self._event(
                conn,
                compensation.run_id,
                "action_compensated",
                now,
                action_id=original,
                compensation_id=compensation.action_id,
                tool=compensation.tool,
            )

    def _restore_approval(self, conn: Conn, approval_id: str, run_id: str, now: float) -> None:
        row = conn.execute("SELECT * FROM approvals WHERE approval_id = ?", (approval_id,)).fetchone()
        status = None if row is None else restored_approval(row["status"], row["valid_until"], now)
        if status is None:
            return
        conn.execute(
            "UPDATE approvals SET status = ?, action_id = NULL WHERE approval_id = ?", (status.value, approval_id)
        )
        self._event(conn, run_id, "approval_restored", now, approval_id=approval_id, status=status.value)

    async def find_operation(self, lineage_id: str, operation_id: str, *, kept_for: float | None = None) -> Held | None:
        def read(conn: Conn) -> Held | None:
            row = conn.execute(
                "SELECT * FROM actions WHERE lineage_id = ? AND operation_id = ? AND status IN "
                "('admitted', 'succeeded', 'unknown', 'compensated')",
                (lineage_id, operation_id),
            ).fetchone()
            if row is None:
                return None
            held = action_from_row(row)
            return Held(held, operation_expired(held.status, held.created_at, kept_for, self._clock.now()))

        return await self._db.read(read)

    async def mark_orphans_unknown(self) -> list[str]:
        def tx(conn: Conn) -> list[str]:
            now = self._clock.now()
            rows = conn.execute(
                "SELECT action_id, run_id, process_id FROM actions WHERE status = 'admitted' AND "
                "(process_id IS NULL OR process_id != ?)",
                (self._process_id,),
            ).fetchall()
            rows = [row for row in rows if not self._process_alive(conn, row["process_id"])]
            reason = "the gateway process that dispatched it ended before its outcome was recorded"
            return self._mark_unknown(conn, rows, reason, now, orphaned="restart")

        return await self._db.transaction(tx, durable=True)
