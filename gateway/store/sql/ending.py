"""The store's ends of a run that are not a completion: a cancel, and a fail (docs/decisions/0024-failed-end.md).

Both are one transaction each, and alike in what they stop: the status moves by the lifecycle
table, the epoch rises (every outstanding token dies at once), open approvals are superseded and
live child runs are cancelled. What either leaves alone is the run's reconciliation: an action
whose outcome is unknown is still looked up and resolved on a cancelled or failed run, and a
side effect that lands after the end is recorded with its `effect_after_cancel` entry.

A fail is also recorded as why: `runs.status_cause` ({by, reason, rule}), the `run_failed` ledger
entry, and a `run_failed` alert raised in the same transaction (webhooks and the console). It
comes from an operator (`fail_run`) or from the contract's rules (`_fail_by_rule`, called inside
the setback's own transaction: gateway/domain/completion.py).
"""

from __future__ import annotations

import json
from typing import Any

from gateway.domain.completion import Outcome, Verdict
from gateway.domain.lifecycle import RunEvent, RunStatus
from gateway.domain.watch import Alert
from gateway.errors import Refusal
from gateway.store.records import ApprovalStatus, RunRecord
from gateway.store.sql.base import SqlBase
from gateway.store.sql.connection import Conn
from gateway.store.sql.rows import run_from_row

# A child of a run that ended is cancelled; these statuses are over already.
_ENDED = "'completed', 'cancelled', 'expired', 'failed'"
_ENDED_BUT_CANCELLED = "'completed', 'expired', 'failed'"


class EndingOps(SqlBase):
    async def fail_run(self, run_id: str, reason: str, by: str, *, tenant: str | None = None) -> RunRecord:
        def tx(conn: Conn) -> RunRecord | Refusal:
            now = self._clock.now()
            run = self._expire_if_due(conn, run_from_row(self._run_row(conn, run_id, tenant)), now)
            try:
                self._fail(conn, run, now, by=by, reason=reason, rule=None)
            except Refusal as refusal:
                return refusal  # commit the expiry that may have just happened, then refuse
            return run_from_row(self._run_row(conn, run_id))

        result = await self._db.transaction(tx, durable=True)
        if isinstance(result, Refusal):
            raise result
        return result

    def _fail(
        self, conn: Conn, run: RunRecord, now: float, *, by: str, reason: str, rule: str | None, **detail: Any
    ) -> None:
        """`detail`: what a rule's fail names of its setback (a milestone, a task, a refused claim).

        Raises: Refusal `run_<status>` when the run is over already (a failed run too)."""
        self._set_status(conn, run, RunEvent.FAIL, now, by=by, reason=reason, rule=rule, **detail)
        cause = {"by": by, "reason": reason, "rule": rule, **detail}
        conn.execute(
            "UPDATE runs SET epoch = epoch + 1, status_cause = ? WHERE run_id = ?", (json.dumps(cause), run.run_id)
        )
        self._close_approvals(conn, run.run_id, now, ApprovalStatus.SUPERSEDED, "the run failed")
        self._raise_alert(conn, Alert(run.run_id, run.tenant, "run_failed", "run_failed", cause), now)
        for child in conn.execute(
            f"SELECT * FROM runs WHERE parent_run_id = ? AND status NOT IN ({_ENDED})", (run.run_id,)
        ).fetchall():
            self._cancel(conn, run_from_row(child), now, by, f"parent run {run.run_id} failed")

    def _apply_verdict(self, conn: Conn, run_id: str, verdict: Verdict, now: float, **detail: Any) -> RunStatus:
        """What the contract's rules decided on a setback, inside the setback's transaction: its
        alerts raised, the run paused or failed by the gateway. `detail`: what they name of the
        setback (a milestone, a task, the refused claim's action). Returns the run's status after."""
        run = run_from_row(self._run_row(conn, run_id))
        about = {"rule": verdict.rule, "setting": verdict.setting, **detail}
        episode = str(detail.get("action_id") or detail.get("milestone_id") or detail.get("task_id") or now)
        for kind in verdict.alerts:
            if kind != "run_failed":  # that one `_fail` raises, with the run's cause
                self._raise_alert(conn, Alert(run_id, run.tenant, kind, f"{episode}@{now:.6f}", about), now)
        if run.status.terminal or verdict.outcome is Outcome.CONTINUE:
            return run.status
        if verdict.outcome is Outcome.PAUSE:
            self._set_status(conn, run, RunEvent.PAUSE, now, by="gateway", reason=verdict.reason, rule=verdict.rule)
            return RunStatus.PAUSED
        self._fail(conn, run, now, by="gateway", reason=verdict.reason, rule=verdict.rule, **detail)
        return RunStatus.FAILED

    def _cancel(self, conn: Conn, run: RunRecord, now: float, by: str, reason: str | None, **data: Any) -> None:
        hard = bool(data.get("hard"))
        if run.status is not RunStatus.CANCELLED:
            self._set_status(conn, run, RunEvent.CANCEL, now, by=by, reason=reason, **data)
            # Every outstanding token dies at once: its epoch is no longer the run's.
            conn.execute("UPDATE runs SET epoch = epoch + 1 WHERE run_id = ?", (run.run_id,))
            self._close_approvals(conn, run.run_id, now, ApprovalStatus.SUPERSEDED, "the run was cancelled")
        elif not hard:
            return  # cancelled already: a second soft cancel changes nothing
        else:
            was = conn.execute("SELECT cancelled_hard FROM runs WHERE run_id = ?", (run.run_id,)).fetchone()
            if not was[0]:  # a soft cancel made hard: in the history too
                self._event(conn, run.run_id, "run_cancel_hardened", now, by=by, reason=reason)
        if hard:
            # Also a soft cancel made hard: its calls still in flight are aborted, on every process.
            conn.execute("UPDATE runs SET cancelled_hard = 1 WHERE run_id = ?", (run.run_id,))
            self._announce_hard_cancel(conn, run.run_id)
        # A hard cancel reaches the children a soft one cancelled before it, too.
        live = _ENDED_BUT_CANCELLED if hard else _ENDED
        children = conn.execute(
            f"SELECT * FROM runs WHERE parent_run_id = ? AND status NOT IN ({live})",
            (run.run_id,),
        ).fetchall()
        for child in children:
            self._cancel(conn, run_from_row(child), now, by, f"parent run {run.run_id} was cancelled", **data)
