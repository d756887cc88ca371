"""Fixtures of the browser tests: one gateway and one headless Chromium per module, a fresh browser context
(no cookie, no storage) and page per test."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest
from playwright.async_api import Browser, Page, async_playwright

from tests.browser.console import CHROMIUM_ARGS, PAGE_WAIT, Served, chromium_executable, serve


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    """Module-wide, so that one Chromium serves every test of a module (a launch costs seconds here)."""
    return "asyncio"


@pytest.fixture(scope="module")
def chromium() -> str:
    return chromium_executable()


@pytest.fixture(scope="module")
def served(chromium: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    with serve(tmp_path_factory.mktemp("browser")) as served:
        yield served


@pytest.fixture(scope="module")
async def browser(chromium: str) -> AsyncIterator[Browser]:
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=chromium, headless=True, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            await browser.close()


@pytest.fixture
async def page(browser: Browser) -> AsyncIterator[Page]:
    """A page in a new context of its own: what one test signs in does not carry into the next."""
    context = await browser.new_context()
    try:
        context.set_default_timeout(PAGE_WAIT)
        yield await context.new_page()
    finally:
        await context.close()
