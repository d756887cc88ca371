"""The console's Fail (docs/console.md): a confirmation page like Cancel's, a form needing the
session's CSRF token, a reason and `runs.control`; a failed run shows its cause and its open
run_failed alert, and the store's own alerts (a serious refusal) show as open alerts too."""

from __future__ import annotations

import pytest

from gateway.domain import RunStatus
from tests.api.conftest import Api
from tests.api.test_operator_api import create_run, lease
from tests.console.conftest import csrf_of, signed_in

pytestmark = pytest.mark.anyio


async def status_in_store(api: Api, run_id: str) -> RunStatus:
    return (await api.gateway.store.get_run("acme", run_id)).status


async def test_a_fail_through_the_console_ends_the_run_failed_with_its_cause_and_open_alert(api: Api) -> None:
    run = await create_run(api)
    rid = run["run_id"]
    token = (await lease(api, rid))["token"]
    async with signed_in(api, "key-op") as browser:
        page = await browser.get(f"/console/runs/{rid}")
        assert f'href="/console/runs/{rid}/fail" id="fail"' in page.text
        confirm = await browser.get(f"/console/runs/{rid}/fail")
        assert confirm.status_code == 200 and "run_failed" in confirm.text
        assert f'action="/console/runs/{rid}/fail"' in confirm.text and "required" in confirm.text
        r = await browser.post(f"/console/runs/{rid}/fail", data={"csrf": csrf_of(confirm.text), "reason": "bad data"})
        assert (r.status_code, r.headers["location"]) == (303, f"/console/runs/{rid}")
        page = await browser.get(f"/console/runs/{rid}")
        runs = await browser.get("/console/runs")
    assert 'id="status">failed (bad data)' in page.text and 'id="status-cause"' in page.text
    assert '<span class="alert">run_failed</span>' in page.text
    assert "run_failed" in runs.text
    assert (await api.gateway.gate.call(token, "shop__find", {"q": "after"})).code == "run_failed"


async def test_a_fail_without_a_reason_or_a_good_csrf_token_changes_nothing(api: Api) -> None:
    run = await create_run(api)
    rid = run["run_id"]
    async with signed_in(api, "key-op") as browser:
        csrf = csrf_of((await browser.get(f"/console/runs/{rid}/fail")).text)
        no_reason = await browser.post(f"/console/runs/{rid}/fail", data={"csrf": csrf, "reason": "  "})
        assert no_reason.status_code == 422 and "invalid_request" in no_reason.text
        forged = await browser.post(f"/console/runs/{rid}/fail", data={"csrf": "0" * len(csrf), "reason": "x"})
        assert forged.status_code == 403 and "csrf_failed" in forged.text
    assert await status_in_store(api, rid) is RunStatus.RUNNING


async def test_a_role_without_control_may_not_fail_and_a_failed_run_is_not_failed_twice(api: Api) -> None:
    run = await create_run(api)
    rid = run["run_id"]
    async with signed_in(api, "key-aud") as browser:
        csrf = csrf_of((await browser.get(f"/console/runs/{rid}")).text)
        r = await browser.post(f"/console/runs/{rid}/fail", data={"csrf": csrf, "reason": "x"})
    assert r.status_code == 403 and "forbidden" in r.text
    assert await status_in_store(api, rid) is RunStatus.RUNNING
    async with signed_in(api, "key-op") as browser:
        csrf = csrf_of((await browser.get(f"/console/runs/{rid}/fail")).text)
        assert (await browser.post(f"/console/runs/{rid}/fail", data={"csrf": csrf, "reason": "1"})).status_code == 303
        again = await browser.get(f"/console/runs/{rid}/fail")
        assert 'id="terminal"' in again.text
        refused = await browser.post(f"/console/runs/{rid}/fail", data={"csrf": csrf, "reason": "2"})
    assert refused.status_code == 409 and "run_failed" in refused.text


async def test_a_serious_refusal_shows_as_an_open_alert_without_the_arguments(api: Api) -> None:
    run = await create_run(api, authority={"allow": ["shop__find"]}, escalation={"serious_refusals": ["forbidden"]})
    rid = run["run_id"]
    token = (await lease(api, rid))["token"]
    refused = await api.gateway.gate.call(token, "shop__order", {"to": "hunter2@example.com"})
    assert refused.code == "forbidden"
    async with signed_in(api, "key-aud") as browser:
        page = await browser.get(f"/console/runs/{rid}")
    assert '<span class="alert">serious_refusal</span>' in page.text
    assert "code: forbidden" in page.text and "tool: shop__order" in page.text and "hunter2" not in page.text
