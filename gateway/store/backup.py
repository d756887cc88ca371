"""Backups and restores of the store (`warrant backup`, `warrant restore`: docs/operations.md).

SQLite: an online backup through SQLite's backup API, taken while `warrant serve` runs (WAL: the
copy reads one consistent snapshot and never blocks the server's writes; no serve lock needed),
written next to OUT and renamed into place only once it is checked: `PRAGMA integrity_check`, the
schema version this gateway's, every run's chain verified with the ledger key.

PostgreSQL: `pg_dump` takes the consistent snapshot (`postgres_guidance` prints the commands);
`warrant restore` loads a dump into an empty database with `pg_restore`, or takes a database
the operator restored, and `check_store` checks either.

A restore copies the backup to a target that does not exist yet (SQLite) or loads an empty
database (PostgreSQL), checks it, then marks it restored (`Store.mark_restored`: every live run
paused, actions in flight unknown) and verifies its ledger again. The backup itself is never
written to.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import shutil
import sqlite3
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg

from gateway.clock import SystemClock, isoformat
from gateway.errors import ConfigError, StoreError
from gateway.store.chain import VerifyReport
from gateway.store.factory import open_store
from gateway.store.postgres.db import redact
from gateway.store.records import Restored
from gateway.store.schema import MigrationsDue
from gateway.store.sqlite.db import BUSY_TIMEOUT_S, SCHEMA_VERSION, sqlite_path

RESTORED_BY = "warrant restore"
PG_RESTORE_TIMEOUT_S = 3600.0


@dataclass
class Check:
    """What a check found; `ok` when every part passed."""

    store: str
    problems: list[str] = field(default_factory=list)
    facts: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.problems

    def as_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, "store": self.store, **self.facts, "problems": self.problems}


# -- checks ----------------------------------------------------------------------------------
def check_store(url: str, ledger_key: bytes, *, migrate: bool = False) -> Check:
    """Integrity (SQLite), schema version and the ledger of the store at `url`. With `migrate`,
    due migrations are applied first (a restore of an older backup); without, they are a problem.

    Raises: ConfigError when there is no SQLite file at `url`."""
    check = Check(redact(url))
    if url.startswith("sqlite://"):
        path = Path(sqlite_path(url))
        if not path.is_file():
            raise ConfigError(f"no SQLite store at {path}")
        integrity = sqlite_integrity(path)
        check.facts["integrity"] = integrity
        if integrity != "ok":
            check.problems.append(f"integrity_check: {integrity}")
            return check
    asyncio.run(_check_opened(url, ledger_key, migrate, check))
    return check


async def _check_opened(url: str, ledger_key: bytes, migrate: bool, check: Check) -> None:
    try:
        async with open_store(url, clock=SystemClock(), ledger_key=ledger_key, migrate=migrate) as store:
            check.facts["schema_version"] = SCHEMA_VERSION
            report = await store.verify_ledger()
    except MigrationsDue as due:
        check.facts["schema_version"] = due.current
        check.problems.append(
            f"schema version {due.current}, this gateway's is {SCHEMA_VERSION}: restore it, then `warrant migrate`"
        )
        return
    except StoreError as exc:
        check.problems.append(exc.message)
        return
    check.facts["ledger"] = report.as_dict()
    if not report.ok:
        check.problems.append("the ledger does not verify (with this ledger key)")


def check_backup_file(path: Path, ledger_key: bytes) -> Check:
    """`check_store` of a SQLite backup file, on a copy: opening a store writes to its file (its
    journal mode, the migrations table), and a backup is never written to.

    Raises: ConfigError when there is no file at `path`."""
    if not path.is_file():
        raise ConfigError(f"no backup at {path}")
    with tempfile.TemporaryDirectory(prefix="warrant-check-") as folder:
        copy = Path(folder) / path.name
        shutil.copyfile(path, copy)
        check = check_store(f"sqlite:///{copy}", ledger_key)
    check.store = str(path)
    return check


def sqlite_integrity(path: Path) -> str:
    """`PRAGMA integrity_check`'s answer ("ok"), or why the file is no SQLite database."""
    try:
        with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as conn:
            rows = conn.execute("PRAGMA integrity_check").fetchall()
    except sqlite3.DatabaseError as exc:
        return f"not a readable SQLite database ({exc})"
    return "; ".join(str(row[0]) for row in rows[:10])


