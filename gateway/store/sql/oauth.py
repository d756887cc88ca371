"""The store's MCP authorization state: clients, grants (one consent to one run, holding its
lease) and the hashes of access and refresh tokens (gateway/oauth/, docs/authorization.md).

Every decision is one transaction, so two replicas redeeming the same code, or rotating the same
refresh token, at once end with one winner: the loser sees the code or the token used, and
that second use revokes the grant (OAuth 2.1 section 4.3.1 and 4.1.3: a replayed code or a
refresh token used twice means one copy is in the wrong hands). A refusal that revokes is
returned from the transaction, not raised in it, so the revocation commits.
"""

from __future__ import annotations

from typing import Any

from gateway.clock import isoformat
from gateway.domain.lease_rules import LeaseState, lease_rule
from gateway.domain.leases import token_hash
from gateway.errors import Code, Conflict, NotFound, WarrantError
from gateway.store.records import OAuthGrant, OAuthTokenRow, OAuthTokens, Principal, RunRecord
from gateway.store.sql.connection import Conn
from gateway.store.sql.leases import LeaseOps
from gateway.store.sql.rows import run_from_row

KEEP_USED_REFRESH = 16  # a grant's rotated refresh tokens kept to see a reuse; older ones are dropped


class OAuthRefused(Conflict):
    """A code or token that cannot be redeemed now; `code` is the OAuth error (`invalid_grant`)."""

    code = Code.INVALID_GRANT
    http_status = 400


def _grant(row: Any) -> OAuthGrant:
    return OAuthGrant(
        grant_id=row["grant_id"],
        tenant=row["tenant"],
        run_id=row["run_id"],
        client_id=row["client_id"],
        client_name=row["client_name"],
        granted_by=row["granted_by"],
        key_id=row["key_id"],
        epoch=int(row["epoch"]),
        salt=row["salt"],
        resource=row["resource"],
        scopes=tuple(s for s in str(row["scopes"]).split(" ") if s),
        code_challenge=row["code_challenge"],
        redirect_uri=row["redirect_uri"],
        redirect_explicit=bool(row["redirect_explicit"]),
        code_expires_at=float(row["code_expires_at"]),
        code_used_at=row["code_used_at"],
        created_at=float(row["created_at"]),
        refreshed_at=row["refreshed_at"],
        revoked_at=row["revoked_at"],
        revoked_reason=row["revoked_reason"],
        revoked_by=row["revoked_by"],
    )


def ended_reason(run: RunRecord, grant: OAuthGrant, now: float) -> tuple[str, str] | None:
    """Why this grant can act for its run no more, as `(code, words)` for the person who consented;
    None while it still can (the run live and the grant's lease the run's current one). The codes:
    `run_finished`, `lease_taken_over`, `key_revoked` (the consenting key's lease was revoked)."""
    if run.status.terminal:
        return "run_finished", (
            f"run {run.run_id} is {run.status.value}: a finished run is never resumed. Start its successor "
            f"(console: the run's page, or `warrant runs successor {run.run_id}`) and sign in again to act for it"
        )
    if grant.epoch != run.epoch:
        return "lease_taken_over", (
            f"the lease on run {run.run_id} was taken over by {run.lease_worker or 'an operator'}: "
            "sign in again to act for it"
        )
    if lease_rule(run.snapshot(), grant.epoch, now).state is LeaseState.REVOKED:
        return "key_revoked", f"the key that consented for run {run.run_id} was revoked: sign in again with a valid key"
    return None


def ended_message(run: RunRecord, grant: OAuthGrant, now: float) -> str | None:
    """`ended_reason`'s words alone."""
    ended = ended_reason(run, grant, now)
    return None if ended is None else ended[1]


