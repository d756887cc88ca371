"""The drill's PostgreSQL: a database of its own for every two-replica world, on a server the drill is given.

`warrant drill --postgres URL` names the server (default: `WARRANT_DRILL_POSTGRES`, else the local
one). A world that runs two replicas creates `warrant_drill_<pid>_<random>` on it at its start and
drops it (`WITH (FORCE)`) at its end, whatever the verdict; a failed case's store is dumped into
its folder first (`store.sql`), as a SQLite world's `warrant.db` stays there. The name carries the
drill's process id so that a drill killed before it could drop its databases leaves names the next
drill on the same machine recognizes: databases of a process that is gone are dropped, on a
loopback server only (on another host the process id says nothing).
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import psycopg

DEFAULT_SERVER = "postgresql://postgres@127.0.0.1:5432"
PREFIX = "warrant_drill_"
CONNECT_TIMEOUT = 5  # seconds: a server that does not answer within this is not there
LOOPBACK = {"127.0.0.1", "localhost", "::1", ""}


def database_url(server: str, name: str) -> str:
    """The server's URL with the database `name` in its path (the query, `options=...` say, kept)."""
    parts = urlsplit(server)
    return urlunsplit((parts.scheme, parts.netloc, f"/{name}", parts.query, parts.fragment))


def problem(server: str) -> str | None:
    """Why two-replica cases cannot run against this server (None: they can): it does not answer,
    or it answers but this role may not create databases."""
    try:
        with psycopg.connect(database_url(server, "postgres"), connect_timeout=CONNECT_TIMEOUT) as conn:
            row = conn.execute("SELECT rolcreatedb OR rolsuper FROM pg_roles WHERE rolname = current_user").fetchone()
    except psycopg.Error as exc:
        return f"no PostgreSQL server answers at {redact(server)} ({str(exc).strip().splitlines()[0][:200]})"
    if not row or not row[0]:
        return f"the role of {redact(server)} may not create databases"
    return None


def create_database(server: str) -> str:
    """A new, empty database for one world: its URL. Drops first what a dead drill left behind.

    Raises: psycopg.Error when the server refuses.
    """
    name = f"{PREFIX}{os.getpid()}_{secrets.token_hex(4)}"
    with psycopg.connect(database_url(server, "postgres"), autocommit=True, connect_timeout=CONNECT_TIMEOUT) as conn:
        if urlsplit(server).hostname in LOOPBACK | {None}:
            rows = conn.execute("SELECT datname FROM pg_database WHERE datname LIKE 'warrant\\_drill\\_%'").fetchall()
            for (stale,) in rows:
                pid = stale[len(PREFIX) :].split("_")[0]
                if pid.isdigit() and not process_alive(int(pid)):
                    conn.execute(f'DROP DATABASE IF EXISTS "{stale}" WITH (FORCE)')
        conn.execute(f"CREATE DATABASE \"{name}\" TEMPLATE template0 ENCODING 'UTF8'")
    return database_url(server, name)


def drop_database(url: str) -> None:
    """Drop the world's database, ending any session still on it.

    Raises: psycopg.Error when the server refuses.
    """
    if not is_drill_database(url):  # never anything the drill did not create
        raise ValueError(f"not a drill database: {redact(url)!r}")
    name = urlsplit(url).path.lstrip("/")
    with psycopg.connect(database_url(url, "postgres"), autocommit=True, connect_timeout=CONNECT_TIMEOUT) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def now(url: str) -> float:
    """The database's clock, in epoch seconds: the time every replica's transactions decide by.

    Raises: psycopg.Error when the server does not answer.
    """
    with psycopg.connect(url, connect_timeout=CONNECT_TIMEOUT) as conn:
        row = conn.execute("SELECT extract(epoch FROM clock_timestamp())").fetchone()
    return float(row[0]) if row else 0.0


def is_drill_database(url: str) -> bool:
    """Whether `url` names a database the drill creates (on PostgreSQL)."""
    return url.startswith(("postgresql://", "postgres://")) and urlsplit(url).path.lstrip("/").startswith(PREFIX)


def dump(url: str, into: Path) -> bool:
    """The database as SQL in `into` (pg_dump, when it is installed): the store's evidence."""
    pg_dump = shutil.which("pg_dump")
    if pg_dump is None:
        return False
    done = subprocess.run([pg_dump, "--no-owner", "-f", str(into), url], capture_output=True, timeout=60, check=False)
    return done.returncode == 0


def redact(url: str) -> str:
    """The URL without its password, for messages."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@")
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


def process_alive(pid: int) -> bool:
    """Whether a process of this machine with that id runs (a database named after it is its own)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
