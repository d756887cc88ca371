"""The run page's sections (timeline, ledger apart, checkpoint and milestones, cost by tag), the runs page's
heartbeat / milestone / alert columns, the console's event stream and the confirmation pages: each scoped to the
key's tenant and permissions as the API is."""

from __future__ import annotations

import re
from typing import Any

import anyio
import httpx
import pytest

from gateway.api import events as sse
from gateway.domain import RunStatus
from gateway.tools.tasks import Planning
from tests.api.conftest import Api
from tests.api.test_events_sse import STREAM, WAIT, Reader
from tests.api.test_keys import create_key
from tests.api.test_operator_api import create_run, lease
from tests.console.conftest import csrf_of, signed_in
from tests.console.test_runs import status_in_store

pytestmark = pytest.mark.anyio

MILESTONES: dict[str, Any] = {"milestones": [{"id": "inventory"}, {"id": "report", "required": False}]}


def section(html: str, element_id: str) -> str:
    """The text of the element with id ELEMENT_ID up to the next sibling section (enough for the asserts)."""
    start = html.index(f'id="{element_id}"')
    following = [html.find(f'id="{other}"', start + 1) for other in ("confirmed", "unknown", "refused", "other")]
    ends = [i for i in (*following, html.find("</section>", start)) if i > start]
    return html[start : min(ends)]


async def busy_run(api: Api) -> tuple[dict[str, Any], str]:
    """A run with a confirmed write, an unknown one, a refusal, a read, a checkpoint and a verified milestone."""
    run = await create_run(api, goal="Count the shelves", **MILESTONES)
    token = (await lease(api, run["run_id"], worker="shelf-bot"))["token"]
    gate, progress = api.gateway.gate, api.gateway.progress
    assert progress is not None
    assert (await gate.call(token, "shop__charge", {"card": "ok"})).code is None
    assert (await gate.call(token, "shop__charge", {"card": "lost"})).code == "outcome_unknown"
    assert (await gate.call(token, "shop__find", {"q": "shelves"})).code is None
    async with api.client("op") as c:
        assert (await c.post(f"/api/runs/{run['run_id']}/pause", json={"reason": "check"})).status_code == 200
        assert (await gate.call(token, "shop__find", {"q": "while paused"})).code == "run_paused"
        assert (await c.post(f"/api/runs/{run['run_id']}/resume", json={})).status_code == 200
    saved = await progress.checkpoint(token, {"expected_version": 0, "next_operation": {"tool": "shop__find"}})
    assert saved.code is None, saved
    verified = await progress.milestone(token, {"milestone_id": "inventory", "evidence": {"note": "twelve shelves"}})
    assert verified.code is None, verified
    return run, token


async def test_the_run_page_shows_the_ledger_apart_progress_and_cost(api: Api) -> None:
    run, _ = await busy_run(api)
    async with signed_in(api, "key-aud") as browser:  # an auditor reads runs, actions and events
        page = await browser.get(f"/console/runs/{run['run_id']}")
    assert page.status_code == 200, page.text
    html = page.text
    confirmed, unknown, refused, other = (section(html, s) for s in ("confirmed", "unknown", "refused", "other"))
    assert "Confirmed effects (1)" in confirmed and "charge-1" in confirmed  # the receipt's id
    assert (
        "(1)" in unknown
        and "shop__charge" in unknown
        and "resolve" in unknown
        and "releases its reservation" in unknown
    )
    assert "Refusals (1)" in refused and "run_paused" in refused
    assert "shop__find" in other and "shop__charge" not in other
    timeline = section(html, "timeline")
    assert f'data-stream="/console/runs/{run["run_id"]}/events"' in timeline
    seqs = [int(seq) for seq in re.findall(r'<li class="event" data-seq="(\d+)">', timeline)]
    assert seqs == list(range(1, len(seqs) + 1)) and len(seqs) >= 10
    assert f'data-after="{seqs[-1]}"' in timeline and 'src="/console/static/timeline.js"' in html
    assert "action_rejected" in timeline and "code: run_paused" in timeline and "milestone_verified" in timeline
    # Each entry's message (docs/events.md's fixed template) beside its type.
    assert '<span class="message">A call to ' in timeline and "was refused: run_paused</span>" in timeline
    checkpoint = section(html, "checkpoint")
    assert "<td>1" in checkpoint and "shop__find" in checkpoint and "shelf-bot" in checkpoint
    milestones = section(html, "milestones")
    assert 'data-milestone-id="inventory"' in milestones and "ms-verified" in milestones
    assert "twelve shelves" in milestones and "(optional)" in milestones and "not submitted" in milestones
    assert 'id="last-verified">inventory at' in html and "shelf-bot" in html
    assert 'id="cost-total">0.20 USD' in html and 'class="cost-tool">0.20' in html


