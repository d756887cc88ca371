"""The PostgreSQL back end: one database that several gateway replicas share.

`PostgresStore` (store.py) is the shared transactions (gateway/store/sql/) run SERIALIZABLE on a
pool (db.py), with the hard cancels announced across the replicas (notices.py). docs/postgres.md
says why, and what differs from SQLite.
"""

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gateway.store.postgres.db import PostgresDatabase, is_postgres_url, redact
    from gateway.store.postgres.store import PostgresStore
else:
    from gateway.faces import lazy as _lazy

    __getattr__, __dir__ = _lazy(__name__)

__all__ = ["PostgresDatabase", "PostgresStore", "is_postgres_url", "redact"]
