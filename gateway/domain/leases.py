"""Lease tokens: random, shown once, stored only as their hash.

A token names nothing by itself; the store maps its hash to (run, epoch). The epoch is the
fencing token: a run's epoch rises on every grant and on cancel, and a call is admitted only
when its token's epoch equals the run's current one.
"""

from __future__ import annotations

import hashlib
import secrets

TOKEN_PREFIX = "wl_"


def mint_token() -> str:
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def looks_like_token(token: str) -> bool:
    return token.startswith(TOKEN_PREFIX) and 20 < len(token) < 200
