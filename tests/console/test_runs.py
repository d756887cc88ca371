"""The runs pages and their controls: what a key sees and may do follows its tenant and roles as in the
API; every form POST needs its session's CSRF token; a cancel from the console refuses the worker."""

from __future__ import annotations

import httpx
import pytest

from gateway.domain import RunStatus
from tests.api.conftest import Api
from tests.api.test_operator_api import create_run, lease
from tests.console.conftest import csrf_of, signed_in

pytestmark = pytest.mark.anyio


async def status_in_store(api: Api, run_id: str) -> RunStatus:
    return (await api.gateway.store.get_run("acme", run_id)).status


async def test_the_runs_page_shows_the_tenants_runs_with_budget_bars_and_lease(api: Api) -> None:
    run = await create_run(api, goal="Restock the shelves")
    await lease(api, run["run_id"], worker="worker-7")
    async with signed_in(api, "key-aud") as browser:  # an auditor reads runs, as in the API
        page = await browser.get("/console/runs")
    assert page.status_code == 200
    assert run["run_id"] in page.text and "Restock the shelves" in page.text and "ana@acme.example" in page.text
    assert 'class="bar"' in page.text and "worker-7" in page.text


async def test_a_goal_with_a_script_is_shown_escaped(api: Api) -> None:
    goal = '<script>alert("owned")</script><img src=x onerror=alert(1)>'
    run = await create_run(api, goal=goal)
    async with signed_in(api, "key-ops") as browser:
        pages = [await browser.get("/console/runs"), await browser.get(f"/console/runs/{run['run_id']}")]
    for page in pages:
        assert page.status_code == 200
        assert "<script>" not in page.text and "<img src=x" not in page.text
        assert "&lt;script&gt;alert(&#34;owned&#34;)&lt;/script&gt;" in page.text
        # No inline script runs anywhere; only the run page loads a script, and only the gateway's own file.
        policy = page.headers["content-security-policy"]
        assert "unsafe-inline" not in policy.split("style-src")[0] and "'unsafe-eval'" not in policy
    assert "script-src" not in pages[0].headers["content-security-policy"]  # default-src 'none': no script at all
    assert "script-src 'self';" in pages[1].headers["content-security-policy"]


async def test_a_form_without_or_with_a_wrong_csrf_token_changes_nothing(api: Api) -> None:
    run = await create_run(api)
    async with signed_in(api, "key-ops") as browser:
        page = await browser.get(f"/console/runs/{run['run_id']}")
        good = csrf_of(page.text)
        for data in ({}, {"csrf": "0" * len(good)}, {"csrf": good[:-1]}, {"csrf": ""}):
            r = await browser.post(f"/console/runs/{run['run_id']}/cancel", data={**data, "hard": "true"})
            assert r.status_code == 403 and "csrf_failed" in r.text, data
        async with signed_in(api, "key-op") as other_session:  # another session's token is wrong here too
            r = await other_session.post(f"/console/runs/{run['run_id']}/pause", data={"csrf": good})
            assert r.status_code == 403 and "csrf_failed" in r.text
    assert await status_in_store(api, run["run_id"]) is RunStatus.RUNNING


async def test_pause_then_resume_through_the_console(api: Api) -> None:
    run = await create_run(api)
    async with signed_in(api, "key-op") as browser:
        csrf = csrf_of((await browser.get(f"/console/runs/{run['run_id']}")).text)
        r = await browser.post(f"/console/runs/{run['run_id']}/pause", data={"csrf": csrf, "reason": "look first"})
        assert (r.status_code, r.headers["location"]) == (303, f"/console/runs/{run['run_id']}")
        assert await status_in_store(api, run["run_id"]) is RunStatus.PAUSED
        r = await browser.post(f"/console/runs/{run['run_id']}/resume", data={"csrf": csrf})
        assert r.status_code == 303
    assert await status_in_store(api, run["run_id"]) is RunStatus.RUNNING


