"""The approvals inbox and one approval's page over a real server: what a key sees and may decide follows its
tenant and roles as in the API; the decision carries the payload hash the page showed; every form POST needs
its session's CSRF token; an approver lands on the inbox after sign-in."""

from __future__ import annotations

import html
import json
import re
from typing import Any

import pytest

from gateway.store.records import ApprovalStatus
from tests.api.conftest import Api
from tests.api.test_operator_api import create_run, lease
from tests.console.conftest import csrf_of, sign_in, signed_in

pytestmark = pytest.mark.anyio

HASH = re.compile(r'name="payload_sha256" value="([0-9a-f]{64})"')


async def asked(api: Api, to: str = "bob@example.com", *, key: str = "op", token: str | None = None) -> dict[str, Any]:
    """An agent's shop__order that needs an approver: the refusal's details (approval_id, payload_sha256, ...)
    and the lease token it called with."""
    if token is None:
        run = await create_run(api)
        token = (await lease(api, run["run_id"], key=key))["token"]
    result = await api.gateway.gate.propose(
        token, "shop__order", {"to": to}, evidence={"source": "<b>ticket 42</b>"}, rationale="the customer <asked>"
    )
    assert result.structured is not None, result
    pending = result.structured["approval"]
    assert pending["status"] == "pending", result
    sha256 = result.structured["payload_sha256"]
    return {"approval_id": pending["approval_id"], "token": token, "payload_sha256": sha256}


def shown_hash(page: str) -> str:
    found = HASH.search(page)
    assert found is not None, "the page carries no payload hash to decide with"
    return found.group(1)


async def status_of(api: Api, approval_id: str) -> ApprovalStatus:
    return (await api.gateway.store.get_approval("acme", approval_id)).status


async def test_the_inbox_lists_the_tenants_pending_approvals_with_tool_destination_and_time_left(api: Api) -> None:
    first = await asked(api, "bob@example.com")
    async with signed_in(api, "key-appr") as browser:
        page = await browser.get("/console/approvals")
        assert page.status_code == 200
        assert first["approval_id"] in page.text and "shop__order" in page.text
        assert "in-process tool order of adapter shop" in page.text
        assert "left to decide" in page.text
        assert 'href="/console/approvals"' in page.text and 'href="/console/runs"' not in page.text  # the nav

        await browser.post(
            f"/console/approvals/{first['approval_id']}/deny",
            data={"csrf": csrf_of(page.text), "payload_sha256": first["payload_sha256"]},
        )
        pending = await browser.get("/console/approvals")
        assert first["approval_id"] not in pending.text and 'id="no-approvals"' in pending.text
        denied = await browser.get("/console/approvals", params={"status": "denied"})
        assert first["approval_id"] in denied.text
        every = await browser.get("/console/approvals", params={"status": "all"})
        assert first["approval_id"] in every.text
        wrong = await browser.get("/console/approvals", params={"status": "maybe"})
        assert wrong.status_code == 422 and "invalid_request" in wrong.text


async def test_the_approval_page_shows_the_exact_payload_evidence_and_rationale_escaped(api: Api) -> None:
    pending = await asked(api, '<script>alert("x")</script>@example.com')
    async with signed_in(api, "key-appr") as browser:
        page = await browser.get(f"/console/approvals/{pending['approval_id']}")
    assert page.status_code == 200
    assert "<script>" not in page.text and "<b>ticket" not in page.text and "<asked>" not in page.text
    assert "&lt;script&gt;" in page.text and "&lt;b&gt;ticket 42&lt;/b&gt;" in page.text
    assert "the customer &lt;asked&gt;" in page.text
    assert f'id="payload-sha256">{pending["payload_sha256"]}' in page.text
    assert shown_hash(page.text) == pending["payload_sha256"]
    assert 'id="no-diff"' in page.text  # nothing proposed for the tool before it
    assert "left to decide" in page.text


