"""Reading the ledger for `verify`, in bounded pages, inside one read snapshot.

Both stores run these on a long-read connection (`_aside`: SQLite's own read-only connection on a
thread of its own, PostgreSQL's REPEATABLE READ READ ONLY transaction), so the runs, each run's
entries and its MAC'd head all come from one snapshot: an append committed meanwhile is in none
of them, and a verify running beside admitted calls never sees a chain half-written or a head that
moved past the rows it read. Pages keep memory flat however long the ledger: a run's entries are
read `ENTRIES_PER_PAGE` at a time (psycopg buffers a whole result; SQLite's cursor would not, but
both read the same way).

The scan runs on a worker thread, beside the event loop that serves the agents, and recomputing
hashes is Python work that holds the GIL: a loop thread waiting for it waits up to the switch
interval (5 ms) each time, which put 10-40 ms into a call's p99 beside a verify. So the scan lets
the GIL go every `YIELD_EVERY` entries (`time.sleep(0)`), and a waiting loop takes it at once.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from gateway.store.chain import EntryRow, Head

RUNS_PER_PAGE = 500
ENTRIES_PER_PAGE = 1000
YIELD_EVERY = 16  # entries (about 0.25 ms of hashing) between two offers of the GIL


def run_count(conn: Any, tenant: str | None) -> int:
    if tenant is None:
        return int(conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0])
    return int(conn.execute("SELECT COUNT(*) FROM runs WHERE tenant = ?", (tenant,)).fetchone()[0])


def run_heads(conn: Any, tenant: str | None) -> Iterator[tuple[str, Head | None]]:
    """Every run (of `tenant`, or all) in creation order with its MAC'd head, a page at a time."""
    only, args = (" AND tenant = ?", (tenant,)) if tenant is not None else ("", ())
    after = 0
    while True:
        rows = conn.execute(
            f"SELECT seq, run_id, head_seq, head_hash, head_mac FROM runs WHERE seq > ?{only} ORDER BY seq LIMIT ?",
            (after, *args, RUNS_PER_PAGE),
        ).fetchall()
        for row in rows:
            run_id, mac = row["run_id"], row["head_mac"]
            yield run_id, Head(run_id, row["head_seq"], row["head_hash"], mac) if mac is not None else None
        if len(rows) < RUNS_PER_PAGE:
            return
        after = rows[-1]["seq"]


def run_entries(conn: Any, run_id: str) -> Iterator[EntryRow]:
    """One run's entries in seq order, a page at a time."""
    after: int | None = None
    while True:
        if after is None:
            page = conn.execute(
                "SELECT run_id, seq, type, body, prev_hash, hash FROM events WHERE run_id = ? ORDER BY seq LIMIT ?",
                (run_id, ENTRIES_PER_PAGE),
            ).fetchall()
        else:
            page = conn.execute(
                "SELECT run_id, seq, type, body, prev_hash, hash FROM events WHERE run_id = ? AND seq > ? "
                "ORDER BY seq LIMIT ?",
                (run_id, after, ENTRIES_PER_PAGE),
            ).fetchall()
        for i, r in enumerate(page):
            if i % YIELD_EVERY == 0:
                time.sleep(0)  # the GIL, offered to the event loop (see above)
            yield EntryRow(r["run_id"], r["seq"], r["type"], r["body"], r["prev_hash"], r["hash"])
        if len(page) < ENTRIES_PER_PAGE:
            return
        after = page[-1]["seq"]


def run_statuses(conn: Any, table: str, run_id: str) -> dict[str, str]:
    """`{id: status}` of one run's `approvals` rows (or `actions`), for the replay check (replay.py)."""
    column = {"actions": "action_id", "approvals": "approval_id"}[table]
    statuses: dict[str, str] = {}
    after = 0
    while True:
        rows = conn.execute(
            f"SELECT seq, {column}, status FROM {table} WHERE run_id = ? AND seq > ? ORDER BY seq LIMIT ?",
            (run_id, after, ENTRIES_PER_PAGE),
        ).fetchall()
        statuses.update((r[column], r["status"]) for r in rows)
        if len(rows) < ENTRIES_PER_PAGE:
            return statuses
        after = rows[-1]["seq"]


def present_bodies(conn: Any, sha256s: Iterable[str]) -> set[str]:
    """Which of `sha256s` the `blobs` table still holds, asked `RUNS_PER_PAGE` at a time."""
    wanted = sorted(sha256s)
    present: set[str] = set()
    for start in range(0, len(wanted), RUNS_PER_PAGE):
        chunk = wanted[start : start + RUNS_PER_PAGE]
        marks = ", ".join("?" for _ in chunk)
        present.update(r[0] for r in conn.execute(f"SELECT sha256 FROM blobs WHERE sha256 IN ({marks})", chunk))
    return present


def run_facts(conn: Any, run_id: str) -> dict[str, Any]:
    """The run row's columns the replay checks (replay.py `check_run`)."""
    columns = (
        *("status", "spec_version", "currency", "epoch"),
        *(f"{dim}_{part}" for dim in ("spend", "tool_calls", "writes") for part in ("spent", "reserved")),
    )
    row = conn.execute(
        f"SELECT {', '.join(columns)}, lease_revoked_at FROM runs WHERE run_id = ?", (run_id,)
    ).fetchone()
    return {c: row[c] for c in (*columns, "lease_revoked_at")} if row is not None else {}


@dataclass
class ActionRows:
    """What verify reads of one run's action rows, in one pass (replay.py `check_rows`,
    `check_row_fields`, `check_run`, `check_purge_marks`)."""

    statuses: dict[str, str] = field(default_factory=dict)  # action id -> status
    held: dict[str, dict[str, int]] = field(default_factory=dict)  # admitted and unknown -> reservation
    marked: list[str] = field(default_factory=list)  # marked purged (`bodies_purged_at`)
    fields: dict[str, dict[str, Any]] = field(default_factory=dict)  # reason, created_at, settled_at


def action_rows(conn: Any, run_id: str) -> ActionRows:
    """One run's action rows, a page at a time."""
    found = ActionRows()
    after = 0
    while True:
        rows = conn.execute(
            "SELECT seq, action_id, status, reserved_spend, reserved_calls, reserved_writes, bodies_purged_at, "
            "reason, created_at, settled_at "
            "FROM actions WHERE run_id = ? AND seq > ? ORDER BY seq LIMIT ?",
            (run_id, after, ENTRIES_PER_PAGE),
        ).fetchall()
        for r in rows:
            found.statuses[r["action_id"]] = r["status"]
            found.fields[r["action_id"]] = {c: r[c] for c in ("reason", "created_at", "settled_at")}
            if r["status"] in ("admitted", "unknown"):
                found.held[r["action_id"]] = {
                    "spend": r["reserved_spend"],
                    "tool_calls": r["reserved_calls"],
                    "writes": r["reserved_writes"],
                }
            if r["bodies_purged_at"] is not None:
                found.marked.append(r["action_id"])
        if len(rows) < ENTRIES_PER_PAGE:
            return found
        after = rows[-1]["seq"]
