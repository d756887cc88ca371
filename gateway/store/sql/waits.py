"""The store's waits and signals (docs/decisions/0027-waits.md).

A wait is fenced like a task's move (the token's epoch must be the run's, the lease live): a
refused one is a `rejected` action in the same transaction. It starts only from `running` and one
at a time (`wait_open`), writing `wait_started` and moving the run to `waiting` by the lifecycle
table. A signal is recorded once per (run, idempotency_key): a second send of the key answers the
first signal and changes nothing. One named in the open wait's `wake_on` ends the wait (cause
`signal`) and the run goes back to running, unless an approval still holds it waiting. The
watchdog's sweep (`_time_out_wait`) applies `on_timeout` once `until` has passed by the store's
clock; every other way out of `waiting` (a pause, a cancel, a fail, the deadline) ends the wait in
`SqlBase._set_status`, with that event as its cause.
"""

from __future__ import annotations

import json
from typing import Any

from gateway.canonical import canonical_json, sha256_hex
from gateway.domain import lifecycle
from gateway.domain.lease_rules import wait_ended_expiry
from gateway.domain.lifecycle import RunEvent, RunStatus
from gateway.domain.waits import SIGNALS_SHOWN, OnTimeout, WaitCause, WaitSpec
from gateway.errors import Code, Conflict, Refusal
from gateway.ids import new_id
from gateway.store.records import Principal, Refused
from gateway.store.sql.connection import Conn, Row
from gateway.store.sql.ending import EndingOps
from gateway.store.sql.rows import run_from_row
from gateway.store.wait_records import SignalAnswer, SignalRecord, WaitRecord


def wait_from_row(row: Row) -> WaitRecord:
    return WaitRecord(
        wait_id=row["wait_id"],
        run_id=row["run_id"],
        reason=row["reason"],
        until=row["until_at"],
        on_timeout=row["on_timeout"],
        wake_on=tuple(json.loads(row["wake_on"])),
        epoch=row["epoch"],
        worker=row["worker"],
        started_at=row["started_at"],
        ended_at=row["ended_at"],
        cause=row["cause"],
        signal_id=row["signal_id"],
    )


def signal_from_row(row: Row) -> SignalRecord:
    return SignalRecord(
        signal_id=row["signal_id"],
        run_id=row["run_id"],
        name=row["name"],
        payload=json.loads(row["payload"]),
        payload_sha256=row["payload_sha256"],
        idempotency_key=row["idempotency_key"],
        principal=row["principal"],
        received_at=row["received_at"],
        wait_id=row["wait_id"],
        payload_purged_at=row["payload_purged_at"],
    )


