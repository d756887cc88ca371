"""GET /api/runs/{run_id}/export against a real server: a bundle that verifies offline, streamed in
pages, for the key's own tenant and for roles that may verify the ledger only."""

from __future__ import annotations

import json
from typing import Any

import pytest

from gateway.api import export
from gateway.store.bundle import MEDIA_TYPE, BundleReport, verify_bundle
from tests.api.conftest import Api
from tests.api.test_operator_api import create_run, lease

pytestmark = pytest.mark.anyio

LEDGER_KEY = b"test-ledger-key"  # WARRANT_LEDGER_KEY of tests/api/conftest.py


async def busy_run(api: Api) -> str:
    """A run with reads, writes, an approved write, a refusal and an unknown outcome."""
    run = await create_run(api)
    token = (await lease(api, run["run_id"]))["token"]
    gate = api.gateway.gate
    assert (await gate.call(token, "shop__find", {"q": "a"})).code is None
    assert (await gate.call(token, "shop__charge", {"card": "4242"})).code is None
    assert (await gate.call(token, "shop__charge", {"card": "lost"})).code == "outcome_unknown"
    asked = await gate.call(token, "shop__order", {"to": "bob@example.com"})
    assert asked.code == "approval_required" and asked.structured is not None
    async with api.client("appr") as c:
        approval_id = asked.structured["error"]["approval_id"]
        assert (await c.post(f"/api/approvals/{approval_id}/approve", json={})).status_code == 200
    assert (await gate.call(token, "shop__order", {"to": "bob@example.com"})).code is None
    assert (await gate.call(token, "shop__nope", {})).code == "tool_not_found"
    assert (await gate.call(token, "shop__find", {"q": "b"})).code is None
    return str(run["run_id"])


async def exported(api: Api, run_id: str, key: str = "aud") -> tuple[int, str, str]:
    async with api.client(key) as c:
        r = await c.get(f"/api/runs/{run_id}/export")
    return r.status_code, r.headers.get("content-type", ""), r.text


def verified(text: str) -> BundleReport:
    return verify_bundle(text.splitlines(), LEDGER_KEY)


async def test_an_auditor_exports_a_bundle_that_verifies_offline(api: Api) -> None:
    run_id = await busy_run(api)
    status, content_type, text = await exported(api, run_id)
    assert (status, content_type) == (200, MEDIA_TYPE)
    report = verified(text)
    assert report.ok, report.first_bad
    async with api.client("aud") as c:
        events = (await c.get(f"/api/runs/{run_id}/events", params={"limit": 1000})).json()["items"]
        actions = (await c.get(f"/api/runs/{run_id}/actions")).json()["items"]
    assert (report.run_id, report.events, report.head_seq, report.actions) == (
        run_id,
        len(events),
        events[-1]["seq"],
        len(actions),
    )
    hashes = [json.loads(line)["hash"] for line in text.splitlines() if line.startswith('{"kind":"event"')]
    assert hashes == [e["hash"] for e in events]


async def test_an_edited_bundle_fails_verification(api: Api) -> None:
    run_id = await busy_run(api)
    _, _, text = await exported(api, run_id)
    lines = text.splitlines()
    i = next(i for i, line in enumerate(lines) if '"status":"unknown"' in line and line.startswith('{"kind":"action"'))
    row: dict[str, Any] = json.loads(lines[i])
    lines[i] = json.dumps({**row, "status": "failed"})
    report = verify_bundle(lines, LEDGER_KEY)
    assert report.first_bad is not None
    assert (report.first_bad.code, report.first_bad.ref, report.first_bad.field) == (
        "action_mismatch",
        row["action_id"],
        "status",
    )


async def test_the_bundle_streams_in_pages_and_still_verifies(api: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    run_id = await busy_run(api)
    whole = (await exported(api, run_id))[2]
    monkeypatch.setattr(export, "ENTRIES_PER_PAGE", 2)
    monkeypatch.setattr(export, "BLOBS_PER_PAGE", 1)
    paged = (await exported(api, run_id))[2]
    assert verified(paged).ok
    # The same bundle but for the moment of its export.
    assert paged.splitlines()[1:] == whole.splitlines()[1:]


async def test_an_admin_may_export_and_roles_that_may_not_verify_may_not(api: Api) -> None:
    run_id = await busy_run(api)
    assert (await exported(api, run_id, "ops"))[0] == 200
    for key in ("op", "appr", "wrk"):
        status, _, text = await exported(api, run_id, key)
        assert (status, json.loads(text)["error"]["code"]) == (403, "forbidden")


async def test_another_tenants_run_is_not_found_before_anything_streams(api: Api) -> None:
    run_id = await busy_run(api)
    status, _, text = await exported(api, run_id, "other")
    assert (status, json.loads(text)["error"]["code"]) == (404, "not_found")
    status, _, text = await exported(api, "run_doesnotexist", "aud")
    assert (status, json.loads(text)["error"]["code"]) == (404, "not_found")
