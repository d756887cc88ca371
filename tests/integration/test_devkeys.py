"""`make run`'s keys (gateway/cli/devkeys.py): made once, kept across restarts, on a real SQLite file."""

from __future__ import annotations

import stat
import subprocess
from pathlib import Path

import pytest

from gateway.cli import devkeys
from gateway.clock import SystemClock
from gateway.config import Settings, load_settings
from gateway.domain import api_key_hash
from gateway.store.factory import open_store

pytestmark = pytest.mark.anyio

ADMIN = "wk-admin-test-key-0123456789"


def settings_in(folder: Path) -> Settings:
    config = folder / "warrant.yaml"
    config.write_text(
        "database: sqlite:///w.db\n"
        "api_keys:\n  - {name: ops, tenant: acme, roles: [admin], key_env: WARRANT_ADMIN_KEY}\n"
    )
    return load_settings(config, {"WARRANT_ADMIN_KEY": ADMIN, "WARRANT_LEDGER_KEY": "devkeys-test"})


async def stored_keys(settings: Settings) -> list[tuple[str, str, str]]:
    """(name, roles, status) of every stored key, oldest first."""
    async with open_store(settings.database, clock=SystemClock(), ledger_key=settings.ledger_key) as store:
        page = await store.list_api_keys("acme")
        now = SystemClock().now()
        return [(k.name, ",".join(sorted(k.roles)), k.status(now).value) for k in page.items]


async def test_a_restart_keeps_every_key(tmp_path: Path) -> None:
    settings = settings_in(tmp_path)
    first = await devkeys.prepare(settings, ADMIN, {})
    assert set(first) == {"WARRANT_ADMIN_KEY", "APPROVER_KEY", "WORKER_KEY"}
    again = await devkeys.prepare(settings, ADMIN, first)
    assert again == first
    assert await stored_keys(settings) == [("approver", "approver", "active"), ("agent", "worker", "active")]
    async with open_store(settings.database, clock=SystemClock(), ledger_key=settings.ledger_key) as store:
        found = await store.find_api_key(api_key_hash(first["APPROVER_KEY"]))
    assert found is not None and found.created_by == "ops"


async def test_a_revoked_key_is_made_anew_and_the_others_kept(tmp_path: Path) -> None:
    settings = settings_in(tmp_path)
    first = await devkeys.prepare(settings, ADMIN, {})
    principal = devkeys.bootstrap_principal(settings, ADMIN)
    async with open_store(settings.database, clock=SystemClock(), ledger_key=settings.ledger_key) as store:
        approver = await store.find_api_key(api_key_hash(first["APPROVER_KEY"]))
        assert approver is not None
        await store.revoke_api_key(principal, approver.key_id, reason="left")
    again = await devkeys.prepare(settings, ADMIN, first)
    assert again["APPROVER_KEY"] != first["APPROVER_KEY"]
    assert again["WORKER_KEY"] == first["WORKER_KEY"]
    assert await stored_keys(settings) == [
        ("approver", "approver", "revoked"),
        ("agent", "worker", "active"),
        ("approver", "approver", "active"),
    ]


async def test_a_lost_keys_file_replaces_the_keys_under_their_names(tmp_path: Path) -> None:
    """One valid key per name: the old ones are revoked (with a reason) so that new ones can be made."""
    settings = settings_in(tmp_path)
    first = await devkeys.prepare(settings, ADMIN, {})
    again = await devkeys.prepare(settings, ADMIN, {})
    assert again["APPROVER_KEY"] != first["APPROVER_KEY"] and again["WORKER_KEY"] != first["WORKER_KEY"]
    statuses = [status for _name, _roles, status in await stored_keys(settings)]
    assert statuses == ["revoked", "revoked", "active", "active"]


def test_the_keys_file_is_its_owners_alone_and_sources_in_a_shell(tmp_path: Path) -> None:
    keys = {"WARRANT_ADMIN_KEY": ADMIN, "APPROVER_KEY": "wak_approver", "WORKER_KEY": "wak_worker"}
    path = tmp_path / ".warrant" / devkeys.ENV_FILE
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "warrant").write_text("#!/bin/sh\n")
    (tmp_path / "bin" / "warrant").chmod(0o755)
    devkeys.write_env_file(path, keys, "http://127.0.0.1:8700", tmp_path / "bin")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert devkeys.read_env_file(path) == keys | {
        "WARRANT_URL": "http://127.0.0.1:8700",
        "WARRANT_API_KEY": "$WORKER_KEY",
        "PATH": f"{tmp_path / 'bin'}:$PATH",
    }
    shown = subprocess.run(
        ["bash", "-c", f'source {path} && echo "$WARRANT_API_KEY $APPROVER_KEY $WARRANT_URL" && command -v warrant'],
        env={"PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=False,
    )
    assert shown.stdout.splitlines() == [
        "wak_worker wak_approver http://127.0.0.1:8700",
        str(tmp_path / "bin" / "warrant"),
    ]
    devkeys.write_env_file(path, keys | {"WORKER_KEY": "wak_other"}, "http://127.0.0.1:8700", tmp_path / "bin")
    assert devkeys.read_env_file(path)["WORKER_KEY"] == "wak_other"  # replaced whole, still the owner's alone
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
