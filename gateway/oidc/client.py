"""The relying party: discovery, the authorization request, the code exchange, the ID token's checks.

Built on Authlib (its httpx client for the authorization URL, PKCE and the token request, with the
client's authentication at the token endpoint; its OpenID Connect ID token claims for the checks)
and joserfc (the JWS signature against the provider's JWKS). Nothing here parses or verifies a JWT
by hand.

One sign-in:
1. `start`: a fresh `state`, `nonce` and PKCE verifier (S256); the browser is sent to the
   provider's authorization endpoint with them. The three travel back with the browser in a signed
   cookie (gateway/console/oidc.py), never in a server-side table.
2. `finish`: the code is exchanged at the token endpoint (with the verifier and the client's
   secret); the ID token's signature is checked against the provider's published keys (fetched
   again once when its `kid` is unknown: a key rotation), then `iss` (exactly the configured
   issuer), `aud` (this client), `azp`, `exp`/`iat` (60 s leeway), `nonce` and `at_hash`. The
   configured claim comes from the ID token or, when the provider keeps it for userinfo, from the
   userinfo endpoint (whose `sub` must be the ID token's).

What the provider says is who the person is; what they may do here is the gateway's configuration
(`OidcSettings.users`), looked up by the caller.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx2
from authlib.common.security import generate_token
from authlib.integrations.httpx_client import AsyncOAuth2Client, OAuthError
from authlib.oidc.core import CodeIDToken
from joserfc import jwt
from joserfc.errors import InvalidKeyIdError, JoseError
from joserfc.jwk import KeySet

from gateway.errors import Code, Forbidden, InvalidRequest, Unauthenticated, WarrantError
from gateway.oidc.settings import OidcSettings

LEEWAY = 60  # seconds of clock skew allowed on exp / iat
MAX_DOCUMENT = 512 * 1024  # bytes: a discovery document, a JWKS, a token or userinfo answer
LOOPBACK = ("localhost", "127.0.0.1", "::1")
# Asymmetric signatures only: a symmetric one (HS256) would be keyed by the client secret, which
# the gateway holds too, and `none` is no signature.
ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA")


def unavailable(message: str) -> WarrantError:
    return WarrantError(message, code=Code.OIDC_UNAVAILABLE).with_status(502)


def token_refused(message: str) -> WarrantError:
    return Unauthenticated(message, code=Code.OIDC_TOKEN_INVALID)


@dataclass(frozen=True)
class Started:
    url: str  # where the browser goes: the provider's authorization endpoint
    state: str
    nonce: str
    verifier: str


@dataclass(frozen=True)
class Identity:
    """Who the provider says signed in: its subject, the configured claim's value, all the claims."""

    subject: str
    value: str
    claims: dict[str, Any]


