"""Retry policies and dead letters through the gate and the store, on both back ends
(docs/decisions/0030-retries.md): failed attempts counted per operation id across calls, the dead
letter with its entry and its alert in the settling transaction, `retry_limit` after it, the
fence between attempts, and the contract's `attempts` budget."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from gateway import backoff
from gateway.clock import ManualClock
from gateway.domain import ActionStatus
from gateway.store.records import AlertRoutes
from gateway.store.retry_records import DeadLetterStatus
from tests.harness import OPS, TENANT, TEXT, TOOLS, Backend, World, op, open_world

pytestmark = pytest.mark.anyio

ROUTES = AlertRoutes((("ops", frozenset({"dead_letter"})),))
RETRIES = {"max_attempts": 3, "backoff": {"initial": 0.01, "max": 0.01, "jitter": False}}


@pytest.fixture
async def retried(backend: Backend, clock: ManualClock, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[World]:
    """A world whose t__write retries up to 3 attempts without waiting, and whose store routes
    dead-letter alerts to one webhook."""
    monkeypatch.setitem(TOOLS, "write", (TEXT, {"effect": "write", "retries": RETRIES}))

    async def no_wait(_: float) -> None:
        return None

    monkeypatch.setattr(backoff, "sleep", no_wait)
    world = await open_world(backend, clock, alert_routes=ROUTES)
    try:
        yield world
    finally:
        await world.teardown()


async def test_attempts_are_counted_across_calls_and_the_dead_letter_comes_with_its_alert(retried: World) -> None:
    world = retried
    run = await world.new_run()
    world.tools.modes["write"] = "not_sent"
    first = await world.call(run.token, "t__write", {"text": "a"}, meta=op("w1"))
    assert first.code == "upstream_unavailable"
    assert len(world.tools.calls) == 3  # three attempts, one action
    [action] = [a for a in await world.actions(run.run_id) if a.tool == "t__write"]
    assert action.status is ActionStatus.FAILED
    types = await world.event_types(run.run_id)
    assert types.count("action_retrying") == 2 and types.count("dead_lettered") == 1
    [letter] = await world.store.list_dead_letters(TENANT, run.run_id)
    assert (letter.operation_id, letter.attempts, letter.status) == ("w1", 3, DeadLetterStatus.OPEN)
    alerts = await world.store.list_alerts(TENANT, run_id=run.run_id)
    assert [a.kind for a in alerts] == ["dead_letter"]
    assert [(d.target, d.kind) for d in await world.store.list_deliveries()] == [("ops", "dead_letter")]

    again = await world.call(run.token, "t__write", {"text": "a"}, meta=op("w1"))
    assert again.code == "retry_limit"
    assert again.structured is not None and again.structured["error"]["dead_letter_id"] == letter.dead_letter_id
    assert len(world.tools.calls) == 3  # refused before any adapter

    decided = await world.store.decide_dead_letter(OPS, letter.dead_letter_id, DeadLetterStatus.DROPPED, "gave up")
    assert decided.status is DeadLetterStatus.DROPPED and decided.decided_by == OPS.name


async def test_a_call_cut_short_leaves_the_rest_of_the_attempts_to_the_next_call(
    retried: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    world = retried
    run = await world.new_run()
    world.tools.modes["write"] = "not_sent"
    paused: list[Any] = []

    async def pause_once(_: float) -> None:  # an operator pauses the run between attempts
        if not paused:
            paused.append(await world.store.pause(OPS, run.run_id, "look"))

    monkeypatch.setattr(backoff, "sleep", pause_once)
    first = await world.call(run.token, "t__write", {"text": "b"}, meta=op("w2"))
    assert first.code == "upstream_unavailable" and len(world.tools.calls) == 1  # the fence held
    assert "action_retrying" not in await world.event_types(run.run_id)
    await world.store.resume(OPS, run.run_id, "go on")
    await world.call(run.token, "t__write", {"text": "b"}, meta=op("w2"))
    assert len(world.tools.calls) == 3  # 1 + the 2 attempts left of 3
    assert len(await world.store.list_dead_letters(TENANT, run.run_id)) == 1


async def test_the_attempts_budget_bounds_failed_attempts_across_the_run(retried: World) -> None:
    world = retried
    run = await world.new_run(budgets={"attempts": 2})
    world.tools.modes["write"] = "not_sent"
    first = await world.call(run.token, "t__write", {"text": "c"}, meta=op("w3"))
    assert first.code == "upstream_unavailable" and len(world.tools.calls) == 2  # the budget stopped the retries
    refused = await world.call(run.token, "t__write", {"text": "d"}, meta=op("w4"))
    assert refused.code == "budget_exhausted"
    assert refused.structured is not None and refused.structured["error"]["dimension"] == "attempts"
    assert len(world.tools.calls) == 2


async def test_a_tool_without_retries_is_tried_once_and_frees_its_operation_id(world: World) -> None:
    run = await world.new_run()
    world.tools.modes["write"] = "not_sent"
    for _ in range(4):
        await world.call(run.token, "t__write", {"text": "e"}, meta=op("w5"))
    assert len(world.tools.calls) == 4
    assert await world.store.list_dead_letters(TENANT, run.run_id) == []
