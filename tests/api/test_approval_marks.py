"""The API's approval view marks what in a payload may not read as what it is, as the console's
approval page does (gateway/domain/deception.py): structured `marks`, in the document, and in
`warrant approvals show`."""

from __future__ import annotations

from typing import Any

import pytest

from gateway.cli.approvals import describe_approval
from tests.api.conftest import Api
from tests.api.test_openapi import Conformance, fetch_document
from tests.api.test_operator_api import create_run, lease

pytestmark = pytest.mark.anyio

# A Cyrillic `а` in the domain, a right-to-left override in the memo, a punycode label.
DECEPTIVE = {"to": "ceo@\u0430cme.example", "memo": "invoice moc.\u202elive", "cc": "ops@xn--cme-7cd.example"}


async def _asked(api: Api, payload: dict[str, Any]) -> str:
    run = await create_run(api)
    token = (await lease(api, run["run_id"]))["token"]
    asked = await api.gateway.gate.call(token, "shop__order", payload)
    assert asked.code == "approval_required" and asked.structured is not None
    approval_id: str = asked.structured["error"]["approval_id"]
    return approval_id


async def test_the_api_approval_view_marks_homoglyphs_bidi_overrides_and_punycode(api: Api) -> None:
    approval_id = await _asked(api, DECEPTIVE)
    conformance = Conformance(await fetch_document(api))
    async with api.client("appr") as c:
        shown = (await c.get(f"/api/approvals/{approval_id}")).json()
        listed = (await c.get("/api/approvals", params={"status": "pending"})).json()
    conformance.check("GET", "/api/approvals/{approval_id}", 200, shown)
    conformance.check("GET", "/api/approvals", 200, listed)
    assert shown["marks"] == [  # in the stored (canonical, keys sorted) payload's order
        {"path": "cc", "kind": "punycode", "text": "xn--cme-7cd", "code_points": []},
        {"path": "memo", "kind": "bidi_control", "text": "", "code_points": ["U+202E"]},
        {"path": "to", "kind": "mixed_scripts", "text": "\u0430cme", "code_points": ["U+0430"]},
    ]
    assert [item["marks"] for item in listed["items"]] == [shown["marks"]]


async def test_a_plain_payload_has_no_marks_and_a_runs_summary_shows_none(api: Api) -> None:
    approval_id = await _asked(api, {"to": "bob@example.com"})
    async with api.client("appr") as c:
        shown = (await c.get(f"/api/approvals/{approval_id}")).json()
    async with api.client("aud") as c:
        run = (await c.get(f"/api/runs/{shown['run_id']}")).json()
    assert shown["marks"] == []
    assert [a["marks"] for a in run["approvals"]] == [None]  # the summary shows no payload, so no marks


async def test_the_document_describes_the_marks(api: Api) -> None:
    components = (await fetch_document(api))["components"]["schemas"]
    assert "marks" in components["ApprovalView"]["properties"]
    kinds = components["PayloadMark"]["properties"]["kind"]["enum"]
    assert set(kinds) == {"bidi_control", "invisible", "mixed_scripts", "punycode"}


async def test_approvals_show_prints_the_marks_the_api_gives(api: Api) -> None:
    approval_id = await _asked(api, DECEPTIVE)
    async with api.client("appr") as c:
        shown = (await c.get(f"/api/approvals/{approval_id}")).json()
    text = describe_approval(shown, None)
    assert "LOOK CLOSELY" in text
    assert "to  letters from more than one script" in text and "U+0430" in text
    assert "memo  direction-override characters" in text and "U+202E" in text
    assert "cc  a punycode name" in text
    assert "LOOK CLOSELY" not in describe_approval({**shown, "marks": []}, None)