class OAuthOps(LeaseOps):
    # -- clients ---------------------------------------------------------------------------
    async def oauth_client(self, client_id: str) -> tuple[str, str] | None:
        """(kind, metadata JSON) of a known client."""

        def read(conn: Conn) -> tuple[str, str] | None:
            row = conn.execute("SELECT kind, metadata FROM oauth_clients WHERE client_id = ?", (client_id,)).fetchone()
            return None if row is None else (str(row["kind"]), str(row["metadata"]))

        return await self._db.read(read)

    async def save_oauth_client(
        self, client_id: str, kind: str, metadata: str, *, max_clients: int, prune_age: float
    ) -> None:
        """Register a client (or refresh a fetched metadata document's copy). When `max_clients` are
        known, registrations never consented to and older than `prune_age` seconds go first.
        Raises: Conflict `oauth_clients_full` when none can go."""

        def tx(conn: Conn) -> None:
            now = self._clock.now()
            if conn.execute("SELECT 1 FROM oauth_clients WHERE client_id = ?", (client_id,)).fetchone():
                conn.execute("UPDATE oauth_clients SET metadata = ? WHERE client_id = ?", (metadata, client_id))
                return
            count = int(conn.execute("SELECT COUNT(*) AS n FROM oauth_clients").fetchone()["n"])
            if count >= max_clients:
                conn.execute(
                    "DELETE FROM oauth_clients WHERE used_at IS NULL AND created_at < ? AND client_id NOT IN "
                    "(SELECT client_id FROM oauth_grants)",
                    (now - prune_age,),
                )
                count = int(conn.execute("SELECT COUNT(*) AS n FROM oauth_clients").fetchone()["n"])
                if count >= max_clients:
                    raise Conflict(
                        f"this gateway knows {count} OAuth clients, its limit: try again later",
                        code=Code.OAUTH_CLIENTS_FULL,
                    )
            conn.execute(
                "INSERT INTO oauth_clients (client_id, kind, metadata, created_at) VALUES (?, ?, ?, ?)",
                (client_id, kind, metadata, now),
            )

        await self._db.transaction(tx, durable=True)

    # -- consent ---------------------------------------------------------------------------
    async def consent_oauth(
        self,
        principal: Principal,
        run_id: str,
        *,
        grant_id: str,
        client_id: str,
        client_name: str | None,
        salt: str,
        lease_token: str,
        code_hash: str,
        code_challenge: str,
        code_expires_at: float,
        redirect_uri: str,
        redirect_explicit: bool,
        resource: str,
        scopes: tuple[str, ...],
        takeover: bool,
        max_grants: int,
    ) -> OAuthGrant:
        """The person's consent: the gateway takes the run's lease for the client (a takeover only
        when asked) and records the grant with its one code, in one transaction.

        Raises: NotFound (also another tenant's run); Conflict `lease_held`, `oauth_grants_full`;
        the run's status refusal when it is finished."""

        def tx(conn: Conn) -> OAuthGrant | WarrantError:
            now = self._clock.now()
            # Every consent is kept (the connected clients a run ever had), so the bound counts them all.
            count = int(
                conn.execute("SELECT COUNT(*) AS n FROM oauth_grants WHERE run_id = ?", (run_id,)).fetchone()["n"]
            )
            if count >= max_grants:
                raise Conflict(
                    f"run {run_id} has had {count} sign-ins, the limit: start its successor for more",
                    code=Code.OAUTH_GRANTS_FULL,
                )
            worker = f"oauth:{client_name or client_id}"[:120]
            granted = self._grant_lease(conn, principal, run_id, worker, lease_token, takeover=takeover)
            if isinstance(granted, WarrantError):
                return granted
            conn.execute(
                "INSERT INTO oauth_grants (grant_id, tenant, run_id, client_id, client_name, granted_by, key_id, "
                "epoch, salt, lease_token_hash, resource, scopes, code_hash, code_challenge, redirect_uri, "
                "redirect_explicit, code_expires_at, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    grant_id,
                    principal.tenant,
                    run_id,
                    client_id,
                    client_name,
                    principal.name,
                    principal.key_id,
                    granted.epoch,
                    salt,
                    token_hash(lease_token),
                    resource,
                    " ".join(scopes),
                    code_hash,
                    code_challenge,
                    redirect_uri,
                    int(redirect_explicit),
                    code_expires_at,
                    now,
                ),
            )
            conn.execute("UPDATE oauth_clients SET used_at = ? WHERE client_id = ?", (now, client_id))
            self._event(
                conn,
                run_id,
                "oauth_consented",
                now,
                grant_id=grant_id,
                client_id=client_id[:300],
                client_name=(client_name or "")[:200] or None,
                by=principal.name,
                epoch=granted.epoch,
                takeover=takeover,
                redirect_uri=redirect_uri[:300],
            )
            return self._grant_row(conn, grant_id)

        result = await self._db.transaction(tx, durable=True)
        if isinstance(result, WarrantError):
            raise result
        return result

    # -- codes and tokens ------------------------------------------------------------------
    async def oauth_code(self, code_hash: str) -> OAuthGrant | None:
        """The grant a code redeems, while it was never used. A second presentation of a used code
        revokes the grant (every token it issued) and answers None, as for an unknown code."""

        def tx(conn: Conn) -> OAuthGrant | None:
            row = conn.execute("SELECT * FROM oauth_grants WHERE code_hash = ?", (code_hash,)).fetchone()
            if row is None:
                return None
            grant = _grant(row)
            if grant.code_used_at is not None:
                self._revoke(conn, grant, "authorization_code_replayed", "gateway", self._clock.now())
                return None
            return grant

        return await self._db.transaction(tx, durable=True)

    async def redeem_oauth_code(
        self, code_hash: str, access_hash: str, access_expires: float, refresh_hash: str, refresh_expires: float
    ) -> OAuthTokens:
        """Use the code once: its grant's first access and refresh token. Raises: OAuthRefused
        (a used code, which revokes the grant; a code past its time, by the store's clock; a
        revoked grant; a run its grant can act for no more)."""

        def tx(conn: Conn) -> OAuthTokens | WarrantError:
            now = self._clock.now()
            row = conn.execute("SELECT * FROM oauth_grants WHERE code_hash = ?", (code_hash,)).fetchone()
            if row is None:
                return OAuthRefused("authorization code does not exist")
            grant = _grant(row)
            if grant.code_used_at is not None:
                self._revoke(conn, grant, "authorization_code_replayed", "gateway", now)
                return OAuthRefused("authorization code was already used; the tokens it issued are revoked")
            if grant.code_expires_at <= now:
                return OAuthRefused("authorization code has expired: sign in again")
            conn.execute("UPDATE oauth_grants SET code_used_at = ? WHERE grant_id = ?", (now, grant.grant_id))
            if grant.revoked_at is not None:
                return OAuthRefused(f"this sign-in was revoked ({grant.revoked_reason})")
            run = run_from_row(self._run_row(conn, grant.run_id))
            ended = ended_message(run, grant, now)
            if ended is not None:
                return OAuthRefused(ended)
            self._tokens(conn, grant, access_hash, access_expires, refresh_hash, refresh_expires, now)
            self._event(conn, grant.run_id, "oauth_token_issued", now, grant_id=grant.grant_id, epoch=grant.epoch)
            return OAuthTokens(self._grant_row(conn, grant.grant_id), run)

        result = await self._db.transaction(tx, durable=True)
        if isinstance(result, WarrantError):
            raise result
        return result

    async def oauth_token(self, token_hash: str) -> OAuthTokenRow | None:
        """An access or refresh token's row, with its grant: one read (the /mcp resource's look-up)."""

        def read(conn: Conn) -> OAuthTokenRow | None:
            row = conn.execute(
                "SELECT t.kind AS t_kind, t.created_at AS t_created, t.expires_at AS t_expires, t.used_at AS t_used, "
                "g.* FROM oauth_tokens t JOIN oauth_grants g ON g.grant_id = t.grant_id WHERE t.token_hash = ?",
                (token_hash,),
            ).fetchone()
            if row is None:
                return None
            return OAuthTokenRow(
                kind=row["t_kind"],
                created_at=float(row["t_created"]),
                expires_at=float(row["t_expires"]),
                used_at=row["t_used"],
                grant=_grant(row),
            )

        return await self._db.read(read)

    async def rotate_oauth_refresh(
        self, refresh_hash: str, access_hash: str, access_expires: float, new_refresh_hash: str, refresh_expires: float
    ) -> OAuthTokens:
        """A refresh: the token is used up and a new pair issued, recorded as `oauth_refreshed`.

        Raises: OAuthRefused for an unknown, expired or revoked token, a run the grant can act for
        no more (the message says what to do), or a token already used, which revokes the grant."""

        def tx(conn: Conn) -> OAuthTokens | WarrantError:
            now = self._clock.now()
            row = conn.execute(
                "SELECT t.kind AS t_kind, t.expires_at AS t_expires, t.used_at AS t_used, g.* FROM oauth_tokens t "
                "JOIN oauth_grants g ON g.grant_id = t.grant_id WHERE t.token_hash = ?",
                (refresh_hash,),
            ).fetchone()
            if row is None or row["t_kind"] != "refresh":
                return OAuthRefused("refresh token does not exist")
            grant = _grant(row)
            if grant.revoked_at is not None:
                return OAuthRefused(f"this sign-in was revoked ({grant.revoked_reason}): sign in again")
            if row["t_used"] is not None:
                self._revoke(conn, grant, "refresh_token_reused", "gateway", now)
                return OAuthRefused("refresh token was already used: this sign-in is revoked, sign in again")
            if float(row["t_expires"]) <= now:
                return OAuthRefused("refresh token has expired: sign in again")
            run = run_from_row(self._run_row(conn, grant.run_id))
            ended = ended_message(run, grant, now)
            if ended is not None:
                return OAuthRefused(ended)
            conn.execute("UPDATE oauth_tokens SET used_at = ? WHERE token_hash = ?", (now, refresh_hash))
            self._tokens(conn, grant, access_hash, access_expires, new_refresh_hash, refresh_expires, now)
            conn.execute("UPDATE oauth_grants SET refreshed_at = ? WHERE grant_id = ?", (now, grant.grant_id))
            self._event(conn, grant.run_id, "oauth_refreshed", now, grant_id=grant.grant_id, epoch=grant.epoch)
            return OAuthTokens(self._grant_row(conn, grant.grant_id), run)

        result = await self._db.transaction(tx, durable=True)
        if isinstance(result, WarrantError):
            raise result
        return result

    # -- revocation and listing ------------------------------------------------------------
    async def revoke_oauth_grant(
        self, grant_id: str, *, reason: str, by: str, tenant: str | None = None, run_id: str | None = None
    ) -> OAuthGrant:
        """End a grant: its tokens stop at once and its lease, when still the run's, holds nothing.
        Revoking a revoked grant changes nothing. Raises: NotFound (also another tenant's, or when
        `run_id` is given, another run's)."""

        def tx(conn: Conn) -> OAuthGrant:
            row = conn.execute("SELECT * FROM oauth_grants WHERE grant_id = ?", (grant_id,)).fetchone()
            if row is None or (tenant is not None and row["tenant"] != tenant):
                raise NotFound(f"no connected client {grant_id}")
            if run_id is not None and row["run_id"] != run_id:
                raise NotFound(f"no connected client {grant_id}")
            grant = _grant(row)
            if grant.revoked_at is None:
                self._revoke(conn, grant, reason, by, self._clock.now())
            return self._grant_row(conn, grant_id)

        return await self._db.transaction(tx, durable=True)

    async def list_oauth_grants(self, tenant: str, run_id: str, *, limit: int = 100) -> list[OAuthGrant]:
        """A run's grants, newest first. Raises: NotFound (also another tenant's run)."""

        def read(conn: Conn) -> list[OAuthGrant]:
            self._run_row(conn, run_id, tenant)
            rows = conn.execute(
                "SELECT * FROM oauth_grants WHERE run_id = ? AND tenant = ? ORDER BY created_at DESC, grant_id LIMIT ?",
                (run_id, tenant, limit),
            ).fetchall()
            return [_grant(r) for r in rows]

        return await self._db.read(read)

    # -- helpers (database thread) ---------------------------------------------------------
    def _grant_row(self, conn: Conn, grant_id: str) -> OAuthGrant:
        return _grant(conn.execute("SELECT * FROM oauth_grants WHERE grant_id = ?", (grant_id,)).fetchone())

    def _tokens(
        self,
        conn: Conn,
        grant: OAuthGrant,
        access_hash: str,
        access_expires: float,
        refresh_hash: str,
        refresh_expires: float,
        now: float,
    ) -> None:
        conn.execute(
            "INSERT INTO oauth_tokens (token_hash, grant_id, kind, created_at, expires_at) VALUES (?, ?, ?, ?, ?)",
            (access_hash, grant.grant_id, "access", now, access_expires),
        )
        conn.execute(
            "INSERT INTO oauth_tokens (token_hash, grant_id, kind, created_at, expires_at) VALUES (?, ?, ?, ?, ?)",
            (refresh_hash, grant.grant_id, "refresh", now, refresh_expires),
        )
        # Bounded per grant: access tokens past their time, and all but the newest used refresh tokens.
        conn.execute(
            "DELETE FROM oauth_tokens WHERE grant_id = ? AND kind = 'access' AND expires_at <= ?",
            (grant.grant_id, now),
        )
        conn.execute(
            "DELETE FROM oauth_tokens WHERE grant_id = ? AND kind = 'refresh' AND used_at IS NOT NULL AND token_hash "
            "NOT IN (SELECT token_hash FROM oauth_tokens WHERE grant_id = ? AND kind = 'refresh' "
            "AND used_at IS NOT NULL ORDER BY used_at DESC LIMIT ?)",
            (grant.grant_id, grant.grant_id, KEEP_USED_REFRESH),
        )

    def _revoke(self, conn: Conn, grant: OAuthGrant, reason: str, by: str, now: float) -> None:
        """Revoke a grant (in the caller's transaction): its tokens go, its lease holds no more.
        A grant already revoked keeps its first revocation (when, why, by whom) and gets no new
        event: a used code presented again and again must not grow the run's ledger."""
        if grant.revoked_at is not None:
            return
        conn.execute(
            "UPDATE oauth_grants SET revoked_at = ?, revoked_reason = ?, revoked_by = ? WHERE grant_id = ?",
            (now, reason, by, grant.grant_id),
        )
        conn.execute("DELETE FROM oauth_tokens WHERE grant_id = ?", (grant.grant_id,))
        # The lease the grant holds, when it is still the run's: it holds nothing now (as when its
        # granting key is revoked), so another worker may acquire it without a takeover.
        conn.execute(
            "UPDATE runs SET lease_revoked_at = ?, updated_at = ? WHERE run_id = ? AND epoch = ? "
            "AND lease_revoked_at IS NULL",
            (now, now, grant.run_id, grant.epoch),
        )
        self._event(
            conn,
            grant.run_id,
            "oauth_revoked",
            now,
            grant_id=grant.grant_id,
            client_id=grant.client_id[:300],
            reason=reason,
            by=by,
            at=isoformat(now),
        )