async def test_a_cancel_through_the_console_refuses_the_workers_next_call(api: Api) -> None:
    run = await create_run(api)
    token = (await lease(api, run["run_id"]))["token"]
    assert (await api.gateway.gate.call(token, "shop__find", {"q": "before"})).code is None
    async with signed_in(api, "key-op") as browser:
        csrf = csrf_of((await browser.get(f"/console/runs/{run['run_id']}")).text)
        r = await browser.post(f"/console/runs/{run['run_id']}/cancel", data={"csrf": csrf, "reason": "stop"})
        assert r.status_code == 303
        page = await browser.get(f"/console/runs/{run['run_id']}")
    assert 'id="status">cancelled' in page.text and 'id="no-control"' not in page.text
    assert (await api.gateway.gate.call(token, "shop__find", {"q": "after"})).code == "run_cancelled"
    assert api.effects == []


async def test_a_role_without_control_is_refused_with_the_apis_code(api: Api) -> None:
    run = await create_run(api)
    async with signed_in(api, "key-aud") as browser:  # auditor: runs.read, not runs.control
        page = await browser.get(f"/console/runs/{run['run_id']}")
        assert 'id="no-control"' in page.text  # the page says so before the form is tried
        data = {"csrf": csrf_of(page.text), "hard": "true"}
        r = await browser.post(f"/console/runs/{run['run_id']}/cancel", data=data)
    assert r.status_code == 403 and "forbidden" in r.text and "csrf_failed" not in r.text
    assert await status_in_store(api, run["run_id"]) is RunStatus.RUNNING


async def test_an_acme_approver_may_not_read_runs_as_in_the_api(api: Api) -> None:
    await create_run(api)
    async with signed_in(api, "key-appr") as browser:
        r = await browser.get("/console/runs")
    async with api.client("appr") as c:
        api_answer = await c.get("/api/runs")
    assert (r.status_code, api_answer.status_code) == (403, 403)
    assert api_answer.json()["error"]["code"] in r.text


async def test_another_tenant_sees_none_of_acmes_runs_and_cannot_touch_them(api: Api) -> None:
    run = await create_run(api, goal="acme-secret-goal")
    async with api.client("other") as c:  # globex's admin makes a globex approver in the store
        made = await c.post("/api/keys", json={"name": "globex-approver", "roles": ["approver"]})
    assert made.status_code == 201, made.text
    async with signed_in(api, made.json()["key"]) as approver:
        runs = await approver.get("/console/runs")
        page = await approver.get(f"/console/runs/{run['run_id']}")
    assert runs.status_code == 403 and run["run_id"] not in runs.text and "acme-secret-goal" not in runs.text
    assert page.status_code == 403 and "acme-secret-goal" not in page.text
    async with signed_in(api, "key-other") as admin:  # globex's admin may read runs: none of acme's
        runs = await admin.get("/console/runs")
        page = await admin.get(f"/console/runs/{run['run_id']}")
        csrf = csrf_of(runs.text)
        cancel = await admin.post(f"/console/runs/{run['run_id']}/cancel", data={"csrf": csrf, "hard": "true"})
    assert runs.status_code == 200 and run["run_id"] not in runs.text and "No runs in tenant globex" in runs.text
    assert page.status_code == 404 and "not_found" in page.text and "acme-secret-goal" not in page.text
    assert cancel.status_code == 404 and "not_found" in cancel.text
    assert await status_in_store(api, run["run_id"]) is RunStatus.RUNNING


async def test_a_post_without_a_session_changes_nothing(api: Api) -> None:
    run = await create_run(api)
    async with httpx.AsyncClient(base_url=api.url, timeout=10) as anonymous:
        r = await anonymous.post(f"/console/runs/{run['run_id']}/cancel", data={"csrf": "x", "hard": "true"})
    assert r.status_code == 401 and "unauthenticated" in r.text
    assert await status_in_store(api, run["run_id"]) is RunStatus.RUNNING