async def test_the_runs_page_shows_heartbeat_milestone_and_open_alerts_apart(api: Api) -> None:
    busy, _ = await busy_run(api)
    quiet = await create_run(api, goal="Never leased")
    async with signed_in(api, "key-aud") as browser:
        before = await browser.get("/console/runs")
        api.clock.advance(600)  # past the 5-minute lease: the worker missed its heartbeat
        after = await browser.get("/console/runs")
    rows = {
        m.group(1): m.group(0)
        for m in re.finditer(r'<tr class="run" data-run-id="([^"]+)">.*?</tr>', before.text, re.S)
    }
    busy_row, quiet_row = rows[busy["run_id"]], rows[quiet["run_id"]]
    assert "inventory" in busy_row and "shelf-bot" in busy_row
    assert '<span class="alert">unknown_action</span>' in busy_row and "lease_missed" not in busy_row
    assert (
        "never leased" in quiet_row
        and "none yet" in quiet_row
        and 'class="alerts"><span class="muted">none' in quiet_row
    )
    later = {
        m.group(1): m.group(0) for m in re.finditer(r'<tr class="run" data-run-id="([^"]+)">.*?</tr>', after.text, re.S)
    }
    assert "lease_missed" in later[busy["run_id"]] and "unknown_action" in later[busy["run_id"]]
    # The heartbeat did not move with the clock: it is when the worker last renewed, 10 minutes ago now.
    beat = re.search(r'class="heartbeat">([^<]+)<', later[busy["run_id"]])
    assert beat is not None and beat.group(1) in busy_row


async def test_another_tenant_sees_no_section_of_the_run(api: Api) -> None:
    run, _ = await busy_run(api)
    async with signed_in(api, "key-other") as admin:  # globex's admin: runs.read, but not acme's runs
        page = await admin.get(f"/console/runs/{run['run_id']}")
        listed = await admin.get("/console/runs")
    assert page.status_code == 404 and "Count the shelves" not in page.text and "twelve shelves" not in page.text
    assert run["run_id"] not in listed.text and "unknown_action" not in listed.text


async def test_the_event_stream_follows_the_run_for_its_tenant_only(api: Api) -> None:
    run = await create_run(api)
    token = (await lease(api, run["run_id"]))["token"]
    path = f"/console/runs/{run['run_id']}/events"
    async with signed_in(api, "key-aud") as browser:
        with anyio.fail_after(WAIT):
            async with browser.stream("GET", path, params={"after": "1"}, headers=STREAM) as r:
                reader = Reader(r)
                first = await reader.next()  # the lease, after the creation (seq 1)
                assert first is not None and first["data"]["type"] == "lease_granted"
                assert "event" not in first  # unnamed frames: an EventSource's onmessage gets each
                assert (await api.gateway.gate.call(token, "shop__charge", {"card": "ok"})).code is None
                then = await reader.next()
                assert then is not None and int(then["id"]) == first["data"]["seq"] + 1
                assert then["data"]["run_id"] == run["run_id"]

    async with httpx.AsyncClient(base_url=api.url, timeout=WAIT) as anonymous:
        signed_out = await anonymous.get(path, headers=STREAM)
    assert signed_out.status_code == 401 and "unauthenticated" in signed_out.text
    async with signed_in(api, "key-other") as other:
        elsewhere = await other.get(path, headers=STREAM)
    assert elsewhere.status_code == 404 and "not_found" in elsewhere.text
    async with signed_in(api, "key-appr") as approver:  # acme's approver: no events.read, as in the API
        refused = await approver.get(path, headers=STREAM)
    assert refused.status_code == 403 and "forbidden" in refused.text


async def test_the_event_stream_ends_once_the_sessions_key_is_revoked(
    api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sse, "KEY_RECHECK_S", 0.0)  # ask again at every poll
    run = await create_run(api)
    created = await create_key(api, "console-watcher", ["auditor"])
    async with signed_in(api, created["key"]) as browser:
        with anyio.fail_after(WAIT):
            async with browser.stream("GET", f"/console/runs/{run['run_id']}/events", headers=STREAM) as r:
                reader = Reader(r)
                assert (await reader.next()) is not None  # run_created: the stream is live
                async with api.client("ops") as ops:
                    assert (await ops.post(f"/api/keys/{created['key_id']}/revoke", json={})).status_code == 200
                while (await reader.next()) is not None:  # whatever was on its way; then the end
                    pass


async def test_the_timeline_script_is_served_as_javascript(api: Api) -> None:
    async with httpx.AsyncClient(base_url=api.url, timeout=WAIT) as anonymous:
        script = await anonymous.get("/console/static/timeline.js")
    assert script.status_code == 200 and "javascript" in script.headers["content-type"]
    assert "EventSource" in script.text and "innerHTML" not in script.text


