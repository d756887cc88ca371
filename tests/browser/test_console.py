"""The operator console in a real headless Chromium against a real `warrant serve`: sign in with a key,
see a run the API created, watch the agent's calls appear in the run page's timeline without a reload, cancel
(or fail) the run through its confirmation page and watch the agent refused, pause and resume it, another tenant's
approver sees none of it, and a form posted without its CSRF token changes nothing.

Runs, leases and the agent go through the API and the official MCP SDK client (tests/browser/console.py);
what the tests assert of the pages is what a person sees: text in the page, the URL, the cookie jar."""

from __future__ import annotations

import re
import uuid

import pytest
from playwright.async_api import Browser, Locator, Page, expect

from tests.browser.console import PAGE_WAIT, Served, code_of, pending_approval, sign_in

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


def unique(label: str) -> str:
    return f"{label} {uuid.uuid4().hex[:8]}"


async def test_signing_in_shows_a_run_created_through_the_api(page: Page, served: Served) -> None:
    goal = unique("Collect vendor notes")
    run_id = await served.create_run(goal)

    await sign_in(page, served, "admin")
    row = page.locator(f'tr.run[data-run-id="{run_id}"]')
    await expect(row).to_contain_text(goal)
    await expect(row.locator(".status")).to_have_text("running")
    await expect(page.locator("header")).to_contain_text("tenant acme")

    cookies = {c["name"]: c for c in await page.context.cookies(served.url)}
    session = cookies["warrant_console"]
    assert (session["httpOnly"], session["sameSite"]) == (True, "Strict")
    assert "warrant_console" not in await page.evaluate("document.cookie")  # HttpOnly: no script reads it

    await row.get_by_role("link", name=run_id).click()
    await page.wait_for_url(f"{served.url}/console/runs/{run_id}")
    await expect(page.locator("#status")).to_have_text("running")


async def test_a_wrong_key_is_refused_at_the_sign_in_form(page: Page, served: Served) -> None:
    await page.goto(f"{served.url}/console/runs")
    await page.wait_for_url(f"{served.url}/console/login")  # signed out: led to the form
    await page.get_by_label("API key").fill("key-nobody")
    await page.get_by_role("button", name="Sign in").click()
    await expect(page.locator("#error")).to_contain_text("unauthenticated")
    assert "warrant_console" not in {c["name"] for c in await page.context.cookies(served.url)}


async def confirm_control(page: Page, served: Served, run_id: str, verb: str, reason: str = "") -> Locator:
    """From the run page, follow VERB's link to its confirmation page: the form there (not yet submitted)."""
    await page.goto(f"{served.url}/console/runs/{run_id}")
    await page.locator(f"#{verb}").click()
    await page.wait_for_url(f"{served.url}/console/runs/{run_id}/{verb}")
    form = page.locator(f'form[action="/console/runs/{run_id}/{verb}"]')
    if reason:
        await form.get_by_label("Reason").fill(reason)
    return form


async def test_cancelling_through_the_confirmation_page_refuses_the_agents_next_call(
    page: Page, served: Served
) -> None:
    run_id = await served.create_run(unique("to be cancelled"))
    token = await served.lease(run_id)
    assert code_of(await served.call(token, "notes__append", {"title": "before", "body": "b"})) is None

    await sign_in(page, served, "op")
    cancel = await confirm_control(page, served, run_id, "cancel", reason="the job is off")
    difference = page.locator("#difference")  # the page says plainly how cancel differs from pause
    await expect(difference).to_contain_text("Pause is reversible")
    await expect(difference).to_contain_text("Cancel is final")
    assert (await served.run(run_id))["status"] == "running"  # the confirmation page changed nothing
    await cancel.get_by_role("button", name="Cancel the run for good").click()

    await page.wait_for_url(f"{served.url}/console/runs/{run_id}")
    await expect(page.locator("#status")).to_contain_text("cancelled")
    assert page.url == f"{served.url}/console/runs/{run_id}"
    assert (await served.run(run_id))["status"] == "cancelled"
    after = await served.call(token, "notes__append", {"title": "after", "body": "b"})
    assert code_of(after) == "run_cancelled"


async def test_failing_through_the_confirmation_page_shows_the_cause_and_the_open_alert(
    page: Page, served: Served
) -> None:
    run_id = await served.create_run(unique("to be failed"))
    token = await served.lease(run_id)

    await sign_in(page, served, "op")
    fail = await confirm_control(page, served, run_id, "fail", reason="the source data is wrong")
    await expect(page.locator("#difference")).to_contain_text("Fail is final too")
    assert (await served.run(run_id))["status"] == "running"  # the confirmation page changed nothing
    await fail.get_by_role("button", name="Fail the run for good").click()

    await page.wait_for_url(f"{served.url}/console/runs/{run_id}")
    await expect(page.locator("#status")).to_contain_text("failed (the source data is wrong)")
    await expect(page.locator("#status-cause")).to_contain_text("failed by op")
    await expect(page.locator("#alerts")).to_contain_text("run_failed")
    assert (await served.run(run_id))["status"] == "failed"
    after = await served.call(token, "notes__append", {"title": "after", "body": "b"})
    assert code_of(after) == "run_failed"


