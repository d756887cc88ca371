"""Lease tokens: random, shown once, stored only as their hash.

A token names nothing by itself; the store maps its hash to (run, epoch). The epoch is the
fencing token: a run's epoch rises on every grant and on cancel, and a call is admitted only
when its token's epoch equals the run's current one.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets

TOKEN_PREFIX = "wl_"


def mint_token() -> str:
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def looks_like_token(token: str) -> bool:
    return token.startswith(TOKEN_PREFIX) and 20 < len(token) < 200


def held_token(api_key: str, run_id: str, salt: str) -> str:
    """The token of the lease the gateway holds for `api_key` on `run_id` (gateway/gate/held_leases.py).

    Derived, never stored: only a caller presenting the key itself can compute it, on any replica,
    and the store keeps its hash as for any token. A new `salt` (an explicit takeover) makes a new one.
    """
    message = b"warrant/held-lease\x00" + run_id.encode("utf-8") + b"\x00" + salt.encode("utf-8")
    mac = hmac.new(api_key.encode("utf-8"), message, hashlib.sha256).digest()
    return TOKEN_PREFIX + base64.urlsafe_b64encode(mac).rstrip(b"=").decode("ascii")


def new_salt() -> str:
    return secrets.token_urlsafe(16)