# -- SQLite ----------------------------------------------------------------------------------
def backup_sqlite(url: str, out: Path, ledger_key: bytes, *, force: bool = False) -> Check:
    """An online backup of the SQLite store at `url` into `out`, checked before it is renamed into
    place (a backup that fails its check is removed, and `out` left as it was).

    Raises: ConfigError when there is no store at `url`, or `out` exists (without `force`)."""
    source = Path(sqlite_path(url))
    if not source.is_file():
        raise ConfigError(f"no SQLite store at {source}")
    if out.exists() and not force:
        raise ConfigError(f"{out} exists: choose another name (or --force to replace it)")
    check = checked_into(out, lambda tmp: copy_online(source, tmp), lambda url: check_store(url, ledger_key))
    check.facts["source"] = str(source)
    return check


def checked_into(target: Path, fill: Callable[[Path], object], check_of: Callable[[str], Check]) -> Check:
    """`fill` a partial file beside `target` and check its store (`check_of` its URL); renamed to
    `target` only when the check passed, removed otherwise."""
    with partial(target) as tmp:
        fill(tmp)
        check = check_of(f"sqlite:///{tmp.resolve()}")
        check.store = str(target)
        if check.ok:
            settle_file(tmp)
            os.replace(tmp, target)
            fsync_dir(target.parent)
    return check


def copy_online(source: Path, target: Path) -> None:
    """SQLite's backup API, all pages in one step: one read snapshot, writers never blocked (WAL).
    The copy is left in rollback-journal mode: one self-contained file."""
    with (
        contextlib.closing(sqlite3.connect(source, timeout=BUSY_TIMEOUT_S)) as src,
        contextlib.closing(sqlite3.connect(target)) as dst,
    ):
        src.backup(dst)
        dst.execute("PRAGMA journal_mode=DELETE")


def settle_file(path: Path) -> None:
    """Leave `path` one self-contained file (a check opened it in WAL mode), on disk."""
    with contextlib.closing(sqlite3.connect(path)) as conn:
        conn.execute("PRAGMA journal_mode=DELETE")
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@contextlib.contextmanager
def partial(out: Path) -> Iterator[Path]:
    """A hidden file beside `out` to write first; removed (with its journals) unless renamed."""
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.{secrets.token_hex(4)}.partial")
    try:
        yield tmp
    finally:
        for leftover in (tmp, Path(f"{tmp}-wal"), Path(f"{tmp}-shm"), Path(f"{tmp}-journal"), Path(f"{tmp}.lock")):
            leftover.unlink(missing_ok=True)


def restore_sqlite(backup: Path, url: str, ledger_key: bytes) -> Check:
    """Copy `backup` to the new store at `url`, check it, mark it restored, check again; the
    target appears only when all of it passed.

    Raises: ConfigError when the backup is missing or the target exists."""
    target = Path(sqlite_path(url))
    if not backup.is_file():
        raise ConfigError(f"no backup at {backup}")
    taken = [p for p in (target, Path(f"{target}-wal")) if p.exists()]
    if taken:
        raise ConfigError(f"{taken[0]} exists: restore into a new file (a store is never overwritten)")
    check = checked_into(target, lambda tmp: shutil.copyfile(backup, tmp), lambda url: restore_into(url, ledger_key))
    check.facts["backup"] = str(backup)
    return check


def restore_into(url: str, ledger_key: bytes) -> Check:
    """Check the store at `url` (due migrations applied), mark it restored, verify it again."""
    check = check_store(url, ledger_key, migrate=True)
    if not check.ok:
        return check
    restored, after = asyncio.run(_mark_restored(url, ledger_key))
    check.facts["restored"] = {
        "taken_at": isoformat(restored.taken_at),
        "reason": restored.reason,
        "runs_paused": restored.runs_paused,
        "actions_unknown": restored.actions_unknown,
    }
    check.facts["ledger"] = after.as_dict()
    if not after.ok:
        check.problems.append("the ledger does not verify after the restore")
    return check


