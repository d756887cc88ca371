"""A cursor the API did not hand out is refused `invalid_cursor`, never a 500."""

from __future__ import annotations

import base64

import pytest

from tests.api.conftest import Api
from tests.api.test_operator_api import create_run

pytestmark = pytest.mark.anyio


def forged(raw: str) -> str:
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


@pytest.mark.parametrize("raw", ["s" + "9" * 30, "s²", "x12", "s-1", "s"])
async def test_a_forged_cursor_is_refused_on_every_list(api: Api, raw: str) -> None:
    run = await create_run(api)
    async with api.client("ops") as c:
        for path in ("/api/runs", "/api/approvals", f"/api/runs/{run['run_id']}/actions"):
            r = await c.get(path, params={"cursor": forged(raw)})
            assert r.status_code in (400, 422), (path, r.status_code, r.text)
            assert r.json()["error"]["code"] == "invalid_cursor"


async def test_a_method_a_route_does_not_serve_is_405_in_the_json_envelope(api: Api) -> None:
    async with api.client("ops") as c:
        r = await c.delete("/api/runs")
    assert r.status_code == 405
    assert r.json()["error"]["code"] == "method_not_allowed"
    assert r.headers["allow"]  # what the route serves (Starlette names the first route matching the path)
