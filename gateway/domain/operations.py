"""Operation ids (gate step 4) and the downstream idempotency key (gate step 7).

An operation id names one intended side effect across a whole lineage. A client may send its
own in `params._meta["warrant/operation_id"]`; otherwise it is derived from the lineage, the
tool and the payload hash, so an identical write is never done twice by accident. The
destination never sees the operation id: it sees a key minted from the tenant, the lineage and
the operation id, so two tenants sharing one credential can never collide.
"""

from __future__ import annotations

import base64
import hashlib
import re

from gateway.canonical import canonical_json, sha256_hex

OPERATION_ID_META = "warrant/operation_id"
_CLIENT_OPERATION_ID = re.compile(r"^[A-Za-z0-9._:/@+=-]{1,200}$")


def derive_operation_id(lineage_id: str, tool: str, payload_sha256: str) -> str:
    return "op_" + sha256_hex(canonical_json(["derived", lineage_id, tool, payload_sha256]))[:40]


def repeat_operation_id(lineage_id: str, action_id: str, reason: str) -> str:
    """`warrant_repeat(action_id, reason)`: the same repeat asked twice is one repeat."""
    return "op_" + sha256_hex(canonical_json(["repeat", lineage_id, action_id, reason]))[:40]


def valid_client_operation_id(value: object) -> bool:
    return isinstance(value, str) and _CLIENT_OPERATION_ID.fullmatch(value) is not None


def idempotency_key(tenant: str, lineage_id: str, operation_id: str) -> str:
    """`wk_` + base32(sha256(tenant ‖ lineage ‖ operation id)), unpadded and lower case.

    The parts are joined as canonical JSON so that no choice of names can make two different
    triples meet (a plain concatenation would let ("a", "bc") equal ("ab", "c")).
    """
    digest = hashlib.sha256(canonical_json([tenant, lineage_id, operation_id])).digest()
    return "wk_" + base64.b32encode(digest).decode("ascii").rstrip("=").lower()
