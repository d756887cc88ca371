"""The shared store's foundation: database, clock, ledger key, the helpers every part uses, and the
hooks each back end provides (`SqlBase`)."""

from __future__ import annotations

import abc
import asyncio
import contextlib
import json
import logging
import os
import secrets
import socket
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

from gateway.bounded import BoundedSet
from gateway.canonical import canonical_json
from gateway.clock import Clock, isoformat
from gateway.domain import lifecycle
from gateway.domain.admission import RunSnapshot, lease_refusal, spec_refusal
from gateway.domain.completion import serious_refusals
from gateway.domain.contract import DIMENSIONS
from gateway.domain.events import Outbox
from gateway.domain.lease_rules import resumed_expiry
from gateway.domain.lifecycle import RunEvent, RunStatus
from gateway.domain.refusals import RefusalLimits, recorded_reason, recorded_tool, refusal_scope
from gateway.domain.settlement import Settlement, settled_row
from gateway.domain.units import format_money, headroom
from gateway.domain.watch import Alert
from gateway.errors import Code, InvalidRequest, NotFound, Refusal
from gateway.ids import new_id
from gateway.safeguards import ALL_ON, Safeguards
from gateway.store.long_reads import LongReads
from gateway.store.records import (
    NO_ALERT_ROUTES,
    ActionRecord,
    AlertRoutes,
    ApprovalRecord,
    ApprovalStatus,
    RunRecord,
)
from gateway.store.sql.connection import Conn, Database, Row
from gateway.store.sql.outbox import publish
from gateway.store.sql.rates import take
from gateway.store.sql.rows import (
    RUN_STATE_COLUMNS,
    Chain,
    RunState,
    action_from_row,
    append_event,
    decode_cursor,
    run_from_row,
    run_state,
)

T = TypeVar("T")
log = logging.getLogger("warrant.store")
_REJECTED = "SELECT COUNT(*) FROM actions WHERE run_id = ? AND status = 'rejected'"
_RUN_STATE_SQL = f"SELECT {RUN_STATE_COLUMNS} FROM runs WHERE run_id = ?"


def default_process_id() -> str:
    """host:pid:random — unique per store opened, also for two stores opened in one process at once
    (PostgreSQL replicas tell each other's in-flight actions apart by it)."""
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"


