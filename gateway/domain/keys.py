"""API keys made with `warrant keys create`: random, shown once, stored only as their sha256.

A stored key is `wak_` + 43 URL-safe characters (256 random bits): recognisably a Warrant API
key, for people and for secret scanners. Not `wk_`: that prefix names the idempotency keys the
gateway sends to destinations (gateway/domain/operations.py), which are not secrets.

A key is valid while it is neither revoked nor past its `expires_at`, decided against the
store's clock. Rotation makes a new key with the same name, tenant and roles and gives the old
one an `expires_at` at most `overlap` away, so both work until the callers have moved over.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from enum import StrEnum

from gateway.domain.units import parse_duration

KEY_PREFIX = "wak_"
MAX_OVERLAP = 30 * 86400  # a longer overlap would defeat the rotation


class KeyStatus(StrEnum):
    ACTIVE = "active"
    EXPIRED = "expired"
    REVOKED = "revoked"


@dataclass(frozen=True)
class ApiKey:
    """A key from the configuration file (`api_keys:` in warrant.yaml, the secret from `key_env`),
    known by its sha256; listed read-only beside the stored keys (gateway/api/keys.py)."""

    name: str
    tenant: str
    roles: frozenset[str]
    key_sha256: str
    gateway_admin: bool = False


@dataclass(frozen=True)
class ApiKeyRecord:
    """One stored API key; never the key itself, and its hash stays inside the store."""

    key_id: str
    tenant: str
    name: str
    roles: frozenset[str]
    created_at: float
    created_by: str
    expires_at: float | None = None
    revoked_at: float | None = None
    revoked_by: str | None = None
    rotated_from: str | None = None  # the key this one replaced
    rotated_to: str | None = None  # the key that replaced this one

    def status(self, now: float) -> KeyStatus:
        if self.revoked_at is not None:
            return KeyStatus.REVOKED
        if self.expires_at is not None and now >= self.expires_at:
            return KeyStatus.EXPIRED
        return KeyStatus.ACTIVE


@dataclass(frozen=True)
class KeyEvent:
    """One change to a tenant's keys, as recorded for the audit (append-only, never the key)."""

    seq: int
    tenant: str
    key_id: str
    type: str  # key_created | key_revoked | key_rotated
    at: float
    by: str
    data: dict[str, object]


def mint_api_key() -> str:
    return KEY_PREFIX + secrets.token_urlsafe(32)


def api_key_hash(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def looks_like_api_key(key: str) -> bool:
    """Whether a bearer value could be a stored key: only those cost a store lookup."""
    return key.startswith(KEY_PREFIX) and 20 < len(key) < 200


def parse_overlap(value: object) -> int:
    """A rotation's overlap in seconds: a duration like `1h`, or 0 (`0`, `"0s"`) for none.

    Raises:
        ValueError: not a duration, or longer than 30 days.
    """
    if value in (0, "0", "0s") and not isinstance(value, bool):
        return 0
    seconds = parse_duration(value)
    if seconds > MAX_OVERLAP:
        raise ValueError("an overlap must not be longer than 30d")
    return seconds
