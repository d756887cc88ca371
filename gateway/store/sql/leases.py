"""The store's leases: grants, renewals, authentication, each decided by the lease table
(gateway/domain/lease_rules.py) inside its transaction.

A request of the current holder renews its lease (throttled: written once a tenth of the TTL has
passed) and re-establishes one that lapsed with nobody taking it over, same epoch, recorded as the
run event `lease_reestablished`. Nothing here brings a superseded, revoked or finished token back.
"""

from __future__ import annotations

from gateway.clock import isoformat
from gateway.domain import lifecycle
from gateway.domain.admission import RunSnapshot, dead_refusal
from gateway.domain.lease_rules import LeaseState, LeaseWrite, lapsed_for, lease_rule, lease_write
from gateway.domain.leases import mint_token
from gateway.domain.leases import token_hash as hash_token
from gateway.errors import Code, Conflict, NotFound, Refusal
from gateway.store.records import LeaseGrant, Principal, TokenInfo
from gateway.store.sql.base import SqlBase
from gateway.store.sql.connection import Conn
from gateway.store.sql.rows import run_from_row


class LeaseOps(SqlBase):
    async def acquire_lease(self, principal: Principal, run_id: str, worker: str, *, takeover: bool) -> LeaseGrant:
        token = mint_token()

        def tx(conn: Conn) -> LeaseGrant | Refusal:
            return self._grant_lease(conn, principal, run_id, worker, token, takeover=takeover)

        result = await self._db.transaction(tx, durable=True)
        if isinstance(result, Refusal):
            raise result
        return result

    def _grant_lease(
        self, conn: Conn, principal: Principal, run_id: str, worker: str, token: str, *, takeover: bool
    ) -> LeaseGrant | Refusal:
        """A new epoch for `token`, inside the caller's transaction. Raises: NotFound; Conflict `lease_held`."""
        now = self._clock.now()
        run = self._expire_if_due(conn, run_from_row(self._run_row(conn, run_id, principal.tenant)), now)
        if run.status.terminal:
            return lifecycle.status_refusal(run.status)
        # Held: unexpired, or its run waits or is paused (time spent on people does not lapse it).
        # A lease whose granting key was revoked holds nothing: a valid key may grant a new one.
        rule = lease_rule(run.snapshot(), run.epoch, now)
        held = rule.held
        if held and not takeover:
            until = f"until {isoformat(run.lease_expires_at)}"
            if rule.state is not LeaseState.LIVE:
                until = f"while the run is {run.status.value}"
            raise Conflict(
                f"the lease is held by {run.lease_worker} {until}; take it over explicitly to replace that worker",
                code=Code.LEASE_HELD,
                worker=run.lease_worker,
                expires_at=isoformat(run.lease_expires_at),
            )
        epoch = run.epoch + 1
        expires = now + run.lease_ttl
        conn.execute(
            "INSERT INTO leases (token_hash, run_id, epoch, worker, granted_by, granted_at, granted_key_id) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            (hash_token(token), run_id, epoch, worker, principal.name, now, principal.key_id),
        )
        conn.execute(
            "UPDATE runs SET epoch = ?, lease_worker = ?, lease_granted_by = ?, lease_expires_at = ?, "
            "lease_revoked_at = NULL, updated_at = ? WHERE run_id = ?",
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

    async def renew_lease(self, token_hash: str) -> LeaseGrant:
        def tx(conn: Conn) -> LeaseGrant | Refusal:
            now = self._clock.now()
            lease = conn.execute("SELECT * FROM leases WHERE token_hash = ?", (token_hash,)).fetchone()
            if lease is None:
                raise NotFound("unknown lease token")
            state = self._run_state(conn, lease["run_id"], now)
            run = state.snapshot
            refusal = dead_refusal(run, lease["epoch"], now)
            if refusal is not None:
                return refusal
            write = lease_write(run, lease["epoch"], now, state.lease_ttl, throttled=False)
            expires = self._write_lease(conn, run, state.lease_ttl, write, now, lease["worker"])
            assert expires is not None, "a live token's renewal always writes"
            return LeaseGrant(run_id=run.run_id, token="", epoch=run.epoch, worker=lease["worker"], expires_at=expires)

        result = await self._db.transaction(tx, durable=False)
        if isinstance(result, Refusal):
            raise result
        return result

    async def hold_lease(self, token_hash: str) -> TokenInfo | None:
        def tx(conn: Conn) -> TokenInfo | None:
            now = self._clock.now()
            lease = conn.execute("SELECT * FROM leases WHERE token_hash = ?", (token_hash,)).fetchone()
            if lease is None:
                return None
            state = self._run_state(conn, lease["run_id"], now)
            write = lease_write(state.snapshot, lease["epoch"], now, state.lease_ttl)
            self._write_lease(conn, state.snapshot, state.lease_ttl, write, now, lease["worker"])
            return TokenInfo(
                run=run_from_row(self._run_row(conn, lease["run_id"])),
                epoch=lease["epoch"],
                worker=lease["worker"],
                granted_by=lease["granted_by"],
                token_hash=token_hash,
            )

        return await self._db.transaction(tx, durable=False)

    def _write_lease(
        self, conn: Conn, run: RunSnapshot, ttl: float, write: LeaseWrite, now: float, worker: str | None
    ) -> float | None:
        """Carry out the table's write for the current holder's request; the lease's new time, if any."""
        if write is LeaseWrite.NOTHING:
            return None
        expires = now + ttl
        conn.execute("UPDATE runs SET lease_expires_at = ? WHERE run_id = ?", (expires, run.run_id))
        if write is LeaseWrite.REESTABLISH:
            self._event(
                conn,
                run.run_id,
                "lease_reestablished",
                now,
                epoch=run.epoch,
                worker=worker,
                expired_at=isoformat(run.lease_expires_at),
                lapsed_s=round(lapsed_for(run, now), 3),
            )
        return expires

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