class SqlBase(abc.ABC):
    """What every part of the shared store stands on: the database it runs its transactions on
    (`Database`, gateway/store/sql/connection.py), the store's clock and ledger key, and the hooks
    a back end provides (`_aside`, `_process_alive`, `_announce_hard_cancel`; `GateOps._settling_soon`
    has a default that does nothing)."""

    def __init__(
        self,
        db: Database,
        *,
        clock: Clock,
        ledger_key: bytes,
        process_id: str | None = None,
        refusal_limits: RefusalLimits | None = None,
        safeguards: Safeguards = ALL_ON,
        long_reads: LongReads | None = None,
        alert_routes: AlertRoutes = NO_ALERT_ROUTES,
        outbox: Outbox | None = None,
    ) -> None:
        """`refusal_limits`: `limits.refusals` (docs/limits.md); `safeguards`: the drill's switches
        (gateway/safeguards.py), read inside the admit and settle transactions; `long_reads`: the
        bound on long reads at once (`_aside`), when not the default; `alert_routes`: the webhooks
        that take each kind of the alerts the store raises itself (`_raise_alert`); `outbox`: the
        webhooks that take ledger entries (gateway/store/sql/outbox.py; None: none)."""
        if not ledger_key:
            raise ValueError("a ledger key is required")
        self._db = db
        self._clock = clock
        self._key = ledger_key
        self._process_id = process_id or default_process_id()
        # Chains a transaction holds open: `_event` appends to them, and their holder writes the
        # head with its own update of the run row. Per thread: a transaction runs wholly on one
        # thread, and the PostgreSQL store runs several at once (postgres/db.py).
        self._held = HeldChains()
        self._bodies = KnownBodies()
        self._long_reads = long_reads or LongReads()
        self.refusal_limits = refusal_limits or RefusalLimits()
        self.safeguards = safeguards
        self.alert_routes = alert_routes
        self._outbox = outbox or Outbox()

    @property
    def clock(self) -> Clock:
        return self._clock

    @property
    def process_id(self) -> str:
        return self._process_id

    async def open(self) -> None:
        await self._db.open()

    async def close(self) -> None:
        await self._db.close()

    # -- the back end's hooks --------------------------------------------------------------
    @abc.abstractmethod
    async def _aside(self, fn: Callable[[Conn], T]) -> T:
        """Run `fn` as a long read (verify, export, audit): ONE read snapshot throughout, seeing
        every transaction submitted before it, never holding up the gate's transactions, at most
        `LongReads.limit` at once (gateway/store/long_reads.py).

        Raises: StoreError when the database cannot complete it."""

    @abc.abstractmethod
    def _process_alive(self, conn: Conn, process_id: str | None) -> bool:
        """Whether another gateway process that dispatched actions still runs (inside `conn`'s
        transaction): its admitted actions are orphans only once it is gone."""

    @abc.abstractmethod
    def _announce_hard_cancel(self, conn: Conn, run_id: str) -> None:
        """Tell the other gateway processes sharing the store, at commit, that `run_id` was cancelled
        hard (their calls in flight for it are aborted: gateway/runtime/cancel_relay.py)."""

    # -- helpers (database thread) ---------------------------------------------------------
    def _event(self, conn: Conn, run_id: str, type_: str, now: float, **data: Any) -> None:
        self._append(conn, run_id, type_, now, data)

    def _append(
        self,
        conn: Conn,
        run_id: str,
        type_: str,
        now: float,
        data: dict[str, Any],
        targets: tuple[str, ...] | None = None,
        max_attempts: int | None = None,
    ) -> int:
        """Append an entry and queue its webhook deliveries in the same transaction (to `targets`
        when given, else to the outbox's subscribers of its type); its seq."""
        chain = self._held.chains.get(run_id)
        if chain is not None:
            seq = chain.append(conn, type_, now, data)
        else:
            seq = append_event(conn, self._key, run_id, type_, now, data)
        if targets or (targets is None and self._outbox.subscribers):
            publish(
                conn, self._outbox, run_id, seq, type_, now, data, targets=targets, max_attempts=max_attempts,
                process_id=self._process_id,
                append=lambda t, d: self._append(conn, run_id, t, now, d),
            )  # fmt: skip
        return seq

    def _raise_alert(
        self, conn: Conn, alert: Alert, now: float, *, targets: tuple[str, ...] | None = None, max_attempts: int = 0
    ) -> str | None:
        """Raise `alert` once per (run, kind, episode), inside `conn`'s transaction: its row, its
        run's `alert` entry and one pending delivery per webhook that takes the kind (`targets`:
        the watchdog names them; else the store's `alert_routes`). Returns its id, None when this
        episode was raised before (by this process or another)."""
        alert_id = new_id("alr")
        inserted = conn.execute(
            "INSERT INTO watch_alerts (alert_id, run_id, tenant, kind, episode, at, data, raised_by) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
            (alert_id, alert.run_id, alert.tenant, alert.kind, alert.episode, now, json.dumps(alert.data),
             self._process_id),
        ).rowcount  # fmt: skip
        if not inserted:
            return None
        if targets is None:
            targets, max_attempts = self.alert_routes.targets(alert.kind), self.alert_routes.max_attempts
        # The entry and its deliveries (the event's envelope, gateway/store/sql/outbox.py) in one step.
        data = {"kind": alert.kind, "alert_id": alert_id, **alert.data}
        self._append(conn, alert.run_id, "alert", now, data, targets=targets, max_attempts=max_attempts)
        return alert_id

    def _approval_reach(self, approval: ApprovalRecord) -> dict[str, Any]:
        """What an approval's alerts say (approval_requested, approval_escalated): never its payload."""
        base = self.alert_routes.console_url
        return {
            "approval_id": approval.approval_id,
            "tool": approval.tool,
            "destination": approval.destination,
            "payload_sha256": approval.payload_sha256,
            "decide_by": isoformat(approval.decide_by),
            "role": approval.role,
            "approvers": list(approval.approvers) if approval.approvers is not None else None,
            "blocks_run": approval.blocks_run,
            "link": f"{base}/console/approvals/{approval.approval_id}" if base else None,
        }

    @contextlib.contextmanager
    def _holding(self, chain: Chain) -> Iterator[Chain]:
        """Route this run's entries to `chain` until the block ends; the block writes its head."""
        held = self._held.chains
        assert chain.run_id not in held, "one holder per run's chain"
        held[chain.run_id] = chain
        try:
            yield chain
        finally:
            del held[chain.run_id]

    def _run_state(self, conn: Conn, run_id: str, now: float) -> RunState:
        """The run as gate step 6 decides on it, expired first when its deadline has passed."""
        row = conn.execute(_RUN_STATE_SQL, (run_id,)).fetchone()
        if row is None:
            raise NotFound(f"no run {run_id}")
        state = run_state(row)
        if not state.snapshot.status.terminal and now >= state.snapshot.deadline:
            self._expire_if_due(conn, run_from_row(self._run_row(conn, run_id)), now)
            state = run_state(conn.execute(_RUN_STATE_SQL, (run_id,)).fetchone())
        return state

    def _fence(
        self, conn: Conn, run_id: str, now: float, epoch: int, *, paused_ok: bool
    ) -> tuple[RunSnapshot, Refusal | None]:
        """The run as a worker's write (a checkpoint, a milestone, a plan, a task's move) sees it,
        and the refusal for this epoch if any; `paused_ok`: a paused run still takes the write."""
        run = self._run_state(conn, run_id, now).snapshot
        refusal = lease_refusal(run, epoch, now)
        if refusal is not None and paused_ok and refusal.code == Code.RUN_PAUSED:
            refusal = spec_refusal(run)
        return run, refusal

    @staticmethod
    def _run_row(conn: Conn, run_id: str, tenant: str | None = None) -> Row:
        if tenant is None:
            row = conn.execute("SELECT * FROM runs WHERE run_id = ?", (run_id,)).fetchone()
        else:
            row = conn.execute("SELECT * FROM runs WHERE run_id = ? AND tenant = ?", (run_id, tenant)).fetchone()
        if row is None:
            raise NotFound(f"no run {run_id}")
        return row  # type: ignore[no-any-return]

    def _set_status(
        self, conn: Conn, run: RunRecord, event: RunEvent, now: float, *, by: str, reason: str | None, **data: Any
    ) -> RunStatus:
        """Move a run by the lifecycle table, fold its active time, record the change."""
        target = lifecycle.transition(run.status, event)
        if target is run.status:
            return target
        spent = run.active_seconds_spent
        if run.active_since is not None:
            spent += max(0.0, now - run.active_since)
        accrues = target is RunStatus.RUNNING or (target is RunStatus.WAITING and run.count_waiting)
        # Back to running from waiting or paused, the lease's time starts again (domain/lease_rules.py).
        expires = resumed_expiry(run.status, target, run.lease_expires_at, run.lease_ttl, now)
        conn.execute(
            "UPDATE runs SET status = ?, status_reason = ?, active_seconds_spent = ?, active_since = ?, "
            "lease_expires_at = ?, updated_at = ? WHERE run_id = ?",
            (target.value, reason, spent, now if accrues else None, expires, now, run.run_id),
        )
        if event is RunEvent.RESUME:  # a resumed run's stall clock starts again (gateway/domain/watch.py)
            conn.execute("UPDATE runs SET progress_at = ? WHERE run_id = ?", (now, run.run_id))
        if run.status is RunStatus.WAITING:  # a wait ends whenever the run leaves waiting (by `event`)
            self._end_wait(conn, run.run_id, now, event.value)
        self._event(
            conn, run.run_id, f"run_{target.value}", now, previous=run.status.value, by=by, reason=reason, **data
        )
        if target.terminal and run.parent_run_id is not None and run.carved is not None:
            self._return_carve(conn, run, target, now)
        return target

    def _return_carve(self, conn: Conn, child: RunRecord, status: RunStatus, now: float) -> None:
        """A child ended: its carve leaves the parent's reservation, and what it spent or still holds
        (actions in flight or unknown, charged in full: their outcome may never be known) becomes
        the parent's spent. The child's spend is counted once, here (docs/progress.md)."""
        assert child.carved is not None and child.parent_run_id is not None
        row = conn.execute(
            "SELECT spend_spent, tool_calls_spent, writes_spent, spend_reserved, tool_calls_reserved, writes_reserved "
            "FROM runs WHERE run_id = ?",
            (child.run_id,),
        ).fetchone()
        spent = {dim: row[f"{dim}_spent"] for dim in child.carved}
        held = {dim: row[f"{dim}_reserved"] for dim in child.carved}
        parent_spent = conn.execute("SELECT spend_spent FROM runs WHERE run_id = ?", (child.parent_run_id,)).fetchone()
        conn.execute(
            "UPDATE runs SET spend_reserved = spend_reserved - ?, tool_calls_reserved = tool_calls_reserved - ?, "
            "writes_reserved = writes_reserved - ?, spend_spent = spend_spent + ?, tool_calls_spent = "
            "tool_calls_spent + ?, writes_spent = writes_spent + ?, updated_at = ? WHERE run_id = ?",
            (
                *(child.carved[dim] for dim in ("spend", "tool_calls", "writes")),
                headroom(parent_spent[0], spent["spend"] + held["spend"]),
                *(spent[dim] + held[dim] for dim in ("tool_calls", "writes")),
                now,
                child.parent_run_id,
            ),
        )
        returned = {dim: child.carved[dim] - spent[dim] - held[dim] for dim in child.carved}
        self._event(
            conn,
            child.parent_run_id,
            "child_ended",
            now,
            child_run_id=child.run_id,
            status=status.value,
            spent=wire_reservation(spent, child.currency),
            reserved=wire_reservation(held, child.currency),
            returned=wire_reservation(returned, child.currency),
        )

    def _expire_if_due(self, conn: Conn, run: RunRecord, now: float) -> RunRecord:
        if run.status.terminal or now < run.deadline:
            return run
        self._set_status(conn, run, RunEvent.EXPIRE, now, by="gateway", reason="the deadline passed")
        self._close_approvals(conn, run.run_id, now, ApprovalStatus.SUPERSEDED, "the run expired")
        return run_from_row(self._run_row(conn, run.run_id))

    def _close_approvals(self, conn: Conn, run_id: str, now: float, status: ApprovalStatus, reason: str) -> None:
        rows = conn.execute(
            "SELECT approval_id FROM approvals WHERE run_id = ? AND status IN ('pending', 'approved')", (run_id,)
        ).fetchall()
        for row in rows:
            conn.execute(
                "UPDATE approvals SET status = ?, decided_at = ?, note = ? WHERE approval_id = ?",
                (status.value, now, reason, row["approval_id"]),
            )
            self._event(conn, run_id, f"approval_{status.value}", now, approval_id=row["approval_id"], reason=reason)

    def _settle_waiting(self, conn: Conn, run_id: str, now: float, by: str) -> None:
        """After approvals close: a waiting run with nothing left pending goes back to running."""
        if not self._approval_holds(conn, run_id) and self._open_wait(conn, run_id) is None:  # a warrant_wait too
            run = run_from_row(self._run_row(conn, run_id))
            if not run.status.terminal:
                self._set_status(conn, run, RunEvent.APPROVALS_SETTLED, now, by=by, reason="no approval pending")

    @staticmethod
    def _approval_holds(conn: Conn, run_id: str) -> bool:
        """Whether a pending approval holds the run waiting: a milestone's review does not, nor an
        approval that does not block the run (`blocks_run: false`)."""
        return (
            conn.execute(
                "SELECT 1 FROM approvals WHERE run_id = ? AND status = 'pending' AND milestone_id IS NULL "
                "AND blocks_run = 1 LIMIT 1",
                (run_id,),
            ).fetchone()
            is not None
        )

    @staticmethod
    def _open_wait(conn: Conn, run_id: str) -> Row | None:
        """The run's open wait (warrant_wait, gateway/store/sql/waits.py), if any."""
        row: Row | None = conn.execute(
            "SELECT * FROM waits WHERE run_id = ? AND ended_at IS NULL", (run_id,)
        ).fetchone()
        return row

    def _end_wait(self, conn: Conn, run_id: str, now: float, cause: str, signal_id: str | None = None) -> bool:
        """End the run's open wait with `cause` (docs/decisions/0027-waits.md), its `wait_ended`
        entry written; False when none was open."""
        wait = self._open_wait(conn, run_id)
        if wait is None:
            return False
        conn.execute(
            "UPDATE waits SET ended_at = ?, cause = ?, signal_id = ? WHERE wait_id = ?",
            (now, cause, signal_id, wait["wait_id"]),
        )
        extra = {"signal_id": signal_id} if signal_id is not None else {}
        self._event(conn, run_id, "wait_ended", now, wait_id=wait["wait_id"], cause=cause, **extra)
        return True

    def _expire_approvals_due(self, conn: Conn, run_id: str, now: float) -> None:
        """Expire approvals not decided by `decide_by` or unused by `valid_until`. Silence never
        approves: an undecided one applies its rule's `on_expiry` — `pause` pauses a live run
        (the reason names the approval), `resume` lets it go on once nothing else is pending."""
        rows = conn.execute(
            "SELECT approval_id, status, on_expiry FROM approvals WHERE run_id = ? AND "
            "((status = 'pending' AND decide_by <= ?) OR (status = 'approved' AND valid_until <= ?)) ORDER BY seq",
            (run_id, now, now),
        ).fetchall()
        for row in rows:
            conn.execute("UPDATE approvals SET status = 'expired' WHERE approval_id = ?", (row["approval_id"],))
            extra = {"on_expiry": row["on_expiry"]} if row["status"] == "pending" else {}
            self._event(
                conn, run_id, "approval_expired", now, approval_id=row["approval_id"], was=row["status"], **extra
            )
        pausing = [r["approval_id"] for r in rows if r["status"] == "pending" and r["on_expiry"] == "pause"]
        if pausing:
            run = run_from_row(self._run_row(conn, run_id))
            if run.status.live:
                reason = f"approval {pausing[0]} was not decided in time (on_expiry: pause)"
                self._set_status(conn, run, RunEvent.PAUSE, now, by="gateway", reason=reason, approval_id=pausing[0])
        if rows:
            self._settle_waiting(conn, run_id, now, "gateway")

    def _mark_unknown(self, conn: Conn, rows: list[Row], reason: str, now: float, *, orphaned: str) -> list[str]:
        """Admitted actions (rows of action_id, run_id, process_id) whose outcome nobody will record
        become `unknown` with `reason`, in the ledger too; their reservations stay held. `orphaned`
        (`restart` or `restore`) marks each entry: the report's recovery episodes start there."""
        orphan = settled_row(Settlement.orphaned(reason))  # gateway/domain/settlement.py: unknown, its hold kept
        for row in rows:
            conn.execute(
                "UPDATE actions SET status = ?, code = ?, reason = ?, settled_at = ? WHERE action_id = ?",
                (orphan.status.value, orphan.code, reason, now, row["action_id"]),
            )
            action = action_from_row(
                conn.execute("SELECT * FROM actions WHERE action_id = ?", (row["action_id"],)).fetchone()
            )
            data: dict[str, Any] = {"process_id": row["process_id"]}
            if action.effect != "write":  # a read's one entry (v2): what was asked, as when it settles
                (currency,) = conn.execute("SELECT currency FROM runs WHERE run_id = ?", (action.run_id,)).fetchone()
                data = read_intent(action, currency)
            self._event(
                conn,
                row["run_id"],
                "action_settled",
                now,
                action_id=row["action_id"],
                status=orphan.status.value,
                code=orphan.code,
                previous="admitted",
                reason=reason,
                orphaned=orphaned,
                **data,
            )
        return [row["action_id"] for row in rows]

    @staticmethod
    def _action(conn: Conn, action_id: str, tenant: str) -> ActionRecord:
        """Raises: NotFound, also for another tenant's action."""
        row = conn.execute("SELECT * FROM actions WHERE action_id = ? AND tenant = ?", (action_id, tenant)).fetchone()
        if row is None:
            raise NotFound(f"no action {action_id}")
        return action_from_row(row)

    def _refusal_allowed(
        self, conn: Conn, run: RunRecord | RunSnapshot, epoch: int | None, refusal: Refusal, now: float
    ) -> None:
        """Whether one more refusal may be recorded for this token and run (docs/limits.md).

        Raises (aborting the caller's transaction, so nothing of the call is written) a
        DroppedRefusal, which `_refusing` counts: `rate_limited` with `retry_after_s` past the
        token's refusal rate; the refusal itself, `recorded: false`, once the run keeps
        `max_per_run` refusals."""
        limits = self.refusal_limits
        if limits.max_per_run is not None:
            (kept,) = conn.execute(_REJECTED, (run.run_id,)).fetchone()
            if kept >= limits.max_per_run:
                details = {**refusal.details, "recorded": False}
                raise DroppedRefusal(
                    refusal.code, refusal.message, dropped=Drop(run.run_id, run.tenant, epoch, "max_per_run"), **details
                )
        if limits.rate is not None:
            refused = take(conn, [(refusal_scope(run.run_id, epoch), limits.rate)], now)
            if refused is not None:
                raise DroppedRefusal(
                    Code.RATE_LIMITED,
                    f"too many refused calls for this lease token; try again in {refused[1]:.3g} s",
                    dropped=Drop(run.run_id, run.tenant, epoch, "rate"),
                    limit="refusals",
                    refused_code=refusal.code,
                    retry_after_s=round(refused[1], 3),
                )

    async def _refusing(self, tx: Callable[[Conn], T], *, durable: bool) -> T:
        """`tx` (which may record a refusal) in a transaction; a refusal the limits dropped rolls
        back with the rest of `tx`, is counted in a transaction of its own, then raised as it was."""
        try:
            return await self._db.transaction(tx, durable=durable)
        except DroppedRefusal as dropped:
            drop = dropped.dropped
            await self._db.transaction(lambda conn: count_dropped(conn, drop, self._clock.now()), durable=False)
            raise

    def _reject(
        self,
        conn: Conn,
        run: RunRecord | RunSnapshot,
        now: float,
        *,
        tool: str,
        payload_sha256: str,
        refusal: Refusal,
        epoch: int | None,
        worker: str | None,
        effect: str = "unknown",
        payload_bytes: int | None = None,
    ) -> str:
        self._refusal_allowed(conn, run, epoch, refusal, now)
        action_id = new_id("act")
        tool = recorded_tool(tool)  # bounded: a caller can make a refusal of any size (domain/refusals.py)
        reason = recorded_reason(refusal.message)
        conn.execute(
            "INSERT INTO actions (action_id, run_id, tenant, lineage_id, tool, effect, payload_sha256, status, code, "
            "reason, epoch, worker, created_at, settled_at) VALUES (?, ?, ?, ?, ?, ?, ?, 'rejected', ?, ?, ?, ?, ?, ?)",
            (
                action_id,
                run.run_id,
                run.tenant,
                run.lineage_id,
                tool,
                effect,
                payload_sha256,
                refusal.code,
                reason,
                epoch,
                worker,
                now,
                now,
            ),
        )
        self._event(
            conn,
            run.run_id,
            "action_rejected",
            now,
            action_id=action_id,
            tool=tool,
            payload_sha256=payload_sha256,
            code=refusal.code,
            epoch=epoch,
            worker=worker,
            reason=reason,
            # The arguments' size beside their hash (never their body): what a refusal of a large
            # payload was, in the chained entry (gateway/domain/refusals.py).
            **({} if payload_bytes is None else {"payload_bytes": payload_bytes}),
        )
        self._escalate(conn, run.run_id, run.tenant, refusal, action_id, tool, epoch, worker, now)
        return action_id

    def _escalate(
        self,
        conn: Conn,
        run_id: str,
        tenant: str,
        refusal: Refusal,
        action_id: str,
        tool: str,
        epoch: int | None,
        worker: str | None,
        now: float,
    ) -> None:
        """A refusal whose code the contract's `escalation.serious_refusals` names alerts the operator
        (`serious_refusal`), in the refusal's transaction: the code, the tool, the recorded refusal;
        never the arguments nor the message (it may quote them). Once per (code, tool, lease epoch):
        an agent that loops on a forbidden call is one alert (naming its first refusal), and a new
        worker that tries again is another; every refusal stays in the ledger."""
        row = conn.execute("SELECT contract FROM runs WHERE run_id = ?", (run_id,)).fetchone()
        if row is None or refusal.code not in serious_refusals(row[0]):
            return
        data = {"code": refusal.code, "tool": tool, "action_id": action_id, "epoch": epoch, "worker": worker}
        episode = f"{refusal.code}:{tool}:{epoch if epoch is not None else '-'}"
        self._raise_alert(conn, Alert(run_id, tenant, "serious_refusal", episode, data), now)


