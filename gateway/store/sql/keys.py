"""The store's API keys: create, list, revoke, rotate, and the lookup every operator request makes.

Each change writes its `key_events` row in the same transaction. A key's validity is decided
inside the lookup against the store's clock, so a revoke is seen by the very next request.
"""

from __future__ import annotations

import json
from typing import Any

from gateway.domain.keys import ApiKeyRecord, KeyEvent, KeyStatus
from gateway.errors import Code, Conflict, NotFound
from gateway.ids import new_id
from gateway.store.records import Page, Principal
from gateway.store.sql.base import SqlBase, cursor_after
from gateway.store.sql.connection import Conn, Row
from gateway.store.sql.rows import encode_cursor

_VALID = "revoked_at IS NULL AND (expires_at IS NULL OR expires_at > ?)"


class KeyOps(SqlBase):
    async def create_api_key(
        self, principal: Principal, *, name: str, roles: frozenset[str], key_sha256: str, expires_in: int | None
    ) -> ApiKeyRecord:
        def tx(conn: Conn) -> ApiKeyRecord:
            now = self._clock.now()
            self._check_name_free(conn, principal.tenant, name, now)
            key_id = new_id("key")
            expires_at = None if expires_in is None else now + expires_in
            self._insert(conn, key_id, principal, name, roles, key_sha256, now, expires_at, rotated_from=None)
            self._key_event(conn, principal, key_id, "key_created", now, name=name, roles=sorted(roles))
            return _key(self._key_row(conn, principal.tenant, key_id))

        return await self._db.transaction(tx, durable=True)

    async def get_api_key(self, tenant: str, key_id: str) -> ApiKeyRecord:
        return await self._db.read(lambda conn: _key(self._key_row(conn, tenant, key_id)))

    async def list_api_keys(self, tenant: str, *, cursor: str | None = None, limit: int = 50) -> Page[ApiKeyRecord]:
        after = cursor_after(cursor)

        def read(conn: Conn) -> Page[ApiKeyRecord]:
            rows = conn.execute(
                "SELECT * FROM api_keys WHERE tenant = ? AND seq > ? ORDER BY seq LIMIT ?", (tenant, after, limit + 1)
            ).fetchall()
            more = len(rows) > limit
            rows = rows[:limit]
            return Page([_key(r) for r in rows], encode_cursor(rows[-1]["seq"]) if more else None)

        return await self._db.read(read)

    async def revoke_api_key(self, principal: Principal, key_id: str, *, reason: str | None = None) -> ApiKeyRecord:
        def tx(conn: Conn) -> ApiKeyRecord:
            now = self._clock.now()
            key = _key(self._key_row(conn, principal.tenant, key_id))
            if key.revoked_at is not None:
                return key  # a retried revoke is not an error
            conn.execute(
                "UPDATE api_keys SET revoked_at = ?, revoked_by = ? WHERE key_id = ?", (now, principal.name, key_id)
            )
            self._key_event(conn, principal, key_id, "key_revoked", now, name=key.name, reason=reason)
            self._end_leases(conn, principal, key_id, now, reason)
            return _key(self._key_row(conn, principal.tenant, key_id))

        return await self._db.transaction(tx, durable=True)

    async def rotate_api_key(
        self, principal: Principal, key_id: str, *, key_sha256: str, overlap: int, expires_in: int | None
    ) -> tuple[ApiKeyRecord, ApiKeyRecord]:
        def tx(conn: Conn) -> tuple[ApiKeyRecord, ApiKeyRecord]:
            now = self._clock.now()
            old = _key(self._key_row(conn, principal.tenant, key_id))
            status = "rotated" if old.rotated_to is not None else old.status(now).value
            if status != KeyStatus.ACTIVE:
                raise Conflict(
                    f"key {key_id} is {status}: only an active key can be rotated",
                    code=Code.KEY_NOT_ACTIVE,
                    status=status,
                )
            new_key_id = new_id("key")
            expires_at = None if expires_in is None else now + expires_in
            self._insert(
                conn, new_key_id, principal, old.name, old.roles, key_sha256, now, expires_at, rotated_from=key_id
            )
            old_expires = now + overlap if old.expires_at is None else min(old.expires_at, now + overlap)
            conn.execute(
                "UPDATE api_keys SET expires_at = ?, rotated_to = ? WHERE key_id = ?", (old_expires, new_key_id, key_id)
            )
            self._key_event(
                conn,
                principal,
                key_id,
                "key_rotated",
                now,
                name=old.name,
                new_key_id=new_key_id,
                overlap=overlap,
                old_expires_at=old.expires_at,
                expires_at=old_expires,
            )
            self._key_event(
                conn,
                principal,
                new_key_id,
                "key_created",
                now,
                name=old.name,
                roles=sorted(old.roles),
                rotated_from=key_id,
            )
            tenant = principal.tenant
            return _key(self._key_row(conn, tenant, new_key_id)), _key(self._key_row(conn, tenant, key_id))

        return await self._db.transaction(tx, durable=True)

    async def find_api_key(self, key_sha256: str) -> ApiKeyRecord | None:
        def read(conn: Conn) -> ApiKeyRecord | None:
            row = conn.execute(
                f"SELECT * FROM api_keys WHERE key_sha256 = ? AND {_VALID}", (key_sha256, self._clock.now())
            ).fetchone()
            return None if row is None else _key(row)

        return await self._db.read(read)

    async def list_key_events(
        self, tenant: str, *, key_id: str | None = None, cursor: str | None = None, limit: int = 100
    ) -> Page[KeyEvent]:
        after = cursor_after(cursor)
        sql = "SELECT * FROM key_events WHERE tenant = ? AND seq > ?"
        params: list[Any] = [tenant, after]
        if key_id is not None:
            sql += " AND key_id = ?"
            params.append(key_id)

        def read(conn: Conn) -> Page[KeyEvent]:
            rows = conn.execute(sql + " ORDER BY seq LIMIT ?", (*params, limit + 1)).fetchall()
            more = len(rows) > limit
            rows = rows[:limit]
            events = [
                KeyEvent(r["seq"], r["tenant"], r["key_id"], r["type"], r["at"], r["by"], json.loads(r["data"]))
                for r in rows
            ]
            return Page(events, encode_cursor(rows[-1]["seq"]) if more else None)

        return await self._db.read(read)

    # -- helpers (database thread) ---------------------------------------------------------
    def _end_leases(self, conn: Conn, principal: Principal, key_id: str, now: float, reason: str | None) -> None:
        """A revoked key answers for nothing more: every live run whose current lease it granted is
        refused `lease_revoked` from its next call on, until a valid key grants a new lease."""
        rows = conn.execute(
            "SELECT r.run_id, r.epoch, r.lease_worker FROM leases l JOIN runs r "
            "ON r.run_id = l.run_id AND r.epoch = l.epoch "
            "WHERE l.granted_key_id = ? AND r.lease_revoked_at IS NULL "
            "AND r.status NOT IN ('completed', 'cancelled', 'expired', 'failed')",
            (key_id,),
        ).fetchall()
        for run_id, epoch, worker in rows:
            conn.execute("UPDATE runs SET lease_revoked_at = ?, updated_at = ? WHERE run_id = ?", (now, now, run_id))
            data = {"epoch": epoch, "worker": worker, "key_id": key_id, "by": principal.name, "reason": reason}
            self._event(conn, run_id, "lease_revoked", now, **data)

    @staticmethod
    def _key_row(conn: Conn, tenant: str, key_id: str) -> Row:
        row = conn.execute("SELECT * FROM api_keys WHERE key_id = ? AND tenant = ?", (key_id, tenant)).fetchone()
        if row is None:
            raise NotFound(f"no key {key_id}")
        return row  # type: ignore[no-any-return]

    @staticmethod
    def _check_name_free(conn: Conn, tenant: str, name: str, now: float) -> None:
        """A key's name is its principal's name (who asked, who decided): one valid key per name."""
        taken = conn.execute(
            f"SELECT key_id FROM api_keys WHERE tenant = ? AND name = ? AND {_VALID} LIMIT 1", (tenant, name, now)
        ).fetchone()
        if taken is not None:
            raise Conflict(
                f"a valid key named {name!r} exists: revoke it, rotate it or choose another name",
                code=Code.KEY_NAME_TAKEN,
                key_id=taken["key_id"],
            )

    @staticmethod
    def _insert(
        conn: Conn,
        key_id: str,
        principal: Principal,
        name: str,
        roles: frozenset[str],
        key_sha256: str,
        now: float,
        expires_at: float | None,
        *,
        rotated_from: str | None,
    ) -> None:
        conn.execute(
            "INSERT INTO api_keys (key_id, tenant, name, roles, key_sha256, created_at, created_by, expires_at, "
            "rotated_from) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                key_id,
                principal.tenant,
                name,
                json.dumps(sorted(roles)),
                key_sha256,
                now,
                principal.name,
                expires_at,
                rotated_from,
            ),
        )

    @staticmethod
    def _key_event(conn: Conn, principal: Principal, key_id: str, type_: str, now: float, **data: Any) -> None:
        conn.execute(
            "INSERT INTO key_events (tenant, key_id, type, at, by, data) VALUES (?, ?, ?, ?, ?, ?)",
            (principal.tenant, key_id, type_, now, principal.name, json.dumps(data, sort_keys=True)),
        )


def _key(row: Row) -> ApiKeyRecord:
    return ApiKeyRecord(
        key_id=row["key_id"],
        tenant=row["tenant"],
        name=row["name"],
        roles=frozenset(json.loads(row["roles"])),
        created_at=row["created_at"],
        created_by=row["created_by"],
        expires_at=row["expires_at"],
        revoked_at=row["revoked_at"],
        revoked_by=row["revoked_by"],
        rotated_from=row["rotated_from"],
        rotated_to=row["rotated_to"],
    )