async def test_the_approval_page_warns_of_homoglyphs_and_direction_overrides_and_names_them(api: Api) -> None:
    pending = await asked(api, "ceo@\u0430cme.example\u202e")
    async with signed_in(api, "key-appr") as browser:
        page = await browser.get(f"/console/approvals/{pending['approval_id']}")
        plain = await browser.get(f"/console/approvals/{(await asked(api))['approval_id']}")
    assert page.status_code == 200
    assert 'id="payload-marks"' in page.text
    assert '<span class="badge code">U+0430</span>' in page.text
    assert '<span class="badge code">U+202E</span>' in page.text
    assert 'id="payload-marks"' not in plain.text


async def test_approving_from_the_page_lets_the_agents_retried_call_pass(api: Api) -> None:
    pending = await asked(api)
    async with signed_in(api, "key-appr") as browser:
        page = await browser.get(f"/console/approvals/{pending['approval_id']}")
        r = await browser.post(
            f"/console/approvals/{pending['approval_id']}/approve",
            data={"csrf": csrf_of(page.text), "payload_sha256": shown_hash(page.text), "note": "fine <b>by me</b>"},
        )
        assert (r.status_code, r.headers["location"]) == (303, f"/console/approvals/{pending['approval_id']}")
        after = await browser.get(r.headers["location"])
    assert 'id="status">approved' in after.text and "fine &lt;b&gt;by me&lt;/b&gt;" in after.text
    assert "valid " in after.text and 'id="not-pending"' in after.text
    decided = await api.gateway.store.get_approval("acme", pending["approval_id"])
    assert (decided.status, decided.decided_by, decided.note) == (ApprovalStatus.APPROVED, "appr", "fine <b>by me</b>")
    assert (await api.gateway.gate.call(pending["token"], "shop__order", {"to": "bob@example.com"})).code is None
    assert api.effects == [{"to": "bob@example.com"}]


async def test_a_payload_replaced_after_the_page_loaded_cannot_be_approved_from_that_page(api: Api) -> None:
    first = await asked(api, "bob@example.com")
    async with signed_in(api, "key-appr") as browser:
        stale = await browser.get(f"/console/approvals/{first['approval_id']}")
        # The agent replaces its proposal for the same tool: the shown one is superseded.
        second = await asked(api, "eve@example.com", token=first["token"])
        r = await browser.post(
            f"/console/approvals/{first['approval_id']}/approve",
            data={"csrf": csrf_of(stale.text), "payload_sha256": shown_hash(stale.text)},
        )
        assert r.status_code == 409 and "approval_not_pending" in r.text
        assert 'href="/console/approvals">Back to the approvals' in r.text  # not to the runs it may not read
        # A hash other than the approval's own (the page showed another payload) is refused too.
        r = await browser.post(
            f"/console/approvals/{second['approval_id']}/approve",
            data={"csrf": csrf_of(stale.text), "payload_sha256": shown_hash(stale.text)},
        )
        assert r.status_code == 409 and "payload_mismatch" in r.text
        for missing in ({}, {"payload_sha256": "not-a-hash"}):
            r = await browser.post(
                f"/console/approvals/{second['approval_id']}/approve", data={"csrf": csrf_of(stale.text), **missing}
            )
            assert r.status_code == 422 and "invalid_request" in r.text, missing
        # The new proposal's page compares it with the one it replaced.
        page = await browser.get(f"/console/approvals/{second['approval_id']}")
    assert f'id="against">{first["approval_id"]}' in page.text and "superseded" in page.text
    assert "bob@example.com" in html.unescape(page.text) and "eve@example.com" in html.unescape(page.text)
    assert await status_of(api, first["approval_id"]) is ApprovalStatus.SUPERSEDED
    assert await status_of(api, second["approval_id"]) is ApprovalStatus.PENDING
    assert (await api.gateway.gate.call(first["token"], "shop__order", {"to": "bob@example.com"})).code == (
        "approval_required"
    )
    assert api.effects == []


async def test_a_decision_without_or_with_a_wrong_csrf_token_changes_nothing(api: Api) -> None:
    pending = await asked(api)
    async with signed_in(api, "key-appr") as browser:
        page = await browser.get(f"/console/approvals/{pending['approval_id']}")
        good, sha = csrf_of(page.text), shown_hash(page.text)
        for data in ({}, {"csrf": "0" * len(good)}, {"csrf": ""}):
            r = await browser.post(
                f"/console/approvals/{pending['approval_id']}/approve", data={**data, "payload_sha256": sha}
            )
            assert r.status_code == 403 and "csrf_failed" in r.text, data
    assert await status_of(api, pending["approval_id"]) is ApprovalStatus.PENDING


