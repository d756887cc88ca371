"""`warrant runs connections` and `warrant runs disconnect` as a person or a script runs them:
`python -m gateway.cli ...` subprocesses (tests/e2e/test_cli.py's way) against a real gateway with
MCP authorization on, whose clients signed in through the consent page. Codes are asserted, never
message text."""

from __future__ import annotations

import json
import subprocess
import sys

import anyio
import pytest

from tests.api.conftest import Api
from tests.api.test_cli_keys import warrant as in_process
from tests.e2e.serving import ROOT, clean_environ
from tests.oauth.conftest import connect_client, mcp_status, refresh

pytestmark = pytest.mark.anyio

WAIT = 20.0


async def warrant(api: Api, key: str, *argv: str) -> subprocess.CompletedProcess[str]:
    """`warrant ARGV --url URL` with `key-KEY` as WARRANT_API_KEY, bounded by WAIT."""
    env = clean_environ() | {"WARRANT_API_KEY": f"key-{key}"}
    with anyio.fail_after(WAIT):
        done = await anyio.run_process(
            [sys.executable, "-m", "gateway.cli", *argv, "--url", api.url], env=env, cwd=ROOT, check=False
        )
    return subprocess.CompletedProcess(done.args, done.returncode, done.stdout.decode(), done.stderr.decode())


async def test_list_disconnect_and_the_lease_is_free_for_the_next_worker(oauth_api: Api) -> None:
    run_id = await oauth_api.new_run()
    connected = await connect_client(oauth_api, run_id, name="Cursor on ana's box")
    listed = await warrant(oauth_api, "aud", "runs", "connections", run_id)
    assert listed.returncode == 0, listed.stderr
    header, row = listed.stdout.splitlines()
    assert header.split() == ["GRANT_ID", "CLIENT", "CONSENTED_BY", "CONSENTED", "REFRESHED", "EPOCH", "STATUS"]
    assert row.startswith(connected.grant_id) and row.endswith("active")
    # (control characters in a name are refused at registration: tests/oauth/test_registration.py)
    assert "Cursor on ana's box" in row

    async with oauth_api.client("op") as c:  # held by the client's grant: the acquire below is not vacuous
        busy = await c.post(f"/api/runs/{run_id}/lease", json={"worker": "next-worker"})
    assert (busy.status_code, busy.json()["error"]["code"]) == (409, "lease_held")
    done = await warrant(oauth_api, "op", "runs", "disconnect", run_id, connected.grant_id, "--reason", "lost laptop")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"{connected.grant_id} (") and "revoked by op: lost laptop" in done.stdout

    assert (await mcp_status(oauth_api, connected.access_token)).status_code == 401
    refused = await refresh(oauth_api, connected)
    assert (refused.status_code, refused.json()["error"]) == (400, "invalid_grant")
    acquired = await warrant(oauth_api, "op", "leases", "acquire", run_id, "--worker", "next-worker")
    assert acquired.returncode == 0, acquired.stderr  # no --takeover needed
    assert acquired.stdout.strip().startswith("wl_")

    as_json = await warrant(oauth_api, "op", "runs", "connections", run_id, "--json")
    assert as_json.returncode == 0, as_json.stderr
    [item] = json.loads(as_json.stdout)["items"]
    assert (item["status"], item["revoked_reason"], item["revoked_by"]) == ("revoked", "lost laptop", "op")


async def test_refusals_are_one_line_with_their_code_and_change_nothing(
    oauth_api: Api, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """In process (tests/api/test_cli_keys.py's way: `main` on a thread), to keep the file fast."""
    run_id = await oauth_api.new_run()
    other_run = await oauth_api.new_run()
    connected = await connect_client(oauth_api, run_id)
    grant = connected.grant_id
    monkeypatch.setenv("WARRANT_API_KEY", "key-op")
    with pytest.raises(SystemExit) as exited:  # argparse: --reason is required
        await in_process(oauth_api, capsys, "runs", "disconnect", run_id, grant)
    assert exited.value.code == 2 and "--reason" in capsys.readouterr().err
    for key, argv, code in (
        ("op", (run_id, grant, "--reason", "  "), "[invalid_request]"),
        ("aud", (run_id, grant, "--reason", "audit"), "[forbidden]"),
        ("other", (run_id, grant, "--reason", "not mine"), "[not_found]"),
        ("op", (other_run, grant, "--reason", "wrong run"), "[not_found]"),
        ("op", (run_id, "og_nobody", "--reason", "nobody"), "[not_found]"),
    ):
        monkeypatch.setenv("WARRANT_API_KEY", f"key-{key}")
        status, out, err = await in_process(oauth_api, capsys, "runs", "disconnect", *argv)
        assert (status, out) == (1, ""), (key, argv)
        assert err.splitlines() == [err.strip()] and err.split()[1] == code, argv
    monkeypatch.setenv("WARRANT_API_KEY", "key-wrk")
    status, _, err = await in_process(oauth_api, capsys, "runs", "connections", run_id)
    assert (status, err.split()[1]) == (1, "[forbidden]")
    monkeypatch.setenv("WARRANT_API_KEY", "key-op")
    status, out, _ = await in_process(oauth_api, capsys, "runs", "connections", other_run)
    assert (status, out.strip()) == (0, "no client has signed in for this run")
    status, out, _ = await in_process(oauth_api, capsys, "runs", "connections", run_id)
    assert status == 0 and out.splitlines()[1].endswith("active")
    assert (await mcp_status(oauth_api, connected.access_token)).status_code == 200
