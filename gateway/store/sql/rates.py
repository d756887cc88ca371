"""The rate arithmetic's one home: one call taken from every scope's rate, or from none (migration 0010).

Used inside the admit (`LimitOps._limit_refusal`), for an API request (`LimitOps.take_rate`) and
for the refusals a lease token may have recorded (`SqlBase._refusal_allowed`): a module of its own,
under both, so that neither imports the other.
"""

from __future__ import annotations

from collections.abc import Sequence

from gateway.domain.limits import Rate, step
from gateway.store.sql.connection import Conn

_TAT = "SELECT tat FROM rate_limits WHERE scope = ?"
_SET_TAT = "INSERT INTO rate_limits (scope, tat) VALUES (?, ?) ON CONFLICT (scope) DO UPDATE SET tat = excluded.tat"


def take(conn: Conn, scopes: Sequence[tuple[str, Rate]], now: float) -> tuple[str, float] | None:
    """One call from every scope's rate, or from none: the first scope that refuses, and how long
    until it would admit. Written only when all admit."""
    taken: list[tuple[str, float]] = []
    for scope, rate in scopes:
        row = conn.execute(_TAT, (scope,)).fetchone()
        decided = step(rate, row[0] if row is not None else None, now)
        if not decided.admitted:
            return scope, decided.retry_after
        taken.append((scope, decided.tat))
    for scope, tat in taken:
        conn.execute(_SET_TAT, (scope, tat))
    return None
