"""GET /api/actions: the auditor's query across a tenant's runs."""

from __future__ import annotations

from typing import Any

import pytest

from tests.api.conftest import Api
from tests.api.test_operator_api import create_run, lease

pytestmark = pytest.mark.anyio


async def audit(api: Api, key: str = "aud", **params: str) -> dict[str, Any]:
    async with api.client(key) as c:
        r = await c.get("/api/actions", params=params)
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    return body


async def two_runs(api: Api) -> tuple[str, str]:
    """Run one: a read, a refused call, a charge (by worker w1). Run two, an hour later: a charge by w2."""
    first = await create_run(api)
    grant = await lease(api, first["run_id"], worker="w1")
    gate = api.gateway.gate
    await gate.call(grant["token"], "shop__find", {"q": "a"})
    await gate.call(grant["token"], "shop__nope", {})
    await gate.call(grant["token"], "shop__charge", {"card": "ok"})
    api.clock.advance(3600)
    second = await create_run(api)
    grant = await lease(api, second["run_id"], worker="w2")
    await gate.call(grant["token"], "shop__charge", {"card": "ok"})
    return first["run_id"], second["run_id"]


async def test_an_auditor_sees_every_run_s_actions_newest_first(api: Api) -> None:
    first, second = await two_runs(api)
    page = await audit(api)
    assert [(a["run_id"], a["tool"]) for a in page["items"]] == [
        (second, "shop__charge"),
        (first, "shop__charge"),
        (first, "shop__nope"),
        (first, "shop__find"),
    ]
    assert page["next_cursor"] is None
    assert page["items"][0]["reserved"]["spend"] == "0.20"  # money as decimal strings, as everywhere


async def test_filters_combine_and_each_narrows(api: Api) -> None:
    first, second = await two_runs(api)

    def tools(page: dict[str, Any]) -> list[tuple[str, str]]:
        return [(a["run_id"], a["tool"]) for a in page["items"]]

    assert tools(await audit(api, tool="shop__charge")) == [(second, "shop__charge"), (first, "shop__charge")]
    assert tools(await audit(api, status="rejected")) == [(first, "shop__nope")]
    assert tools(await audit(api, code="tool_not_found")) == [(first, "shop__nope")]
    assert tools(await audit(api, principal="w2")) == [(second, "shop__charge")]
    assert len((await audit(api, principal="op"))["items"]) == 4  # the key that granted both leases
    assert tools(await audit(api, run_id=first, status="succeeded", tool="shop__find")) == [(first, "shop__find")]
    late = (await audit(api, run_id=second))["items"][0]["created_at"]
    assert tools(await audit(api, since=late)) == [(second, "shop__charge")]
    assert {r for r, _ in tools(await audit(api, until=late))} == {first}
    assert tools(await audit(api, since="2000-01-01T00:00:00+01:00", tool="shop__nope")) == [(first, "shop__nope")]


async def test_pages_follow_the_cursor(api: Api) -> None:
    await two_runs(api)
    everything = [a["action_id"] for a in (await audit(api))["items"]]
    seen: list[str] = []
    params: dict[str, str] = {"limit": "3"}
    for _ in range(5):
        page = await audit(api, **params)
        seen += [a["action_id"] for a in page["items"]]
        if page["next_cursor"] is None:
            break
        params["cursor"] = page["next_cursor"]
    assert seen == everything


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"status": "lost"}, "status"),
        ({"since": "yesterday"}, "since"),
        ({"until": "2026-01-31T09:00:00"}, "until"),  # no offset: whose nine o'clock?
        ({"tool": "x" * 300}, "tool"),
    ],
)
async def test_a_bad_filter_is_422_invalid_request_naming_it(api: Api, params: dict[str, str], field: str) -> None:
    async with api.client("aud") as c:
        r = await c.get("/api/actions", params=params)
    assert r.status_code == 422
    error = r.json()["error"]
    assert error["code"] == "invalid_request"
    assert [p["field"] for p in error["problems"]] == [field]


async def test_a_bad_cursor_or_limit_is_422(api: Api) -> None:
    async with api.client("aud") as c:
        cursor = await c.get("/api/actions", params={"cursor": "garbage!"})
        limit = await c.get("/api/actions", params={"limit": "²"})
    assert (cursor.status_code, cursor.json()["error"]["code"]) == (422, "invalid_cursor")
    assert (limit.status_code, limit.json()["error"]["code"]) == (422, "invalid_request")


async def test_the_audit_is_scoped_to_the_tenant_and_to_roles_that_read_actions(api: Api) -> None:
    await two_runs(api)
    assert (await audit(api, "other"))["items"] == []
    assert len((await audit(api, "op"))["items"]) == 4
    async with api.client("appr") as c:
        r = await c.get("/api/actions")
    assert (r.status_code, r.json()["error"]["code"]) == (403, "forbidden")
