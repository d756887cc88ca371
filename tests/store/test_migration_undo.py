"""Every migration from 0024 on has its undo in tests/store/downgrade.py, so an upgrade test that takes
a store back to an older version takes every later migration with it."""

from __future__ import annotations

from gateway.store.postgres import db as postgres_db
from gateway.store.sqlite import db as sqlite_db
from tests.store.downgrade import UNDO, back_to


def test_every_migration_since_0024_has_its_undo() -> None:
    shipped = {n for n, _ in sqlite_db._migrations()} | {n for n, _ in postgres_db._migrations()}
    missing = sorted(n for n in shipped if n >= 24 and n not in UNDO)
    assert missing == [], f"add the undo of migrations {missing} to tests/store/downgrade.py"


def test_back_to_a_version_undoes_only_the_later_migrations_newest_first() -> None:
    steps = [sql for sql, _ in back_to(24, "sqlite")]
    newest = UNDO[max(UNDO)]("sqlite")[0][0]  # whichever migration is newest goes first
    assert steps[0] == newest and "DROP TABLE drill_runs" in steps and "DROP TABLE event_drops" in steps
    assert steps.index("DROP TABLE drill_runs") < steps.index("DROP TABLE event_drops")
    assert not any("status_cause" in s for s in steps)  # 0024 itself stays
    assert steps[-1] == "DELETE FROM schema_migrations WHERE version > ?"
