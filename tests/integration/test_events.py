"""Events consumers can trust, end to end: a real webhook receiver on loopback subscribed to `*`
gets the plan and task events with their message and progress, the gate's own alert, each under
its event id; a consumer that applies them twice and shuffled ends where the in-order one does."""

from __future__ import annotations

import json
import random
from collections.abc import AsyncIterator
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.routing import Route

from gateway.clock import ManualClock
from gateway.domain.events import Outbox, Subscriber
from gateway.domain.tasks import TaskStatus
from gateway.runtime.settings import Webhook
from gateway.runtime.webhooks import SIGNATURE_HEADER, Deliverer, verify
from tests.api.test_webhooks import Receiver
from tests.harness import Backend, World, open_world, uvicorn_serving
from tests.store.test_store_tasks import moved, plan_of, save

pytestmark = pytest.mark.anyio

SECRET = b"whsec-events-test-only"


@pytest.fixture
async def wired(backend: Backend, clock: ManualClock) -> AsyncIterator[tuple[World, Receiver, Deliverer]]:
    """A world whose webhook `all` (events: ['*']) is a receiver on loopback."""
    hook = Receiver()
    async with uvicorn_serving(Starlette(routes=[Route("/hook", hook.endpoint, methods=["POST"])])) as url:
        webhook = Webhook("all", f"{url}/hook", SECRET, frozenset({"*"}))
        world = await open_world(backend, clock, outbox=Outbox((Subscriber(webhook.name, webhook.events),)))
        deliverer = Deliverer(world.store, clock, [webhook], timeout=5)
        try:
            yield world, hook, deliverer
        finally:
            await deliverer.aclose()
            await world.teardown()


async def five_tasks(world: World) -> str:
    """A run that plans five tasks in a chain and works through three, one with a retry."""
    run = await world.new_run()
    tasks = [{"id": f"t{n}", **({"depends_on": [f"t{n - 1}"]} if n > 1 else {})} for n in range(1, 6)]
    await save(world, run, plan_of(*tasks))
    for n in (1, 2, 3):
        await moved(world, run, f"t{n}", TaskStatus.RUNNING)
        if n == 2:
            await moved(world, run, "t2", TaskStatus.RETRYING)
            await moved(world, run, "t2", TaskStatus.RUNNING)
        await moved(world, run, f"t{n}", TaskStatus.COMPLETED)
    await moved(world, run, "t4", TaskStatus.RUNNING)
    await moved(world, run, "t4", TaskStatus.BLOCKED)
    return run.run_id


async def test_a_receiver_subscribed_to_everything_gets_plan_and_task_events_with_message_and_progress(
    wired: tuple[World, Receiver, Deliverer],
) -> None:
    world, hook, deliverer = wired
    run_id = await five_tasks(world)
    assert await deliverer.deliver_due() > 0
    for headers, raw in hook.got:
        assert verify(SECRET, raw, headers[SIGNATURE_HEADER.lower()], world.clock.now())
    bodies = sorted(hook.bodies(), key=lambda b: b["seq"])  # sent concurrently: in any order
    entries = await world.events(run_id)
    assert [b["id"] for b in bodies] == [f"evt_{run_id}_{e.seq}" for e in entries]  # every entry, once
    by_type: dict[str, list[dict[str, Any]]] = {}
    for body in bodies:
        by_type.setdefault(body["type"], []).append(body)
    [plan] = by_type["plan_created"]
    assert plan["progress"] == {"done": 0, "total": 5} and "5" in plan["message"]
    completed = by_type["task_completed"]
    assert [(b["task_id"], b["progress"]) for b in completed] == [(f"t{n}", {"done": n, "total": 5}) for n in (1, 2, 3)]
    assert all(b["task_id"] in b["message"] for b in completed)
    [retry] = by_type["task_retrying"]
    assert retry["task_id"] == "t2" and "t2" in retry["message"]
    [blocked] = by_type["task_blocked"]
    assert (blocked["task_id"], blocked["progress"]) == ("t4", {"done": 3, "total": 5})
    assert by_type["lease_granted"][0].get("progress") is None  # before the plan: unknown
    assert await world.store.list_deliveries(status="pending") == []


async def test_the_gates_own_upstream_unauthorized_alert_reaches_the_webhook(
    wired: tuple[World, Receiver, Deliverer],
) -> None:
    world, hook, deliverer = wired
    run = await world.new_run()
    world.tools.modes["write"] = "unauthorized"
    result = await world.call(run.token, "t__write", {"text": "a"})
    assert result.code == "upstream_unauthorized"
    await deliverer.deliver_due()
    [alert] = hook.bodies("upstream_unauthorized")
    assert (alert["type"], alert["data"]["tool"], alert["run_id"]) == ("alert", "t__write", run.run_id)
    assert alert["id"].startswith(f"evt_{run.run_id}_") and "t__write" in alert["message"]
    assert "401" not in alert["message"]  # the destination's words stay in data, out of the message


def consume(bodies: list[dict[str, Any]]) -> dict[str, Any]:
    """A consumer as docs/events.md says: dedupe on id, apply each run's events in seq order."""
    seen: set[str] = set()
    held: dict[str, dict[int, dict[str, Any]]] = {}
    applied: dict[str, int] = {}
    state: dict[str, Any] = {"tasks": {}, "progress": None, "log": []}
    for body in bodies:
        if body["id"] in seen:
            continue
        seen.add(body["id"])
        run = body["run_id"]
        held.setdefault(run, {})[body["seq"]] = body
        while applied.get(run, 0) + 1 in held[run]:  # apply without gaps, in seq order
            event = held[run].pop(applied.get(run, 0) + 1)
            applied[run] = event["seq"]
            if event["type"].startswith("task_") and "status" in event["data"]:
                state["tasks"][event["task_id"]] = event["data"]["status"]
            if "progress" in event:
                state["progress"] = event["progress"]
            state["log"].append(event["message"])
    return {**state, "applied": applied}


async def test_a_consumer_given_the_events_twice_and_shuffled_ends_in_the_in_order_state(
    wired: tuple[World, Receiver, Deliverer],
) -> None:
    world, hook, deliverer = wired
    run_id = await five_tasks(world)
    await deliverer.deliver_due()
    in_order = sorted(hook.bodies(), key=lambda b: b["seq"])
    expected = consume(in_order)
    assert expected["tasks"] == {
        "t1": "completed",
        "t2": "completed",
        "t3": "completed",
        "t4": "blocked",
    }  # t5 never moved: pending since the plan, no entry of its own
    assert expected["progress"] == {"done": 3, "total": 5}
    assert expected["applied"] == {run_id: len(in_order)}
    rng = random.Random(23)
    for _ in range(20):
        doubled = [json.loads(json.dumps(b)) for b in in_order * 2]
        rng.shuffle(doubled)
        assert consume(doubled) == expected
