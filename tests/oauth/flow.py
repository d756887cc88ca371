"""The authorization code flow by hand, over plain HTTP: register, /authorize with PKCE computed
here (RFC 7636 S256, from hashlib and base64, not the SDK's), consent through `FormBrowser`,
/token, and a tools/call at /mcp with the access token. For the refusal tests, each step is
also available on its own."""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

import httpx

from tests.oauth.conftest import FormBrowser, code_of

REDIRECT = "http://127.0.0.1:9/callback"
LEGACY = "2025-11-25"


def pkce() -> tuple[str, str]:
    """(verifier, S256 challenge)."""
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode("ascii")).digest()).rstrip(b"=").decode()
    return verifier, challenge


@dataclass
class Client:
    client_id: str
    redirect_uri: str
    secret: str | None = None


async def register(base: str, redirect_uris: list[str] | None = None, **metadata: Any) -> httpx.Response:
    body = {
        "redirect_uris": redirect_uris or [REDIRECT],
        "client_name": "refusal test",
        "token_endpoint_auth_method": "none",
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        **metadata,
    }
    async with httpx.AsyncClient(base_url=base, timeout=10) as http:
        return await http.post("/register", json=body)


async def public_client(base: str, redirect_uri: str = REDIRECT) -> Client:
    answer = await register(base, [redirect_uri])
    assert answer.status_code == 201, answer.text
    return Client(answer.json()["client_id"], redirect_uri)


def authorize_url(base: str, client: Client, challenge: str, *, state: str = "st-1", **extra: str) -> str:
    params = {
        "response_type": "code",
        "client_id": client.client_id,
        "redirect_uri": client.redirect_uri,
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        "state": state,
        "resource": f"{base}/mcp",
        **extra,
    }
    return f"{base}/authorize?{urlencode(params)}"


async def token(base: str, client: Client, auth: str = "post", **form: str) -> httpx.Response:
    """POST /token with `form`, the client authenticated as `auth` says (post: in the form, for a
    confidential client; basic: in the Authorization header)."""
    data = {"client_id": client.client_id, **form}
    headers = {}
    if client.secret is not None and auth == "post":
        data["client_secret"] = client.secret
    elif client.secret is not None and auth == "basic":
        pair = f"{client.client_id}:{client.secret}".encode()
        headers["authorization"] = "Basic " + base64.b64encode(pair).decode()
    async with httpx.AsyncClient(base_url=base, timeout=10) as http:
        return await http.post("/token", data=data, headers=headers)


async def redeem(base: str, client: Client, code: str, verifier: str, auth: str = "post") -> httpx.Response:
    return await token(
        base,
        client,
        auth,
        grant_type="authorization_code",
        code=code,
        redirect_uri=client.redirect_uri,
        code_verifier=verifier,
        resource=f"{base}/mcp",
    )


async def refresh(base: str, client: Client, refresh_token: str) -> httpx.Response:
    return await token(base, client, grant_type="refresh_token", refresh_token=refresh_token)


async def code_for(
    base: str, browser: FormBrowser, client: Client, choice: str | None = None, **extra: str
) -> tuple[str, str]:
    """Consent for `client` (to `choice`): (code, verifier)."""
    verifier, challenge = pkce()
    answer = await browser.consent(authorize_url(base, client, challenge, **extra), choice)
    code, state = code_of(answer)
    assert state == extra.get("state", "st-1")
    return code, verifier


async def tokens_for(base: str, browser: FormBrowser, client: Client, choice: str | None = None) -> dict[str, Any]:
    """The whole flow: the token response's JSON."""
    code, verifier = await code_for(base, browser, client, choice)
    answer = await redeem(base, client, code, verifier)
    assert answer.status_code == 200, answer.text
    body: dict[str, Any] = answer.json()
    assert body["access_token"].startswith("wat_") and body["refresh_token"].startswith("wrt_")
    return body


async def mcp_call(url: str, access_token: str, tool: str = "shop__find") -> httpx.Response:
    """A tools/call at `url` (a /mcp), as a 2025-11-25 client sends it, with the bearer token."""
    headers = {
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": LEGACY,
        "authorization": f"Bearer {access_token}",
    }
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": {"q": "pens"}}}
    async with httpx.AsyncClient(timeout=10) as http:
        return await http.post(url, content=json.dumps(body), headers=headers)


def oauth_error(answer: httpx.Response, status: int = 400) -> str:
    """The OAuth error code of a JSON error answer (RFC 6749 5.2)."""
    assert answer.status_code == status, answer.text
    error: str = answer.json()["error"]
    return error


def shows_nothing_of(text: str, *secrets_: str) -> bool:
    """True when none of `secrets_` (a run id, its goal, an event name) appears in `text`."""
    return not any(s and s in text for s in secrets_)