async def test_roles_and_self_approval_are_the_apis(api: Api) -> None:
    pending = await asked(api, key="ops")  # the admin holds the lease: it asked
    async with signed_in(api, "key-ops") as browser:  # an admin may decide, but never its own request
        page = await browser.get(f"/console/approvals/{pending['approval_id']}")
        assert 'id="no-decide"' in page.text
        data = {"csrf": csrf_of(page.text), "payload_sha256": pending["payload_sha256"]}
        r = await browser.post(f"/console/approvals/{pending['approval_id']}/approve", data=data)
        assert r.status_code == 403 and "forbidden" in r.text
    async with signed_in(api, "key-aud") as browser:  # an auditor reads approvals, never decides
        page = await browser.get(f"/console/approvals/{pending['approval_id']}")
        assert page.status_code == 200 and 'id="no-decide"' in page.text
        data = {"csrf": csrf_of(page.text), "payload_sha256": pending["payload_sha256"]}
        r = await browser.post(f"/console/approvals/{pending['approval_id']}/deny", data=data)
        assert r.status_code == 403 and "forbidden" in r.text
    async with signed_in(api, "key-wrk") as browser:  # a worker may not even read them
        r = await browser.get("/console/approvals")
        assert r.status_code == 403 and pending["approval_id"] not in r.text
    assert await status_of(api, pending["approval_id"]) is ApprovalStatus.PENDING


async def test_another_tenant_sees_none_of_it_and_decides_nothing(api: Api) -> None:
    pending = await asked(api)
    async with signed_in(api, "key-other") as browser:  # globex's admin
        inbox = await browser.get("/console/approvals", params={"status": "all"})
        assert inbox.status_code == 200 and pending["approval_id"] not in inbox.text
        page = await browser.get(f"/console/approvals/{pending['approval_id']}")
        assert page.status_code == 404 and "not_found" in page.text and "bob@example.com" not in page.text
        data = {"csrf": csrf_of(inbox.text), "payload_sha256": pending["payload_sha256"]}
        r = await browser.post(f"/console/approvals/{pending['approval_id']}/approve", data=data)
        assert r.status_code == 404
    assert await status_of(api, pending["approval_id"]) is ApprovalStatus.PENDING


async def test_an_approver_lands_on_the_inbox_and_an_operator_on_the_runs(api: Api, browser: Any) -> None:
    r = await sign_in(browser, "key-appr")
    assert (r.status_code, r.headers["location"]) == (303, "/console/approvals")
    browser.cookies.clear()
    r = await sign_in(browser, "key-op")
    assert (r.status_code, r.headers["location"]) == (303, "/console/runs")


async def test_an_expired_approval_says_so_and_offers_no_decision(api: Api) -> None:
    pending = await asked(api)
    api.clock.advance(5 * 3600)  # past the default decide_within (4h)
    async with signed_in(api, "key-appr") as browser:
        inbox = await browser.get("/console/approvals")
        page = await browser.get(f"/console/approvals/{pending['approval_id']}")
        r = await browser.post(
            f"/console/approvals/{pending['approval_id']}/approve",
            data={"csrf": csrf_of(page.text), "payload_sha256": pending["payload_sha256"]},
        )
    assert "expired" in inbox.text
    assert 'id="time-left" class="left-expired">expired' in page.text and 'name="payload_sha256"' not in page.text
    assert r.status_code == 409 and "approval_expired" in r.text


# -- edit and approve; a denial's message (docs/decisions/0032-approve-edited.md) ---------------
EDIT_AREA = re.compile(r'<textarea name="arguments" rows="10" id="edit-arguments">(.*?)</textarea>', re.S)


