"""Warrant's authorization server, as the MCP SDK's `OAuthAuthorizationServerProvider`: the SDK's
handlers parse and check the requests (PKCE S256, redirect URI, code expiry, client
authentication, the OAuth error shapes); this keeps the state, in the store, on both back ends.

`/authorize` hands the checked request to the console's consent page (sealed, nothing stored);
the person's consent takes the run's lease for the client and writes the grant with its one code
(`consent`); the code buys the first access and refresh token; each refresh rotates the pair. A
token is only ever for this gateway's /mcp (RFC 8707: `invalid_target` for any other resource),
and a grant ends with its run, its lease, or a revocation.
"""

from __future__ import annotations

import contextvars
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    AuthorizeError,
    RefreshToken,
    RegistrationError,
    TokenError,
    construct_redirect_uri,
)
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from pydantic import AnyUrl, ValidationError
from starlette.types import Scope

from gateway.errors import Conflict
from gateway.ids import new_id
from gateway.oauth import credentials
from gateway.oauth.clients import ClientRejected, MetadataDocuments, check_client, is_metadata_url
from gateway.oauth.sealed import PendingRequest, seal
from gateway.oauth.settings import OAuthSettings
from gateway.service import Gateway
from gateway.store.records import OAuthGrant, OAuthTokenRow, OAuthTokens, Principal
from gateway.store.sql.oauth import OAuthRefused

SCOPES = ("mcp", "offline_access")
CONSENT_PATH = "/console/oauth/consent"
PRUNE_AGE_S = 86_400.0

# The gateway's address as this request reached it (gateway/oauth/routes.py sets it).
BASE_URL: contextvars.ContextVar[str] = contextvars.ContextVar("warrant_oauth_base_url")


def request_base(scope: Scope) -> str:
    """scheme://host[:port] as the client addressed this gateway."""
    headers = dict(scope.get("headers") or [])
    host = headers.get(b"host", b"").decode("latin-1")
    if not host:
        server = scope.get("server") or ("127.0.0.1", 80)
        host = f"{server[0]}:{server[1]}"
    return f"{scope.get('scheme', 'http')}://{host}"


def resource_of(base: str) -> str:
    return base.rstrip("/") + "/mcp"


def issuer_of(pending: PendingRequest) -> str:
    """The issuer the client discovered when it asked: its resource, less `/mcp`."""
    return pending.resource.rstrip("/").removesuffix("/mcp")


def same_resource(a: str, b: str) -> bool:
    return a.rstrip("/") == b.rstrip("/")


class GrantAccess(AccessToken):
    grant_id: str


class GrantRefresh(RefreshToken):
    grant_id: str


@dataclass(frozen=True)
class Consent:
    """What the person chose on the consent page."""

    run_id: str
    takeover: bool


