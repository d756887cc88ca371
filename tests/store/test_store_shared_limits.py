"""Limits shared by every run, on both back ends: a tool's or a destination's calls in flight and
rate, counted in the admit across runs, tenants and gateway processes; a slot freed by the settle,
by the orphan sweep, and by time when nobody frees it (docs/limits.md, "Shared limits").
Time moves by hand (ManualClock)."""

from __future__ import annotations

import pytest

from gateway.catalog.catalog import DEFAULT_TIMEOUT
from gateway.clock import ManualClock
from gateway.domain import ActionStatus, parse_contract
from gateway.domain.shared_limits import SLOT_GRACE_S
from gateway.gate import Gate, LimitSettings
from gateway.policy.model import SharedLimit
from gateway.store.records import Principal
from tests.harness import Run, World, code_of, contract

pytestmark = pytest.mark.anyio

OTHER_TENANT = Principal("globex-ops", "globex", frozenset({"operator"}))


def share(world: World, *limits: dict[str, object]) -> None:
    """The world's gate over a catalog with these shared limits (no per-run cap in the way)."""
    shared = [SharedLimit.model_validate(limit) for limit in limits]
    world.gate = Gate(world.store, world.tools.catalog(shared), world.clock, limits=LimitSettings(run_concurrency=None))


def error_of(result: object) -> dict[str, object]:
    structured = getattr(result, "structured", None)
    assert structured is not None
    error: dict[str, object] = structured["error"]
    return error


async def run_of(world: World, principal: Principal) -> Run:
    run = await world.store.create_run(principal, parse_contract(contract()))
    grant = await world.store.acquire_lease(principal, run.run_id, "worker-1", takeover=False)
    return Run(run.run_id, grant.token, run.lineage_id)


async def test_a_tools_calls_in_flight_are_capped_across_runs_and_tenants_until_one_settles(world: World) -> None:
    share(world, {"tool": "t__write", "max_concurrent": 2})
    world.tools.modes["write"] = "block"
    a, b = await world.new_run(), await run_of(world, OTHER_TENANT)
    first = world.spawn(world.gate.call(a.token, "t__write", {"text": "a"}))
    second = world.spawn(world.gate.call(b.token, "t__write", {"text": "b"}))
    await world.tools.wait_for_effects(2)

    third = await world.new_run()
    refused = await world.call(third.token, "t__write", {"text": "c"})
    assert code_of(refused) == "shared_limit"
    error = error_of(refused)
    assert (error["limit"], error["scope"], error["max"], error["retry_after_s"], error["retryable"]) == (
        "max_concurrent",
        "tool:t__write",
        2,
        1.0,
        True,
    )
    assert (await world.action(refused)).status is ActionStatus.REJECTED
    assert code_of(await world.call(third.token, "t__read", {"q": "x"})) is None  # another tool: not limited
    assert sorted(args["text"] for name, args in world.tools.effects if name == "write") == ["a", "b"]

    world.tools.release.set()
    assert code_of(await world.settled(first)) is None and code_of(await world.settled(second)) is None
    assert code_of(await world.call(third.token, "t__write", {"text": "c"})) is None


async def test_a_destinations_limit_counts_every_tool_of_its_adapter_together(world: World) -> None:
    share(world, {"destination": "t", "max_concurrent": 1})
    world.tools.modes["write"] = "block"
    a, b = await world.new_run(), await world.new_run()
    held = world.spawn(world.gate.call(a.token, "t__write", {"text": "a"}))
    await world.tools.wait_for_effects(1)
    refused = await world.call(b.token, "t__read", {"q": "x"})
    assert (code_of(refused), error_of(refused)["scope"]) == ("shared_limit", "destination:t")
    world.tools.release.set()
    assert code_of(await world.settled(held)) is None
    assert code_of(await world.call(b.token, "t__read", {"q": "x"})) is None


async def test_a_shared_rate_refuses_with_retry_after_and_a_refused_call_takes_nothing(world: World) -> None:
    share(world, {"tool": "t__read", "rate": "2/m"})
    runs = [await world.new_run() for _ in range(3)]
    assert code_of(await world.call(runs[0].token, "t__read", {"q": "1"})) is None
    assert code_of(await world.call(runs[1].token, "t__read", {"q": "2"})) is None
    refused = await world.call(runs[2].token, "t__read", {"q": "3"})
    assert code_of(refused) == "shared_limit"
    error = error_of(refused)
    assert (error["limit"], error["scope"], error["retry_after_s"]) == ("rate", "tool:t__read", 30.0)
    world.clock.advance(29.9)
    assert code_of(await world.call(runs[2].token, "t__read", {"q": "3"})) == "shared_limit"
    world.clock.advance(0.1)
    assert code_of(await world.call(runs[2].token, "t__read", {"q": "3"})) is None


async def test_a_second_gateway_process_counts_the_same_slots(world: World) -> None:
    share(world, {"tool": "t__write", "max_concurrent": 1})
    other_store = world.backend.store(world.clock, process_id="other-gateway")
    await other_store.open()
    try:
        other = Gate(other_store, world.gate.catalog, world.clock, limits=world.gate.limits)
        world.tools.modes["write"] = "block"
        a, b = await world.new_run(), await world.new_run()
        held = world.spawn(world.gate.call(a.token, "t__write", {"text": "a"}))
        await world.tools.wait_for_effects(1)
        assert code_of(await other.call(b.token, "t__write", {"text": "b"})) == "shared_limit"
        world.tools.release.set()
        assert code_of(await world.settled(held)) is None
        world.tools.modes["write"] = "ok"
        assert code_of(await other.call(b.token, "t__write", {"text": "b"})) is None
    finally:
        await other_store.close()


async def test_a_dead_processs_slot_is_freed_by_the_orphan_sweep(world: World) -> None:
    share(world, {"tool": "t__write", "max_concurrent": 1})
    world.tools.modes["write"] = "block"
    a, b = await world.new_run(), await world.new_run()
    held = world.spawn(world.gate.call(a.token, "t__write", {"text": "a"}))  # "dead": never settled below
    await world.tools.wait_for_effects(1)
    assert code_of(await world.call(b.token, "t__write", {"text": "b"})) == "shared_limit"

    restarted = world.backend.store(ManualClock(world.clock.now()), process_id="another-gateway")
    await restarted.open()
    try:
        (orphan,) = await restarted.mark_orphans_unknown()
    finally:
        await restarted.close()
    assert (await world.action(orphan)).status is ActionStatus.UNKNOWN
    world.tools.modes["write"] = "ok"
    assert code_of(await world.call(b.token, "t__write", {"text": "b"})) is None
    world.tools.release.set()
    await world.settled(held)


async def test_a_slot_nobody_frees_stops_counting_past_the_longest_timeout_and_its_grace(world: World) -> None:
    share(world, {"tool": "t__write", "max_concurrent": 1})
    world.tools.modes["write"] = "block"
    a, b = await world.new_run(), await world.new_run()
    held = world.spawn(world.gate.call(a.token, "t__write", {"text": "a"}))
    await world.tools.wait_for_effects(1)
    world.clock.advance(DEFAULT_TIMEOUT + SLOT_GRACE_S - 0.1)
    assert code_of(await world.call(b.token, "t__write", {"text": "b"})) == "shared_limit"
    world.clock.advance(0.2)  # the holder's process is gone and never came back: the slot is not kept
    world.tools.modes["write"] = "ok"
    assert code_of(await world.call(b.token, "t__write", {"text": "b"})) is None
    world.tools.release.set()
    await world.settled(held)
