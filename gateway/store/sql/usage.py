"""The store's reported spend (`charges`); what a pilot report reads is gateway/store/sql/reports.py.

A charge is recorded in ONE transaction with the run's spend counter it moves and the ledger
entries that say so, so the counter, the rows and the chain never disagree.
"""

from __future__ import annotations

from gateway.domain import lifecycle
from gateway.domain.report import Charge, ChargeRecorded, charge_tag
from gateway.domain.units import MAX_MONEY, format_money
from gateway.errors import Code, Conflict, InvalidRequest, Refusal
from gateway.ids import new_id
from gateway.store.records import Principal
from gateway.store.sql.base import SqlBase
from gateway.store.sql.connection import Conn
from gateway.store.sql.reports import charge_of
from gateway.store.sql.rows import run_from_row

_CHARGE_COLUMNS = "charge_id, run_id, kind, tag, amount, note, ref, principal, created_at"
_charge = charge_of


class UsageOps(SqlBase):
    async def report_usage(
        self, principal: Principal, run_id: str, *, kind: str, amount: int, note: str | None, ref: str | None
    ) -> ChargeRecorded:
        def tx(conn: Conn) -> ChargeRecorded | Refusal:
            now = self._clock.now()
            run = self._expire_if_due(conn, run_from_row(self._run_row(conn, run_id, principal.tenant)), now)
            if ref is not None:
                prior = conn.execute(
                    f"SELECT {_CHARGE_COLUMNS} FROM charges WHERE run_id = ? AND ref = ?", (run_id, ref)
                ).fetchone()
                if prior is not None:
                    charge = _charge(prior)
                    if (charge.kind, charge.amount, charge.note) != (kind, amount, note):
                        raise Conflict(
                            f"ref {ref!r} was reported before with another kind, amount or note",
                            code=Code.IDEMPOTENCY_CONFLICT,
                            charge_id=charge.charge_id,
                        )
                    return ChargeRecorded(charge, run.snapshot(), replayed=True)
            if run.status.terminal:
                # A run that ended takes no new charges: its lineage's totals are final (a successor
                # starts from them), and nothing may move a counter nobody watches any more.
                return lifecycle.status_refusal(run.status)  # returned: an expiry found here commits
            if run.spent["spend"] + amount > MAX_MONEY:
                raise InvalidRequest(
                    f"the run's spend would pass {format_money(MAX_MONEY, run.currency)} {run.currency}, "
                    "the most a counter holds",
                    code=Code.AMOUNT_OUT_OF_RANGE,
                    problems=[{"field": "amount", "problem": "the run's spent counter would pass its bound"}],
                    bound=format_money(MAX_MONEY, run.currency),
                )
            row = conn.execute("SELECT last_resumed_at, last_checkpoint_at FROM runs WHERE run_id = ?", (run_id,))
            resumed_at, checkpoint_at = row.fetchone()
            charge = Charge(
                charge_id=new_id("chg"),
                run_id=run_id,
                kind=kind,
                tag=charge_tag(kind, resumed_at, checkpoint_at),
                amount=amount,
                note=note,
                ref=ref,
                principal=principal.name,
                created_at=now,
            )
            conn.execute(
                f"INSERT INTO charges (tenant, {_CHARGE_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    run.tenant,
                    charge.charge_id,
                    run_id,
                    kind,
                    charge.tag,
                    amount,
                    note,
                    ref,
                    principal.name,
                    now,
                ),
            )
            # A reported cost already happened: it is spent even past the limit (never refused).
            conn.execute(
                "UPDATE runs SET spend_spent = spend_spent + ?, updated_at = ? WHERE run_id = ?", (amount, now, run_id)
            )
            money = run.currency
            self._event(
                conn,
                run_id,
                "usage_reported",
                now,
                charge_id=charge.charge_id,
                kind=kind,
                tag=charge.tag,
                amount=format_money(amount, money),
                note=note,
                ref=ref,
                by=principal.name,
            )
            spent, limit = run.spent["spend"] + amount, run.limits["spend"]
            overrun = spent > limit
            if overrun:
                self._event(
                    conn,
                    run_id,
                    "budget_overrun",
                    now,
                    charge_id=charge.charge_id,
                    dimension="spend",
                    spent=format_money(spent, money),
                    limit=format_money(limit, money),
                )
            after = run_from_row(self._run_row(conn, run_id))
            return ChargeRecorded(charge, after.snapshot(), replayed=False, overrun=overrun)

        result = await self._db.transaction(tx, durable=True)
        if isinstance(result, Refusal):
            raise result
        return result
