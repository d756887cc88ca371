"""`warrant keys` against a real server: the key alone on stdout, `--json` for scripts, codes on failure."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest

from gateway.cli import main
from tests.api.conftest import Api
from tests.api.test_keys import status_with

pytestmark = pytest.mark.anyio


async def warrant(api: Api, capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """Run the CLI on a thread (its HTTP client blocks; the server runs on this event loop)."""
    capsys.readouterr()
    code = await anyio.to_thread.run_sync(main, [*argv, "--url", api.url])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def admin_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WARRANT_API_KEY", "key-ops")


async def test_create_prints_the_key_alone_and_it_works(api: Api, capsys: Any, admin_env: None) -> None:
    code, out, err = await warrant(
        api, capsys, "keys", "create", "--name", "ci", "--role", "operator", "--role", "auditor"
    )
    assert code == 0, err
    key = out.strip()
    assert key.startswith("wak_") and "\n" not in key
    assert "shown once" in err and "operator" in err
    assert await status_with(api, key) == 200


async def test_list_revoke_and_rotate_in_json_for_scripts(api: Api, capsys: Any, admin_env: None) -> None:
    code, out, _ = await warrant(api, capsys, "keys", "create", "--name", "bot", "--role", "worker", "--json")
    created = json.loads(out)
    assert code == 0 and created["roles"] == ["worker"]
    code, out, _ = await warrant(api, capsys, "keys", "rotate", created["key_id"], "--overlap", "1h", "--json")
    rotated = json.loads(out)
    assert code == 0 and rotated["rotated_from"] == created["key_id"]
    code, out, _ = await warrant(api, capsys, "keys", "revoke", rotated["key_id"], "--reason", "test", "--json")
    assert code == 0 and json.loads(out)["status"] == "revoked"
    assert await status_with(api, rotated["key"]) == 401
    code, out, _ = await warrant(api, capsys, "keys", "list", "--json")
    statuses = {k["key_id"]: k["status"] for k in json.loads(out)["items"]}
    assert (statuses[created["key_id"]], statuses[rotated["key_id"]]) == ("active", "revoked")
    code, out, _ = await warrant(api, capsys, "keys", "list")
    assert code == 0 and out.splitlines()[0].split() == ["KEY_ID", "NAME", "ROLES", "STATUS", "SOURCE", "EXPIRES"]
    assert created["key_id"] in out and created["key"] not in out


async def test_failures_exit_non_zero_with_the_code(api: Api, capsys: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WARRANT_API_KEY", "key-ops")
    code, _, err = await warrant(api, capsys, "keys", "create", "--name", "x", "--role", "admin", "--tenant", "globex")
    assert code == 1 and "[tenant_mismatch]" in err
    code, out, _ = await warrant(api, capsys, "keys", "revoke", "key_nothing", "--json")
    assert code == 1 and json.loads(out)["error"]["code"] == "not_found"
    monkeypatch.setenv("WARRANT_API_KEY", "key-op")
    code, _, err = await warrant(api, capsys, "keys", "list")
    assert code == 1 and "[forbidden]" in err
    monkeypatch.delenv("WARRANT_API_KEY")
    code, _, err = await warrant(api, capsys, "keys", "list")
    assert code == 1 and "[unauthenticated]" in err
