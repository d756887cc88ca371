"""The store's part of the limits: rate counters and the per-run concurrency cap (migration 0010).

Both are decided inside a transaction the caller already runs (the admit, gate step 6), or in one
transaction of their own for an API request. On PostgreSQL the same functions run SERIALIZABLE,
so two replicas admitting calls for one tenant at once cannot both take its last slot.
"""

from __future__ import annotations

from collections.abc import Sequence

from gateway.domain.admission import RunSnapshot
from gateway.domain.limits import CONCURRENCY_RETRY_S, CallLimits, Rate
from gateway.errors import Code, Refusal
from gateway.store.sql.base import SqlBase
from gateway.store.sql.connection import Conn
from gateway.store.sql.rates import take

_IN_FLIGHT = "SELECT COUNT(*) FROM actions WHERE run_id = ? AND status = 'admitted'"


class LimitOps(SqlBase):
    async def take_rate(self, scopes: Sequence[tuple[str, Rate]]) -> tuple[str, float] | None:
        def tx(conn: Conn) -> tuple[str, float] | None:
            return take(conn, scopes, self._clock.now())

        return await self._db.transaction(tx, durable=False)

    def _limit_refusal(self, conn: Conn, run: RunSnapshot, limits: CallLimits, now: float) -> Refusal | None:
        """The admit's last check, before anything is reserved: the run's calls in flight, then its
        rates (which count the call only when every one of them admits it)."""
        cap = limits.run_concurrency
        if cap is not None:
            (in_flight,) = conn.execute(_IN_FLIGHT, (run.run_id,)).fetchone()
            if in_flight >= cap:
                return Refusal(
                    Code.RATE_LIMITED,
                    f"this run already has {in_flight} calls in flight, its cap; try again when one has settled",
                    limit="run_concurrency",
                    max=cap,
                    retry_after_s=CONCURRENCY_RETRY_S,
                )
        refused = take(conn, limits.rates, now)
        if refused is None:
            return None
        scope, wait = refused
        kind = scope.partition(":")[0]
        return Refusal(
            Code.RATE_LIMITED,
            f"too many calls for this {kind}; try again in {wait:.3g} s",
            limit=kind,
            retry_after_s=round(wait, 3),
        )
