"""A ledger entry's webhook deliveries, queued in the entry's own transaction (docs/events.md).

`publish` runs right after an entry is appended, on the same connection: the entry and its
deliveries commit together or not at all, so a crash between them loses none. The body is the
entry's envelope (gateway/domain/events.py) with the run's tenant and the entry's `data`; for an
alert also `kind` and `alert_id`, as alert bodies always had.

A run's pending deliveries are capped (`Outbox.cap`): past it a delivery is not queued but
counted in `event_drops`, and the run gets one `deliveries_dropped` alert (recorded once per run,
like a watchdog episode; its own delivery is exempt from the cap, so the operator hears of it).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from gateway.canonical import canonical_json
from gateway.domain.events import Outbox, envelope, event_id, plan_progress, progress_of
from gateway.ids import new_id
from gateway.store.sql.connection import Conn

DROPPED = "deliveries_dropped"
_PENDING = "SELECT COUNT(*) FROM webhook_deliveries WHERE run_id = ? AND status = 'pending'"
_PROGRESS = (
    "SELECT COUNT(*), COALESCE(SUM(CASE WHEN status = 'completed' THEN 1 ELSE 0 END), 0) FROM tasks WHERE run_id = ?"
)

Append = Callable[[str, dict[str, Any]], int]  # (type, data) -> seq: another entry, on the same chain


def task_progress(conn: Conn, run_id: str) -> dict[str, int]:
    """The run's plan as `{done, total}` now (inside the caller's transaction): its tasks, by index."""
    total, done = conn.execute(_PROGRESS, (run_id,)).fetchone()
    return plan_progress(int(done), int(total))


def publish(
    conn: Conn,
    outbox: Outbox,
    run_id: str,
    seq: int,
    type_: str,
    now: float,
    data: Mapping[str, Any],
    *,
    append: Append,
    process_id: str,
    targets: Sequence[str] | None = None,
    max_attempts: int | None = None,
) -> None:
    """Queue the entry's deliveries: to `targets` when given (the watchdog names them), else to
    every subscriber of `outbox` that takes its type."""
    kind = data.get("kind") if type_ == "alert" else None
    if targets is None:
        targets = outbox.targets(type_, kind if isinstance(kind, str) else None)
    if not targets:
        return
    run = conn.execute("SELECT tenant, plan_version FROM runs WHERE run_id = ?", (run_id,)).fetchone()
    progress = progress_of(data) or (task_progress(conn, run_id) if run["plan_version"] else None)
    body = envelope(run_id, seq, type_, now, data, progress)
    body["tenant"] = run["tenant"]
    body["kind"] = kind if type_ == "alert" else type_
    if type_ == "alert":  # as alert bodies always were: the kind's own fields in `data`
        body["alert_id"] = data.get("alert_id")
        body["data"] = {k: v for k, v in data.items() if k not in ("kind", "alert_id")}
    else:
        body["data"] = dict(data)
    if kind != DROPPED:
        pending = int(conn.execute(_PENDING, (run_id,)).fetchone()[0])
        if pending + len(targets) > outbox.cap:
            _dropped(conn, outbox, run_id, run["tenant"], len(targets), now, append=append, process_id=process_id)
            return
    text = canonical_json(body).decode("utf-8")
    evt = event_id(run_id, seq)
    attempts = max_attempts or outbox.max_attempts
    for target in targets:
        conn.execute(
            "INSERT INTO webhook_deliveries (delivery_id, target, kind, body, status, max_attempts, next_at, "
            "created_at, run_id, event_id) VALUES (?, ?, ?, ?, 'pending', ?, ?, ?, ?, ?)",
            (new_id("dlv"), target, kind or type_, text, attempts, now, now, run_id, evt),
        )


def _dropped(
    conn: Conn, outbox: Outbox, run_id: str, tenant: str, count: int, now: float, *, append: Append, process_id: str
) -> None:
    conn.execute(
        "INSERT INTO event_drops (run_id, dropped, first_at, last_at) VALUES (?, ?, ?, ?) "
        "ON CONFLICT (run_id) DO UPDATE SET dropped = event_drops.dropped + excluded.dropped, "
        "last_at = excluded.last_at",
        (run_id, count, now, now),
    )
    alert_id = new_id("alr")
    data = {"cap": outbox.cap}
    raised = conn.execute(
        "INSERT INTO watch_alerts (alert_id, run_id, tenant, kind, episode, at, data, raised_by) "
        "VALUES (?, ?, ?, ?, 'cap', ?, ?, ?) ON CONFLICT DO NOTHING",
        (alert_id, run_id, tenant, DROPPED, now, json.dumps(data), process_id),
    ).rowcount
    if raised:
        append("alert", {"kind": DROPPED, "alert_id": alert_id, **data})


def dropped_count(conn: Conn, run_id: str) -> int:
    row = conn.execute("SELECT dropped FROM event_drops WHERE run_id = ?", (run_id,)).fetchone()
    return int(row[0]) if row else 0