class WarrantAuthorization:
    """The SDK provider protocol over the store. `gateway_of`: the running gateway (set in the lifespan)."""

    def __init__(self, gateway_of: Callable[[], Gateway], settings: OAuthSettings, ledger_key: bytes) -> None:
        self.gateway_of = gateway_of
        self.settings = settings
        self.lease_key = credentials.derive_key(ledger_key, "lease")
        self.consent_key = credentials.derive_key(ledger_key, "consent")
        self.documents = MetadataDocuments(
            allow_loopback_http=settings.metadata_documents_allow_loopback_http, scopes=" ".join(SCOPES)
        )

    def base_url(self, scope: Scope | None = None) -> str:
        """The gateway's address: `oauth.public_url`, else the one this request (`scope`, or the
        authorization route's, gateway/oauth/routes.py `WithBase`) reached it at."""
        if self.settings.public_url:
            return self.settings.public_url
        return request_base(scope) if scope is not None else BASE_URL.get()

    # -- clients ---------------------------------------------------------------------------
    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        if len(client_id) > 1000:
            return None
        if is_metadata_url(client_id):
            return await self.documents.client(client_id) if self.settings.metadata_documents else None
        found = await self.gateway_of().store.oauth_client(client_id)
        if found is None:
            return None
        data = json.loads(found[1])
        data.pop("client_secret_sha256", None)
        return OAuthClientInformationFull.model_validate(data)

    async def client_secret_digest(self, client_id: str) -> str | None:
        found = await self.gateway_of().store.oauth_client(client_id)
        if found is None:
            return None
        value = json.loads(found[1]).get("client_secret_sha256")
        return str(value) if value else None

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        try:
            check_client(client_info)
        except ClientRejected as exc:
            raise RegistrationError("invalid_client_metadata", str(exc)) from None
        for uri in client_info.redirect_uris or []:
            if len(str(uri)) > 2000:
                raise RegistrationError("invalid_redirect_uri", "a redirect URI is over 2000 characters")
        data = client_info.model_dump(mode="json", exclude_none=True)
        secret = data.pop("client_secret", None)
        if secret:
            data["client_secret_sha256"] = credentials.digest(secret)  # the secret itself is never stored
        try:
            await self.gateway_of().store.save_oauth_client(
                client_info.client_id or "",
                "registered",
                json.dumps(data, separators=(",", ":")),
                max_clients=self.settings.max_clients,
                prune_age=PRUNE_AGE_S,
            )
        except Conflict as exc:
            raise RegistrationError("invalid_client_metadata", exc.message) from None

    # -- authorize: to the consent page ----------------------------------------------------
    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        base = self.base_url()
        resource = resource_of(base)
        if params.resource is not None and not same_resource(params.resource, resource):
            raise AuthorizeError("invalid_target", f"this server issues tokens for {resource} only")
        scopes = tuple(s for s in (params.scopes or SCOPES) if s)
        unknown = [s for s in scopes if s not in SCOPES]
        if unknown:
            raise AuthorizeError("invalid_scope", f"unknown scope(s): {', '.join(unknown)}")
        gateway = self.gateway_of()
        pending = PendingRequest(
            client_id=client.client_id or "",
            redirect_uri=str(params.redirect_uri),
            redirect_explicit=params.redirect_uri_provided_explicitly,
            code_challenge=params.code_challenge,
            state=params.state,
            scopes=scopes,
            resource=resource,
            expires=gateway.clock.now() + self.settings.consent_ttl,
        )
        return f"{base}{CONSENT_PATH}?request={quote(seal(self.consent_key, pending))}"

    async def consent(self, principal: Principal, pending: PendingRequest, choice: Consent) -> str:
        """The person allowed: the grant and its code; the redirect back to the client, with the code.

        Raises: as `Store.consent_oauth` (NotFound, Conflict `lease_held`, a finished run's refusal)."""
        gateway = self.gateway_of()
        client = await self.get_client(pending.client_id)
        code = credentials.mint(credentials.CODE_PREFIX)
        grant_id = new_id("og")
        salt = credentials.mint("")
        await gateway.store.consent_oauth(
            principal,
            choice.run_id,
            grant_id=grant_id,
            client_id=pending.client_id,
            client_name=client.client_name if client is not None else None,
            salt=salt,
            lease_token=credentials.grant_lease_token(self.lease_key, grant_id, salt),
            code_hash=credentials.digest(code),
            code_challenge=pending.code_challenge,
            code_expires_at=gateway.clock.now() + self.settings.code_ttl,
            redirect_uri=pending.redirect_uri,
            redirect_explicit=pending.redirect_explicit,
            resource=pending.resource,
            scopes=pending.scopes,
            takeover=choice.takeover,
            max_grants=self.settings.max_grants_per_run,
        )
        # RFC 9207: the issuer rides along, so a client talking to several servers knows whose code it is.
        return construct_redirect_uri(pending.redirect_uri, code=code, state=pending.state, iss=issuer_of(pending))

    def denied(self, pending: PendingRequest) -> str:
        return construct_redirect_uri(
            pending.redirect_uri,
            error="access_denied",
            error_description="the person declined",
            state=pending.state,
            iss=issuer_of(pending),
        )

    # -- codes and tokens ------------------------------------------------------------------
    async def load_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: str
    ) -> AuthorizationCode | None:
        if not credentials.looks_like(credentials.CODE_PREFIX, authorization_code):
            return None
        grant = await self.gateway_of().store.oauth_code(credentials.digest(authorization_code))
        if grant is None or grant.client_id != client.client_id:
            return None
        try:
            redirect = AnyUrl(grant.redirect_uri)
        except ValidationError:
            return None
        return AuthorizationCode(
            code=authorization_code,
            scopes=list(grant.scopes),
            expires_at=grant.code_expires_at,
            client_id=grant.client_id,
            code_challenge=grant.code_challenge,
            redirect_uri=redirect,
            redirect_uri_provided_explicitly=grant.redirect_explicit,
            resource=grant.resource,
            subject=grant.granted_by,
        )

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: AuthorizationCode
    ) -> OAuthToken:
        return await self._issue(self.gateway_of().store.redeem_oauth_code, authorization_code.code)

    async def load_refresh_token(self, client: OAuthClientInformationFull, refresh_token: str) -> GrantRefresh | None:
        row = await self._row(credentials.REFRESH_PREFIX, "refresh", refresh_token)
        if row is None or row.grant.client_id != client.client_id:
            return None
        # A used one is handed on too: its exchange is where the reuse is seen (and revokes the grant).
        return GrantRefresh(**_token_fields(refresh_token, row))

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: RefreshToken, scopes: list[str]
    ) -> OAuthToken:
        return await self._issue(self.gateway_of().store.rotate_oauth_refresh, refresh_token.token)

    async def load_access_token(self, token: str) -> GrantAccess | None:
        row = await self._row(credentials.ACCESS_PREFIX, "access", token)
        if row is None or row.grant.revoked_at is not None or row.expires_at <= self.gateway_of().clock.now():
            return None
        return GrantAccess(**_token_fields(token, row))

    async def revoke_token(self, token: Any) -> None:
        """RFC 7009: revoking either token ends the whole grant (both tokens, and its lease)."""
        grant_id = getattr(token, "grant_id", None)
        if isinstance(grant_id, str):
            await self.gateway_of().store.revoke_oauth_grant(grant_id, reason="revoked_by_client", by=token.client_id)

    async def exchange_identity_assertion(self, client: OAuthClientInformationFull, params: Any) -> OAuthToken:
        raise TokenError("unsupported_grant_type", "identity assertions are not accepted here")

    # -- helpers ---------------------------------------------------------------------------
    async def _row(self, prefix: str, kind: str, token: str) -> OAuthTokenRow | None:
        """The stored row of a token of `kind`, looked up by its hash; None for anything else."""
        if not credentials.looks_like(prefix, token):
            return None
        row = await self.gateway_of().store.oauth_token(credentials.digest(token))
        return row if row is not None and row.kind == kind else None

    async def _issue(
        self, write: Callable[[str, str, float, str, float], Awaitable[OAuthTokens]], spent: str
    ) -> OAuthToken:
        """A new access and refresh token for what `spent` (a code, or a refresh token) buys, written
        by `write` (the store's redemption or rotation); its refusal as the OAuth `invalid_grant`."""
        access = credentials.mint(credentials.ACCESS_PREFIX)
        refresh = credentials.mint(credentials.REFRESH_PREFIX)
        now = self.gateway_of().clock.now()
        try:
            issued = await write(
                credentials.digest(spent),
                credentials.digest(access),
                now + self.settings.access_token_ttl,
                credentials.digest(refresh),
                now + self.settings.refresh_token_ttl,
            )
        except OAuthRefused as exc:
            raise TokenError("invalid_grant", exc.message) from None
        return self._token(access, refresh, issued.grant)

    def _token(self, access: str, refresh: str, grant: OAuthGrant) -> OAuthToken:
        return OAuthToken(
            access_token=access,
            token_type="Bearer",
            expires_in=int(self.settings.access_token_ttl),
            scope=" ".join(grant.scopes) or None,
            refresh_token=refresh,
        )


def _token_fields(token: str, row: OAuthTokenRow) -> dict[str, Any]:
    """What the SDK's token models hold of a stored token and its grant."""
    grant = row.grant
    return {
        "token": token,
        "client_id": grant.client_id,
        "scopes": list(grant.scopes),
        "expires_at": int(row.expires_at),
        "resource": grant.resource,
        "subject": grant.granted_by,
        "grant_id": grant.grant_id,
    }