async def _mark_restored(url: str, ledger_key: bytes) -> tuple[Restored, VerifyReport]:
    async with open_store(url, clock=SystemClock(), ledger_key=ledger_key) as store:
        return await store.mark_restored(by=RESTORED_BY), await store.verify_ledger()


# -- PostgreSQL ------------------------------------------------------------------------------
def postgres_guidance(url: str, out: Path) -> str:
    """The commands that back a PostgreSQL store up and restore it (printed by `warrant backup`)."""
    shown = redact(url)
    new = redact(url.rsplit("/", 1)[0]) + "/NEW_DATABASE"
    return "\n".join(
        [
            f"{shown}: PostgreSQL is backed up with pg_dump (one consistent snapshot while the gateways serve):",
            "",
            f"  pg_dump --format=custom --no-owner --no-privileges --file={out} '{shown}'",
            "",
            "Restore it into a new, empty database; warrant restore runs pg_restore, checks the ledger and",
            "pauses every live run until an operator resumes it (resume reconciles first):",
            "",
            "  createdb --template=template0 NEW_DATABASE",
            f"  warrant restore {out} --database '{new}'",
            "",
            "or, after your own pg_restore into the new database:",
            "",
            f"  pg_restore --no-owner --no-privileges --exit-on-error --dbname='{new}' {out}",
            f"  warrant restore --database '{new}'",
            "",
            "Check a restored database (schema version, every run's chain with the ledger key):",
            "",
            f"  warrant backup --check --database '{new}'",
        ]
    )


def restore_postgres(backup: Path | None, url: str, ledger_key: bytes) -> Check:
    """Load the pg_dump `backup` into the empty database at `url` (or, without one, take the
    database as restored already), then check it and mark it restored.

    Raises: ConfigError when the database is not empty (with a backup to load), has no store
    (without one), or another process holds locks in it (a gateway serving it), or when
    pg_restore is missing or fails."""
    tables = _postgres_tables(url)
    if backup is not None:
        if not backup.is_file():
            raise ConfigError(f"no backup at {backup}")
        if tables:
            raise ConfigError(f"{redact(url)} is not empty: restore into a new database (createdb)")
        _pg_restore(backup, url)
    elif "schema_migrations" not in tables:
        raise ConfigError(f"{redact(url)} holds no Warrant store: pg_restore the dump into it first")
    check = restore_into(url, ledger_key)
    check.facts["backup"] = str(backup) if backup is not None else "restored by the operator"
    return check


def _postgres_tables(url: str) -> set[str]:
    try:
        with psycopg.connect(url, autocommit=True, connect_timeout=10) as conn:
            others = conn.execute(
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid <> pg_backend_pid() "
                "AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
            ).fetchone()
            if others is not None and others[0]:
                raise ConfigError(
                    f"another process holds locks in {redact(url)} (a gateway serving it?): "
                    "restore into a database nothing else uses"
                )
            rows = conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'").fetchall()
    except psycopg.Error as exc:
        raise ConfigError(f"cannot reach {redact(url)}: {exc}") from exc
    return {row[0] for row in rows}


def _pg_restore(backup: Path, url: str) -> None:
    command = shutil.which("pg_restore")
    if command is None:
        raise ConfigError("pg_restore is not installed (Debian: apt-get install postgresql-client)")
    done = subprocess.run(
        [command, "--no-owner", "--no-privileges", "--exit-on-error", f"--dbname={url}", str(backup)],
        capture_output=True,
        text=True,
        timeout=PG_RESTORE_TIMEOUT_S,
        check=False,
    )
    if done.returncode != 0:
        raise ConfigError(f"pg_restore failed ({done.returncode}): {done.stderr.strip()[-2000:]}")
