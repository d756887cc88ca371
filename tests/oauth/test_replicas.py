"""Two gateway replicas on one PostgreSQL database, behind one public address: every step of a
sign-in may land on either, since the whole state (clients, grants, codes, token hashes) is in the
store and every key is derived from the shared ledger key."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.api.conftest import serving_api
from tests.harness import free_port
from tests.harness_postgres import fresh_database
from tests.oauth.conftest import OAUTH, FormBrowser, write_templates
from tests.oauth.flow import code_for, mcp_call, public_client, refresh, token

pytestmark = pytest.mark.anyio


async def test_a_sign_in_moves_between_replicas(tmp_path: Path) -> None:
    port_a, port_b = free_port(), free_port()
    public = f"http://127.0.0.1:{port_a}"  # what the load balancer would be; the tokens' resource
    extra = OAUTH.replace("oauth: {", f"oauth: {{public_url: '{public}', ")
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    for side in ("a", "b"):
        write_templates(tmp_path / side)
    with fresh_database() as url:
        async with (
            serving_api(tmp_path / "a", extra, database=url, port=port_a) as a,
            serving_api(tmp_path / "b", extra, database=url, port=port_b) as b,
        ):
            run_id = await a.new_run()
            client = await public_client(a.url)  # registered on A
            # Authorized on B, consented on A (the public address), redeemed on B.
            resource = f"{public}/mcp"
            code, verifier = await code_for(
                b.url, FormBrowser(a.url, "key-op"), client, f"run:{run_id}", resource=resource
            )
            issued = await token(
                b.url,
                client,
                grant_type="authorization_code",
                code=code,
                redirect_uri=client.redirect_uri,
                code_verifier=verifier,
                resource=resource,
            )
            assert issued.status_code == 200, issued.text
            tokens = issued.json()
            # The access token works on both; refreshed on B, the new one works on A.
            assert (await mcp_call(f"{a.url}/mcp", tokens["access_token"])).status_code == 200
            assert (await mcp_call(f"{b.url}/mcp", tokens["access_token"])).status_code == 200
            rotated = await refresh(b.url, client, tokens["refresh_token"])
            assert rotated.status_code == 200, rotated.text
            assert (await mcp_call(f"{a.url}/mcp", rotated.json()["access_token"])).status_code == 200
            # The old refresh token, used again on A after B rotated it: the reuse is seen there.
            assert (await refresh(a.url, client, tokens["refresh_token"])).json()["error"] == "invalid_grant"
            for side in (a, b):
                assert (await mcp_call(f"{side.url}/mcp", rotated.json()["access_token"])).status_code == 401
