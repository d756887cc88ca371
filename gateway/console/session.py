"""The console's session: a signed cookie naming an API key by its hash (or a person signed in
through the OpenID Connect provider, by a digest of their identity), and its CSRF token.

Signed rather than server-side: every replica sharing the store verifies it with no session table
and no sticky routing, and nothing new to configure: the signing key is derived from the ledger
key (which every replica of a deployment already shares) under a label of its own, so it signs
nothing else. The cookie carries the key's SHA-256, never the key; every request looks the key up
again (the same two look-ups as the API: configured keys, then the store's valid keys), so a
revoked or expired key ends its session on its next request, on every replica.

A session through the provider (gateway/console/oidc.py) names `oidc:` + SHA-256 of the issuer,
the claim and its value; each request looks that up in `console_sign_in.oidc.users`, so a person
taken out of the configuration is signed out at the gateway's next start, on every replica.

What a signed cookie cannot do: signing out forgets the cookie in this browser, but a copy taken
before stays valid until its `expires` (SESSION_SECONDS) unless the key is revoked.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
from dataclasses import dataclass
from typing import Any, Literal

from starlette.requests import Request
from starlette.responses import Response

from gateway.oidc.settings import SESSION_PREFIX, OidcSettings
from gateway.service import Gateway
from gateway.store.records import Principal

COOKIE = "warrant_console"
LOGIN_COOKIE = "warrant_console_login"  # a nonce for the sign-in form's own CSRF token
# One sign-in through the OpenID Connect provider on its way: state, nonce, PKCE verifier, next page.
OIDC_COOKIE = "warrant_console_oidc"
OIDC_COOKIE_PATH = "/console/login/oidc"
SESSION_SECONDS = 8 * 3600
LABEL = b"warrant console session v1"


def session_key(ledger_key: bytes) -> bytes:
    """The console's signing key: HMAC-SHA256 of a fixed label under the ledger key."""
    return hmac.new(ledger_key, LABEL, hashlib.sha256).digest()


@dataclass(frozen=True)
class Session:
    # Whom the session names: an API key's SHA-256 (hex), or `oidc:` + the digest of a person's
    # identity at the provider (gateway/oidc/settings.py `OidcSettings.digest`).
    key_sha256: str
    session_id: str
    expires: float


def _mac(key: bytes, text: str) -> str:
    return hmac.new(key, text.encode(), hashlib.sha256).hexdigest()


def seal(key: bytes, session: Session) -> str:
    body = json.dumps({"d": session.key_sha256, "s": session.session_id, "e": session.expires}, separators=(",", ":"))
    encoded = base64.urlsafe_b64encode(body.encode()).decode().rstrip("=")
    return f"{encoded}.{_mac(key, 'session:' + encoded)}"


def unseal(key: bytes, value: str | None, now: float) -> Session | None:
    """The session a cookie names, or None when it is absent, forged, malformed or expired."""
    if not value or value.count(".") != 1:
        return None
    encoded, mac = value.split(".")
    if not hmac.compare_digest(mac, _mac(key, "session:" + encoded)):
        return None
    try:
        data = json.loads(base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4)))
        session = Session(str(data["d"]), str(data["s"]), float(data["e"]))
    except (ValueError, KeyError, TypeError):
        return None
    return session if now < session.expires else None


def new_session(key_sha256: str, now: float) -> Session:
    return Session(key_sha256, secrets.token_urlsafe(16), now + SESSION_SECONDS)


def seal_data(key: bytes, purpose: str, data: dict[str, Any]) -> str:
    """`data` (JSON) in a value only this gateway can have made, for `purpose` alone."""
    encoded = base64.urlsafe_b64encode(json.dumps(data, separators=(",", ":")).encode()).decode().rstrip("=")
    return f"{encoded}.{_mac(key, purpose + ':' + encoded)}"


def unseal_data(key: bytes, purpose: str, value: str | None, now: float) -> dict[str, Any] | None:
    """What `seal_data` sealed for `purpose`, or None when absent, forged, malformed or past its
    `expires` field."""
    if not value or value.count(".") != 1 or len(value) > 8192:
        return None
    encoded, mac = value.split(".")
    if not hmac.compare_digest(mac, _mac(key, purpose + ":" + encoded)):
        return None
    try:
        data = json.loads(base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4)))
        expires = float(data["expires"])
    except (ValueError, KeyError, TypeError):
        return None
    return data if isinstance(data, dict) and now < expires else None


def csrf_token(key: bytes, session_id: str) -> str:
    """The per-session token every form carries: derived, so nothing is stored for it."""
    return _mac(key, "csrf:" + session_id)


def login_token(key: bytes, nonce: str) -> str:
    return _mac(key, "login:" + nonce)


def token_matches(expected: str, given: str | None) -> bool:
    return given is not None and hmac.compare_digest(expected.encode(), given.encode())


def set_cookie(
    request: Request,
    response: Response,
    name: str,
    value: str,
    max_age: int,
    samesite: Literal["strict", "lax"] = "strict",
    path: str = "/",
) -> None:
    response.set_cookie(
        name,
        value,
        max_age=max_age,
        path=path,
        httponly=True,
        samesite=samesite,
        secure=request.url.scheme == "https",
    )


async def principal_for_digest(gateway: Gateway, key_sha256: str, oidc: OidcSettings | None = None) -> Principal | None:
    """The session's principal now, from the digest it carries: a person of `oidc.users` (by their
    identity's digest: none once taken out of the configuration), else the key's, looked up as the
    API's `authenticate_key` does (configured keys, then the store's valid ones)."""
    if key_sha256.startswith(SESSION_PREFIX):
        user = oidc.user_for_digest(key_sha256) if oidc is not None else None
        if user is None:
            return None
        # key_id None, as a configured key's: nothing in the store to revoke; the configuration decides.
        return Principal(name=user.name, tenant=user.tenant, roles=user.roles)
    principal = gateway.principal_for_key(key_sha256)
    if principal is None:
        stored = await gateway.store.find_api_key(key_sha256)
        if stored is not None:
            principal = Principal(name=stored.name, tenant=stored.tenant, roles=stored.roles, key_id=stored.key_id)
    return principal
