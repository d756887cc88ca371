"""Compensation from the console's run page (docs/compensation.md), server-rendered over a served
gateway: a confirmed write whose tool names its undo shows a Compensate form; the form needs the
session's CSRF token, a reason and `actions.resolve`; sent, it runs the undo once through the gate
and the original shows `compensated`."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from gateway.adapters.python import PythonAdapter
from tests.api.conftest import Api, serving_api
from tests.api.test_operator_api import create_run, lease
from tests.console.conftest import csrf_of, signed_in

pytestmark = pytest.mark.anyio

POLICY = (
    "  box__put: {effect: write, compensate: {tool: box__take, arguments: {id: receipt.id}}}\n"
    "  box__take: {effect: write}\n"
)


class Box:
    def __init__(self) -> None:
        self.items: dict[str, dict[str, Any]] = {}
        self.taken: list[str] = []
        self.adapter = PythonAdapter("box")

        @self.adapter.tool(input_schema={"type": "object", "properties": {"v": {"type": "string"}}})
        async def put(args: dict[str, Any], call: Any) -> dict[str, Any]:
            item = f"item-{len(self.items) + 1}"
            self.items[item] = args
            return {"id": item}

        @self.adapter.tool(input_schema={"type": "object", "properties": {"id": {"type": "string"}}})
        async def take(args: dict[str, Any], call: Any) -> dict[str, Any]:
            self.taken.append(args["id"])
            self.items.pop(args["id"], None)
            return {"id": args["id"], "deleted": True}


@pytest.fixture
async def boxed(tmp_path: Path) -> AsyncIterator[tuple[Api, Box]]:
    box = Box()
    async with serving_api(tmp_path, policy_extra=POLICY, adapters=[box.adapter]) as served:
        yield served, box


async def put_two(api: Api) -> tuple[str, str, str]:
    """A run that put two items: (run id, the first put's action id, the second's)."""
    run = await create_run(api, authority={"allow": ["box__*"]})
    token = (await lease(api, run["run_id"]))["token"]
    first = await api.gateway.gate.call(token, "box__put", {"v": "a"})
    second = await api.gateway.gate.call(token, "box__put", {"v": "b"})
    assert first.code is None and second.code is None
    return run["run_id"], first.meta["warrant/action_id"], second.meta["warrant/action_id"]


async def test_the_run_page_compensates_exactly_one_confirmed_write(boxed: tuple[Api, Box]) -> None:
    api, box = boxed
    rid, first, second = await put_two(api)
    async with signed_in(api, "key-op") as browser:
        page = await browser.get(f"/console/runs/{rid}")
        for action_id in (first, second):
            assert f'action="/console/actions/{action_id}/compensate"' in page.text
        assert "Compensate with box__take" in page.text
        csrf = csrf_of(page.text)
        to = f"/console/actions/{first}/compensate"
        forged = await browser.post(to, data={"csrf": "0" * len(csrf), "reason": "x"})
        assert forged.status_code == 403
        no_reason = await browser.post(f"/console/actions/{first}/compensate", data={"csrf": csrf, "reason": " "})
        assert no_reason.status_code in (409, 422) and box.taken == []
        r = await browser.post(f"/console/actions/{first}/compensate", data={"csrf": csrf, "reason": "sent by mistake"})
        assert (r.status_code, r.headers["location"]) == (303, f"/console/runs/{rid}#confirmed")
        again = await browser.post(f"/console/actions/{first}/compensate", data={"csrf": csrf, "reason": "twice"})
        assert again.status_code == 303  # the second answers the first: nothing sent again
        page = await browser.get(f"/console/runs/{rid}")
    assert box.taken == ["item-1"] and list(box.items) == ["item-2"]
    assert f'action="/console/actions/{first}/compensate"' not in page.text  # compensated now
    assert f'action="/console/actions/{second}/compensate"' in page.text
    original = await api.gateway.store.get_action("acme", first)
    assert original.status.value == "compensated"


async def test_an_auditor_sees_no_compensate_form_and_may_not_post_one(boxed: tuple[Api, Box]) -> None:
    api, box = boxed
    rid, first, _ = await put_two(api)
    async with signed_in(api, "key-aud") as browser:
        page = await browser.get(f"/console/runs/{rid}")
        assert f'action="/console/actions/{first}/compensate"' not in page.text
        r = await browser.post(f"/console/actions/{first}/compensate", data={"csrf": csrf_of(page.text), "reason": "x"})
    assert r.status_code == 403 and box.taken == []
