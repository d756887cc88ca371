"""`warrant recovery` and `warrant actions acknowledge|resolve` against a served gateway (the CLI's
synchronous client runs on a thread; the server on the test's loop)."""

from __future__ import annotations

import json

import anyio
import pytest

from gateway.cli import main
from tests.api.conftest import Api
from tests.mcp.test_mcp_front import mcp_client, start

pytestmark = pytest.mark.anyio


async def warrant(api: Api, capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = await anyio.to_thread.run_sync(main, [*argv, "--url", api.url])
    out, err = capsys.readouterr()
    return code, out, err


async def test_acknowledge_resolve_and_the_recovery_package_from_the_cli(
    api: Api, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WARRANT_API_KEY", "key-op")
    run_id, token = await start(api)
    async with mcp_client(api, token, "auto") as c:
        first = await c.call_tool("shop__charge", {"card": "lost"})
        second = await c.call_tool("shop__charge", {"card": "lost", "note": "another payload"})
    unknown = [r.structured_content["error"]["action_id"] for r in (first, second) if r.structured_content]
    assert len(unknown) == 2

    code, out, err = await warrant(api, capsys, "actions", "acknowledge", unknown[0], "--note", "cannot tell")
    assert code == 0, err
    assert "acknowledged by op" in out
    code, out, err = await warrant(
        api, capsys, "actions", "resolve", unknown[1], "--status", "failed", "--evidence", "processor says no"
    )
    assert code == 0, err
    assert out.strip() == f"{unknown[1]}: failed"

    code, out, err = await warrant(api, capsys, "recovery", run_id)
    assert code == 0, err
    assert f"run {run_id} (running, contract v1)" in out
    assert f"uncertain {unknown[0]} shop__charge (acknowledged by op)" in out
    assert "checkpoint: none" in out
    code, out, _ = await warrant(api, capsys, "recovery", run_id, "--json")
    package = json.loads(out)
    assert [u["action_id"] for u in package["effects"]["uncertain"]] == [unknown[0]]

    # A settled action is no longer the operator's to acknowledge: a stable code, exit 1.
    code, out, err = await warrant(api, capsys, "actions", "acknowledge", unknown[1], "--note", "late")
    assert code == 1 and "[invalid_transition]" in err
    monkeypatch.setenv("WARRANT_API_KEY", "key-other")
    code, out, err = await warrant(api, capsys, "recovery", run_id)
    assert code == 1 and "[not_found]" in err
