"""An authorization request on its way through the console: sealed into the consent page's URL
(HMAC-SHA256 under a key of its own), so an unauthenticated `/authorize` stores nothing.

What the SDK's authorize handler validated (client, redirect URI, PKCE challenge, state, scopes,
resource) travels to the consent page and back in one value that cannot be altered, and that
stops being accepted after its time (`consent_ttl`).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class PendingRequest:
    client_id: str
    redirect_uri: str
    redirect_explicit: bool
    code_challenge: str
    state: str | None
    scopes: tuple[str, ...]
    resource: str
    expires: float


def seal(key: bytes, request: PendingRequest) -> str:
    body = json.dumps(asdict(request), separators=(",", ":"), sort_keys=True).encode()
    encoded = base64.urlsafe_b64encode(body).decode().rstrip("=")
    mac = hmac.new(key, b"pending:" + encoded.encode(), hashlib.sha256).hexdigest()
    return f"{encoded}.{mac}"


def unseal(key: bytes, value: str | None, now: float) -> PendingRequest | None:
    """The request, or None when absent, altered, malformed or past its time."""
    if not value or value.count(".") != 1 or len(value) > 16_384:
        return None
    encoded, mac = value.split(".")
    expected = hmac.new(key, b"pending:" + encoded.encode(), hashlib.sha256).hexdigest()
    if not hmac.compare_digest(mac.encode(), expected.encode()):
        return None
    try:
        data = json.loads(base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4)))
        request = PendingRequest(
            client_id=str(data["client_id"]),
            redirect_uri=str(data["redirect_uri"]),
            redirect_explicit=bool(data["redirect_explicit"]),
            code_challenge=str(data["code_challenge"]),
            state=None if data["state"] is None else str(data["state"]),
            scopes=tuple(str(s) for s in data["scopes"]),
            resource=str(data["resource"]),
            expires=float(data["expires"]),
        )
    except (ValueError, KeyError, TypeError):
        return None
    return request if now < request.expires else None
