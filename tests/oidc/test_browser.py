"""The console's sign-in through a real OpenID Connect provider, in Chromium: to the runs page, and
through the consent page of MCP authorization with the MCP Python SDK's OAuth client calling a tool
at the end (tests/oidc/conftest.py: provider at localhost, gateway at 127.0.0.1, two sites)."""

from __future__ import annotations

import asyncio
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx2
import pytest
from mcp import ClientSession
from mcp.client.auth import OAuthClientProvider
from mcp.client.auth.oauth2 import AuthorizationCodeResult
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import OAuthClientMetadata
from playwright.async_api import Page, Route, expect
from pydantic import AnyUrl

from tests.oauth.test_sdk_client_smoke import Memory
from tests.oidc.conftest import World

pytestmark = pytest.mark.anyio
CLIENT_REDIRECT = "http://127.0.0.1:9/callback"  # nothing listens: the browser's visit is intercepted


async def sign_in_at_provider(page: Page, login: str) -> None:
    """From the gateway's sign-in page: the provider's button, its form (any password), and back."""
    await page.click("#oidc")
    await page.fill('input[name="login"]', login)
    await page.fill('input[name="password"]', "any password")
    await page.click('button[type="submit"]')


async def test_signing_in_with_the_provider_lands_on_the_runs_page(world: World, page: Page) -> None:
    run_id = await world.api.new_run()
    await page.goto(f"{world.api.url}/console/runs")
    await expect(page).to_have_url(f"{world.api.url}/console/login")
    await expect(page.locator("#oidc")).to_have_text("Sign in with Acme SSO")
    await sign_in_at_provider(page, "ana")
    await expect(page).to_have_url(f"{world.api.url}/console/runs")
    await expect(page.locator(".who")).to_contain_text("ana · tenant acme · operator")
    await expect(page.locator(f'a[href="/console/runs/{run_id}"]')).to_be_visible()


async def test_an_unmapped_identity_is_refused_with_a_clear_page(world: World, page: Page) -> None:
    await page.goto(f"{world.api.url}/console/login")
    await sign_in_at_provider(page, "mallory")
    await expect(page.locator("#error")).to_contain_text("oidc_not_allowed")
    await expect(page.locator("#error")).to_contain_text("mallory@evil.example")
    await page.goto(f"{world.api.url}/console/runs")
    await expect(page).to_have_url(f"{world.api.url}/console/login")


async def test_the_consent_page_comes_back_after_the_provider_sign_in(world: World, page: Page) -> None:
    """An MCP client asks for access; the person, signed out, is sent to sign in, chooses the
    provider, comes back to the consent page, allows; the client gets its code and calls a tool."""
    run_id = await world.api.new_run()
    codes: asyncio.Queue[str] = asyncio.Queue()
    urls: list[str] = []

    async def at_client(route: Route) -> None:
        await codes.put(route.request.url)
        await route.fulfill(status=200, content_type="text/plain", body="back at the client")

    await page.route(f"{CLIENT_REDIRECT}**", at_client)

    async def redirect(url: str) -> None:
        urls.append(url)

    async def callback() -> Any:
        await page.goto(urls[-1])
        assert "/console/login" in page.url and "next=" in page.url, page.url
        await sign_in_at_provider(page, "ana")
        await expect(page.locator("#allow")).to_be_visible()
        assert page.url.startswith(f"{world.api.url}/console/oauth/consent?request="), page.url
        await expect(page.locator(".who")).to_contain_text("ana · tenant acme · operator")
        await page.check(f'input[value="run:{run_id}"]')
        await page.click("#allow")
        back = await asyncio.wait_for(codes.get(), 10)
        query = parse_qs(urlsplit(back).query)
        return AuthorizationCodeResult(
            code=query["code"][0], state=query.get("state", [None])[0], iss=query.get("iss", [None])[0]
        )

    auth = OAuthClientProvider(
        f"{world.api.url}/mcp",
        OAuthClientMetadata(client_name="oidc consent test", redirect_uris=[AnyUrl(CLIENT_REDIRECT)]),
        Memory(),
        redirect_handler=redirect,
        callback_handler=callback,
    )
    async with httpx2.AsyncClient(auth=auth, timeout=30) as http:
        async with streamable_http_client(f"{world.api.url}/mcp", http_client=http) as (read, write, *_):
            async with ClientSession(read, write) as session:
                await session.initialize()
                result = await session.call_tool("shop__find", {"q": "pens"})
                assert not result.is_error, result
    # The grant holds the run's lease, granted by the configured person (key_id None).
    grants = await world.api.gateway.store.list_oauth_grants("acme", run_id)
    assert [g.granted_by for g in grants] == ["ana"]