async def test_an_approver_of_another_tenant_sees_none_of_it(page: Page, served: Served) -> None:
    goal = unique("acme only")
    run_id = await served.create_run(goal)

    # globex's approver: no runs.read, as the API refuses it (and nothing of acme's in the page).
    await sign_in(page, served, "globex")
    await expect(page.locator("header")).to_contain_text("tenant globex")
    for path in ("/console/runs", f"/console/runs/{run_id}"):
        answer = await page.goto(served.url + path)
        assert answer is not None and answer.status == 403, path
        await expect(page.locator("#error")).to_contain_text("forbidden")
        assert goal not in await page.content() and run_id not in await page.content()
    assert await post_cancel(page, served, run_id) == 403

    # globex's admin may read runs, but only globex's: acme's run is not listed and not found.
    await page.context.clear_cookies()
    await sign_in(page, served, "globex-admin")
    await expect(page.locator("main")).not_to_contain_text(run_id)
    assert goal not in await page.content()
    answer = await page.goto(f"{served.url}/console/runs/{run_id}")
    assert answer is not None and answer.status == 404
    await expect(page.locator("#error")).to_contain_text("not_found")
    assert goal not in await page.content()
    assert await post_cancel(page, served, run_id) == 404

    assert (await served.run(run_id))["status"] == "running"


async def post_cancel(page: Page, served: Served, run_id: str) -> int:
    """Submit a cancel of RUN_ID from the page as a form of its own would, with the page's own (valid) CSRF
    token (the pages' CSP lets no script fetch): the answer's status."""
    csrf = await page.locator('input[name="csrf"]').first.get_attribute("value")
    async with page.expect_navigation() as navigation:
        await page.evaluate(
            """([action, csrf]) => { const form = document.createElement("form");
                   form.method = "post"; form.action = action;
                   const field = document.createElement("input");
                   field.type = "hidden"; field.name = "csrf"; field.value = csrf;
                   form.appendChild(field); document.body.appendChild(form); form.submit(); }""",
            [f"/console/runs/{run_id}/cancel", csrf],
        )
    answer = await navigation.value
    assert answer is not None
    return answer.status


async def test_a_form_posted_without_its_csrf_token_changes_nothing(page: Page, served: Served) -> None:
    run_id = await served.create_run(unique("csrf"))
    token = await served.lease(run_id)

    await sign_in(page, served, "op")
    pause = await confirm_control(page, served, run_id, "pause")
    removed = await pause.evaluate(
        """form => { const fields = form.querySelectorAll('input[name="csrf"]');
                     fields.forEach(f => f.remove()); return fields.length; }"""
    )
    assert removed == 1
    async with page.expect_navigation() as navigation:
        await pause.get_by_role("button", name="Pause the run").click()
    answer = await navigation.value
    assert answer is not None and answer.status == 403
    await expect(page.locator("#error")).to_contain_text("csrf_failed")

    assert (await served.run(run_id))["status"] == "running"
    assert code_of(await served.call(token, "notes__append", {"title": "still", "body": "running"})) is None


async def test_pausing_and_resuming_from_the_run_page_stops_the_agent_and_lets_it_go_on(
    page: Page, served: Served
) -> None:
    run_id = await served.create_run(unique("to be paused"))
    token = await served.lease(run_id)

    await sign_in(page, served, "op")
    pause = await confirm_control(page, served, run_id, "pause", reason="lunch")
    await pause.get_by_role("button", name="Pause the run").click()
    await expect(page.locator("#status")).to_contain_text("paused")
    paused = await served.call(token, "notes__append", {"title": "while paused", "body": "b"})
    assert code_of(paused) == "run_paused"

    resume = await confirm_control(page, served, run_id, "resume")
    await resume.get_by_role("button", name="Resume the run").click()
    await expect(page.locator("#status")).to_contain_text("running")
    assert code_of(await served.call(token, "notes__append", {"title": "resumed", "body": "b"})) is None


