"""The SQLite back end: one file, every decision in one `BEGIN IMMEDIATE` transaction.

`SQLiteStore` (store.py) is the shared transactions (gateway/store/sql/) on its database (db.py):
pragmas, migrations, group commit, the checkpointer, and the lock that keeps one `warrant serve`
per file.
"""

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gateway.store.sqlite.db import SCHEMA_VERSION, Database, ServeLock, sqlite_path
    from gateway.store.sqlite.store import SQLiteStore
else:
    from gateway.faces import lazy as _lazy

    __getattr__, __dir__ = _lazy(__name__)

__all__ = ["SCHEMA_VERSION", "Database", "SQLiteStore", "ServeLock", "sqlite_path"]
