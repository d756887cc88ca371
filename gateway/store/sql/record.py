"""The store's record: actions, events, blobs, ledger verification, tool pins."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from typing import Any

from gateway.canonical import canonical_json
from gateway.domain.events import PROGRESS_TYPES, progress_of
from gateway.errors import Code, InvalidRequest
from gateway.store.anchor import check_anchor, make_anchor
from gateway.store.chain import BadEntry, VerifyReport, verify_run
from gateway.store.ledger_scan import (
    action_rows,
    present_bodies,
    run_count,
    run_entries,
    run_facts,
    run_heads,
    run_statuses,
)
from gateway.store.records import (
    ActionRecord,
    EventRecord,
    Page,
    ToolPin,
    ToolPins,
)
from gateway.store.replay import (
    ChainState,
    check_bodies,
    check_purge_marks,
    check_row_fields,
    check_rows,
    check_run,
    replayed,
)
from gateway.store.sql.base import SqlBase, cursor_after
from gateway.store.sql.connection import Conn, Row
from gateway.store.sql.rows import (
    action_from_row,
    encode_cursor,
    event_from_row,
)

_LAST_PROGRESS = (
    "SELECT body FROM events WHERE run_id = ? AND seq < ? "
    f"AND type IN ({', '.join(repr(t) for t in sorted(PROGRESS_TYPES))}) ORDER BY seq DESC LIMIT 1"
)


def with_progress(conn: Conn, events: list[EventRecord], *, planned: bool) -> list[EventRecord]:
    """Each entry with the run's plan progress as of it: its own (plan and task entries carry it),
    else the last one before it; one look back per page, for the page's first entries."""
    if not events or not planned:
        return events
    current: dict[str, int] | None = None
    if progress_of(events[0].data) is None:
        row = conn.execute(_LAST_PROGRESS, (events[0].run_id, events[0].seq)).fetchone()
        current = progress_of(json.loads(row["body"])["data"]) if row else None
    out = []
    for event in events:
        current = progress_of(event.data) or current
        out.append(dataclasses.replace(event, progress=current) if current is not None else event)
    return out


