"""Canonical JSON (RFC 8785) and the digests built on it.

A payload hash must not change when a client reorders keys or writes `1.0` for `1`: approvals and
operation ids bind to it. Ledger entries are hashed over the same canonical form.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from typing import Any

import rfc8785

_MAX_EXACT_INT = 2**53 - 1  # RFC 8785 numbers are IEEE doubles
# One encoder for the fast path: `json.dumps` with arguments builds a new one on every call.
_PLAIN = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _plain(value: Any) -> bool:
    """True when `json.dumps(sort_keys=True)` writes exactly the RFC 8785 form of `value`.

    That holds for strings, booleans, None, integers a double holds exactly, lists, and dicts with
    ASCII keys (code-point order and UTF-16 order agree on them). Floats and other keys take the
    full implementation, which formats numbers as ECMAScript does. Iterative: this runs for every
    ledger entry and payload, so it avoids a generator per container.
    """
    stack = [value]
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is str or kind is bool or item is None:
            continue
        if kind is int:
            if not -_MAX_EXACT_INT <= item <= _MAX_EXACT_INT:
                return False
        elif kind is dict:
            for key in item:
                if type(key) is not str or not key.isascii():
                    return False
            stack.extend(item.values())
        elif kind is list:
            stack.extend(item)
        else:
            return False
    return True


def canonical_json(value: Any) -> bytes:
    """RFC 8785 canonical JSON. Plain values take a fast path with the same output.

    Raises:
        ValueError: the value is not representable as canonical JSON (NaN, huge ints, non-str keys,
            lone surrogates).
    """
    if _plain(value):
        try:
            return _PLAIN.encode(value).encode("utf-8")
        except UnicodeEncodeError as exc:
            raise ValueError(f"not canonical JSON: {exc.reason}") from exc
    try:
        return bytes(rfc8785.dumps(value))
    except (rfc8785.CanonicalizationError, TypeError, UnicodeEncodeError) as exc:
        raise ValueError(f"not canonical JSON: {exc}") from exc


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def payload_sha256(arguments: Any) -> str:
    """The hash an approval and a derived operation id bind to."""
    return sha256_hex(canonical_json(arguments))


def hmac_sha256_hex(key: bytes, data: bytes) -> str:
    return hmac.new(key, data, hashlib.sha256).hexdigest()
