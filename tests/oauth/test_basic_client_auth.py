"""`/token` for a confidential client authenticating with HTTP Basic (RFC 6749 section 2.3.1), as
the TypeScript SDK does: its client_id in the header only, not repeated in the form."""

from __future__ import annotations

import base64
import hashlib
import secrets
from typing import Any

import pytest

from tests.api.conftest import Api
from tests.oauth.conftest import FormBrowser, code_of

pytestmark = pytest.mark.anyio

REDIRECT = "http://127.0.0.1:9/callback"


def basic(client_id: str, secret: str) -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(f"{client_id}:{secret}".encode()).decode()}


async def signed_in(api: Api) -> tuple[dict[str, Any], str, str]:
    """A client registered for client_secret_basic, and a code for it: (registration, code, verifier)."""
    run_id = await api.new_run()
    async with api.client(None) as http:
        registered = await http.post(
            "/register",
            json={"redirect_uris": [REDIRECT], "token_endpoint_auth_method": "client_secret_basic", "client_name": "b"},
        )
    assert registered.status_code == 201, registered.text
    client = registered.json()
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    query = {
        "response_type": "code",
        "client_id": client["client_id"],
        "redirect_uri": REDIRECT,
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        "state": "s",
    }
    async with api.client(None) as http:
        authorize = await http.get("/authorize", params=query)
    assert authorize.status_code == 302, authorize.text
    code, _ = code_of(await FormBrowser(api.url, "key-op").consent(authorize.headers["location"], f"run:{run_id}"))
    return client, code, verifier


async def test_basic_without_client_id_in_the_form(oauth_api: Api) -> None:
    client, code, verifier = await signed_in(oauth_api)
    form = {"grant_type": "authorization_code", "code": code, "code_verifier": verifier, "redirect_uri": REDIRECT}
    async with oauth_api.client(None) as http:
        wrong = await http.post("/token", data=form, headers=basic(client["client_id"], "not-the-secret"))
        assert wrong.status_code == 401, wrong.text
        assert wrong.json()["error"] == "invalid_client"
        issued = await http.post("/token", data=form, headers=basic(client["client_id"], client["client_secret"]))
        assert issued.status_code == 200, issued.text
        refresh = {"grant_type": "refresh_token", "refresh_token": issued.json()["refresh_token"]}
        refreshed = await http.post("/token", data=refresh, headers=basic(client["client_id"], client["client_secret"]))
        assert refreshed.status_code == 200, refreshed.text
        assert refreshed.json()["access_token"].startswith("wat_")
        # /revoke likewise: the refresh token revoked with the id in the header only, and so refused.
        again = {"grant_type": "refresh_token", "refresh_token": refreshed.json()["refresh_token"]}
        revoked = await http.post(
            "/revoke",
            data={"token": again["refresh_token"]},
            headers=basic(client["client_id"], client["client_secret"]),
        )
        assert revoked.status_code == 200, revoked.text
        refused = await http.post("/token", data=again, headers=basic(client["client_id"], client["client_secret"]))
        assert refused.status_code == 400, refused.text
        assert refused.json()["error"] == "invalid_grant"


async def test_a_form_client_id_must_match_the_header(oauth_api: Api) -> None:
    client, code, verifier = await signed_in(oauth_api)
    form = {
        "grant_type": "authorization_code",
        "code": code,
        "code_verifier": verifier,
        "redirect_uri": REDIRECT,
        "client_id": client["client_id"],
    }
    async with oauth_api.client(None) as http:
        other = await http.post(
            "/register",
            json={"redirect_uris": [REDIRECT], "token_endpoint_auth_method": "client_secret_basic"},
        )
        mismatch = await http.post(
            "/token", data=form, headers=basic(other.json()["client_id"], client["client_secret"])
        )
        assert mismatch.status_code == 401, mismatch.text
        assert mismatch.json()["error"] == "invalid_client"
        issued = await http.post("/token", data=form, headers=basic(client["client_id"], client["client_secret"]))
        assert issued.status_code == 200, issued.text


@pytest.mark.parametrize("path", ["/token", "/revoke"])
async def test_a_page_may_send_basic_credentials(oauth_api: Api, path: str) -> None:
    """A browser-based client's preflight for a Basic-authenticated token or revocation request."""
    preflight = {
        "Origin": "http://localhost:6274",
        "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "authorization, content-type, mcp-protocol-version",
    }
    async with oauth_api.client(None) as http:
        answer = await http.options(path, headers=preflight)
        assert answer.status_code == 200, answer.text
        allowed = {h.strip().lower() for h in answer.headers["access-control-allow-headers"].split(",")}
        assert {"authorization", "content-type", "mcp-protocol-version"} <= allowed
        assert "access-control-allow-credentials" not in answer.headers