@dataclass(frozen=True)
class Drop:
    """A refusal the limits did not record: whose, and which limit (`rate` or `max_per_run`)."""

    run_id: str
    tenant: str
    epoch: int | None
    limit: str


class DroppedRefusal(Refusal):
    """A refusal answered but not recorded (limits.refusals): still a Refusal to whoever catches
    it; `SqlBase._refusing` counts it (refusals_dropped, migration 0016) on its way out."""

    def __init__(self, code: Code, message: str, *, dropped: Drop, **details: Any) -> None:
        super().__init__(code, message, **details)
        self.dropped = dropped


_COUNT_CAP = 2**53 - 1  # a count stays exact as a JSON number
_COUNT_DROPPED = (
    "INSERT INTO refusals_dropped (run_id, epoch, tenant, by_rate, by_cap, first_at, last_at) "
    "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (run_id, epoch) DO UPDATE SET "
    "by_rate = CASE WHEN refusals_dropped.by_rate < ? THEN refusals_dropped.by_rate + excluded.by_rate "
    "ELSE refusals_dropped.by_rate END, "
    "by_cap = CASE WHEN refusals_dropped.by_cap < ? THEN refusals_dropped.by_cap + excluded.by_cap "
    "ELSE refusals_dropped.by_cap END, last_at = excluded.last_at"
)


