"""Canonical JSON (RFC 8785) and the digests built on it.

A payload hash must not change when a client reorders keys or writes `1.0` for `1`: approvals and
operation ids bind to it. Ledger entries are hashed over the same canonical form.
"""

from __future__ import annotations

import hashlib
import hmac
from typing import Any

import rfc8785


def canonical_json(value: Any) -> bytes:
    """Raises:
    ValueError: the value is not representable as canonical JSON (NaN, huge ints, non-str keys).
    """
    try:
        return bytes(rfc8785.dumps(value))
    except (rfc8785.CanonicalizationError, TypeError) as exc:
        raise ValueError(f"not canonical JSON: {exc}") from exc


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def payload_sha256(arguments: Any) -> str:
    """The hash an approval and a derived operation id bind to."""
    return sha256_hex(canonical_json(arguments))


def hmac_sha256_hex(key: bytes, data: bytes) -> str:
    return hmac.new(key, data, hashlib.sha256).hexdigest()
