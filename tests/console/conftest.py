"""The console over a real `warrant serve` app under uvicorn on loopback: the API tests' world."""

from __future__ import annotations

import contextlib
import re
from collections.abc import AsyncIterator

import httpx
import pytest

from tests.api.conftest import Api, api  # noqa: F401  (the fixture, served here too)

CSRF = re.compile(r'name="csrf" value="([^"]*)"')


def csrf_of(html: str) -> str:
    found = CSRF.search(html)
    assert found is not None, "the page carries no CSRF field"
    return found.group(1)


async def sign_in(browser: httpx.AsyncClient, key: str) -> httpx.Response:
    """GET the sign-in form, then POST the key with the form's token, as a browser does."""
    form = await browser.get("/console/login")
    assert form.status_code == 200, form.text
    return await browser.post("/console/login", data={"csrf": csrf_of(form.text), "api_key": key})


@pytest.fixture
async def browser(api: Api) -> AsyncIterator[httpx.AsyncClient]:  # noqa: F811
    """A cookie-keeping client that follows no redirect (the tests look at each answer)."""
    async with httpx.AsyncClient(base_url=api.url, timeout=10, follow_redirects=False) as client:
        yield client


@contextlib.asynccontextmanager
async def signed_in(api: Api, key: str) -> AsyncIterator[httpx.AsyncClient]:  # noqa: F811
    """A browser signed in with `key`."""
    async with httpx.AsyncClient(base_url=api.url, timeout=10, follow_redirects=False) as client:
        r = await sign_in(client, key)
        assert r.status_code == 303, r.text
        yield client