def count_dropped(conn: Conn, drop: Drop, now: float) -> None:
    """One more refusal of `drop`'s token not recorded: one row per token, counts only grow."""
    by_rate, by_cap = (1, 0) if drop.limit == "rate" else (0, 1)
    epoch = drop.epoch if drop.epoch is not None else 0
    conn.execute(_COUNT_DROPPED, (drop.run_id, epoch, drop.tenant, by_rate, by_cap, now, now, _COUNT_CAP, _COUNT_CAP))


def queue_deliveries(
    conn: Conn, targets: tuple[str, ...] | list[str], kind: str, body: dict[str, Any], now: float, max_attempts: int
) -> None:
    """One pending webhook delivery of `body` per target (gateway/runtime/webhooks.py sends them)."""
    text = canonical_json(body).decode("utf-8")
    for target in targets:
        conn.execute(
            "INSERT INTO webhook_deliveries (delivery_id, target, kind, body, status, max_attempts, next_at, "
            "created_at) VALUES (?, ?, ?, ?, 'pending', ?, ?, ?)",
            (new_id("dlv"), target, kind, text, max_attempts, now, now),
        )


def cursor_after(cursor: str | None) -> int:
    try:
        return decode_cursor(cursor)
    except (ValueError, UnicodeDecodeError) as exc:
        raise InvalidRequest("the cursor is not one this API handed out", code=Code.INVALID_CURSOR) from exc


