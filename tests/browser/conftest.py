"""Fixtures of the browser tests: one gateway per module, a fresh headless Chromium page per test."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from playwright.async_api import Page, async_playwright

from tests.browser.console import CHROMIUM_ARGS, PAGE_WAIT, Served, chromium_executable, serve


@pytest.fixture(scope="module")
def chromium() -> str:
    return chromium_executable()


@pytest.fixture(scope="module")
def served(chromium: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    with serve(tmp_path_factory.mktemp("browser")) as served:
        yield served


@pytest.fixture
async def page(chromium: str, tmp_path: Path) -> AsyncIterator[Page]:
    """A page in a new headless Chromium (its own empty profile: no cookie outlives the test)."""
    async with async_playwright() as playwright:
        context = await playwright.chromium.launch_persistent_context(
            str(tmp_path / "profile"), executable_path=chromium, headless=True, args=CHROMIUM_ARGS
        )
        try:
            context.set_default_timeout(PAGE_WAIT)
            page = context.pages[0] if context.pages else await context.new_page()
            yield page
        finally:
            await context.close()
