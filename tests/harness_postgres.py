"""The PostgreSQL backend of tests/harness.py: one schema per test session, emptied before each test.

The server is `WARRANT_TEST_POSTGRES` (default: the local one, 127.0.0.1:5432, trust auth, user
postgres; `.ci/run` starts it). The tests use a database of their own, `warrant_test`, created
when missing. A test session migrates one schema of its own (`t_<pid>_<random>`; the store's
connections reach it through `search_path`) and deletes every row before each test: a fresh
schema per test cost ~0.4 s (its migrations and its drop), deleting the rows ~10 ms
(docs/postgres.md, "Tests"). Schemas left by a session that was killed are dropped by the next.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import psycopg
from psycopg.rows import dict_row

from gateway.clock import ManualClock
from gateway.store.base import Store
from gateway.store.postgres import PostgresStore
from tests.harness import LEDGER_KEY, Tampering

SERVER = os.environ.get("WARRANT_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432")
DATABASE = "warrant_test"


def ensure_database() -> str:
    """The test database's URL, creating the database when missing.

    Raises: psycopg.OperationalError when the server is not running (`.ci/run` starts it).
    """
    with psycopg.connect(f"{SERVER}/postgres", autocommit=True, connect_timeout=5) as conn:
        if conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (DATABASE,)).fetchone() is None:
            try:
                conn.execute(f"CREATE DATABASE \"{DATABASE}\" TEMPLATE template0 ENCODING 'UTF8'")
            except psycopg.errors.DuplicateDatabase:
                pass  # another test process made it first
    return f"{SERVER}/{DATABASE}"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class PostgresBackend(Tampering):
    """The PostgreSQL store in one schema; tampering goes through plain psycopg, outside the store."""

    name = "postgres"

    def __init__(self, database_url: str, schema: str) -> None:
        self.schema = schema
        self._database_url = database_url
        self.url = f"{database_url}?options={quote(f'-csearch_path={schema}')}"

    @classmethod
    def session(cls, database_url: str) -> Iterator[PostgresBackend]:
        """A schema for this test session, dropped at its end (and any a dead session left)."""
        schema = f"t_{os.getpid()}_{uuid.uuid4().hex[:8]}"
        with psycopg.connect(database_url, autocommit=True) as conn:
            for (stale,) in conn.execute("SELECT nspname FROM pg_namespace WHERE nspname LIKE 't\\_%'").fetchall():
                pid = stale.split("_")[1]
                if pid.isdigit() and not _alive(int(pid)):
                    conn.execute(f"DROP SCHEMA {stale} CASCADE")
            conn.execute(f"CREATE SCHEMA {schema}")
        try:
            yield cls(database_url, schema)
        finally:
            with psycopg.connect(database_url, autocommit=True) as conn:
                conn.execute(f"DROP SCHEMA {schema} CASCADE")

    def clear(self) -> None:
        """Every row gone, the schema kept: the next test starts from an empty store."""
        with psycopg.connect(self.url, autocommit=True) as conn, conn.transaction():
            tables = [
                row[0]
                for row in conn.execute(
                    "SELECT tablename FROM pg_tables WHERE schemaname = %s AND tablename != 'schema_migrations'",
                    (self.schema,),
                )
            ]
            # Rows that reference a run go before the runs.
            for table in sorted(tables, key=lambda name: name == "runs"):
                conn.execute(f"DELETE FROM {table}")  # type: ignore[arg-type]

    def store(self, clock: ManualClock, *, process_id: str | None = None, ledger_key: bytes = LEDGER_KEY) -> Store:
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
        )

    def _execute(self, *statements: tuple[str, tuple[Any, ...]]) -> list[dict[str, Any]]:
        with psycopg.connect(self.url, row_factory=dict_row) as conn, conn.transaction():
            rows: list[dict[str, Any]] = []
            for statement, params in statements:
                cursor = conn.execute(statement.replace("?", "%s"), params)  # type: ignore[arg-type]
                rows = cursor.fetchall() if cursor.description else []
            return rows
