"""Hash chains of run history, and their verification. Pure: both stores use these functions.

Entry hash = sha256(previous hash ‖ RFC 8785 canonical entry). Each run's chain is its own, so
runs never serialize on one global chain. Each run's head (last seq and hash) is MAC'd with the
ledger key, which lives in the environment, never in the store: whoever edits a row and
recomputes the chain cannot forge the head's MAC, and whoever cuts off the tail leaves the head
pointing past the last row.
"""

from __future__ import annotations

import hmac
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from gateway.canonical import canonical_json, sha256_hex
from gateway.clock import isoformat

GENESIS = "0" * 64
_HEX = re.compile(r"[0-9a-f]{64}")
_STRING = json.JSONEncoder(ensure_ascii=False)  # a str's RFC 8785 form (as canonical_json writes it)
# The version new entries are written with. 2: an action's entries also state its `reason` and
# times, a read's one entry its reservation, and every purge is chained for each run it touches
# (docs/decisions/0020-ledger-and-state-rows.md, "Ledger entry versions"). Version-1 entries verify
# as they always did.
ENTRY_VERSION = 2


def entry_body(run_id: str, seq: int, type_: str, at: float, data: dict[str, Any]) -> str:
    entry = {"v": ENTRY_VERSION, "run_id": run_id, "seq": seq, "type": type_, "at": isoformat(at), "data": data}
    return canonical_json(entry).decode("utf-8")


def entry_version(body: Any) -> int:
    """The version a parsed entry body was written with (1 for anything that does not say 2 or more)."""
    version = body.get("v") if isinstance(body, dict) else None
    return version if type(version) is int and version >= 2 else 1


def entry_hash(prev_hash: str, body: str) -> str:
    return sha256_hex(bytes.fromhex(prev_hash) + body.encode("utf-8"))


def head_mac(key: bytes, run_id: str, seq: int, head_hash: str) -> str:
    # hmac.digest: OpenSSL's one-shot HMAC, the same bytes as hmac.new(...) without its Python object.
    return hmac.digest(key, head_message(run_id, seq, head_hash), "sha256").hex()


def head_message(run_id: str, seq: int, head_hash: str) -> bytes:
    """`canonical_json(["warrant-head-v1", run_id, seq, head_hash])`, written out: the head moves
    with every entry, and its parts' types are fixed (tests/unit/test_chain.py checks the bytes)."""
    if type(seq) is not int or not _HEX.fullmatch(head_hash):
        return canonical_json(["warrant-head-v1", run_id, seq, head_hash])
    return f'["warrant-head-v1",{_STRING.encode(run_id)},{seq},"{head_hash}"]'.encode()


@dataclass(frozen=True)
class EntryRow:
    run_id: str
    seq: int
    type: str
    body: str
    prev_hash: str
    hash: str


@dataclass(frozen=True)
class Head:
    run_id: str
    seq: int
    hash: str
    mac: str


@dataclass(frozen=True)
class BadEntry:
    run_id: str
    seq: int | None
    code: str  # stable: entry_missing, entry_unlinked, entry_malformed, entry_edited, head_*, tail_missing, ...
    problem: str
    field: str | None = None  # the row's column a `*_row_edited` names (problem says it in prose)

    def as_dict(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "seq": self.seq, "problem": self.problem}


def verify_run(run_id: str, rows: Iterable[EntryRow], head: Head | None, key: bytes) -> tuple[int, BadEntry | None]:
    """Recompute one run's chain, rows in the order the store returns them (by seq).

    Returns the number of entries read and the first bad one, if any.
    """
    prev = GENESIS
    expected_seq = 1
    count = 0
    for row in rows:
        count += 1
        if row.seq != expected_seq:
            # Name the position that is wrong (as for a cut-off tail), not the intact row found there.
            return count, BadEntry(
                run_id, expected_seq, "entry_missing", f"found entry {row.seq} here: a row is missing or moved"
            )
        if row.prev_hash != prev:
            return count, BadEntry(run_id, row.seq, "entry_unlinked", "does not link to the entry before it")
        try:
            body = json.loads(row.body)
        except ValueError:
            return count, BadEntry(run_id, row.seq, "entry_malformed", "body is not JSON")
        if not isinstance(body, dict) or body.get("run_id") != run_id or body.get("seq") != row.seq:
            return count, BadEntry(run_id, row.seq, "entry_malformed", "body names another run or position")
        if body.get("type") != row.type:
            return count, BadEntry(run_id, row.seq, "entry_malformed", "type column differs from the hashed body")
        if entry_hash(prev, row.body) != row.hash:
            return count, BadEntry(
                run_id, row.seq, "entry_edited", "hash does not match the body: the entry was edited"
            )
        prev = row.hash
        expected_seq += 1
    last_seq = expected_seq - 1
    if head is None:
        return count, BadEntry(run_id, None, "head_missing", "the run has no chain head")
    if not hmac.compare_digest(head.mac, head_mac(key, run_id, head.seq, head.hash)):
        return count, BadEntry(
            run_id, head.seq, "head_mac_invalid", "the head's MAC is wrong: rewritten without the ledger key"
        )
    if head.seq != last_seq or head.hash != prev:
        if head.seq > last_seq:
            return count, BadEntry(
                run_id, last_seq + 1, "tail_missing", f"entries {last_seq + 1}..{head.seq} are missing (cut-off tail)"
            )
        if head.seq < last_seq:
            return count, BadEntry(
                run_id, head.seq + 1, "entries_after_head", "entries were appended after the MAC'd head"
            )
        return count, BadEntry(run_id, head.seq, "head_mismatch", "the chain does not end at its MAC'd head")
    return count, None


@dataclass(frozen=True)
class VerifyReport:
    ok: bool
    runs: int
    entries: int
    first_bad: BadEntry | None

    def as_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "runs": self.runs,
            "entries": self.entries,
            "first_bad": self.first_bad.as_dict() if self.first_bad else None,
        }
