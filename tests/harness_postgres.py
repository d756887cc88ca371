"""The PostgreSQL backend of tests/harness.py: one database per test session, emptied before each test.

The server is `WARRANT_TEST_POSTGRES` (default: the local one, 127.0.0.1:5432, trust auth, user
postgres; `.ci/run` starts it). Tests create and drop their own databases (`fresh_database`):
a test session creates one (`warrant_test_<pid>_<random>`), migrates it once and deletes every
row before each test; a fresh database per test cost 0.3-0.7 s, deleting the rows ~10 ms
(docs/postgres.md, "Tests"). Databases left by a session that was killed are dropped by the next.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Iterator
from typing import Any

import psycopg
from psycopg.rows import dict_row

from gateway.clock import ManualClock
from gateway.domain.events import Outbox
from gateway.drill.postgres import process_alive
from gateway.store import Store
from gateway.store.postgres import PostgresStore
from gateway.store.records import NO_ALERT_ROUTES, AlertRoutes
from tests.harness import LEDGER_KEY, Tampering

SERVER = os.environ.get("WARRANT_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432")
PREFIX = "warrant_test_"


@contextlib.contextmanager
def fresh_database(server: str = SERVER) -> Iterator[str]:
    """A new, empty database of this process's (`warrant_test_<pid>_<random>`), dropped at the end,
    with any that a dead test process left.

    Raises: psycopg.OperationalError when the server is not running (`.ci/run` starts it).
    """
    name = f"{PREFIX}{os.getpid()}_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(f"{server}/postgres", autocommit=True, connect_timeout=5) as conn:
        names = conn.execute("SELECT datname FROM pg_database WHERE datname LIKE 'warrant\\_test\\_%'").fetchall()
        for (stale,) in names:
            pid = stale[len(PREFIX) :].split("_")[0]
            if pid.isdigit() and not process_alive(int(pid)):
                conn.execute(f'DROP DATABASE IF EXISTS "{stale}" WITH (FORCE)')
        conn.execute(f"CREATE DATABASE \"{name}\" TEMPLATE template0 ENCODING 'UTF8'")
    try:
        yield f"{server}/{name}"
    finally:
        with psycopg.connect(f"{server}/postgres", autocommit=True, connect_timeout=5) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


class PostgresBackend(Tampering):
    """The PostgreSQL store in one database; tampering goes through plain psycopg, outside the store."""

    name = "postgres"

    def __init__(self, url: str) -> None:
        self.url = url

    @classmethod
    def session(cls) -> Iterator[PostgresBackend]:
        """A database for this test session, dropped at its end."""
        with fresh_database() as url:
            yield cls(url)

    def clear(self) -> None:
        """Every row gone, the schema kept: the next test starts from an empty store."""
        with psycopg.connect(self.url, autocommit=True) as conn, conn.transaction():
            tables = [
                row[0]
                for row in conn.execute(
                    "SELECT tablename FROM pg_tables WHERE schemaname = 'public' AND tablename != 'schema_migrations'"
                )
            ]
            # Rows that reference another table's go first (a grant's tokens, then its grant, then
            # the run): the foreign keys, read from the catalogue, decide the order.
            references = conn.execute(
                "SELECT conrelid::regclass::text, confrelid::regclass::text FROM pg_constraint "
                "WHERE contype = 'f' AND conrelid <> confrelid"
            ).fetchall()
            left = set(tables)
            while left:
                free = sorted(t for t in left if not any(child in left and parent == t for child, parent in references))
                assert free, f"foreign keys in a cycle among {sorted(left)}"
                for table in free:
                    conn.execute(f"DELETE FROM {table}")  # type: ignore[arg-type]
                left -= set(free)

    def store(
        self,
        clock: ManualClock,
        *,
        process_id: str | None = None,
        ledger_key: bytes = LEDGER_KEY,
        alert_routes: AlertRoutes = NO_ALERT_ROUTES,
        outbox: Outbox | None = None,
    ) -> Store:
        # As the contract tests expect of a store: time moved by hand (the injected clock, not the
        # database's), and a store opened as another process takes the others for gone (a restart).
        # Both PostgreSQL behaviours are tested on their own (tests/store/test_postgres_specific.py).
        return PostgresStore(
            self.url,
            clock=clock,
            ledger_key=ledger_key,
            process_id=process_id,
            pool_size=4,
            database_time=False,
            replica_liveness=False,
            alert_routes=alert_routes,
            outbox=outbox,
        )

    def _execute(self, *statements: tuple[str, tuple[Any, ...]]) -> list[dict[str, Any]]:
        with psycopg.connect(self.url, row_factory=dict_row) as conn, conn.transaction():
            rows: list[dict[str, Any]] = []
            for statement, params in statements:
                cursor = conn.execute(statement.replace("?", "%s"), params)  # type: ignore[arg-type]
                rows = cursor.fetchall() if cursor.description else []
            return rows
