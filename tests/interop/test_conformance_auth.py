"""The MCP conformance suite's authorization-server scenarios, against Warrant with OAuth on.

`@modelcontextprotocol/conformance` 0.2.0-alpha.12 has two kinds of `auth` scenario. The
`auth/*` client scenarios (`conformance client`) test an MCP *client*: the suite plays the
resource server and the authorization server itself, so they cannot be pointed at a server.
Its `server` scenarios have none about authorization (nothing checks a 401, the protected
resource metadata or audience). What does apply is `conformance authorization`, which tests an
*authorization server*, and Warrant is one (of its own /mcp): `authorization-server-metadata-endpoint`
(RFC 8414 metadata: issuer, endpoints, `code` and S256, `client_id_metadata_document_supported`)
and `authorization-code-grant` (a real authorization request with PKCE and `resource`, a person
completing it, the callback's code and state, the token response's fields and headers).

The suite prints the authorization URL and waits on its own callback listener; the person here is
`FormBrowser` (the console's sign-in and consent forms over HTTP), whose last redirect, to the
suite's callback, is then followed. The client is registered first (RFC 7591) as a public one:
the suite picks `none` whenever the metadata offers it, which Warrant's does. `--url` is the
issuer exactly as the metadata states it (`http://127.0.0.1:PORT`), since the suite compares the
two as strings.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.api.conftest import Api
from tests.harness import eventually, free_port
from tests.interop.nodejs import CONFORMANCE, node_executable
from tests.oauth.conftest import FormBrowser, code_of, oauth_api  # noqa: F401 - the real gateway, OAuth on

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

SCENARIOS = ["authorization-server-metadata-endpoint", "authorization-code-grant"]
RESULT_DIR = re.compile(r"^authorization-server-(?P<scenario>.+)-\d{4}-\d{2}-\d{2}T[\d-]+Z$")
TIME_LIMIT = 60.0


def results(out: Path) -> dict[str, list[dict[str, Any]]]:
    found: dict[str, list[dict[str, Any]]] = {}
    for checks in out.glob("authorization-server-*/checks.json"):
        match = RESULT_DIR.match(checks.parent.name)
        assert match, checks
        found[match["scenario"]] = json.loads(checks.read_text())
    return found


async def register_public_client(base: str, redirect_uri: str) -> str:
    async with httpx.AsyncClient(base_url=base, timeout=10) as http:
        answer = await http.post(
            "/register",
            json={
                "client_name": "MCP conformance suite",
                "redirect_uris": [redirect_uri],
                "token_endpoint_auth_method": "none",
                "grant_types": ["authorization_code", "refresh_token"],
                "response_types": ["code"],
            },
        )
    assert answer.status_code == 201, answer.text
    client_id: str = answer.json()["client_id"]
    return client_id


async def test_authorization_server_scenarios_pass(oauth_api: Api, tmp_path: Path) -> None:  # noqa: F811
    run_id = await oauth_api.new_run()
    port = free_port()
    client_id = await register_public_client(oauth_api.url, f"http://127.0.0.1:{port}/callback")
    async with httpx.AsyncClient(timeout=10) as http:
        issuer = (await http.get(f"{oauth_api.url}/.well-known/oauth-authorization-server")).json()["issuer"]
    out = tmp_path / "results"
    process = await asyncio.create_subprocess_exec(
        node_executable(),
        str(CONFORMANCE),
        "authorization",
        "--url",
        issuer,  # the suite holds the metadata's issuer to exactly this string
        "--client-id",
        client_id,
        "--resource",
        f"{oauth_api.url}/mcp",
        "--port",
        str(port),
        "-o",
        str(out),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        stdin=asyncio.subprocess.DEVNULL,
        env={**os.environ, "NO_COLOR": "1"},
    )
    assert process.stdout is not None and process.stderr is not None
    printed: list[str] = []
    try:
        # The suite prints the authorization request for a person to open in a browser.
        async with asyncio.timeout(TIME_LIMIT):
            while True:
                line = (await process.stdout.readline()).decode()
                assert line, f"the suite ended before asking for a sign-in:\n{''.join(printed)}"
                printed.append(line)
                if line.startswith(f"{oauth_api.url}/authorize?"):
                    authorization_url = line.strip()
                    break
                if line.startswith("Waiting up to"):
                    raise AssertionError(f"no authorization URL printed:\n{''.join(printed)}")
        browser = FormBrowser(oauth_api.url, "key-op")
        answer = await browser.consent(authorization_url, f"run:{run_id}")
        code_of(answer)  # a 303 to the suite's callback, with a code
        assert answer.headers["location"].startswith(f"http://127.0.0.1:{port}/callback?")
        async with httpx.AsyncClient(timeout=10) as http:

            async def called_back() -> httpx.Response | None:
                try:  # the suite starts its callback listener as it prints the URL
                    return await http.get(answer.headers["location"])
                except httpx.ConnectError:
                    return None

            callback = await eventually(called_back, wait=5, every=0.1)
        assert callback.status_code == 200, callback.text
        async with asyncio.timeout(TIME_LIMIT):
            rest, stderr = await process.communicate()
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    printed.append(rest.decode())
    transcript = "".join(printed) + stderr.decode()

    found = results(out)
    assert sorted(found) == sorted(SCENARIOS), transcript
    for scenario in SCENARIOS:
        statuses = {c["id"]: c["status"] for c in found[scenario]}
        assert statuses and set(statuses.values()) == {"SUCCESS"}, f"{scenario}: {found[scenario]}\n{transcript}"
    assert process.returncode == 0, transcript

    # It was a real sign-in: the code the suite redeemed is used, and its grant holds the run's lease.
    (grant,) = await oauth_api.gateway.store.list_oauth_grants("acme", run_id)
    assert grant.client_id == client_id and grant.code_used_at is not None and grant.revoked_at is None
    checks = found["authorization-server-metadata-endpoint"]
    (metadata,) = (c for c in checks if c["id"] == "authorization-server-metadata")
    assert metadata["details"]["body"]["client_id_metadata_document_supported"] is True
