"""The store restored from a backup (`warrant restore`, gateway/store/backup.py): it comes up with every
live run paused until an operator resumes it, which reconciles first.

A backup knows the world up to its newest ledger entry. Whatever the runs did after that (writes
that happened, approvals decided, leases taken) it does not know: a run that simply went on
would repeat or contradict it. So every running or waiting run is paused with the reason
"restored from backup <time of its newest entry>: reconcile before resume", and every action in
flight when the backup was taken becomes `unknown` (its outcome was never recorded here). Both
are ledger entries, so the chains still verify; the worker's lease is left as it is (a resume
lets the same worker carry on, as after any pause).
"""

from __future__ import annotations

from gateway.clock import isoformat
from gateway.domain.lifecycle import RunEvent
from gateway.store.records import Restored
from gateway.store.sql.base import SqlBase
from gateway.store.sql.connection import Conn
from gateway.store.sql.rows import run_from_row


class RestoreOps(SqlBase):
    async def mark_restored(self, *, by: str) -> Restored:
        def tx(conn: Conn) -> Restored:
            now = self._clock.now()
            taken = conn.execute("SELECT MAX(at) FROM events").fetchone()[0]
            reason = f"restored from backup {isoformat(taken) if taken is not None else '(empty)'}: "
            reason += "reconcile before resume"
            admitted = conn.execute(
                "SELECT action_id, run_id, process_id FROM actions WHERE status = 'admitted' ORDER BY created_at"
            ).fetchall()
            unknown = self._mark_unknown(conn, admitted, reason, now, orphaned="restore")
            paused: list[str] = []
            for row in conn.execute(
                "SELECT * FROM runs WHERE status IN ('running', 'waiting') ORDER BY seq"
            ).fetchall():
                run = self._expire_if_due(conn, run_from_row(row), now)
                if run.status.live:
                    self._set_status(conn, run, RunEvent.PAUSE, now, by=by, reason=reason, restored=True)
                    paused.append(run.run_id)
            return Restored(taken_at=taken, reason=reason, runs_paused=paused, actions_unknown=unknown)

        return await self._db.transaction(tx, durable=True)
