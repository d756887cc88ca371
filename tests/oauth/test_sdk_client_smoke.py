"""The MCP Python SDK's OAuth client against a fresh gateway: only the URL configured, the person
at the consent page as plain HTTP (so it runs where Chromium is not: test_python_sdk_oauth.py is
the same in a browser, against a `warrant serve` process)."""

from __future__ import annotations

from typing import Any

import httpx2
import pytest
from mcp import ClientSession
from mcp.client.auth import OAuthClientProvider
from mcp.client.auth.oauth2 import AuthorizationCodeResult
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import OAuthClientMetadata
from pydantic import AnyUrl

from tests.api.conftest import Api
from tests.oauth.conftest import FormBrowser, code_of, location_query
from tests.oauth.test_python_sdk_oauth import Memory

pytestmark = pytest.mark.anyio


async def test_sdk_client_signs_in_and_calls(oauth_api: Api) -> None:
    run_id = await oauth_api.new_run()
    browser = FormBrowser(oauth_api.url, "key-op")
    urls: list[str] = []

    async def redirect(url: str) -> None:
        urls.append(url)

    async def callback() -> Any:
        answer = await browser.consent(urls[-1], f"run:{run_id}")
        code, state = code_of(answer)
        return AuthorizationCodeResult(code=code, state=state, iss=location_query(answer).get("iss"))

    storage = Memory()
    auth = OAuthClientProvider(
        f"{oauth_api.url}/mcp",
        OAuthClientMetadata(client_name="sdk test", redirect_uris=[AnyUrl("http://127.0.0.1:9/callback")]),
        storage,
        redirect_handler=redirect,
        callback_handler=callback,
    )
    async with httpx2.AsyncClient(auth=auth, timeout=20) as http:
        async with streamable_http_client(f"{oauth_api.url}/mcp", http_client=http) as (read, write, *_):
            async with ClientSession(read, write) as session:
                await session.initialize()
                tools = await session.list_tools()
                assert any(t.name == "shop__find" for t in tools.tools)
                result = await session.call_tool("shop__find", {"q": "pens"})
                assert not result.is_error, result
