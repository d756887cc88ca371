"""The browser tests' own harness, before any console page: the system Chromium reaches the real gateway,
and the agent's lease from the API lets its tool calls through the official MCP SDK client."""

from __future__ import annotations

import pytest
from playwright.async_api import Page

from tests.browser.console import Served, code_of

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


async def test_chromium_reaches_the_gateway_and_the_agent_calls_through_its_lease(page: Page, served: Served) -> None:
    answer = await page.goto(f"{served.url}/healthz")
    assert answer is not None and answer.status == 200
    assert await page.evaluate("navigator.userAgent") != ""

    run_id = await served.create_run("harness")
    token = await served.lease(run_id)
    note = await served.call(token, "notes__append", {"title": "t", "body": "b"})
    assert code_of(note) is None, note
    assert (await served.run(run_id))["budgets"]["tool_calls"]["spent"] == 1
