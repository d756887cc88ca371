"""Schema versions: which shipped migrations a store needs, the same rule for both back ends.

Migrations are numbered files (`migrations/sqlite/NNNN_*.sql`, and their PostgreSQL twins of the
same number); a store records the numbers it has applied in `schema_migrations`.
"""

from __future__ import annotations

from gateway.errors import StoreError


class MigrationsDue(StoreError):
    """The store needs migrations this gateway ships, and it was asked not to apply them."""

    def __init__(self, message: str, *, current: int, pending: list[int]) -> None:
        super().__init__(message)
        self.current = current
        self.pending = pending


def check_migrations(applied: set[int], shipped: list[int], *, where: str, apply: bool) -> list[int]:
    """The shipped migrations to apply, in order (both back ends).

    Raises: StoreError when the store is newer than this gateway, when it lacks a migration
    numbered below one it has (two branches merged out of order: refused, as Flyway does, rather
    than diverge), or when migrations are due and `apply` is off (`migrate_on_start: false`).
    """
    current = max(applied, default=0)
    newest = max(shipped, default=0)
    if current > newest:
        raise StoreError(
            f"the store at {where} has schema version {current}, newer than this gateway's {newest}: "
            "upgrade the gateway"
        )
    skipped = [v for v in shipped if v < current and v not in applied]
    if skipped:
        raise StoreError(
            f"the store at {where} is at schema version {current} but lacks migration(s) "
            f"{', '.join(map(str, skipped))}: renumber them above {current}"
        )
    pending = [v for v in sorted(shipped) if v > current]
    if pending and not apply:
        raise MigrationsDue(
            f"the store at {where} is at schema version {current}, this gateway needs {newest}: "
            "run `warrant migrate` (migrate_on_start is off)",
            current=current,
            pending=pending,
        )
    return pending
