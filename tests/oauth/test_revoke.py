"""RFC 7009 `/revoke` for a public client (token and client_id, no secret): the whole grant ends.

The SDK's revocation request model requires a `client_secret` field, so before Warrant's own
handler (gateway/oauth/routes.py `Revocation`) a public client's revocation was 400 and revoked
nothing, though the metadata offers `none` for the revocation endpoint."""

from __future__ import annotations

import base64
import hashlib
import secrets
from urllib.parse import urlencode

import httpx
import pytest

from tests.api.conftest import Api
from tests.oauth.conftest import FormBrowser, code_of

pytestmark = pytest.mark.anyio

REDIRECT = "http://127.0.0.1:9/callback"


async def signed_in(api: Api, run_id: str) -> tuple[str, dict[str, str]]:
    """A public client registered and signed in for `run_id`: its client_id and token response."""
    async with httpx.AsyncClient(base_url=api.url, timeout=10) as http:
        registered = await http.post(
            "/register",
            json={"client_name": "revoker", "redirect_uris": [REDIRECT], "token_endpoint_auth_method": "none"},
        )
        assert registered.status_code == 201, registered.text
        client_id = registered.json()["client_id"]
        verifier = secrets.token_urlsafe(40)
        challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
        query = {
            "response_type": "code",
            "client_id": client_id,
            "redirect_uri": REDIRECT,
            "state": "st",
            "code_challenge": challenge,
            "code_challenge_method": "S256",
            "resource": f"{api.url}/mcp",
        }
        code, state = code_of(
            await FormBrowser(api.url, "key-op").consent(f"/authorize?{urlencode(query)}", f"run:{run_id}")
        )
        assert state == "st"
        tokens = await http.post(
            "/token",
            data={
                "grant_type": "authorization_code",
                "code": code,
                "redirect_uri": REDIRECT,
                "code_verifier": verifier,
                "client_id": client_id,
            },
        )
        assert tokens.status_code == 200, tokens.text
        return client_id, tokens.json()


async def mcp_status(api: Api, access: str) -> httpx.Response:
    async with httpx.AsyncClient(base_url=api.url, timeout=10) as http:
        return await http.post(
            "/mcp",
            headers={"Authorization": f"Bearer {access}", "Accept": "application/json, text/event-stream"},
            json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
        )


@pytest.mark.parametrize("which", ["refresh_token", "access_token"])
async def test_a_public_client_revokes_its_grant(oauth_api: Api, which: str) -> None:
    run_id = await oauth_api.new_run()
    client_id, tokens = await signed_in(oauth_api, run_id)
    assert (await mcp_status(oauth_api, tokens["access_token"])).status_code != 401

    async with httpx.AsyncClient(base_url=oauth_api.url, timeout=10) as http:
        answer = await http.post("/revoke", data={"token": tokens[which], "client_id": client_id})
        assert answer.status_code == 200, answer.text
        assert answer.headers["cache-control"] == "no-store"
        # Both tokens are dead: the access token is a 401 that names where to sign in again ...
        refused = await mcp_status(oauth_api, tokens["access_token"])
        assert refused.status_code == 401
        assert "resource_metadata=" in refused.headers["www-authenticate"]
        # ... and the refresh token buys nothing.
        refresh = await http.post(
            "/token",
            data={"grant_type": "refresh_token", "refresh_token": tokens["refresh_token"], "client_id": client_id},
        )
        assert refresh.status_code == 400 and refresh.json()["error"] == "invalid_grant", refresh.text

    (grant,) = await oauth_api.gateway.store.list_oauth_grants("acme", run_id)
    assert grant.revoked_reason == "revoked_by_client" and grant.revoked_by == client_id
    # The grant's lease holds nothing now: another worker acquires it without a takeover.
    await oauth_api.lease_token(run_id, "next-worker")


async def test_another_clients_token_is_not_revoked(oauth_api: Api) -> None:
    run_id = await oauth_api.new_run()
    _, tokens = await signed_in(oauth_api, run_id)
    other_run = await oauth_api.new_run()
    other_client, _ = await signed_in(oauth_api, other_run)
    async with httpx.AsyncClient(base_url=oauth_api.url, timeout=10) as http:
        answer = await http.post("/revoke", data={"token": tokens["refresh_token"], "client_id": other_client})
    assert answer.status_code == 200  # RFC 7009: 200 whatever was found
    assert (await mcp_status(oauth_api, tokens["access_token"])).status_code != 401
    (grant,) = await oauth_api.gateway.store.list_oauth_grants("acme", run_id)
    assert grant.revoked_at is None


def test_the_sdk_still_needs_the_public_revocation_override() -> None:
    """gateway/oauth/revocation.py exists for one SDK flaw: its RevocationRequest requires a
    client_secret. When an SDK release fixes that, this fails: drop the override then."""
    from mcp.server.auth.handlers.revoke import RevocationRequest
    from pydantic import ValidationError

    with pytest.raises(ValidationError):
        RevocationRequest.model_validate({"token": "t", "client_id": "c"})


async def test_a_client_that_fails_to_authenticate_at_revoke_is_invalid_client(oauth_api: Api) -> None:
    async with httpx.AsyncClient(base_url=oauth_api.url, timeout=10) as http:
        answer = await http.post("/revoke", data={"client_id": "no-such-client", "token": "wat_" + "x" * 40})
    assert answer.status_code == 401
    assert answer.json()["error"] == "invalid_client"
