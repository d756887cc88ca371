"""Screenshots of the console's pages for the README: `.venv/bin/python -m tests.browser.screenshots [OUT]`
(OUT: docs/console). A script, not a test: `make test` leaves the tree as it was.

It starts a real `warrant serve` (tests/browser/console.py), makes a few runs through the API and drives an
agent through the MCP SDK client so that the pages have something to show (tool calls spent, a lease held,
an approval pending, a run paused, one cancelled), signs in as the acme admin in headless Chromium, and
saves each page that answers 200: login, runs, run, the approvals inbox and one approval with a diff.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import anyio
from playwright.async_api import async_playwright

from tests.browser.console import CHROMIUM_ARGS, Served, chromium_executable, pending_approval, serve, sign_in
from tests.e2e.serving import ROOT


async def populate(served: Served) -> tuple[str, str]:
    """Runs with some history; the id of the one worth a page of its own, and of an approval with a diff."""
    shown = await served.create_run("Collect vendor notes and send the summary to a partner")
    token = await served.lease(shown, worker="agent-7")
    await served.call(token, "notes__search", {"query": "vendors"})
    approval_id = await replaced_proposal(served, token)

    paused = await served.create_run("Reconcile the March invoices")
    await served.lease(paused, worker="agent-3")
    cancelled = await served.create_run("Draft the quarterly newsletter")
    async with served.api("op") as api:
        assert (await api.post(f"/api/runs/{paused}/pause", json={"reason": "waiting for finance"})).is_success
        assert (await api.post(f"/api/runs/{cancelled}/cancel", json={"reason": "not needed"})).is_success
    return shown, approval_id


async def replaced_proposal(served: Served, token: str) -> str:
    """A pending approval, then the agent's replacement of it with evidence and a rationale: the new one's id."""
    _, arguments = await pending_approval(served, token)
    proposal = {
        "tool": "notes__send",
        "arguments": {**arguments, "to": "carol@partner.example"},
        "evidence": {"ticket": "SUP-1182", "said": "Please send the vendor summary to Carol, not Bob."},
        "rationale": "The partner asked for the summary to go to Carol, who now owns the account.",
    }
    async with served.agent(token) as agent:
        proposed = await agent.call_tool("warrant_propose", proposal)
    assert proposed.structured_content is not None, proposed
    approval_id: str = proposed.structured_content["approval"]["approval_id"]
    return approval_id


async def main(out: Path) -> None:
    chromium = chromium_executable()
    with tempfile.TemporaryDirectory() as tmp, serve(Path(tmp)) as served:
        run_id, approval_id = await populate(served)
        async with async_playwright() as playwright:
            browser = await playwright.chromium.launch(executable_path=chromium, headless=True, args=CHROMIUM_ARGS)
            page = await browser.new_page(viewport={"width": 1280, "height": 800})
            await page.goto(f"{served.url}/console/login")
            await page.screenshot(path=out / "login.png", full_page=True)
            await sign_in(page, served, "admin")
            pages = {"runs": "/console/runs", "run": f"/console/runs/{run_id}", "approvals": "/console/approvals"}
            pages["approval"] = f"/console/approvals/{approval_id}"
            for name, path in pages.items():
                answer = await page.goto(served.url + path)
                if answer is None or answer.status != 200:
                    print(f"{path}: {answer.status if answer else 'no answer'}, not saved", file=sys.stderr)
                    continue
                await page.screenshot(path=out / f"{name}.png", full_page=True)
                print(out / f"{name}.png")
            await browser.close()


if __name__ == "__main__":
    folder = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "docs" / "console"
    folder.mkdir(parents=True, exist_ok=True)
    anyio.run(main, folder)
