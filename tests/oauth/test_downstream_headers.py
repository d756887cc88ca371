"""An access token is for Warrant's /mcp only: it never reaches a downstream, and neither does the
lease token the gateway holds for the grant. The destination sees its own credential and nothing
else of the caller's."""

from __future__ import annotations

import base64
import hashlib
import secrets
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from gateway.adapters.http import HttpAdapter, HttpAdapterConfig
from tests.api.conftest import serving_api
from tests.harness import uvicorn_serving
from tests.oauth.conftest import OAUTH, FormBrowser, code_of, write_templates

pytestmark = pytest.mark.anyio
CREDENTIAL = "downstream-credential-77"


async def recording_service(seen: list[dict[str, str]]) -> AsyncIterator[str]:
    async def contacts(request: Request) -> JSONResponse:
        seen.append(dict(request.headers))
        return JSONResponse({"items": []})

    async with uvicorn_serving(Starlette(routes=[Route("/contacts", contacts)])) as url:
        yield url


async def sign_in(base: str, run_id: str) -> dict[str, Any]:
    """A public client's whole flow over HTTP: register, authorize (PKCE S256), consent, token."""
    redirect = "http://127.0.0.1:9/callback"
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).decode().rstrip("=")
    async with httpx.AsyncClient(base_url=base, timeout=10) as http:
        registered = await http.post(
            "/register",
            json={"client_name": "headers test", "redirect_uris": [redirect], "token_endpoint_auth_method": "none"},
        )
        assert registered.status_code == 201, registered.text
        client_id = registered.json()["client_id"]
        query = httpx.QueryParams(
            response_type="code",
            client_id=client_id,
            redirect_uri=redirect,
            code_challenge=challenge,
            code_challenge_method="S256",
            state="s1",
            resource=f"{base}/mcp",
        )
        code, state = code_of(await FormBrowser(base, "key-op").consent(f"/authorize?{query}", f"run:{run_id}"))
        assert state == "s1"
        token = await http.post(
            "/token",
            data={
                "grant_type": "authorization_code",
                "code": code,
                "redirect_uri": redirect,
                "client_id": client_id,
                "code_verifier": verifier,
                "resource": f"{base}/mcp",
            },
        )
        assert token.status_code == 200, token.text
        answer: dict[str, Any] = token.json()
        return answer


async def test_the_access_token_never_reaches_a_downstream(tmp_path: Path) -> None:
    seen: list[dict[str, str]] = []
    service = recording_service(seen)
    url = await service.__anext__()
    try:
        adapter = HttpAdapter(
            HttpAdapterConfig.model_validate(
                {
                    "name": "crm",
                    "kind": "http",
                    "base_url": url,
                    "headers": {"Authorization": f"Bearer {CREDENTIAL}"},
                    "tools": {
                        "search": {
                            "description": "Search contacts.",
                            "method": "GET",
                            "path": "/contacts",
                            "input_schema": {"type": "object", "properties": {"q": {"type": "string"}}},
                            "read_only": True,
                        }
                    },
                }
            ),
            secrets=[CREDENTIAL],
        )
        write_templates(tmp_path)
        async with serving_api(
            tmp_path, OAUTH, adapters=[adapter], policy_extra="  crm__search: {effect: read}\n"
        ) as api:
            run_id = await api.new_run(authority={"allow": ["shop__*", "crm__*"]})
            tokens = await sign_in(api.url, run_id)
            access = tokens["access_token"]
            body = {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "tools/call",
                "params": {"name": "crm__search", "arguments": {"q": "ana"}},
            }
            headers = {
                "authorization": f"Bearer {access}",
                "accept": "application/json, text/event-stream",
                "mcp-protocol-version": "2025-11-25",
            }
            async with httpx.AsyncClient(timeout=10) as http:
                answer = await http.post(f"{api.url}/mcp", json=body, headers=headers)
            assert answer.status_code == 200, answer.text
            assert "isError" not in answer.text or '"isError":false' in answer.text.replace(" ", ""), answer.text
    finally:
        await service.aclose()
    assert len(seen) == 1, seen
    sent = " ".join(f"{k}: {v}" for k, v in seen[0].items())
    assert seen[0]["authorization"] == f"Bearer {CREDENTIAL}"
    assert access not in sent and tokens["refresh_token"] not in sent
    assert "wl_" not in sent and "wat_" not in sent, sent
