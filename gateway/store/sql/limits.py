"""The store's part of the limits: rate counters and the per-run concurrency cap (migration 0010),
the limits shared by every run (migration 0028: the index that counts a tool's calls in flight).

Both are decided inside a transaction the caller already runs (the admit, gate step 6), or in one
transaction of their own for an API request. On PostgreSQL the same functions run SERIALIZABLE,
so two replicas admitting calls for one tenant at once cannot both take its last slot.
"""

from __future__ import annotations

from collections.abc import Sequence

from gateway.domain.admission import RunSnapshot
from gateway.domain.limits import CONCURRENCY_RETRY_S, SHARED_PREFIX, CallLimits, Rate, SharedCap
from gateway.domain.shared_limits import concurrency_refusal, rate_refusal, slots_since
from gateway.errors import Code, Refusal
from gateway.store.sql.base import SqlBase
from gateway.store.sql.connection import Conn
from gateway.store.sql.rates import take

_IN_FLIGHT = "SELECT COUNT(*) FROM actions WHERE run_id = ? AND status = 'admitted'"
# Every run's, every tenant's: the calls of these tools admitted recently enough to hold a slot
# (index actions_shared_in_flight, migration 0028).
_SHARED_IN_FLIGHT = "SELECT COUNT(*) FROM actions WHERE status = 'admitted' AND tool IN ({}) AND created_at >= ?"


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
        for shared in limits.shared:
            refusal = self._shared_refusal(conn, shared, now)
            if refusal is not None:
                return refusal
        refused = take(conn, limits.rates, now)
        if refused is None:
            return None
        scope, wait = refused
        if scope.startswith(SHARED_PREFIX):
            return rate_refusal(scope, wait)
        kind = scope.partition(":")[0]
        return Refusal(
            Code.RATE_LIMITED,
            f"too many calls for this {kind}; try again in {wait:.3g} s",
            limit=kind,
            retry_after_s=round(wait, 3),
        )

    @staticmethod
    def _shared_refusal(conn: Conn, cap: SharedCap, now: float) -> Refusal | None:
        """A shared limit's calls in flight, across every run and replica, against its cap. On
        PostgreSQL the admit is SERIALIZABLE: two replicas that both counted the last slot free
        cannot both commit; one runs again and counts the other's call."""
        if cap.max_concurrent is None:
            return None
        query = _SHARED_IN_FLIGHT.format(", ".join("?" * len(cap.tools)))
        (in_flight,) = conn.execute(query, (*cap.tools, slots_since(cap, now))).fetchone()
        return concurrency_refusal(cap, int(in_flight))