async def test_edit_and_approve_from_the_page_binds_the_edit_and_shows_it_against_the_proposal(api: Api) -> None:
    pending = await asked(api, "bob@example.com")
    approval_id = pending["approval_id"]
    async with signed_in(api, "key-appr") as browser:
        page = await browser.get(f"/console/approvals/{approval_id}")
        found = EDIT_AREA.search(page.text)
        assert found is not None and json.loads(html.unescape(found.group(1))) == {"to": "bob@example.com"}
        form = {"csrf": csrf_of(page.text), "payload_sha256": shown_hash(page.text)}

        # Not JSON, not an object, outside the schema: shown on the page with the text as typed, nothing decided.
        for text, code in (
            ("{to: carol", "invalid_json"),
            ("[1]", "invalid_json"),
            ('{"to": 5}', "edit_outside_authority"),
        ):
            r = await browser.post(f"/console/approvals/{approval_id}/edit", data={**form, "arguments": text})
            assert r.status_code == 422, text
            assert 'id="edit-error"' in r.text and code in r.text
            edit_area = EDIT_AREA.search(r.text)
            assert edit_area is not None and html.unescape(edit_area.group(1)) == text
            assert await status_of(api, approval_id) is ApprovalStatus.PENDING
        # Without the session's CSRF token: refused, nothing decided.
        r = await browser.post(
            f"/console/approvals/{approval_id}/edit",
            data={**form, "csrf": "forged", "arguments": '{"to": "carol@example.com"}'},
        )
        assert r.status_code == 403 and await status_of(api, approval_id) is ApprovalStatus.PENDING

        r = await browser.post(
            f"/console/approvals/{approval_id}/edit",
            data={**form, "arguments": '{"to": "carol@example.com"}', "note": "Carol, not Bob"},
        )
        assert (r.status_code, r.headers["location"]) == (303, f"/console/approvals/{approval_id}")
        after = await browser.get(r.headers["location"])
    assert 'id="status">approved' in after.text and 'id="edit-changes"' in after.text
    assert f'id="proposed-sha256">{pending["payload_sha256"]}' in after.text
    shown = html.unescape(after.text)
    assert '-  "to": "bob@example.com"' in shown and '+  "to": "carol@example.com"' in shown
    told = await api.gateway.gate.call(pending["token"], "shop__order", {"to": "bob@example.com"})
    assert told.code == "approval_edited" and told.structured is not None
    assert told.structured["error"]["arguments"] == {"to": "carol@example.com"}
    assert (await api.gateway.gate.call(pending["token"], "shop__order", {"to": "carol@example.com"})).code is None
    assert api.effects == [{"to": "carol@example.com"}]


async def test_a_stale_page_cannot_edit_and_approve_a_replaced_proposal(api: Api) -> None:
    first = await asked(api, "bob@example.com")
    async with signed_in(api, "key-appr") as browser:
        stale = await browser.get(f"/console/approvals/{first['approval_id']}")
        await asked(api, "eve@example.com", token=first["token"])
        r = await browser.post(
            f"/console/approvals/{first['approval_id']}/edit",
            data={
                "csrf": csrf_of(stale.text),
                "payload_sha256": shown_hash(stale.text),
                "arguments": '{"to": "carol@example.com"}',
            },
        )
    assert r.status_code == 409 and "approval_not_pending" in r.text
    assert await status_of(api, first["approval_id"]) is ApprovalStatus.SUPERSEDED
    assert api.effects == []


async def test_the_deny_form_carries_a_message_the_model_reads(api: Api) -> None:
    pending = await asked(api, "bob@example.com")
    async with signed_in(api, "key-appr") as browser:
        page = await browser.get(f"/console/approvals/{pending['approval_id']}")
        assert "Message for the agent" in page.text
        r = await browser.post(
            f"/console/approvals/{pending['approval_id']}/deny",
            data={
                "csrf": csrf_of(page.text),
                "payload_sha256": shown_hash(page.text),
                "note": "Bob left.\r\nWrite to sales@example.com.",
            },
        )
        assert r.status_code == 303
    denied = await api.gateway.gate.call(pending["token"], "shop__order", {"to": "bob@example.com"})
    assert denied.code == "approval_denied" and denied.structured is not None
    assert denied.structured["error"]["note"] == "Bob left.\nWrite to sales@example.com."
