"""The store's retries and dead letters (docs/decisions/0030-retries.md).

Every failed attempt of a retried tool is counted twice, in the transaction that records it: on
its action (`failed_attempts`) and on its run (`attempts_failed`). An attempt the gate tries again
is an `action_retrying` entry, written only while the action's lease is current and the run live
(the fence between attempts) and the contract's `attempts` budget has room; the last attempt is
counted when the action settles failed. A write whose operation id's failed attempts, summed over
the lineage's actions holding it, reach the tool's `max_attempts` becomes a dead letter in that
same settling transaction: its row, a `dead_lettered` entry and a `dead_letter` alert (webhooks).
An operator decides it once: retried (the new action under a fresh operation id), resolved or
dropped, each with a reason (`dead_letter_decided`).
"""

from __future__ import annotations

from gateway.domain.admission import lease_refusal
from gateway.domain.watch import Alert
from gateway.errors import Code, Conflict, NotFound
from gateway.ids import new_id
from gateway.store.records import ActionRecord, Principal
from gateway.store.retry_records import DeadLetterRecord, DeadLetterStatus, RetryAccount, RetryState
from gateway.store.sql.base import SqlBase
from gateway.store.sql.connection import Conn, Row

DEAD_LETTERS_SHOWN = 200


def dead_letter_from_row(row: Row) -> DeadLetterRecord:
    return DeadLetterRecord(
        dead_letter_id=row["dead_letter_id"],
        run_id=row["run_id"],
        tenant=row["tenant"],
        lineage_id=row["lineage_id"],
        operation_id=row["operation_id"],
        tool=row["tool"],
        payload_sha256=row["payload_sha256"],
        action_id=row["action_id"],
        attempts=row["attempts"],
        last_code=row["last_code"],
        last_message=row["last_message"],
        status=DeadLetterStatus(row["status"]),
        created_at=row["created_at"],
        decided_by=row["decided_by"],
        decided_at=row["decided_at"],
        reason=row["reason"],
        retried_action_id=row["retried_action_id"],
    )


