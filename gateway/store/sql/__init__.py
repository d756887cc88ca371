"""The transactions both back ends share: `SqlStore`, over the connection protocol.

Every store method is written once, here, as synchronous transaction functions `tx(conn)` run by a
`Database` (connection.py): SQLite runs each in one `BEGIN IMMEDIATE` transaction
(gateway/store/sqlite/), PostgreSQL in one SERIALIZABLE transaction, run again on a serialization
failure (gateway/store/postgres/). The functions use only what both offer: `conn.execute(sql,
params)` with `?` placeholders, `fetchone`, `fetchall`, `rowcount`, rows by name and position,
and SQL both dialects read alike (postgres/db.py refuses a SQLite-only form the first time it runs).
`SqlStore` (store.py) is split by concern into the parts it inherits (runs.py, gate.py,
approvals.py, ...) over `SqlBase` (base.py: the database, clock, ledger key and shared helpers).

What differs per back end is a hook on `SqlBase` that each back end provides: `_aside` (a long
read), `_process_alive` (another replica still running), `_announce_hard_cancel`, and
`GateOps._settling_soon` (a default that does nothing on SQLite), besides the port methods
`cancel_notices` and `health`.

A new store method goes, in order:
1. its port: the method and its docstring (what it does, what it raises) on the role protocol it
   belongs to in gateway/store/ports.py (a new role if no consumer's role fits; `Store` inherits
   every role);
2. its transaction: the method on the part of `SqlStore` it belongs to here, one
   `self._db.transaction(tx, durable=...)` or `self._db.read(fn)` (`self._aside(fn)` for a long
   read), in SQL both dialects read; a migration under gateway/store/migrations/ for each back end
   when it needs a column or table;
3. a back-end hook, only when SQLite and PostgreSQL must differ: an abstract method on `SqlBase`
   implemented in sqlite/store.py and postgres/store.py;
4. its contract test in tests/store/, which runs on both back ends (the `backend` fixture);
   tests/store/test_ports.py fails until both back ends have every role method.
"""

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gateway.store.sql.base import SqlBase
    from gateway.store.sql.connection import Conn, Cursor, Database, Row
    from gateway.store.sql.rows import Chain
    from gateway.store.sql.store import SqlStore
else:
    from gateway.faces import lazy as _lazy

    __getattr__, __dir__ = _lazy(__name__)

__all__ = ["Chain", "Conn", "Cursor", "Database", "Row", "SqlBase", "SqlStore"]