class WaitOps(EndingOps):
    async def start_wait(self, run_id: str, *, epoch: int, worker: str, spec: WaitSpec) -> WaitRecord | Refused:
        def tx(conn: Conn) -> WaitRecord | Refused:
            now = self._clock.now()
            digest = sha256_hex(canonical_json(spec.to_wire()))
            run, refusal = self._fence(conn, run_id, now, epoch, paused_ok=False)
            open_wait = self._open_wait(conn, run_id)
            if refusal is None and open_wait is not None:
                refusal = Refusal(
                    Code.WAIT_OPEN,
                    f"not waiting: the run waits already ({open_wait['wait_id']}: {open_wait['reason']}); "
                    "warrant_status shows it",
                    wait_id=open_wait["wait_id"],
                )
            if refusal is None and run.status is not RunStatus.RUNNING:
                refusal = lifecycle.status_refusal(run.status)  # waiting on an approval
            if refusal is None and spec.until > run.deadline:
                refusal = Refusal(
                    Code.WAIT_INVALID, "not waiting: until is past the run's deadline", field="until"
                )  # the deadline moved (a revision) since the call read it
            if refusal is not None:
                action_id = self._reject(
                    conn, run, now, tool="warrant_wait", payload_sha256=digest, refusal=refusal, epoch=epoch,
                    worker=worker,
                )  # fmt: skip
                return Refused(refusal, action_id)
            wait_id = new_id("wai")
            conn.execute(
                "INSERT INTO waits (wait_id, run_id, reason, until_at, on_timeout, wake_on, epoch, worker, started_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (wait_id, run_id, spec.reason, spec.until, spec.on_timeout.value, json.dumps(list(spec.wake_on)),
                 epoch, worker, now),
            )  # fmt: skip
            self._event(
                conn, run_id, "wait_started", now, wait_id=wait_id, reason=spec.reason, until=spec.until,
                on_timeout=spec.on_timeout.value, wake_on=list(spec.wake_on), epoch=epoch, worker=worker,
            )  # fmt: skip
            record = run_from_row(self._run_row(conn, run_id))
            self._set_status(conn, record, RunEvent.WAIT, now, by=worker, reason=spec.reason, wait_id=wait_id)
            return wait_from_row(conn.execute("SELECT * FROM waits WHERE wait_id = ?", (wait_id,)).fetchone())

        return await self._refusing(tx, durable=True)

    async def signal_run(
        self, principal: Principal, run_id: str, *, name: str, payload: Any, idempotency_key: str
    ) -> SignalAnswer:
        """Raises: NotFound (also another tenant's run); Conflict `idempotency_conflict` for a key sent
        before with another name or payload; Refusal `run_<status>` for a run that is over."""
        encoded = canonical_json(payload).decode()
        digest = sha256_hex(encoded.encode())

        def tx(conn: Conn) -> SignalAnswer | Refusal:
            now = self._clock.now()
            run = self._expire_if_due(conn, run_from_row(self._run_row(conn, run_id, principal.tenant)), now)
            prior = conn.execute(
                "SELECT * FROM signals WHERE run_id = ? AND idempotency_key = ?", (run_id, idempotency_key)
            ).fetchone()
            if prior is not None:
                if (prior["name"], prior["payload_sha256"]) != (name, digest):
                    raise Conflict(
                        f"idempotency_key {idempotency_key!r} was sent before with another name or payload",
                        code=Code.IDEMPOTENCY_CONFLICT,
                        signal_id=prior["signal_id"],
                    )
                return SignalAnswer(signal_from_row(prior), run.status, replayed=True)
            if run.status.terminal:
                return lifecycle.status_refusal(run.status)  # returned: an expiry found here commits
            signal_id = new_id("sig")
            conn.execute(
                "INSERT INTO signals (signal_id, run_id, name, payload, payload_sha256, idempotency_key, principal, "
                "received_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (signal_id, run_id, name, encoded, digest, idempotency_key, principal.name, now),
            )
            self._event(
                conn, run_id, "signal_received", now, signal_id=signal_id, name=name, payload_sha256=digest,
                payload_bytes=len(encoded.encode()), idempotency_key=idempotency_key, by=principal.name,
            )  # fmt: skip
            wait = self._open_wait(conn, run_id)
            if wait is not None and run.status is RunStatus.WAITING and name in json.loads(wait["wake_on"]):
                conn.execute("UPDATE signals SET wait_id = ? WHERE signal_id = ?", (wait["wait_id"], signal_id))
                self._end_wait(conn, run_id, now, WaitCause.SIGNAL.value, signal_id)
                self._resume_from_wait(conn, run_id, now, by=principal.name, reason=f"signal {name} arrived")
            row = conn.execute("SELECT * FROM signals WHERE signal_id = ?", (signal_id,)).fetchone()
            return SignalAnswer(signal_from_row(row), run_from_row(self._run_row(conn, run_id)).status)

        result = await self._db.transaction(tx, durable=True)
        if isinstance(result, Refusal):
            raise result
        return result

    async def open_wait(self, run_id: str) -> WaitRecord | None:
        def read(conn: Conn) -> WaitRecord | None:
            row = self._open_wait(conn, run_id)
            return wait_from_row(row) if row is not None else None

        return await self._db.read(read)

    async def list_signals(self, run_id: str, *, limit: int = SIGNALS_SHOWN) -> list[SignalRecord]:
        """The run's newest signals, oldest first."""

        def read(conn: Conn) -> list[SignalRecord]:
            rows = conn.execute(
                "SELECT * FROM signals WHERE run_id = ? ORDER BY seq DESC LIMIT ?", (run_id, limit)
            ).fetchall()
            return [signal_from_row(r) for r in reversed(rows)]

        return await self._db.read(read)

    # -- inside other transactions -----------------------------------------------------------
    def _resume_from_wait(self, conn: Conn, run_id: str, now: float, *, by: str, reason: str) -> None:
        """The wait is over: back to running, unless an approval asked for meanwhile holds it waiting
        (one that blocks the run, as `_settle_waiting` counts them); then the lease's time starts
        again (`wait_ended_expiry`): the worker was silent by its own word until now."""
        run = run_from_row(self._run_row(conn, run_id))
        if run.status is not RunStatus.WAITING:
            return
        if not self._approval_holds(conn, run_id):
            self._set_status(conn, run, RunEvent.WAIT_ENDED, now, by=by, reason=reason)
            return
        expires = wait_ended_expiry(run.lease_expires_at, run.lease_ttl, now)
        if expires != run.lease_expires_at:
            conn.execute(
                "UPDATE runs SET lease_expires_at = ?, updated_at = ? WHERE run_id = ?", (expires, now, run_id)
            )

    def _time_out_wait(self, conn: Conn, run_id: str, now: float) -> bool:
        """Apply the open wait's `on_timeout` once its `until` has passed (the watchdog's sweep);
        whether it did."""
        wait = self._open_wait(conn, run_id)
        if wait is None or wait["until_at"] > now:
            return False
        run = run_from_row(self._run_row(conn, run_id))
        if run.status is not RunStatus.WAITING:
            return False  # not reached: leaving waiting ends the wait (`_set_status`)
        self._end_wait(conn, run_id, now, WaitCause.TIMEOUT.value)
        on_timeout = OnTimeout(wait["on_timeout"])
        reason = f"the wait {wait['wait_id']} timed out (on_timeout: {on_timeout.value})"
        if on_timeout is OnTimeout.RESUME:
            self._resume_from_wait(conn, run_id, now, by="gateway", reason=reason)
        elif on_timeout is OnTimeout.PAUSE:
            self._set_status(conn, run, RunEvent.PAUSE, now, by="gateway", reason=reason, wait_id=wait["wait_id"])
        else:
            self._fail(conn, run, now, by="gateway", reason=reason, rule="wait.on_timeout", wait_id=wait["wait_id"])
        return True