class RetryOps(SqlBase):
    async def retry_state(self, run_id: str, lineage_id: str, operation_id: str | None) -> RetryState:
        def read(conn: Conn) -> RetryState:
            (run_failed,) = conn.execute("SELECT attempts_failed FROM runs WHERE run_id = ?", (run_id,)).fetchone()
            if operation_id is None:
                return RetryState(0, run_failed)
            (failed,) = conn.execute(
                "SELECT COALESCE(SUM(failed_attempts), 0) FROM actions WHERE lineage_id = ? AND operation_id = ?",
                (lineage_id, operation_id),
            ).fetchone()
            row = conn.execute(
                "SELECT * FROM dead_letters WHERE lineage_id = ? AND operation_id = ?", (lineage_id, operation_id)
            ).fetchone()
            return RetryState(int(failed), run_failed, dead_letter_from_row(row) if row is not None else None)

        return await self._db.read(read)

    async def record_retrying(
        self,
        action: ActionRecord,
        *,
        attempt: int,
        max_attempts: int,
        code: str,
        reason: str | None,
        wait: float,
        attempts_budget: int | None,
    ) -> bool:
        def tx(conn: Conn) -> bool:
            now = self._clock.now()
            run = self._run_state(conn, action.run_id, now).snapshot
            if action.epoch is None or lease_refusal(run, action.epoch, now) is not None:
                return False  # cancelled, paused, ended or taken over between attempts: no more
            if attempts_budget is not None:
                (used,) = conn.execute("SELECT attempts_failed FROM runs WHERE run_id = ?", (action.run_id,)).fetchone()
                if used + 1 >= attempts_budget:  # this failure uses the last one: settle with it
                    return False
            self._count_failure(conn, action)
            self._event(
                conn,
                action.run_id,
                "action_retrying",
                now,
                action_id=action.action_id,
                tool=action.tool,
                attempts=attempt,
                max_attempts=max_attempts,
                code=code,
                reason=reason,
                wait_s=round(wait, 3),
            )
            return True

        return await self._db.transaction(tx, durable=False)

    @staticmethod
    def _count_failure(conn: Conn, action: ActionRecord) -> None:
        conn.execute(
            "UPDATE actions SET failed_attempts = failed_attempts + 1 WHERE action_id = ?", (action.action_id,)
        )
        conn.execute("UPDATE runs SET attempts_failed = attempts_failed + 1 WHERE run_id = ?", (action.run_id,))

    def _settle_failed_attempt(
        self, conn: Conn, action: ActionRecord, account: RetryAccount, code: str | None, message: str | None, now: float
    ) -> str | None:
        """Inside the settling transaction of a retried action that failed: count its last attempt,
        and give its operation id up to a dead letter once its failures reach max_attempts. The new
        dead letter's id, else None."""
        self._count_failure(conn, action)
        if not account.dead_letters or action.operation_id is None:
            return None
        (failed,) = conn.execute(
            "SELECT COALESCE(SUM(failed_attempts), 0) FROM actions WHERE lineage_id = ? AND operation_id = ?",
            (action.lineage_id, action.operation_id),
        ).fetchone()
        if int(failed) < account.max_attempts:
            return None
        (tenant,) = conn.execute("SELECT tenant FROM runs WHERE run_id = ?", (action.run_id,)).fetchone()
        dead_letter_id = new_id("dlt")
        inserted = conn.execute(
            "INSERT INTO dead_letters (dead_letter_id, run_id, tenant, lineage_id, operation_id, tool, payload_sha256, "
            "action_id, attempts, last_code, last_message, status, created_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'open', ?) ON CONFLICT DO NOTHING",
            (dead_letter_id, action.run_id, tenant, action.lineage_id, action.operation_id, action.tool,
             action.payload_sha256, action.action_id, int(failed), code, (message or "")[:500] or None, now),
        ).rowcount  # fmt: skip
        if not inserted:
            return None
        data = {
            "dead_letter_id": dead_letter_id,
            "action_id": action.action_id,
            "tool": action.tool,
            "operation_id": action.operation_id,
            "attempts": int(failed),
            "code": code,
        }
        self._event(conn, action.run_id, "dead_lettered", now, **data)
        self._raise_alert(conn, Alert(action.run_id, tenant, "dead_letter", dead_letter_id, data), now)
        return dead_letter_id

    async def current_lease_hash(self, run_id: str) -> str | None:
        def read(conn: Conn) -> str | None:
            row = conn.execute(
                "SELECT l.token_hash FROM leases l JOIN runs r ON r.run_id = l.run_id AND l.epoch = r.epoch "
                "WHERE r.run_id = ?",
                (run_id,),
            ).fetchone()
            return None if row is None else str(row[0])

        return await self._db.read(read)

    async def list_dead_letters(self, tenant: str, run_id: str) -> list[DeadLetterRecord]:
        def read(conn: Conn) -> list[DeadLetterRecord]:
            self._run_row(conn, run_id, tenant)  # NotFound for another tenant's run
            rows = conn.execute(
                "SELECT * FROM dead_letters WHERE run_id = ? ORDER BY seq LIMIT ?", (run_id, DEAD_LETTERS_SHOWN)
            ).fetchall()
            return [dead_letter_from_row(r) for r in rows]

        return await self._db.read(read)

    async def get_dead_letter(self, tenant: str, dead_letter_id: str) -> DeadLetterRecord:
        def read(conn: Conn) -> DeadLetterRecord:
            row = conn.execute(
                "SELECT * FROM dead_letters WHERE dead_letter_id = ? AND tenant = ?", (dead_letter_id, tenant)
            ).fetchone()
            if row is None:
                raise NotFound(f"no dead letter {dead_letter_id}")
            return dead_letter_from_row(row)

        return await self._db.read(read)

    async def decide_dead_letter(
        self,
        principal: Principal,
        dead_letter_id: str,
        status: DeadLetterStatus,
        reason: str,
        *,
        retried_action_id: str | None = None,
    ) -> DeadLetterRecord:
        def tx(conn: Conn) -> DeadLetterRecord:
            now = self._clock.now()
            row = conn.execute(
                "SELECT * FROM dead_letters WHERE dead_letter_id = ? AND tenant = ?", (dead_letter_id, principal.tenant)
            ).fetchone()
            if row is None:
                raise NotFound(f"no dead letter {dead_letter_id}")
            if row["status"] != DeadLetterStatus.OPEN.value:
                raise Conflict(
                    f"dead letter {dead_letter_id} was already decided ({row['status']} by {row['decided_by']})",
                    code=Code.INVALID_TRANSITION,
                    status=row["status"],
                )
            conn.execute(
                "UPDATE dead_letters SET status = ?, decided_by = ?, decided_at = ?, reason = ?, retried_action_id = ? "
                "WHERE dead_letter_id = ?",
                (status.value, principal.name, now, reason, retried_action_id, dead_letter_id),
            )
            self._event(
                conn,
                row["run_id"],
                "dead_letter_decided",
                now,
                dead_letter_id=dead_letter_id,
                status=status.value,
                by=principal.name,
                reason=reason,
                retried_action_id=retried_action_id,
            )
            after = conn.execute("SELECT * FROM dead_letters WHERE dead_letter_id = ?", (dead_letter_id,)).fetchone()
            return dead_letter_from_row(after)

        return await self._db.transaction(tx, durable=True)
