"""`POST /api/runs/{id}/successor` over HTTP: one successor per terminal run, and a reason (issue 26)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tests.api.conftest import Api
from tests.api.test_operator_api import create_run

pytestmark = pytest.mark.anyio


async def cancelled_run(api: Api) -> str:
    run_id: str = (await create_run(api))["run_id"]
    async with api.client("op") as op:
        assert (await op.post(f"/api/runs/{run_id}/cancel", json={"reason": "worker lost"})).status_code == 200
    return run_id


@pytest.mark.parametrize("body", [{}, {"reason": ""}, {"reason": "   "}, {"reason": "\n\t"}, {"reason": None}])
async def test_a_successor_without_a_reason_is_422_and_makes_nothing(api: Api, body: dict[str, Any]) -> None:
    run_id = await cancelled_run(api)
    async with api.client("op") as op:
        refused = await op.post(f"/api/runs/{run_id}/successor", json=body)
        made = await op.post(f"/api/runs/{run_id}/successor", json={"reason": "a new worker goes on"})
    assert (refused.status_code, refused.json()["error"]["code"]) == (422, "invalid_request")
    assert [p["field"] for p in refused.json()["error"]["problems"]] == ["reason"]
    assert made.status_code == 201, made.text  # the refusal took nothing


async def test_a_second_successor_is_409_successor_exists_naming_the_first(api: Api) -> None:
    run_id = await cancelled_run(api)
    async with api.client("op") as op:
        first = await op.post(f"/api/runs/{run_id}/successor", json={"reason": "go on"})
        second = await op.post(f"/api/runs/{run_id}/successor", json={"reason": "go on again"})
    assert first.status_code == 201, first.text
    assert (second.status_code, second.json()["error"]["code"]) == (409, "successor_exists")
    assert second.json()["error"]["successor_run_id"] == first.json()["run_id"]


async def test_twenty_successor_requests_at_once_make_one_and_the_rest_name_it(api: Api) -> None:
    run_id = await cancelled_run(api)
    async with api.client("op") as op:
        answers = await asyncio.gather(
            *(op.post(f"/api/runs/{run_id}/successor", json={"reason": f"try {i}"}) for i in range(20))
        )
    made = [a.json()["run_id"] for a in answers if a.status_code == 201]
    refused = [a.json()["error"] for a in answers if a.status_code != 201]
    assert len(made) == 1
    assert [(e["code"], e["successor_run_id"]) for e in refused] == [("successor_exists", made[0])] * 19
