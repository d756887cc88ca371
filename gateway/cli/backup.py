"""`warrant backup` and `warrant restore` (gateway/store/backup.py, docs/operations.md).

    warrant backup OUT [--config F | --database URL] [--force]    SQLite: an online backup, checked
                                                                  PostgreSQL: the pg_dump commands
    warrant backup --check [BACKUP] [--config F | --database URL] check a backup file or a database
    warrant restore [BACKUP] (--config F | --database URL)        a new store from a backup, its
                                                                  live runs paused

The ledger key comes from the configuration's `ledger_key_env` (`--config`), else
WARRANT_LEDGER_KEY. Each prints its report as JSON. Exit 0: done and checked; 1: the check
failed (nothing written under OUT or the target); 2: bad input (a missing file, a target that
exists, no ledger key, an unreachable database).
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gateway.config import database_of, find_config, ledger_key_env_of
from gateway.errors import ConfigError

if TYPE_CHECKING:
    from gateway.store.backup import Check

# gateway.store.backup (the stores, psycopg) is imported by the two commands that use it: every other
# `warrant` command would pay about half a second for it at start-up.


def add_commands(sub: Any) -> None:
    backup = sub.add_parser("backup", help="back the store up (SQLite: online; PostgreSQL: the pg_dump commands)")
    backup.add_argument("out", nargs="?", help="the backup file to write (with --check: the backup file to check)")
    _source(backup)
    backup.add_argument("--check", action="store_true", help="only check a backup file, or the database")
    backup.add_argument("--force", action="store_true", help="replace OUT if it exists")
    backup.set_defaults(func=_backup)
    restore = sub.add_parser("restore", help="a new store from a backup, every live run paused until resumed")
    restore.add_argument("backup", nargs="?", help="the backup file (PostgreSQL: a pg_dump file, or none)")
    _source(restore)
    restore.set_defaults(func=_restore)


def _source(parser: argparse.ArgumentParser) -> None:
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--config", help="configuration file: its database: and ledger_key_env")
    source.add_argument("--database", help="the store's URL: sqlite:///PATH or postgresql://...")


def _url_and_key(args: argparse.Namespace) -> tuple[str, bytes]:
    """Raises: ConfigError for a missing configuration or ledger key."""
    if args.database:
        url, key_env = args.database, "WARRANT_LEDGER_KEY"
    else:
        path = find_config(args.config)
        url, key_env = database_of(path), ledger_key_env_of(path)
    key = os.environ.get(key_env, "")
    if not key:
        raise ConfigError(f"set {key_env} to the ledger key: the ledger is verified with it")
    return url, key.encode()


def _report(check: Check) -> int:
    print(json.dumps(check.as_dict(), indent=2))
    return 0 if check.ok else 1


def _backup(args: argparse.Namespace) -> int:
    from gateway.store.backup import backup_sqlite, check_backup_file, check_store, postgres_guidance
    from gateway.store.postgres.db import is_postgres_url

    url, key = _url_and_key(args)
    if args.check:
        if args.out:  # a backup file (on a copy), whatever the configuration's database is
            return _report(check_backup_file(Path(args.out), key))
        return _report(check_store(url, key))
    if not args.out:
        raise ConfigError("name the backup file: warrant backup OUT")
    if is_postgres_url(url):
        print(postgres_guidance(url, Path(args.out)))
        return 0
    return _report(backup_sqlite(url, Path(args.out), key, force=args.force))


def _restore(args: argparse.Namespace) -> int:
    from gateway.store.backup import restore_postgres, restore_sqlite
    from gateway.store.postgres.db import is_postgres_url

    if not (args.database or args.config):
        raise ConfigError("name the store to restore into: --database URL (or --config F)")
    url, key = _url_and_key(args)
    backup = Path(args.backup) if args.backup else None
    if is_postgres_url(url):
        return _report(restore_postgres(backup, url, key))
    if backup is None:
        raise ConfigError("name the backup file: warrant restore BACKUP --database sqlite:///NEW.db")
    return _report(restore_sqlite(backup, url, key))
