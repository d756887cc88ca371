"""MCP authorization against a real gateway: `serving_api` with `oauth:` set, and a person at the
consent page, either as plain HTTP (`FormBrowser`: sign in, pick, allow; each step the page's
own form) or in Chromium (tests/oauth/browser.py)."""

from __future__ import annotations

import html
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urljoin, urlsplit

import httpx
import pytest

from tests.api.conftest import CONTRACT, Api, serving_api

OAUTH = "oauth: {contract_templates: [templates], metadata_documents_allow_loopback_http: true}\n"


def write_templates(tmp_path: Path) -> None:
    where = tmp_path / "templates"
    where.mkdir(exist_ok=True)
    import json

    (where / "shopping.json").write_text(json.dumps({**CONTRACT, "goal": "Shop for the team"}))


@pytest.fixture
async def oauth_api(tmp_path: Path) -> AsyncIterator[Api]:
    write_templates(tmp_path)
    async with serving_api(tmp_path, OAUTH) as served:
        yield served


def field_value(page: str, name: str) -> str:
    match = re.search(rf'name="{re.escape(name)}" value="([^"]*)"', page)
    assert match, f"no field {name} in the page:\n{page[:2000]}"
    return html.unescape(match.group(1))


@dataclass
class FormBrowser:
    """A person's browser, as HTTP: cookies kept, redirects followed by hand (so the last one, to
    the client, is seen and not fetched)."""

    base: str
    api_key: str
    cookies: httpx.Cookies = field(default_factory=httpx.Cookies)
    pages: list[str] = field(default_factory=list)

    def client(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(base_url=self.base, cookies=self.cookies, timeout=10, follow_redirects=False)

    async def open(self, url: str) -> httpx.Response:
        """GET `url`, following redirects within the gateway; the last answer (a page, or a
        redirect that leaves the gateway)."""
        async with self.client() as http:
            response = await http.get(url)
            for _ in range(10):
                if response.status_code not in (302, 303):
                    break
                target = urljoin(str(response.url), response.headers["location"])
                if not target.startswith(self.base):
                    break
                response = await http.get(target)
            self.cookies = http.cookies
        return response

    async def consent(self, authorization_url: str, choice: str | None = None, **form: str) -> httpx.Response:
        """Sign in if asked, then allow `choice` (the first run offered when None). Returns the
        gateway's last answer: the redirect to the client, or the page it refused with."""
        page = await self.open(authorization_url)
        if "/console/login" in str(page.url):
            async with self.client() as http:
                answer = await http.post(
                    "/console/login",
                    data={
                        "csrf": field_value(page.text, "csrf"),
                        "api_key": self.api_key,
                        "next": field_value(page.text, "next"),
                    },
                )
                self.cookies = http.cookies
            assert answer.status_code == 303, answer.text
            page = await self.open(answer.headers["location"])
        self.pages.append(page.text)
        if page.status_code != 200:
            return page
        if choice is None:
            match = re.search(r'name="choice" value="([^"]+)"', page.text)
            assert match, "the consent page offers nothing"
            choice = html.unescape(match.group(1))
        data = {
            "csrf": field_value(page.text, "csrf"),
            "request": field_value(page.text, "request"),
            "choice": choice,
            "decision": "allow",
            **form,
        }
        async with self.client() as http:
            answer = await http.post("/console/oauth/consent", data=data)
            self.cookies = http.cookies
        return answer


def code_of(answer: httpx.Response) -> tuple[str, str | None]:
    assert answer.status_code == 303, answer.text[:2000]
    query = parse_qs(urlsplit(answer.headers["location"]).query)
    assert "code" in query, answer.headers["location"]
    return query["code"][0], query.get("state", [None])[0]


def location_query(answer: httpx.Response) -> dict[str, Any]:
    return {k: v[0] for k, v in parse_qs(urlsplit(answer.headers["location"]).query).items()}


# -- a connected client, end to end (register, consent, code exchange) -------------------------
REDIRECT = "http://127.0.0.1:9/callback"  # never fetched: FormBrowser stops at the redirect


@dataclass(frozen=True)
class Connected:
    """A client signed in through the consent page: its registration and its first token pair."""

    client_id: str
    grant_id: str
    access_token: str
    refresh_token: str


def pkce_pair() -> tuple[str, str]:
    """(verifier, S256 challenge)."""
    import base64
    import hashlib
    import secrets

    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    return verifier, challenge


async def connect_client(
    api: Api, run_id: str, *, key: str = "op", name: str = "test client", api_key: str | None = None
) -> Connected:
    """A public client registered (RFC 7591), consented to `run_id` by `key-KEY` (or `api_key`)
    through the consent page (FormBrowser), its code exchanged at /token for its first tokens."""
    from urllib.parse import urlencode

    async with httpx.AsyncClient(base_url=api.url, timeout=10) as http:
        registered = await http.post(
            "/register",
            json={
                "client_name": name,
                "redirect_uris": [REDIRECT],
                "token_endpoint_auth_method": "none",
                "grant_types": ["authorization_code", "refresh_token"],
                "response_types": ["code"],
            },
        )
        assert registered.status_code == 201, registered.text
        client_id: str = registered.json()["client_id"]
        verifier, challenge = pkce_pair()
        query = {
            "response_type": "code",
            "client_id": client_id,
            "redirect_uri": REDIRECT,
            "code_challenge": challenge,
            "code_challenge_method": "S256",
            "state": "s1",
            "scope": "mcp offline_access",
            "resource": f"{api.url}/mcp",
        }
        answer = await FormBrowser(api.url, api_key or f"key-{key}").consent(
            f"/authorize?{urlencode(query)}", f"run:{run_id}"
        )
        code, state = code_of(answer)
        assert state == "s1"
        tokens = await http.post(
            "/token",
            data={
                "grant_type": "authorization_code",
                "code": code,
                "redirect_uri": REDIRECT,
                "client_id": client_id,
                "code_verifier": verifier,
                "resource": f"{api.url}/mcp",
            },
        )
        assert tokens.status_code == 200, tokens.text
    grants = [g for g in await api.gateway.store.list_oauth_grants("acme", run_id) if g.client_id == client_id]
    assert len(grants) == 1, grants
    return Connected(client_id, grants[0].grant_id, tokens.json()["access_token"], tokens.json()["refresh_token"])


async def refresh(api: Api, connected: Connected, token: str | None = None) -> httpx.Response:
    """POST /token with grant_type refresh_token (the connection's first refresh token unless `token`)."""
    async with httpx.AsyncClient(base_url=api.url, timeout=10) as http:
        return await http.post(
            "/token",
            data={
                "grant_type": "refresh_token",
                "refresh_token": token or connected.refresh_token,
                "client_id": connected.client_id,
            },
        )


async def mcp_status(api: Api, access_token: str) -> httpx.Response:
    """One JSON-RPC `tools/list` POSTed to /mcp with the access token (the front is stateless)."""
    async with httpx.AsyncClient(base_url=api.url, timeout=10) as http:
        return await http.post(
            "/mcp",
            headers={
                "Authorization": f"Bearer {access_token}",
                "Accept": "application/json, text/event-stream",
                "mcp-protocol-version": "2025-11-25",
            },
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}},
        )