class RecordOps(SqlBase):
    # -- the record ------------------------------------------------------------------------
    async def get_action(self, tenant: str, action_id: str) -> ActionRecord:
        return await self._db.read(lambda conn: self._action(conn, action_id, tenant))

    async def list_actions(
        self, tenant: str, run_id: str, *, cursor: str | None = None, limit: int = 100
    ) -> Page[ActionRecord]:
        after = cursor_after(cursor)

        def read(conn: Conn) -> Page[ActionRecord]:
            self._run_row(conn, run_id, tenant)
            rows = conn.execute(
                "SELECT * FROM actions WHERE run_id = ? AND tenant = ? AND seq > ? ORDER BY seq LIMIT ?",
                (run_id, tenant, after, limit + 1),
            ).fetchall()
            more = len(rows) > limit
            rows = rows[:limit]
            return Page([action_from_row(r) for r in rows], encode_cursor(rows[-1]["seq"]) if more else None)

        return await self._db.read(read)

    async def list_events(self, tenant: str, run_id: str, *, after: int = 0, limit: int = 100) -> list[EventRecord]:
        def read(conn: Conn) -> list[EventRecord]:
            run = self._run_row(conn, run_id, tenant)
            rows = conn.execute(
                "SELECT * FROM events WHERE run_id = ? AND seq > ? ORDER BY seq LIMIT ?", (run_id, after, limit)
            ).fetchall()
            return with_progress(conn, [event_from_row(r) for r in rows], planned=bool(run["plan_version"]))

        return await self._db.read(read)

    async def get_blob(self, sha256: str) -> Any:
        def read(conn: Conn) -> Any:
            row = conn.execute("SELECT body FROM blobs WHERE sha256 = ?", (sha256,)).fetchone()
            return json.loads(row["body"]) if row else None

        return await self._db.read(read)

    async def verify_ledger(self, tenant: str | None = None) -> VerifyReport:
        """Every chain (of `tenant`, or all) recomputed, in pages, inside ONE read snapshot on a
        long-read connection (`_aside`): the gate's transactions never wait for it, and what it
        reads is one committed state (gateway/store/ledger_scan.py). Each chain is also replayed
        against its run's `actions` and `approvals` rows (gateway/store/replay.py)."""

        def read(conn: Conn) -> VerifyReport:
            runs = run_count(conn, tenant)
            total = 0
            for run_id, head in run_heads(conn, tenant):
                state = ChainState()
                count, bad = verify_run(run_id, replayed(run_entries(conn, run_id), state), head, self._key)
                total += count
                if bad is None:  # the chain holds: do the rows the gate decides from agree with it?
                    actions = action_rows(conn, run_id)
                    bad = check_rows(run_id, state, actions.statuses, run_statuses(conn, "approvals", run_id))
                    bad = bad or check_row_fields(run_id, state, actions.fields)
                    bad = bad or check_run(run_id, state, run_facts(conn, run_id), actions.held)
                    bad = bad or check_bodies(run_id, state, present_bodies(conn, state.bodies))
                    bad = bad or check_purge_marks(run_id, state, actions.marked)
                if bad is not None:
                    return VerifyReport(ok=False, runs=runs, entries=total, first_bad=bad)
            return VerifyReport(ok=True, runs=runs, entries=total, first_bad=None)

        return await self._aside(read)

    async def ledger_anchor(self, tenant: str | None = None) -> dict[str, Any]:
        def read(conn: Conn) -> dict[str, Any]:
            heads = [(run_id, h.seq, h.hash) for run_id, h in run_heads(conn, tenant) if h is not None]
            return make_anchor(self._key, tenant, self._clock.now(), heads)

        return await self._aside(read)

    async def check_anchor(self, anchor: dict[str, Any], tenant: str | None = None) -> BadEntry | None:
        def read(conn: Conn) -> BadEntry | None:
            def head_of(run_id: str) -> int | None:
                row = conn.execute("SELECT head_seq FROM runs WHERE run_id = ?", (run_id,)).fetchone()
                return None if row is None else int(row[0])

            def hash_at(run_id: str, seq: int) -> str | None:
                row = conn.execute("SELECT hash FROM events WHERE run_id = ? AND seq = ?", (run_id, seq)).fetchone()
                return None if row is None else str(row[0])

            return check_anchor(self._key, anchor, tenant=tenant, head_of=head_of, hash_at=hash_at)

        return await self._aside(read)

    # -- tool pins -------------------------------------------------------------------------
    async def tool_pins(self) -> ToolPins:
        def read(conn: Conn) -> ToolPins:
            pins = {r["tool"]: _pin_from_row(r) for r in conn.execute("SELECT * FROM tool_pins")}
            adapters = frozenset(r[0] for r in conn.execute("SELECT adapter FROM tool_pin_adapters"))
            return ToolPins(pins, adapters)

        return await self._db.read(read)

    async def pin_first_use(self, adapter: str, pins: Sequence[ToolPin]) -> bool:
        def tx(conn: Conn) -> bool:
            now = self._clock.now()
            done = conn.execute("SELECT 1 FROM tool_pin_adapters WHERE adapter = ?", (adapter,)).fetchone()
            if done is not None:
                return False
            conn.execute("INSERT INTO tool_pin_adapters (adapter, first_pinned_at) VALUES (?, ?)", (adapter, now))
            for pin in pins:
                conn.execute(
                    "INSERT INTO tool_pins (tool, adapter, definition_sha256, definition, pinned_by, "
                    "pinned_at, previous_sha256) VALUES (?, ?, ?, ?, ?, ?, NULL) ON CONFLICT DO NOTHING",
                    (pin.tool, adapter, pin.definition_sha256, _definition_json(pin), "first_use", now),
                )
            return True

        return await self._db.transaction(tx, durable=True)

    async def accept_tool_pin(self, pin: ToolPin, *, replaces: str | None) -> ToolPin:
        def tx(conn: Conn) -> ToolPin:
            now = self._clock.now()
            row = conn.execute("SELECT definition_sha256 FROM tool_pins WHERE tool = ?", (pin.tool,)).fetchone()
            current = row["definition_sha256"] if row is not None else None
            if current == pin.definition_sha256:
                return _pin_from_row(conn.execute("SELECT * FROM tool_pins WHERE tool = ?", (pin.tool,)).fetchone())
            if current != replaces:
                raise InvalidRequest(
                    f"the pin of {pin.tool} changed meanwhile", code=Code.PAYLOAD_MISMATCH, pinned_sha256=current
                ).with_status(409)
            conn.execute(
                "INSERT INTO tool_pins (tool, adapter, definition_sha256, definition, pinned_by, pinned_at, "
                "previous_sha256) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (tool) DO UPDATE SET "
                "adapter = excluded.adapter, definition_sha256 = excluded.definition_sha256, "
                "definition = excluded.definition, pinned_by = excluded.pinned_by, pinned_at = excluded.pinned_at, "
                "previous_sha256 = excluded.previous_sha256",
                (
                    pin.tool,
                    pin.adapter,
                    pin.definition_sha256,
                    _definition_json(pin),
                    pin.pinned_by,
                    now,
                    current,
                ),
            )
            return _pin_from_row(conn.execute("SELECT * FROM tool_pins WHERE tool = ?", (pin.tool,)).fetchone())

        return await self._db.transaction(tx, durable=True)


def _definition_json(pin: ToolPin) -> str:
    return canonical_json(pin.definition).decode()


def _pin_from_row(row: Row) -> ToolPin:
    return ToolPin(
        tool=row["tool"],
        adapter=row["adapter"],
        definition_sha256=row["definition_sha256"],
        definition=json.loads(row["definition"]),
        pinned_by=row["pinned_by"],
        pinned_at=row["pinned_at"],
        previous_sha256=row["previous_sha256"],
    )
