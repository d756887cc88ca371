"""The store's held leases: the lease the gateway holds for one worker key on one run.

One row per (key, run), written in the same transaction as the lease it names, so two replicas
answering the same client's first two requests at once end with one lease, not two. A row is
replaced only by an explicit takeover: a held lease another worker took over stays dead.
"""

from __future__ import annotations

from gateway.domain.leases import token_hash
from gateway.errors import Refusal
from gateway.store.records import HeldLease, Principal
from gateway.store.sql.connection import Conn
from gateway.store.sql.leases import LeaseOps
from gateway.store.sql.rows import run_from_row


class HeldLeaseOps(LeaseOps):
    async def hold_worker_lease(
        self,
        principal: Principal,
        key_sha256: str,
        run_id: str,
        worker: str,
        salt: str,
        token: str,
        *,
        takeover: bool = False,
    ) -> HeldLease:
        def tx(conn: Conn) -> HeldLease | Refusal:
            now = self._clock.now()
            row = conn.execute(
                "SELECT salt FROM held_leases WHERE key_sha256 = ? AND run_id = ?", (key_sha256, run_id)
            ).fetchone()
            if row is not None and not takeover:
                run = run_from_row(self._run_row(conn, run_id, principal.tenant))
                return HeldLease(run_id, row["salt"], created=False, run=run)
            granted = self._grant_lease(conn, principal, run_id, worker, token, takeover=takeover)
            if isinstance(granted, Refusal):
                return granted
            if row is None:
                conn.execute(
                    "INSERT INTO held_leases (key_sha256, run_id, salt, token_hash, created_at) VALUES (?, ?, ?, ?, ?)",
                    (key_sha256, run_id, salt, token_hash(token), now),
                )
            else:
                conn.execute(
                    "UPDATE held_leases SET salt = ?, token_hash = ?, created_at = ? "
                    "WHERE key_sha256 = ? AND run_id = ?",
                    (salt, token_hash(token), now, key_sha256, run_id),
                )
            run = run_from_row(self._run_row(conn, run_id, principal.tenant))
            return HeldLease(run_id, salt, created=True, run=run)

        result = await self._db.transaction(tx, durable=True)
        if isinstance(result, Refusal):
            raise result
        return result

    async def held_salt(self, key_sha256: str, run_id: str) -> str | None:
        def read(conn: Conn) -> str | None:
            row = conn.execute(
                "SELECT salt FROM held_leases WHERE key_sha256 = ? AND run_id = ?", (key_sha256, run_id)
            ).fetchone()
            return None if row is None else str(row["salt"])

        return await self._db.read(read)