def read_intent(action: ActionRecord, currency: str) -> dict[str, Any]:
    """What a read's one ledger entry states of its admission (it has no `action_admitted` entry):
    what was asked, under which lease and process, what it held, and when it was admitted."""
    return {
        "tool": action.tool,
        "effect": action.effect,
        "payload_sha256": action.payload_sha256,
        "epoch": action.epoch,
        "worker": action.worker,
        "process_id": action.process_id,
        "reserved": wire_reservation(action.reserved, currency),
        "admitted_at": isoformat(action.created_at),
        **({} if action.task_id is None else {"task_id": action.task_id}),
    }


def wire_reservation(reserved: dict[str, int], currency: str) -> dict[str, Any]:
    return {
        dim: (format_money(v, currency) if dim == "spend" else v) for dim, v in reserved.items() if dim in DIMENSIONS
    }


class HeldChains(threading.local):
    """The chains held open by the transaction running on this thread, by run id."""

    def __init__(self) -> None:
        self.chains: dict[str, Chain] = {}


class KnownBodies(BoundedSet[str]):
    """Payload hashes whose bodies this process has seen committed: a hint, never a check.

    A read whose payload body is known to be stored already skips encoding and inserting it again.
    Bounded (oldest forgotten first) and filled only after a commit, on the event loop. A hash
    wrongly remembered can only cost a body, never a decision: nothing decides on it, and the
    insert it skips is `ON CONFLICT DO NOTHING`. Whatever purges bodies must `forget` them here.
    """

    def __init__(self, size: int = 4096) -> None:
        super().__init__(size)

    def forget(self, sha256: str) -> None:
        self.discard(sha256)


def log_if_failed(action_id: str) -> Callable[[asyncio.Future[Any]], None]:
    """A done-callback for a settle nobody awaits: its failure must at least be logged."""

    def done(future: asyncio.Future[Any]) -> None:
        if not future.cancelled() and future.exception() is not None:
            log.error(
                "settling %s failed; it stays admitted until a restart marks it unknown",
                action_id,
                exc_info=future.exception(),
            )

    return done