async def test_a_run_waiting_for_an_approver_names_the_approval_on_its_page(page: Page, served: Served) -> None:
    run_id = await served.create_run(unique("waits"))
    approval_id, _ = await pending_approval(served, await served.lease(run_id))

    await sign_in(page, served, "admin")
    row = page.locator(f'tr.run[data-run-id="{run_id}"]')
    await expect(row.locator(".status")).to_have_text("waiting")
    await page.goto(f"{served.url}/console/runs/{run_id}")
    await expect(page.locator("#status")).to_contain_text(approval_id)


async def test_the_timeline_shows_the_agents_next_call_without_a_reload(page: Page, served: Served) -> None:
    run_id = await served.create_run(unique("watched live"))
    token = await served.lease(run_id, worker="agent-live")

    await sign_in(page, served, "op")
    await page.goto(f"{served.url}/console/runs/{run_id}")
    timeline = page.locator("#timeline")
    await expect(timeline.locator("li.event")).to_have_count(2)  # created, leased: rendered by the server
    await expect(page.locator("#timeline-state")).to_have_text("live")  # the script's stream is open
    await page.evaluate("window.loadedOnce = true")  # gone if the page reloads

    appended = await served.call(token, "notes__append", {"title": "live", "body": "seen as it happens"})
    assert code_of(appended) is None

    added = timeline.locator("li.event.live")
    await expect(added.filter(has_text="action_admitted")).to_contain_text("notes__append")
    await expect(added.filter(has_text="action_settled")).to_contain_text("succeeded")
    admitted = added.filter(has_text="action_admitted").locator(".message")
    await expect(admitted).to_contain_text("to notes__append admitted")  # the entry's fixed-template message
    assert await page.evaluate("window.loadedOnce === true")
    seqs = [int(s or 0) for s in await timeline.locator("li.event").evaluate_all("(l) => l.map(e => e.dataset.seq)")]
    assert seqs == list(range(1, len(seqs) + 1))  # in order, none twice


async def test_without_javascript_the_run_page_shows_its_timeline_and_the_controls_still_work(
    browser: Browser, served: Served
) -> None:
    run_id = await served.create_run(unique("no script"))
    token = await served.lease(run_id, worker="agent-plain")
    assert code_of(await served.call(token, "notes__append", {"title": "plain", "body": "b"})) is None

    context = await browser.new_context(java_script_enabled=False)
    try:
        context.set_default_timeout(PAGE_WAIT)
        page = await context.new_page()
        await sign_in(page, served, "op")
        await page.goto(f"{served.url}/console/runs/{run_id}")
        await expect(page.locator("#timeline li.event")).to_have_count(4)  # created, leased, admitted, settled
        await expect(page.locator("#timeline-state")).to_have_text("as loaded")  # no stream without the script
        await expect(page.locator("#confirmed")).to_contain_text("notes__append")
        cancel = await confirm_control(page, served, run_id, "cancel", reason="no script needed")
        await cancel.get_by_role("button", name="Cancel the run for good").click()
        await expect(page.locator("#status")).to_contain_text("cancelled")
    finally:
        await context.close()
    assert code_of(await served.call(token, "notes__append", {"title": "after", "body": "b"})) == "run_cancelled"


async def test_a_signal_sent_from_the_run_page_wakes_the_waiting_agent(page: Page, served: Served) -> None:
    run_id = await served.create_run(unique("waits for a quote"))
    token = await served.lease(run_id)
    waited = await served.call(
        token, "warrant_wait", {"reason": "the vendor's quote", "until": "1h", "wake_on": ["quote.received"]}
    )
    assert code_of(waited) is None, waited
    assert code_of(await served.call(token, "notes__append", {"title": "early", "body": "b"})) == "run_waiting"

    await sign_in(page, served, "op")
    await page.goto(f"{served.url}/console/runs/{run_id}")
    await expect(page.locator("#wait-reason")).to_have_text("the vendor's quote")
    await expect(page.locator("#wait-wake-on")).to_contain_text("quote.received")
    key = await page.locator("#signal-key").input_value()
    assert key.startswith("console-")  # prefilled, fresh
    await page.locator("#signal-name").fill("quote.received")
    await page.locator("#signal-payload").fill('{"price": "12.50"}')
    await page.get_by_role("button", name="Send signal").click()

    await page.wait_for_url(re.compile(re.escape(f"{served.url}/console/runs/{run_id}?signal=") + ".*outcome=woke"))
    await expect(page.locator("#signal-outcome")).to_contain_text("it ended the wait")
    await expect(page.locator("#status")).to_contain_text("running")
    await expect(page.locator("#no-wait")).to_be_visible()
    await expect(page.locator("#signal-list")).to_contain_text('{"price": "12.50"}')
    assert await page.locator("#signal-key").input_value() != key  # the page reloaded: a fresh key for the next
    assert code_of(await served.call(token, "notes__append", {"title": "after", "body": "b"})) is None
