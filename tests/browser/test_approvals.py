"""The approvals inbox in a real headless Chromium against a real `warrant serve`: the agent (the official MCP
SDK client) asks to send a note outside acme.example and is told approval_required; the approver signs in,
lands on the inbox, opens the approval and approves it with a note, and the agent's retried call passes. A
page loaded before the agent replaced its proposal cannot approve the replaced one; another tenant's approver
sees none of it and decides nothing."""

from __future__ import annotations

import json
import re
import uuid

import pytest
from playwright.async_api import Page, expect

from tests.browser.console import Served, code_of, pending_approval, sign_in

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


def partner() -> str:
    return f"{uuid.uuid4().hex[:8]}@partner.example"


async def approval_status(served: Served, approval_id: str, key: str = "appr") -> tuple[int, str | None]:
    async with served.api(key) as api:
        shown = await api.get(f"/api/approvals/{approval_id}")
    return shown.status_code, shown.json().get("status")


async def test_approving_from_the_inbox_lets_the_agents_retried_call_pass(page: Page, served: Served) -> None:
    run_id = await served.create_run("Send the vendor notes to a partner")
    token = await served.lease(run_id)
    approval_id, arguments = await pending_approval(served, token, to=partner())

    await sign_in(page, served, "appr")
    assert page.url == f"{served.url}/console/approvals"  # an approver lands on its inbox, not a 403
    row = page.locator(f'tr.approval[data-approval-id="{approval_id}"]')
    await expect(row.locator(".tool")).to_have_text("notes__send")
    await expect(row.locator(".left")).to_contain_text("left to decide")
    await row.get_by_role("link", name=approval_id).click()
    await page.wait_for_url(f"{served.url}/console/approvals/{approval_id}")
    await expect(page.locator("#payload")).to_contain_text(arguments["to"])
    await expect(page.locator("#destination")).to_contain_text("notes")

    approve = page.locator(f'form[action="/console/approvals/{approval_id}/approve"]')
    await approve.get_by_label("Note").fill("partner confirmed by phone")
    await approve.get_by_role("button", name="Approve").click()
    await expect(page.locator("#status")).to_have_text("approved")
    await expect(page.locator("#decided")).to_contain_text("partner confirmed by phone")

    retried = await served.call(token, "notes__send", arguments)
    assert code_of(retried) is None, retried
    assert await approval_status(served, approval_id) == (200, "used")


async def test_a_page_loaded_before_the_agent_replaced_its_proposal_cannot_approve_it(
    page: Page, served: Served
) -> None:
    run_id = await served.create_run("Send the vendor notes to a partner")
    token = await served.lease(run_id)
    approval_id, arguments = await pending_approval(served, token, to=partner())

    await sign_in(page, served, "appr")
    await page.goto(f"{served.url}/console/approvals/{approval_id}")
    await expect(page.locator("#payload")).to_contain_text(arguments["to"])

    # The agent changes its mind while the page is open: the same tool, another recipient.
    replaced = {**arguments, "to": partner()}
    asked = await served.call(token, "notes__send", replaced)
    assert code_of(asked) == "approval_required" and asked.structured_content is not None, asked
    error = asked.structured_content["error"]
    assert error["replaced_approval_id"] == approval_id
    new_id = error["approval_id"]

    async with page.expect_navigation() as navigation:
        await (
            page.locator(f'form[action="/console/approvals/{approval_id}/approve"]')
            .get_by_role("button", name="Approve")
            .click()
        )
    answer = await navigation.value
    assert answer is not None and answer.status == 409
    await expect(page.locator("#error")).to_contain_text("approval_not_pending")

    assert await approval_status(served, approval_id) == (200, "superseded")
    assert await approval_status(served, new_id) == (200, "pending")
    for payload in (arguments, replaced):  # neither payload was approved
        assert code_of(await served.call(token, "notes__send", payload)) == "approval_required"

    # The replacement's page says what changed since the proposal it replaced.
    await page.goto(f"{served.url}/console/approvals/{new_id}")
    await expect(page.locator("#against")).to_have_text(approval_id)
    await expect(page.locator("#changes")).to_contain_text(replaced["to"])
    await expect(page.locator("#changes")).to_contain_text(arguments["to"])


async def test_an_approver_of_another_tenant_sees_none_of_it(page: Page, served: Served) -> None:
    run_id = await served.create_run("acme's own approval")
    approval_id, arguments = await pending_approval(served, await served.lease(run_id), to=partner())

    await sign_in(page, served, "globex")
    await expect(page.locator("header")).to_contain_text("tenant globex")
    await page.goto(f"{served.url}/console/approvals?status=all")
    await expect(page.locator("main")).not_to_contain_text(approval_id)
    answer = await page.goto(f"{served.url}/console/approvals/{approval_id}")
    assert answer is not None and answer.status == 404
    await expect(page.locator("#error")).to_contain_text("not_found")
    assert arguments["to"] not in await page.content()

    # A form of its own, posted with this session's valid CSRF token (no script runs in the console).
    csrf = await page.locator('input[name="csrf"]').first.get_attribute("value")
    async with page.expect_navigation() as navigation:
        await page.evaluate(
            """([action, csrf]) => { const form = document.createElement("form");
                   form.method = "post"; form.action = action;
                   for (const [name, value] of [["csrf", csrf], ["payload_sha256", "0".repeat(64)]]) {
                       const field = document.createElement("input");
                       field.type = "hidden"; field.name = name; field.value = value; form.appendChild(field); }
                   document.body.appendChild(form); form.submit(); }""",
            [f"/console/approvals/{approval_id}/approve", csrf],
        )
    answer = await navigation.value
    assert answer is not None and answer.status == 404
    assert await approval_status(served, approval_id) == (200, "pending")


async def test_edit_and_approve_in_the_browser_the_agent_is_told_and_sends_the_edit(page: Page, served: Served) -> None:
    # docs/decisions/0032-approve-edited.md: the textarea comes prefilled, a bad edit is shown on the page.
    run_id = await served.create_run("Send the vendor notes to a partner")
    token = await served.lease(run_id)
    approval_id, arguments = await pending_approval(served, token, to=partner())
    edited = {**arguments, "to": partner()}

    await sign_in(page, served, "appr")
    await page.goto(f"{served.url}/console/approvals/{approval_id}")
    form = page.locator("#edit-form")
    area = form.get_by_label("Payload")
    await expect(area).to_have_value(re.compile(re.escape(arguments["to"])))
    await area.fill('{"to": "' + edited["to"] + '"}')  # note_id left out: the tool's schema requires it
    await form.get_by_role("button", name="Edit and approve").click()
    await expect(page.locator("#edit-error")).to_contain_text("edit_outside_authority")
    assert await approval_status(served, approval_id) == (200, "pending")

    await page.locator("#edit-form").get_by_label("Payload").fill(json.dumps(edited))
    await page.locator("#edit-form").get_by_role("button", name="Edit and approve").click()
    await expect(page.locator("#status")).to_have_text("approved")
    await expect(page.locator("#edit-changes")).to_contain_text(edited["to"])

    told = await served.call(token, "notes__send", arguments)
    assert code_of(told) == "approval_edited" and told.structured_content is not None, told
    assert told.structured_content["error"]["arguments"] == edited
    sent = await served.call(token, "notes__send", told.structured_content["error"]["arguments"])
    assert code_of(sent) is None, sent
    assert await approval_status(served, approval_id) == (200, "used")
