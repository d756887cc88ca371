"""The authorization server's secrets: codes and tokens minted at random and kept only as their
SHA-256, the secret of a grant's lease derived (never stored), and the keys these come from.

No token here is a JWT or carries a claim: each is 256 random bits (`secrets`), looked up by its
hash on every use, so revoking one takes effect on its next use on every replica.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets

from gateway.domain.leases import TOKEN_PREFIX as LEASE_PREFIX

ACCESS_PREFIX = "wat_"  # an access token: `Authorization: Bearer wat_...` at /mcp
REFRESH_PREFIX = "wrt_"
CODE_PREFIX = "wac_"
SECRET_PREFIX = "wcs_"  # a registered confidential client's secret (only its hash is kept)


def mint(prefix: str) -> str:
    return prefix + secrets.token_urlsafe(32)


def digest(value: str) -> str:
    return hashlib.sha256(value.encode("utf-8")).hexdigest()


def looks_like(prefix: str, value: str) -> bool:
    return value.startswith(prefix) and 20 < len(value) < 200


def derive_key(ledger_key: bytes, label: str) -> bytes:
    """A key of its own for one use, from the ledger key every replica shares (as the console's)."""
    return hmac.new(ledger_key, f"warrant oauth {label} v1".encode(), hashlib.sha256).digest()


def grant_lease_token(key: bytes, grant_id: str, salt: str) -> str:
    """The token of the lease the gateway holds for a grant: derived from the grant and its salt
    under the gateway's own key, so it is never stored, and the store keeps only its hash."""
    message = b"warrant/oauth-lease\x00" + grant_id.encode() + b"\x00" + salt.encode()
    mac = hmac.new(key, message, hashlib.sha256).digest()
    return LEASE_PREFIX + base64.urlsafe_b64encode(mac).rstrip(b"=").decode("ascii")


def secrets_equal(expected_digest: str, presented: str) -> bool:
    return hmac.compare_digest(expected_digest.encode(), digest(presented).encode())