class OidcClient:
    def __init__(
        self,
        settings: OidcSettings,
        *,
        now: Callable[[], float] = time.time,
        transport: httpx2.AsyncBaseTransport | None = None,
    ) -> None:
        self.settings = settings
        # The provider's clock and ours: ID tokens are stamped with wall-clock time.
        self.now = now
        self.transport = transport
        self._metadata: dict[str, Any] | None = None
        self._jwks: dict[str, Any] | None = None

    # -- the provider ----------------------------------------------------------------------
    def _http(self, **kwargs: Any) -> AsyncOAuth2Client:
        metadata = self._metadata or {}
        methods = metadata.get("token_endpoint_auth_methods_supported") or ["client_secret_basic"]
        if self.settings.client_secret is None:
            method = "none"
        elif "client_secret_basic" in methods or "client_secret_post" not in methods:
            method = "client_secret_basic"
        else:
            method = "client_secret_post"
        return AsyncOAuth2Client(
            client_id=self.settings.client_id,
            client_secret=self.settings.client_secret,
            token_endpoint_auth_method=method,
            scope=" ".join(self.settings.scopes),
            code_challenge_method="S256",
            timeout=self.settings.http_timeout,
            follow_redirects=False,
            transport=self.transport,
            **kwargs,
        )

    async def _get_json(self, url: str, what: str, **kwargs: Any) -> dict[str, Any]:
        try:
            async with self._http() as http:
                answer = await http.request("GET", url, withhold_token=True, **kwargs)
        except httpx2.HTTPError as error:
            raise unavailable(f"the provider's {what} could not be fetched: {type(error).__name__}") from None
        if answer.status_code != 200:
            raise unavailable(f"the provider's {what} answered HTTP {answer.status_code}")
        if len(answer.content) > MAX_DOCUMENT:
            raise unavailable(f"the provider's {what} is over {MAX_DOCUMENT} bytes")
        try:
            body = answer.json()
        except ValueError:
            raise unavailable(f"the provider's {what} is not JSON") from None
        if not isinstance(body, dict):
            raise unavailable(f"the provider's {what} is not a JSON object")
        return body

    def _endpoint(self, metadata: dict[str, Any], name: str, required: bool = True) -> str | None:
        value = metadata.get(name)
        if value is None and not required:
            return None
        parts = urlsplit(value) if isinstance(value, str) else None
        if parts is None or not parts.hostname:
            raise unavailable(f"the provider's discovery document has no usable {name}")
        if parts.scheme != "https" and not (parts.scheme == "http" and parts.hostname in LOOPBACK):
            raise unavailable(f"the provider's {name} is not https: {value}")
        return str(value)

    async def metadata(self) -> dict[str, Any]:
        """`{issuer}/.well-known/openid-configuration`, checked, once per process (again after a
        failure)."""
        if self._metadata is not None:
            return self._metadata
        issuer = self.settings.issuer
        metadata = await self._get_json(f"{issuer}/.well-known/openid-configuration", "discovery document")
        if metadata.get("issuer") != issuer:
            # OpenID Connect Discovery 4.3: the document names exactly the issuer it was fetched for.
            raise unavailable(
                f"the discovery document names the issuer {metadata.get('issuer')!r}, not the configured {issuer!r}"
            )
        for name in ("authorization_endpoint", "token_endpoint", "jwks_uri"):
            self._endpoint(metadata, name)
        self._endpoint(metadata, "userinfo_endpoint", required=False)
        if "code" not in (metadata.get("response_types_supported") or ["code"]):
            raise unavailable("the provider does not offer the authorization code flow")
        methods = metadata.get("code_challenge_methods_supported")
        if methods is not None and "S256" not in methods:
            raise unavailable("the provider does not offer PKCE with S256")
        self._metadata = metadata
        return metadata

    async def _key_set(self, refresh: bool = False) -> KeySet:
        if self._jwks is None or refresh:
            metadata = await self.metadata()
            self._jwks = await self._get_json(str(metadata["jwks_uri"]), "JWKS")
        try:
            return KeySet.import_key_set(self._jwks)  # type: ignore[arg-type]
        except (JoseError, ValueError, TypeError, KeyError):
            self._jwks = None
            raise unavailable("the provider's JWKS holds no usable key") from None

    def _algorithms(self, metadata: dict[str, Any]) -> list[str]:
        offered = metadata.get("id_token_signing_alg_values_supported") or ["RS256"]
        usable = [a for a in offered if a in ALGORITHMS]
        if not usable:
            raise unavailable(f"the provider signs ID tokens with none of {', '.join(ALGORITHMS)}")
        return usable

    # -- one sign-in -----------------------------------------------------------------------
    async def start(self, redirect_uri: str) -> Started:
        metadata = await self.metadata()
        state, nonce, verifier = generate_token(32), generate_token(32), generate_token(64)
        async with self._http(redirect_uri=redirect_uri) as http:
            url, _ = http.create_authorization_url(
                metadata["authorization_endpoint"], state=state, code_verifier=verifier, nonce=nonce
            )
        return Started(str(url), state, nonce, verifier)

    async def finish(self, code: str, redirect_uri: str, nonce: str, verifier: str) -> Identity:
        """Raises: WarrantError `oidc_unavailable` (the provider could not be used),
        `oidc_token_invalid` (no valid ID token for this client and this sign-in),
        `oidc_claim_missing` (the claim the gateway matches on is absent or unverified)."""
        metadata = await self.metadata()
        try:
            async with self._http(redirect_uri=redirect_uri) as http:
                token = await http.fetch_token(
                    metadata["token_endpoint"],
                    grant_type="authorization_code",
                    code=code,
                    code_verifier=verifier,
                )
        except OAuthError as error:
            raise Unauthenticated(
                f"the provider refused the code: {error.error}: {error.description or ''}".rstrip(": "),
                code=Code.OIDC_CODE_REFUSED,
            ) from None
        except (httpx2.HTTPError, ValueError) as error:
            raise unavailable(f"the provider's token endpoint could not be used: {type(error).__name__}") from None
        id_token, access_token = token.get("id_token"), token.get("access_token")
        if not isinstance(id_token, str) or not id_token:
            raise token_refused("the provider's answer carries no ID token (is `openid` among the scopes?)")
        claims = await self._checked(id_token, nonce, access_token if isinstance(access_token, str) else None, metadata)
        source = claims
        if self.settings.claim not in claims:
            source = await self._userinfo(metadata, access_token, str(claims["sub"]))
        return Identity(str(claims["sub"]), self._claim_value(source), {**source, **claims})

    async def _checked(
        self, id_token: str, nonce: str, access_token: str | None, metadata: dict[str, Any]
    ) -> dict[str, Any]:
        algorithms = self._algorithms(metadata)
        try:
            try:
                decoded = jwt.decode(id_token, await self._key_set(), algorithms=algorithms)
            except InvalidKeyIdError:  # a key the provider published since: fetch its JWKS again
                decoded = jwt.decode(id_token, await self._key_set(refresh=True), algorithms=algorithms)
            options: dict[str, Any] = {
                "iss": {"essential": True, "value": self.settings.issuer},
                "aud": {"essential": True, "value": self.settings.client_id},
                "nonce": {"essential": True, "value": nonce},
            }
            params = {"nonce": nonce, "client_id": self.settings.client_id, "access_token": access_token}
            claims = CodeIDToken(decoded.claims, decoded.header, options, params)
            claims.validate(now=int(self.now()), leeway=LEEWAY)
        except JoseError as error:
            raise token_refused(f"the ID token was refused: {error.error}: {error.description}") from None
        except (ValueError, TypeError) as error:
            raise token_refused(f"the ID token was refused: {error}") from None
        if not isinstance(claims.get("sub"), str) or not claims["sub"]:
            raise token_refused("the ID token names no subject")
        return dict(claims)

    async def _userinfo(self, metadata: dict[str, Any], access_token: Any, subject: str) -> dict[str, Any]:
        url = self._endpoint(metadata, "userinfo_endpoint", required=False)
        if url is None or not isinstance(access_token, str):
            raise Unauthenticated(
                f"the ID token has no {self.settings.claim!r} claim and the provider offers no userinfo",
                code=Code.OIDC_CLAIM_MISSING,
            )
        info = await self._get_json(url, "userinfo", headers={"Authorization": f"Bearer {access_token}"})
        if info.get("sub") != subject:
            # OpenID Connect Core 5.3.4: userinfo about someone else is not this person's.
            raise token_refused("the provider's userinfo names another subject than the ID token")
        return info

    def _claim_value(self, claims: dict[str, Any]) -> str:
        name = self.settings.claim
        value = claims.get(name)
        if not isinstance(value, str) or not value:
            raise Unauthenticated(f"the provider did not give the {name!r} claim", code=Code.OIDC_CLAIM_MISSING)
        if (
            name == "email"
            and self.settings.require_verified_email
            and claims.get("email_verified")
            not in (
                True,
                "true",
            )
        ):
            raise Unauthenticated(
                f"the provider has not verified the address {value}: it is not taken as proof of who signed in",
                code=Code.OIDC_CLAIM_MISSING,
            )
        return value


def state_refused(message: str) -> WarrantError:
    return InvalidRequest(message, code=Code.OIDC_STATE_MISMATCH).with_status(400)


def not_allowed(label: str, value: str) -> WarrantError:
    return Forbidden(
        f"{value}, signed in at {label}, is not one of the people this gateway lets in: "
        "ask an administrator to add it to console_sign_in.oidc.users",
        code=Code.OIDC_NOT_ALLOWED,
    )
