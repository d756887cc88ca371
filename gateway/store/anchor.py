"""Ledger anchors: what catches a deleted run or a rollback to an older, genuinely MAC'd head.

Each run's chain head is MAC'd, so an edit, a deleted entry or a cut-off tail is caught by
`verify`. Two edits are not, from inside the database alone: deleting a run whole (rows, entries
and head go together), and restoring a run's rows from an older copy (its older head was MAC'd
by the gateway itself). Both need a record kept outside the database: an anchor.

An anchor is every run's head (seq and entry hash) at one moment, MAC'd with the ledger key
(which the database never holds), written by `warrant ledger anchor --out FILE` and shipped by
the operator somewhere the database's writers cannot reach
(docs/decisions/0020-ledger-and-state-rows.md). Checked later (`warrant ledger verify --anchor
FILE`): every anchored run still exists, its head has not gone back, and its entry at the
anchored seq still has the anchored hash (so a history rewritten and re-chained from that point
is caught as well). Runs made after the anchor are not its concern.

Pure: the stores read the heads; these functions build and judge.
"""

from __future__ import annotations

import hmac
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from gateway.canonical import canonical_json
from gateway.clock import isoformat
from gateway.store.chain import BadEntry

ANCHOR_KIND = "warrant-ledger-anchor"
ANCHOR_VERSION = 1


def _mac(key: bytes, body: Mapping[str, Any]) -> str:
    return hmac.digest(key, canonical_json(dict(body)), "sha256").hex()


def make_anchor(key: bytes, tenant: str | None, at: float, heads: Iterable[tuple[str, int, str]]) -> dict[str, Any]:
    """The anchor of `heads` ((run_id, head_seq, head_hash) of every run with entries), MAC'd."""
    runs = {run_id: [seq, head_hash] for run_id, seq, head_hash in heads}
    body = {"kind": ANCHOR_KIND, "v": ANCHOR_VERSION, "tenant": tenant, "at": isoformat(at), "runs": runs}
    return body | {"mac": _mac(key, body)}


def check_anchor(
    key: bytes,
    anchor: Mapping[str, Any],
    *,
    tenant: str | None,
    head_of: Callable[[str], int | None],
    hash_at: Callable[[str, int], str | None],
) -> BadEntry | None:
    """The first way the store contradicts `anchor`, or None.

    `head_of(run_id)`: the run's head seq now (None: no such run); `hash_at(run_id, seq)`: the hash
    of its entry at `seq` (None: no such entry). Codes: `anchor_invalid` (not an anchor this key
    made, or of another tenant), `run_deleted`, `head_rolled_back`, `history_rewritten`.
    """
    body = {k: v for k, v in anchor.items() if k != "mac"}
    mac = anchor.get("mac")
    if (
        body.get("kind") != ANCHOR_KIND
        or body.get("v") != ANCHOR_VERSION
        or not isinstance(mac, str)
        or not isinstance(body.get("runs"), dict)
        or not hmac.compare_digest(mac, _mac(key, body))
    ):
        return BadEntry("", None, "anchor_invalid", "the anchor is not one this gateway's ledger key made")
    if body.get("tenant") != tenant:
        return BadEntry("", None, "anchor_invalid", f"the anchor is of tenant {body.get('tenant')!r}, not {tenant!r}")
    for run_id, (seq, head_hash) in sorted(body["runs"].items()):
        now = head_of(run_id)
        if now is None:
            return BadEntry(run_id, None, "run_deleted", f"the run was anchored at entry {seq} and is gone")
        if now < seq:
            return BadEntry(run_id, now, "head_rolled_back", f"the head is at entry {now}, anchored at {seq}")
        if hash_at(run_id, seq) != head_hash:
            return BadEntry(run_id, seq, "history_rewritten", f"entry {seq} is not the one anchored")
    return None
