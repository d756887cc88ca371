"""Screenshots of the console's pages for the README: `.venv/bin/python -m tests.browser.screenshots [OUT]`
(OUT: docs/console). A script, not a test: `make test` leaves the tree as it was.

It starts a real `warrant serve` (tests/browser/console.py), makes a few runs through the API and drives an
agent through the MCP SDK client so that the pages have something to show (tool calls spent, a checkpoint, a
verified milestone, a write left `unknown` by a destination that never answers, a refusal, a lease held, an
approval pending, a run paused, one cancelled), signs in as the acme admin in headless Chromium, and saves
each page that answers 200: login, runs, run, the cancel confirmation, the approvals inbox and one approval
with a diff (the agent replaced its proposal).
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
from playwright.async_api import async_playwright, expect

from tests.browser.console import (
    CHROMIUM_ARGS,
    Served,
    chromium_executable,
    contract,
    pending_approval,
    serve,
    sign_in,
)
from tests.e2e.serving import ROOT, code_of
from tests.harness import free_port

# A bookkeeping service that takes the request and never answers: the gateway's write to it times out after
# sending, so its outcome is `unknown` (the run page shows it apart, with what a resolve means).
SILENT_ADAPTER = """name: books
kind: http
base_url: http://127.0.0.1:{port}
tools:
  post_entry:
    description: Post an entry to the books.
    method: POST
    path: /entries
    input_schema: {{type: object, properties: {{amount: {{type: string}}}}, required: [amount]}}
    timeout: 1
    idempotency_header: Idempotency-Key
    receipt_id: id
"""
SILENT_POLICY = 'currency: USD\ntools:\n  books__post_entry: {effect: write, cost: {spend: "0.10"}}\n'


@contextlib.asynccontextmanager
async def silent_service(port: int) -> AsyncIterator[None]:
    """Accept connections on PORT, read what comes, answer nothing."""

    async def swallow(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError):
            while await reader.read(4096):
                pass
        writer.close()

    server = await asyncio.start_server(swallow, "127.0.0.1", port)
    async with server:
        yield


async def populate(served: Served) -> tuple[str, str]:
    """Runs with some history; the id of the one worth a page of its own, and of an approval with a diff."""
    body = contract("Collect vendor notes, book the costs and send the summary to a partner")
    body["authority"] = {"allow": ["notes__*", "books__*"]}
    async with served.api("op") as api:
        created = await api.post("/api/runs", json=body)
    assert created.status_code == 201, created.text
    shown: str = created.json()["run_id"]
    token = await served.lease(shown, worker="agent-7")
    await served.call(token, "notes__search", {"query": "vendors"})
    await served.call(token, "notes__append", {"title": "vendors", "body": "Acme Paper, Globex Ink, Initech"})
    saved = await served.call(token, "warrant_checkpoint", {"expected_version": 0, "next_operation": "book costs"})
    assert code_of(saved) is None, saved
    verified = await served.call(
        token, "warrant_milestone", {"milestone_id": "notes", "evidence": {"note": "three vendors noted"}}
    )
    assert code_of(verified) is None, verified
    lost = await served.call(token, "books__post_entry", {"amount": "120.00"})
    assert code_of(lost) == "outcome_unknown", lost
    approval_id = await replaced_proposal(served, token)
    refused = await served.call(token, "notes__append", {"title": "meanwhile", "body": "b"})
    assert code_of(refused) == "run_waiting", refused

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
    port = free_port()
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        (tmp / "books.yaml").write_text(SILENT_ADAPTER.format(port=port))
        (tmp / "books-policy.yaml").write_text(SILENT_POLICY)
        async with silent_service(port):
            await shoot(out, chromium, tmp)


async def shoot(out: Path, chromium: str, tmp: Path) -> None:
    with serve(tmp, [tmp / "books.yaml"], [tmp / "books-policy.yaml"]) as served:
        run_id, approval_id = await populate(served)
        async with async_playwright() as playwright:
            browser = await playwright.chromium.launch(executable_path=chromium, headless=True, args=CHROMIUM_ARGS)
            page = await browser.new_page(viewport={"width": 1280, "height": 800})
            await page.goto(f"{served.url}/console/login")
            await page.screenshot(path=out / "login.png", full_page=True)
            await sign_in(page, served, "admin")
            pages = {
                "runs": "/console/runs",
                "run": f"/console/runs/{run_id}",
                "cancel": f"/console/runs/{run_id}/cancel",
                "approvals": "/console/approvals",
                "approval": f"/console/approvals/{approval_id}",
            }
            for name, path in pages.items():
                answer = await page.goto(served.url + path)
                if answer is None or answer.status != 200:
                    print(f"{path}: {answer.status if answer else 'no answer'}, not saved", file=sys.stderr)
                    continue
                if name == "run":  # the timeline's stream open, as a person would see the page
                    await expect(page.locator("#timeline-state")).to_have_text("live")
                await page.screenshot(path=out / f"{name}.png", full_page=True)
                print(out / f"{name}.png")
            await browser.close()


if __name__ == "__main__":
    folder = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "docs" / "console"
    folder.mkdir(parents=True, exist_ok=True)
    anyio.run(main, folder)
