"""The JSON pages and the stream of `GET /api/runs/{id}/events` serve each entry in the envelope
of docs/events.md: v, id, task_id, message and progress beside the recorded data."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from gateway.api.schemas import EventView
from gateway.domain.tasks import TaskStatus, parse_plan
from tests.api.conftest import Api
from tests.api.test_events_sse import STREAM, WAIT, Reader, history
from tests.api.test_operator_api import create_run, lease

pytestmark = pytest.mark.anyio


async def planned_run(api: Api) -> tuple[str, str]:
    run = await create_run(api)
    rid = run["run_id"]
    grant = await lease(api, rid)
    store = api.gateway.store
    plan = parse_plan([{"id": "a", "title": "A"}, {"id": "b", "title": "B"}], max_tasks=10)
    await store.save_plan(rid, epoch=grant["epoch"], worker="w1", expected_version=0, plan=plan)
    await store.move_task(rid, epoch=grant["epoch"], worker="w1", task_id="a", status=TaskStatus.RUNNING)
    await store.move_task(rid, epoch=grant["epoch"], worker="w1", task_id="a", status=TaskStatus.COMPLETED)
    await api.gateway.gate.call(grant["token"], "shop__find", {"q": "x"})
    return rid, grant["token"]


async def test_a_json_page_serves_every_entry_in_its_envelope(api: Api) -> None:
    rid, _ = await planned_run(api)
    items = await history(api, rid)
    for item in items:
        EventView.model_validate(item)  # the documented schema, extra fields refused
        assert (item["v"], item["id"]) == (1, f"evt_{rid}_{item['seq']}")
        assert item["message"]
    by_type: dict[str, dict[str, Any]] = {item["type"]: item for item in items}
    assert "progress" not in by_type["run_created"]
    completed = by_type["task_completed"]
    assert (completed["task_id"], completed["progress"]) == ("a", {"done": 1, "total": 2})
    assert by_type["action_settled"]["progress"] == {"done": 1, "total": 2}  # the plan's, as of the entry


async def test_the_stream_serves_the_same_envelopes_as_the_pages(api: Api) -> None:
    rid, _ = await planned_run(api)
    expected = await history(api, rid)
    async with api.client("aud") as c:
        with anyio.fail_after(WAIT):
            async with c.stream("GET", f"/api/runs/{rid}/events", headers=STREAM) as r:
                received = await Reader(r).take(len(expected))
    assert [e["data"] for e in received] == expected
    assert [e["id"] for e in received] == [str(item["seq"]) for item in expected]  # Last-Event-ID stays the seq
