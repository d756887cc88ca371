"""`warrant migrate`: the store's schema brought to this gateway's, on both back ends; and a gateway
told not to migrate at start-up (`migrate_on_start: false`) refusing a store that needs it."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from gateway.cli import main
from gateway.clock import ManualClock
from gateway.errors import StoreError
from gateway.store.factory import migrate, open_store
from gateway.store.sqlite.db import SCHEMA_VERSION, ServeLock, _migrations
from tests.e2e.serving import clean_environ
from tests.harness import LEDGER_KEY, free_port
from tests.harness_postgres import fresh_database

pytestmark = pytest.mark.anyio
SHIPPED = [version for version, *_ in _migrations()]  # numbers may skip one another branch holds
EVERY = ", ".join(map(str, SHIPPED))


@pytest.fixture(params=["sqlite", "postgres"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'warrant.db'}"
    else:
        with fresh_database() as database:
            yield database


def test_migrate_applies_what_is_due_once_and_check_says_so(url: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["migrate", "--database", url, "--check"]) == 1
    assert f"schema version 0; due: {EVERY}" in capsys.readouterr().out
    assert main(["migrate", "--database", url]) == 0
    assert f"applied {EVERY}; schema version {SCHEMA_VERSION}" in capsys.readouterr().out
    assert main(["migrate", "--database", url]) == 0
    assert "nothing to apply" in capsys.readouterr().out
    assert main(["migrate", "--database", url, "--check"]) == 0


async def test_a_gateway_that_does_not_migrate_at_start_refuses_a_store_that_needs_it(url: str) -> None:
    with pytest.raises(StoreError, match="run `warrant migrate`"):
        async with open_store(url, clock=ManualClock(), ledger_key=LEDGER_KEY, migrate=False):
            pass
    assert await migrate(url, apply=True) == SHIPPED
    async with open_store(url, clock=ManualClock(), ledger_key=LEDGER_KEY, migrate=False) as store:
        assert (await store.verify_ledger()).as_dict()["ok"]


def test_migrate_reads_the_database_from_the_configuration_without_its_secrets(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "warrant.yaml"
    config.write_text(
        "database: sqlite:///data/w.db\napi_keys:\n  - {name: ops, tenant: t, roles: [admin], key_env: UNSET_KEY}\n"
    )
    assert main(["migrate", "--config", str(config)]) == 0
    assert (tmp_path / "data" / "w.db").exists()
    assert f"schema version {SCHEMA_VERSION}" in capsys.readouterr().out


def test_migrate_refuses_a_sqlite_file_a_gateway_is_serving(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "w.db"
    lock = ServeLock(str(path))
    lock.acquire()
    try:
        assert main(["migrate", "--database", f"sqlite:///{path}"]) == 2
        assert "warrant:" in capsys.readouterr().err
    finally:
        lock.release()


def test_warrant_serve_without_migrations_at_start_exits_with_one_line_naming_warrant_migrate(tmp_path: Path) -> None:
    config = tmp_path / "warrant.yaml"
    config.write_text(f"database: sqlite:///w.db\nmigrate_on_start: false\nlisten: {{port: {free_port()}}}\n")
    env = clean_environ() | {"WARRANT_LEDGER_KEY": "k" * 32}
    done = subprocess.run(
        [sys.executable, "-m", "gateway.cli", "serve", "--config", str(config)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines()[-1].startswith("warrant: the store at"), done.stderr
    assert "run `warrant migrate`" in done.stderr
