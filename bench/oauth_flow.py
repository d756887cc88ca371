"""A client's whole MCP authorization flow over plain HTTP, for the benchmarks: register (RFC 7591),
authorize with PKCE S256, a person's sign-in and consent on the console's forms, the token."""

from __future__ import annotations

import base64
import hashlib
import html
import re
import secrets
from urllib.parse import parse_qs, urljoin, urlsplit

import httpx

REDIRECT = "http://127.0.0.1:9/callback"


def _field(page: str, name: str) -> str:
    match = re.search(rf'name="{re.escape(name)}" value="([^"]*)"', page)
    if match is None:
        raise RuntimeError(f"no field {name} in the page")
    return html.unescape(match.group(1))


async def access_token(base: str, api_key: str, run_id: str) -> str:
    """An access token acting for `run_id`, consented by `api_key`."""
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).decode().rstrip("=")
    async with httpx.AsyncClient(base_url=base, timeout=10, follow_redirects=False) as http:
        registered = await http.post(
            "/register", json={"redirect_uris": [REDIRECT], "token_endpoint_auth_method": "none"}
        )
        registered.raise_for_status()
        client_id = registered.json()["client_id"]
        params = {
            "response_type": "code",
            "client_id": client_id,
            "redirect_uri": REDIRECT,
            "code_challenge": challenge,
            "code_challenge_method": "S256",
        }
        answer = await http.get("/authorize", params=params)
        while answer.status_code in (302, 303):
            answer = await http.get(urljoin(str(answer.url), answer.headers["location"]))
        login = await http.post(
            "/console/login",
            data={"csrf": _field(answer.text, "csrf"), "api_key": api_key, "next": _field(answer.text, "next")},
        )
        page = await http.get(login.headers["location"])
        consent = await http.post(
            "/console/oauth/consent",
            data={
                "csrf": _field(page.text, "csrf"),
                "request": _field(page.text, "request"),
                "choice": f"run:{run_id}",
                "decision": "allow",
            },
        )
        code = parse_qs(urlsplit(consent.headers["location"]).query)["code"][0]
        token = await http.post(
            "/token",
            data={
                "grant_type": "authorization_code",
                "code": code,
                "redirect_uri": REDIRECT,
                "client_id": client_id,
                "code_verifier": verifier,
            },
        )
        token.raise_for_status()
        return str(token.json()["access_token"])
