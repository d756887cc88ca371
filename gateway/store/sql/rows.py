"""Row mapping and chain appends for the store. Runs inside the store's transactions, on their thread."""

from __future__ import annotations

import base64
import json
import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, fields
from typing import Any

from gateway.canonical import canonical_json, sha256_hex
from gateway.domain.admission import RunSnapshot
from gateway.domain.contract import DIMENSIONS
from gateway.domain.lifecycle import ActionStatus, RunStatus
from gateway.domain.units import MAX_MONEY
from gateway.errors import DamagedRecord, NotFound
from gateway.store.chain import entry_body, entry_hash, head_mac
from gateway.store.records import ActionRecord, ApprovalRecord, ApprovalStatus, Damaged, EventRecord, RunRecord
from gateway.store.sql.connection import Conn, Row

log = logging.getLogger("warrant.store")

_ACTION_RESERVED = {"spend": "reserved_spend", "tool_calls": "reserved_calls", "writes": "reserved_writes"}


# A run's columns that hold money or a count: integers within units.MAX_MONEY, or the row was
# changed behind the store's back (migration 0014 keeps the store's own writes so).
_COUNTERS = tuple(
    f"{dim}_{part}" for dim in ("spend", "tool_calls", "writes") for part in ("limit", "reserved", "spent")
)
_told_damaged: set[str] = set()


def check_counters(row: Row) -> None:
    """Raises: DamagedRecord when a counter of the run's row is not an integer within its bound."""
    for column in _COUNTERS:
        value = row[column]
        if type(value) is not int or not -MAX_MONEY <= value <= MAX_MONEY:
            raise DamagedRecord(
                f"run {row['run_id']}'s {column} holds {value!r}, which the gateway never writes",
                run_id=row["run_id"],
                column=column,
            )


def runs_from_rows(rows: Iterable[Row]) -> list[RunRecord]:
    """The runs of a list, passing over a damaged row (logged once per run and process), so that
    one row changed behind the store's back cannot take a whole list or the watchdog down."""
    return runs_and_damaged(rows)[0]


def runs_and_damaged(rows: Iterable[Row]) -> tuple[list[RunRecord], list[Damaged]]:
    """As `runs_from_rows`, with the rows passed over named, for a list that tells its caller."""
    runs: list[RunRecord] = []
    damaged: list[Damaged] = []
    for row in rows:
        try:
            runs.append(run_from_row(row))
        except DamagedRecord as exc:
            damaged.append(Damaged(row["run_id"], exc.code))
            if row["run_id"] not in _told_damaged:
                _told_damaged.add(row["run_id"])
                log.error("passing over a damaged run row: %s", exc.message)
    return runs, damaged


def run_from_row(row: Row) -> RunRecord:
    check_counters(row)
    status = RunStatus(row["status"])
    return RunRecord(
        run_id=row["run_id"],
        tenant=row["tenant"],
        lineage_id=row["lineage_id"],
        parent_run_id=row["parent_run_id"],
        status=status,
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
        checkpoint_version=row["checkpoint_version"],
        acked_spec_version=row["acked_spec_version"],
        predecessor_run_id=row["predecessor_run_id"],
        carved=json.loads(row["carved"]) if row["carved"] else None,
        completion=json.loads(row["completion"]) if row["completion"] else None,
        lease_revoked_at=row["lease_revoked_at"],
        # Read only for a failed run: no other status has a cause (migration 0024).
        status_cause=json.loads(row["status_cause"]) if status is RunStatus.FAILED and row["status_cause"] else None,
    )


def action_from_row(row: Row) -> ActionRecord:
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
        task_id=row["task_id"],
        compensates=row["compensates"],
    )


# The hot paths name their columns and decode by position: a `sqlite3.Row` looks a name up by
# comparing it with every column name in turn. Actions: ActionRecord's fields in their order, its
# `reserved` as three columns.
ACTION_COLUMNS = ", ".join(
    "reserved_spend, reserved_calls, reserved_writes" if f.name == "reserved" else f.name for f in fields(ActionRecord)
)


def action_from_tuple(row: Sequence[Any]) -> ActionRecord:
    """An action from a row of `ACTION_COLUMNS`, in that order."""
    receipt = row[20]
    values = [
        *row[:9],
        ActionStatus(row[9]),
        *row[10:16],
        {"spend": row[16], "tool_calls": row[17], "writes": row[18]},
        row[19],
        json.loads(receipt) if receipt else None,
        *row[21:],
    ]
    return ActionRecord(*values)


# What gate step 6 decides on, in this order (`run_state`).
RUN_STATE_COLUMNS = (
    "run_id, tenant, lineage_id, status, spec_version, currency, deadline, lease_ttl, epoch, lease_expires_at, "
    "spend_limit, spend_reserved, spend_spent, tool_calls_limit, tool_calls_reserved, tool_calls_spent, "
    "writes_limit, writes_reserved, writes_spent, active_seconds_limit, active_seconds_spent, active_since, "
    "head_seq, head_hash, acked_spec_version, lease_revoked_at"
)


@dataclass(frozen=True, slots=True)
class RunState:
    """A run as the admit reads it: the snapshot the domain decides on, the lease TTL, the chain head."""

    snapshot: RunSnapshot
    lease_ttl: float
    head_seq: int
    head_hash: str