async def test_each_control_has_a_confirmation_page_that_says_how_pause_and_cancel_differ(api: Api) -> None:
    run = await create_run(api, goal="Keep going")
    rid = run["run_id"]
    async with signed_in(api, "key-op") as browser:
        page = await browser.get(f"/console/runs/{rid}")
        for verb in ("pause", "resume", "cancel"):
            assert f'href="/console/runs/{rid}/{verb}"' in page.text
        confirm = await browser.get(f"/console/runs/{rid}/cancel")
        assert confirm.status_code == 200
        assert "Pause is reversible" in confirm.text and "Cancel is final" in confirm.text
        assert "run_paused" in confirm.text and "run_cancelled" in confirm.text and 'name="hard"' in confirm.text
        assert f'action="/console/runs/{rid}/cancel"' in confirm.text
        assert await status_in_store(api, rid) is RunStatus.RUNNING  # looking changes nothing
        pause = await browser.get(f"/console/runs/{rid}/pause")
        assert pause.status_code == 200 and 'name="hard"' not in pause.text
        r = await browser.post(f"/console/runs/{rid}/pause", data={"csrf": csrf_of(pause.text), "reason": "lunch"})
        assert (r.status_code, r.headers["location"]) == (303, f"/console/runs/{rid}")
        assert await status_in_store(api, rid) is RunStatus.PAUSED
        nothing = await browser.get(f"/console/runs/{rid}/explode")
        assert nothing.status_code == 404 and "not_found" in nothing.text


async def test_confirmation_pages_follow_the_apis_roles_and_tenants(api: Api) -> None:
    run = await create_run(api, goal="acme-secret-goal")
    path = f"/console/runs/{run['run_id']}/cancel"
    async with signed_in(api, "key-aud") as auditor:  # runs.read, not runs.control
        refused = await auditor.get(path)
    assert refused.status_code == 403 and "forbidden" in refused.text and "acme-secret-goal" not in refused.text
    async with signed_in(api, "key-other") as admin:
        elsewhere = await admin.get(path)
    assert elsewhere.status_code == 404 and "acme-secret-goal" not in elsewhere.text
    async with httpx.AsyncClient(base_url=api.url, timeout=WAIT) as anonymous:
        signed_out = await anonymous.get(path)
    assert signed_out.status_code == 303 and signed_out.headers["location"] == "/console/login"


async def test_the_confirmation_page_of_a_finished_run_says_its_form_will_be_refused(api: Api) -> None:
    run = await create_run(api)
    rid = run["run_id"]
    async with signed_in(api, "key-op") as browser:
        live = await browser.get(f"/console/runs/{rid}/cancel")
        assert live.status_code == 200 and 'id="terminal"' not in live.text
        r = await browser.post(f"/console/runs/{rid}/cancel", data={"csrf": csrf_of(live.text)})
        assert r.status_code == 303
        again = await browser.get(f"/console/runs/{rid}/resume")
        assert again.status_code == 200 and 'id="terminal"' in again.text and "run_cancelled" in again.text
        refused = await browser.post(f"/console/runs/{rid}/resume", data={"csrf": csrf_of(again.text)})
    assert refused.status_code == 409 and "run_cancelled" in refused.text
    assert await status_in_store(api, rid) is RunStatus.CANCELLED


async def test_a_revoked_keys_timeline_ends_within_a_second_and_its_session_is_signed_out(api: Api) -> None:
    run = await create_run(api)
    created = await create_key(api, "console-watcher2", ["auditor"])
    async with signed_in(api, created["key"]) as browser:
        async with browser.stream("GET", f"/console/runs/{run['run_id']}/events", headers=STREAM) as r:
            reader = Reader(r)
            with anyio.fail_after(WAIT):
                assert (await reader.next()) is not None  # run_created: the stream is live
                async with api.client("ops") as ops:
                    assert (await ops.post(f"/api/keys/{created['key_id']}/revoke", json={})).status_code == 200
            with anyio.fail_after(1.5):  # KEY_RECHECK_S (0.5) plus one poll, on a loaded machine
                while (await reader.next()) is not None:
                    pass
        page = await browser.get(f"/console/runs/{run['run_id']}")
    assert page.status_code in (303, 302) or "/console/login" in str(page.url)


async def test_the_run_page_names_where_the_run_stands_and_escapes_the_agents_words(api: Api) -> None:
    run = await create_run(api, goal="Count the shelves", **MILESTONES)
    token = (await lease(api, run["run_id"], worker="shelf-bot"))["token"]
    assert api.gateway.progress is not None
    planning = Planning(api.gateway.progress)
    tasks = [{"id": "count", "title": "Count them"}, {"id": "report", "title": "Write it up", "depends_on": ["count"]}]
    assert (await planning.plan(token, {"expected_version": 0, "tasks": tasks})).code is None
    assert (await planning.task(token, {"task_id": "count", "status": "running"})).code is None
    said = {"task_id": "count", "status": "blocked", "error": "<script>alert(1)</script> the door is locked"}
    assert (await planning.task(token, said)).code is None
    async with signed_in(api, "key-aud") as browser:
        html = (await browser.get(f"/console/runs/{run['run_id']}")).text
    assert 'class="decision decision-wait_for_input">wait for input' in html
    blocker = html[html.index('id="blocker"') :].split("</tr>")[0]
    assert "task blocked" in blocker and "the door is locked" in blocker
    assert "<script>" not in html.split('id="blocker"')[1].split("</tr>")[0] and "&lt;script&gt;" in blocker
    current = html[html.index('id="current-task"') :].split("</tr>")[0]
    assert "count" in current and "Count them" in current and "attempt 1" in current
    assert 'id="current-milestone">inventory (pending)' in html and 'id="last-artifact">none yet' in html
