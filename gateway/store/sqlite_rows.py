"""Row mapping and chain appends for the SQLite store. Runs on the store's database thread."""

from __future__ import annotations

import base64
import json
import sqlite3
from typing import Any

from gateway.canonical import canonical_json, sha256_hex
from gateway.domain.contract import DIMENSIONS
from gateway.domain.lifecycle import ActionStatus, RunStatus
from gateway.store.chain import GENESIS, entry_body, entry_hash, head_mac
from gateway.store.records import ActionRecord, ApprovalRecord, ApprovalStatus, EventRecord, RunRecord

_ACTION_RESERVED = {"spend": "reserved_spend", "tool_calls": "reserved_calls", "writes": "reserved_writes"}


def run_from_row(row: sqlite3.Row) -> RunRecord:
    return RunRecord(
        run_id=row["run_id"],
        tenant=row["tenant"],
        lineage_id=row["lineage_id"],
        parent_run_id=row["parent_run_id"],
        status=RunStatus(row["status"]),
        status_reason=row["status_reason"],
        spec_version=row["spec_version"],
        contract_json=row["contract"],
        currency=row["currency"],
        owner=row["owner"],
        created_by=row["created_by"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        deadline=row["deadline"],
        lease_ttl=row["lease_ttl"],
        epoch=row["epoch"],
        lease_worker=row["lease_worker"],
        lease_granted_by=row["lease_granted_by"],
        lease_expires_at=row["lease_expires_at"],
        limits={dim: row[f"{dim}_limit"] for dim in DIMENSIONS},
        reserved={dim: (row[f"{dim}_reserved"] if dim != "active_seconds" else 0) for dim in DIMENSIONS},
        spent={
            dim: (row[f"{dim}_spent"] if dim != "active_seconds" else int(row["active_seconds_spent"]))
            for dim in DIMENSIONS
        },
        active_seconds_spent=row["active_seconds_spent"],
        active_since=row["active_since"],
        count_waiting=bool(row["count_waiting"]),
    )


def action_from_row(row: sqlite3.Row) -> ActionRecord:
    return ActionRecord(
        action_id=row["action_id"],
        run_id=row["run_id"],
        tenant=row["tenant"],
        lineage_id=row["lineage_id"],
        tool=row["tool"],
        effect=row["effect"],
        operation_id=row["operation_id"],
        payload_sha256=row["payload_sha256"],
        idempotency_key=row["idempotency_key"],
        status=ActionStatus(row["status"]),
        code=row["code"],
        reason=row["reason"],
        epoch=row["epoch"],
        worker=row["worker"],
        approval_id=row["approval_id"],
        repeat_of=row["repeat_of"],
        reserved={dim: row[col] for dim, col in _ACTION_RESERVED.items()},
        actual_spend=row["actual_spend"],
        receipt=json.loads(row["receipt"]) if row["receipt"] else None,
        result_sha256=row["result_sha256"],
        process_id=row["process_id"],
        created_at=row["created_at"],
        settled_at=row["settled_at"],
    )


def approval_from_row(row: sqlite3.Row) -> ApprovalRecord:
    return ApprovalRecord(
        approval_id=row["approval_id"],
        run_id=row["run_id"],
        tenant=row["tenant"],
        tool=row["tool"],
        payload_sha256=row["payload_sha256"],
        spec_version=row["spec_version"],
        tool_def_sha256=row["tool_def_sha256"],
        status=ApprovalStatus(row["status"]),
        role=row["role"],
        on_expiry=row["on_expiry"],
        valid_for=row["valid_for"],
        requested_by=row["requested_by"],
        evidence=json.loads(row["evidence"]) if row["evidence"] else None,
        rationale=row["rationale"],
        created_at=row["created_at"],
        decide_by=row["decide_by"],
        valid_until=row["valid_until"],
        decided_by=row["decided_by"],
        decided_at=row["decided_at"],
        note=row["note"],
        action_id=row["action_id"],
    )


def event_from_row(row: sqlite3.Row) -> EventRecord:
    body = json.loads(row["body"])
    return EventRecord(
        run_id=row["run_id"], seq=row["seq"], type=row["type"], at=row["at"], data=body["data"], hash=row["hash"]
    )


def append_event(
    conn: sqlite3.Connection, ledger_key: bytes, run_id: str, type_: str, at: float, data: dict[str, Any]
) -> int:
    """Append one entry to the run's chain and move its MAC'd head. Inside the caller's transaction."""
    head = conn.execute("SELECT seq, hash FROM chain_heads WHERE run_id = ?", (run_id,)).fetchone()
    seq, prev = (head["seq"] + 1, head["hash"]) if head else (1, GENESIS)
    body = entry_body(run_id, seq, type_, at, data)
    digest = entry_hash(prev, body)
    conn.execute(
        "INSERT INTO events (run_id, seq, type, at, body, prev_hash, hash) VALUES (?, ?, ?, ?, ?, ?, ?)",
        (run_id, seq, type_, at, body, prev, digest),
    )
    conn.execute(
        "INSERT INTO chain_heads (run_id, seq, hash, mac) VALUES (?, ?, ?, ?) "
        "ON CONFLICT (run_id) DO UPDATE SET seq = excluded.seq, hash = excluded.hash, mac = excluded.mac",
        (run_id, seq, digest, head_mac(ledger_key, run_id, seq, digest)),
    )
    return seq


def put_blob(conn: sqlite3.Connection, value: Any, at: float) -> str:
    body = canonical_json(value)
    digest = sha256_hex(body)
    conn.execute("INSERT OR IGNORE INTO blobs (sha256, body, created_at) VALUES (?, ?, ?)", (digest, body, at))
    return digest


def encode_cursor(seq: int) -> str:
    return base64.urlsafe_b64encode(f"s{seq}".encode()).decode().rstrip("=")


def decode_cursor(cursor: str | None) -> int:
    """Raises: ValueError for a cursor this store did not hand out."""
    if not cursor:
        return 0
    raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
    if not raw.startswith("s") or not raw[1:].isdigit():
        raise ValueError("bad cursor")
    return int(raw[1:])
