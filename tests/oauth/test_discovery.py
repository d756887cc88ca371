"""What a spec client finds from nothing but the URL: the 401's challenge, the protected resource
metadata (RFC 9728), the authorization server metadata (RFC 8414)."""

from __future__ import annotations

import re
from pathlib import Path

import httpx
import pytest
from starlette.routing import Route

from gateway.oauth import PATHS
from tests.api.conftest import Api, serving_api

pytestmark = pytest.mark.anyio
MCP_HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
PING = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}


def challenge(response: httpx.Response) -> dict[str, str]:
    header = response.headers["www-authenticate"]
    assert header.startswith("Bearer "), header
    return dict(re.findall(r'(\w+)="([^"]*)"', header))


async def test_every_401_of_mcp_names_the_resource_metadata(oauth_api: Api) -> None:
    base = oauth_api.url
    async with httpx.AsyncClient(base_url=base, timeout=10) as http:
        missing = await http.post("/mcp", json=PING, headers=MCP_HEADERS)
        unknown_lease = await http.post(
            "/mcp", json=PING, headers={**MCP_HEADERS, "authorization": "Bearer wl_" + "x" * 40}
        )
        unknown_access = await http.post(
            "/mcp", json=PING, headers={**MCP_HEADERS, "authorization": "Bearer wat_" + "y" * 40}
        )
    for response in (missing, unknown_lease, unknown_access):
        assert response.status_code == 401
        assert challenge(response)["resource_metadata"] == f"{base}/.well-known/oauth-protected-resource/mcp"
    assert "error" not in challenge(missing)  # RFC 6750 3.1: no error code without credentials
    assert challenge(unknown_lease)["error"] == "invalid_token"
    assert challenge(unknown_access)["error"] == "invalid_token"


async def test_the_metadata_points_from_the_resource_to_its_server(oauth_api: Api) -> None:
    base = oauth_api.url
    async with httpx.AsyncClient(base_url=base, timeout=10) as http:
        resource = (await http.get("/.well-known/oauth-protected-resource/mcp")).json()
        root = (await http.get("/.well-known/oauth-protected-resource")).json()
        server = await http.get("/.well-known/oauth-authorization-server", headers={"origin": "http://127.0.0.1:6274"})
    assert resource == root
    assert resource["resource"] == f"{base}/mcp"
    assert resource["authorization_servers"] == [base]  # exactly: clients compare it as a string
    assert server.headers["access-control-allow-origin"] == "*"  # browser-based clients (the Inspector)
    metadata = server.json()
    assert metadata["issuer"] == base
    assert metadata["authorization_response_iss_parameter_supported"] is True
    assert metadata["authorization_endpoint"] == f"{base}/authorize"
    assert metadata["token_endpoint"] == f"{base}/token"
    assert metadata["registration_endpoint"] == f"{base}/register"
    assert metadata["revocation_endpoint"] == f"{base}/revoke"
    assert metadata["code_challenge_methods_supported"] == ["S256"]
    assert metadata["response_types_supported"] == ["code"]
    assert set(metadata["grant_types_supported"]) == {"authorization_code", "refresh_token"}
    assert metadata["client_id_metadata_document_supported"] is True
    assert "none" in metadata["token_endpoint_auth_methods_supported"]


async def test_the_authorization_paths_are_exactly_those_served(oauth_api: Api) -> None:
    served = {r.path for r in oauth_api.app.routes if isinstance(r, Route) and r.path in PATHS}
    assert served == PATHS


async def test_plain_s256_only_and_no_implicit_grant(oauth_api: Api) -> None:
    async with httpx.AsyncClient(base_url=oauth_api.url, timeout=10) as http:
        registered = await http.post(
            "/register", json={"redirect_uris": ["http://127.0.0.1:9/cb"], "token_endpoint_auth_method": "none"}
        )
        client_id = registered.json()["client_id"]
        common = {"client_id": client_id, "redirect_uri": "http://127.0.0.1:9/cb", "code_challenge": "x" * 43}
        plain = await http.get(
            "/authorize", params={**common, "response_type": "code", "code_challenge_method": "plain"}
        )
        implicit = await http.get("/authorize", params={**common, "response_type": "token"})
    for answer in (plain, implicit):
        assert answer.status_code == 302
        assert "error=" in answer.headers["location"] and "code=" not in answer.headers["location"]
    assert "unsupported_response_type" in implicit.headers["location"]


async def test_with_oauth_off_there_is_no_authorization_surface(tmp_path: Path) -> None:
    async with serving_api(tmp_path, "oauth: {enabled: false}\n") as api:
        async with httpx.AsyncClient(base_url=api.url, timeout=10) as http:
            missing = await http.post("/mcp", json=PING, headers=MCP_HEADERS)
            metadata = await http.get("/.well-known/oauth-authorization-server")
            consent = await http.get("/console/oauth/consent", params={"request": "x"})
        run_id = await api.new_run()
        token = await api.lease_token(run_id)
        async with httpx.AsyncClient(base_url=api.url, timeout=10) as http:
            listed = await http.post("/mcp", json=PING, headers={**MCP_HEADERS, "authorization": f"Bearer {token}"})
    assert missing.status_code == 401 and "resource_metadata" not in missing.headers["www-authenticate"]
    assert metadata.status_code == 404 and consent.status_code == 404
    assert listed.status_code == 200, listed.text  # lease tokens work as before
    assert not {r.path for r in api.app.routes if isinstance(r, Route)} & PATHS