def run_state(row: Sequence[Any]) -> RunState:
    """A run's state from a row of `RUN_STATE_COLUMNS`, in that order. Same values as `run_from_row`."""
    (
        run_id,
        tenant,
        lineage_id,
        status,
        spec_version,
        currency,
        deadline,
        lease_ttl,
        epoch,
        lease_expires_at,
        spend_limit,
        spend_reserved,
        spend_spent,
        calls_limit,
        calls_reserved,
        calls_spent,
        writes_limit,
        writes_reserved,
        writes_spent,
        active_limit,
        active_spent,
        active_since,
        head_seq,
        head_hash,
        acked_spec_version,
        lease_revoked_at,
    ) = row
    snapshot = RunSnapshot(
        run_id=run_id,
        tenant=tenant,
        lineage_id=lineage_id,
        status=RunStatus(status),
        spec_version=spec_version,
        epoch=epoch,
        lease_expires_at=lease_expires_at,
        deadline=deadline,
        limits={
            "spend": spend_limit,
            "tool_calls": calls_limit,
            "writes": writes_limit,
            "active_seconds": active_limit,
        },
        reserved={
            "spend": spend_reserved,
            "tool_calls": calls_reserved,
            "writes": writes_reserved,
            "active_seconds": 0,
        },
        spent={
            "spend": spend_spent,
            "tool_calls": calls_spent,
            "writes": writes_spent,
            "active_seconds": int(active_spent),
        },
        currency=currency,
        active_seconds_spent=active_spent,
        active_since=active_since,
        acked_spec_version=acked_spec_version,
        lease_revoked_at=lease_revoked_at,
    )
    return RunState(snapshot, lease_ttl, head_seq, head_hash)


def approval_from_row(row: Row) -> ApprovalRecord:
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
        blocks_run=bool(row["blocks_run"]),
        approvers=tuple(json.loads(row["approvers"])) if row["approvers"] is not None else None,
        escalate_at=row["escalate_at"],
        destination=row["destination"],
        proposed_sha256=row["proposed_sha256"],
    )


def event_from_row(row: Row) -> EventRecord:
    body = json.loads(row["body"])
    return EventRecord(
        run_id=row["run_id"], seq=row["seq"], type=row["type"], at=row["at"], data=body["data"], hash=row["hash"]
    )


class Chain:
    """One run's chain inside a transaction: entries appended from a head the caller read.

    The head lives on the run row (`head_seq`, `head_hash`, `head_mac`), so a caller that reads
    and writes that row anyway carries the head along: `head_sql` and `head_params` go into its
    own `UPDATE runs`. Whoever appends to the same run in the same transaction must use this
    object; an entry appended around it takes the same seq and fails the events' primary key.
    """

    __slots__ = ("_key", "hash", "run_id", "seq")

    def __init__(self, ledger_key: bytes, run_id: str, seq: int, head_hash: str) -> None:
        self._key = ledger_key
        self.run_id = run_id
        self.seq = seq
        self.hash = head_hash

    @classmethod
    def read(cls, conn: Conn, ledger_key: bytes, run_id: str) -> Chain:
        row = conn.execute("SELECT head_seq, head_hash FROM runs WHERE run_id = ?", (run_id,)).fetchone()
        if row is None:
            raise NotFound(f"no run {run_id}")
        return cls(ledger_key, run_id, row[0], row[1])

    def append(self, conn: Conn, type_: str, at: float, data: dict[str, Any]) -> int:
        seq = self.seq + 1
        body = entry_body(self.run_id, seq, type_, at, data)
        digest = entry_hash(self.hash, body)
        conn.execute(
            "INSERT INTO events (run_id, seq, type, at, body, prev_hash, hash) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (self.run_id, seq, type_, at, body, self.hash, digest),
        )
        self.seq, self.hash = seq, digest
        return seq

    head_sql = "head_seq = ?, head_hash = ?, head_mac = ?"

    def head_params(self) -> tuple[int, str, str]:
        return self.seq, self.hash, head_mac(self._key, self.run_id, self.seq, self.hash)

    def write_head(self, conn: Conn) -> None:
        conn.execute(f"UPDATE runs SET {self.head_sql} WHERE run_id = ?", (*self.head_params(), self.run_id))


def append_event(conn: Conn, ledger_key: bytes, run_id: str, type_: str, at: float, data: dict[str, Any]) -> int:
    """Append one entry to the run's chain and move its MAC'd head. Inside the caller's transaction."""
    chain = Chain.read(conn, ledger_key, run_id)
    seq = chain.append(conn, type_, at, data)
    chain.write_head(conn)
    return seq


def put_blob(conn: Conn, value: Any, at: float) -> str:
    body = canonical_json(value)
    digest = sha256_hex(body)
    conn.execute(
        "INSERT INTO blobs (sha256, body, created_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING", (digest, body, at)
    )
    return digest


def encode_cursor(seq: int) -> str:
    return base64.urlsafe_b64encode(f"s{seq}".encode()).decode().rstrip("=")


def decode_cursor(cursor: str | None) -> int:
    """Raises: ValueError for a cursor this store did not hand out."""
    if not cursor:
        return 0
    raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
    digits = raw[1:]
    # ASCII digits only, and within SQLite's 64-bit integers: anything else was not handed out here.
    if not raw.startswith("s") or not (digits.isascii() and digits.isdigit()) or len(digits) > 18:
        raise ValueError("bad cursor")
    return int(digits)
