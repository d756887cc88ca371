"""Limits decided in the admit transaction, on both back ends: rates per tenant and per run, the
per-run cap on calls in flight, and results over the cap. Time moves by hand (ManualClock)."""

from __future__ import annotations

import pytest

from gateway.canonical import canonical_json, sha256_hex
from gateway.domain import ActionStatus, Rate, RateLimits
from gateway.gate import Gate, LimitSettings
from tests.harness import TENANT, World, code_of

pytestmark = pytest.mark.anyio

NONE = {"spend": 0, "tool_calls": 0, "writes": 0, "active_seconds": 0}


def limit(world: World, **changes: object) -> None:
    world.regate(limits=LimitSettings(**changes))  # type: ignore[arg-type]


def error_of(result: object) -> dict[str, object]:
    structured = getattr(result, "structured", None)
    assert structured is not None
    error: dict[str, object] = structured["error"]
    return error


async def test_a_tenant_over_its_rate_is_refused_with_retry_after_and_admitted_once_it_passes(world: World) -> None:
    limit(world, rate=RateLimits(per_tenant=Rate(3, 60.0)))
    run = await world.new_run()
    for n in range(3):
        assert code_of(await world.call(run.token, "t__read", {"q": str(n)})) is None
    refused = await world.call(run.token, "t__read", {"q": "4"})
    assert code_of(refused) == "rate_limited"
    error = error_of(refused)
    assert (error["limit"], error["retry_after_s"], error["retryable"]) == ("tenant", 20.0, True)
    assert (await world.action(refused)).status is ActionStatus.REJECTED
    assert (await world.run(run.run_id)).reserved == NONE  # refused before anything was reserved

    world.clock.advance(19.9)
    assert code_of(await world.call(run.token, "t__read", {"q": "5"})) == "rate_limited"
    world.clock.advance(0.1)  # refused calls took nothing: the same 20 s admit the next one
    assert code_of(await world.call(run.token, "t__read", {"q": "6"})) is None
    assert code_of(await world.call(run.token, "t__read", {"q": "7"})) == "rate_limited"


async def test_each_run_has_its_own_rate_and_every_run_of_the_tenant_counts_against_the_tenants(
    world: World,
) -> None:
    limit(world, rate=RateLimits(per_tenant=Rate(3, 60.0), per_key=Rate(2, 60.0)))
    a, b = await world.new_run(), await world.new_run()
    assert code_of(await world.call(a.token, "t__write", {"text": "1"})) is None
    assert code_of(await world.call(a.token, "t__write", {"text": "2"})) is None
    over = await world.call(a.token, "t__write", {"text": "3"})
    assert (code_of(over), error_of(over)["limit"]) == ("rate_limited", "run")
    assert code_of(await world.call(b.token, "t__write", {"text": "1"})) is None  # its own run: one left of the tenant
    tenant = await world.call(b.token, "t__write", {"text": "2"})
    assert (code_of(tenant), error_of(tenant)["limit"]) == ("rate_limited", "tenant")
    assert len(world.tools.effects) == 3


async def test_a_takeover_does_not_start_the_runs_count_again(world: World) -> None:
    limit(world, rate=RateLimits(per_key=Rate(1, 60.0)))
    run = await world.new_run()
    assert code_of(await world.call(run.token, "t__read", {"q": "1"})) is None
    token = await world.takeover(run)
    assert code_of(await world.call(token, "t__read", {"q": "2"})) == "rate_limited"


async def test_a_run_at_its_cap_of_calls_in_flight_is_refused_until_one_settles(world: World) -> None:
    limit(world, run_concurrency=2)
    run = await world.new_run()
    world.tools.modes["write"] = "block"
    first = world.spawn(world.gate.call(run.token, "t__write", {"text": "1"}))
    second = world.spawn(world.gate.call(run.token, "t__write", {"text": "2"}))
    await world.tools.wait_for_effects(2)
    refused = await world.call(run.token, "t__read", {"q": "x"})
    assert code_of(refused) == "rate_limited"
    error = error_of(refused)
    assert (error["limit"], error["max"], error["retry_after_s"]) == ("run_concurrency", 2, 1.0)
    other = await world.new_run()  # another run's calls are not this run's
    assert code_of(await world.call(other.token, "t__read", {"q": "x"})) is None

    world.tools.release.set()
    assert code_of(await world.settled(first)) is None and code_of(await world.settled(second)) is None
    assert code_of(await world.call(run.token, "t__read", {"q": "x"})) is None


async def test_a_budget_refusal_is_named_before_a_rate_and_takes_nothing_from_it(world: World) -> None:
    limit(world, rate=RateLimits(per_key=Rate(1, 60.0)))
    run = await world.new_run(budgets={"spend": "100.00", "tool_calls": 1000, "writes": 0, "active_seconds": 10})
    assert code_of(await world.call(run.token, "t__write", {"text": "1"})) == "budget_exhausted"
    assert code_of(await world.call(run.token, "t__read", {"q": "1"})) is None


async def test_an_api_rate_takes_from_every_scope_or_from_none(world: World) -> None:
    store = world.store
    tenant, key = ("tenant:acme", Rate(2, 10.0)), ("key:k1", Rate(1, 10.0))
    assert await store.take_rate([tenant, key]) is None
    assert await store.take_rate([tenant, key]) == ("key:k1", pytest.approx(10.0))
    assert await store.take_rate([tenant]) is None  # the refusal above took nothing from the tenant
    scope, wait = await store.take_rate([tenant]) or ("", 0.0)
    assert (scope, wait) == ("tenant:acme", pytest.approx(5.0))
    world.clock.advance(5.0)
    assert await store.take_rate([tenant]) is None


async def test_a_write_whose_result_is_over_the_cap_is_succeeded_with_its_body_withheld(world: World) -> None:
    limit(world, max_tool_result=20)
    run = await world.new_run()
    result = await world.call(run.token, "t__write", {"text": "1"})
    assert code_of(result) == "payload_too_large"
    error = error_of(result)
    assert (error["performed"], error["sent"], error["max_bytes"]) == (True, True, 20)
    action = await world.action(result)
    assert action.status is ActionStatus.SUCCEEDED
    assert action.receipt is not None and action.receipt["withheld"] is True
    assert action.receipt["result_bytes"] == error["result_bytes"]
    assert (await world.run(run.run_id)).spent["writes"] == 1
    assert "obj-1" not in str(result.content) + str(result.structured)
    # The same operation again is a replay of the performed write, not a second one.
    again = await world.call(run.token, "t__write", {"text": "1"})
    assert again.meta["warrant/replayed"] is True and len(world.tools.effects) == 1


async def test_a_read_whose_result_is_over_the_cap_fails_and_one_within_it_passes(world: World) -> None:
    limit(world, max_tool_result=20)
    run = await world.new_run()
    result = await world.call(run.token, "t__read", {"q": "1"})
    assert code_of(result) == "payload_too_large" and error_of(result)["performed"] is False
    limit(world, max_tool_result=10_000)
    assert code_of(await world.call(run.token, "t__read", {"q": "1"})) is None
    assert (await world.action(result)).status is ActionStatus.FAILED


async def test_a_second_gateway_process_on_the_same_store_sees_the_same_counts(world: World) -> None:
    # Two processes (replicas on PostgreSQL; two serves of one file on SQLite) share one count.
    limit(world, rate=RateLimits(per_key=Rate(2, 60.0)), run_concurrency=None)
    other_store = world.backend.store(world.clock, process_id="other-gateway")
    await other_store.open()
    try:
        other = Gate(other_store, world.tools.catalog(), world.clock, limits=world.gate.limits)
        run = await world.new_run()
        assert code_of(await world.call(run.token, "t__read", {"q": "1"})) is None
        assert code_of(await other.call(run.token, "t__read", {"q": "2"})) is None
        assert code_of(await other.call(run.token, "t__read", {"q": "3"})) == "rate_limited"
        assert code_of(await world.call(run.token, "t__read", {"q": "4"})) == "rate_limited"

        limit(world, run_concurrency=1)
        other = Gate(other_store, world.tools.catalog(), world.clock, limits=world.gate.limits)
        fresh = await world.new_run()
        world.tools.modes["write"] = "block"
        in_flight = world.spawn(world.gate.call(fresh.token, "t__write", {"text": "1"}))
        await world.tools.wait_for_effects(3)  # the two reads above, and this write
        busy = await other.call(fresh.token, "t__read", {"q": "x"})
        assert (code_of(busy), error_of(busy)["limit"]) == ("rate_limited", "run_concurrency")
        world.tools.release.set()
        assert code_of(await world.settled(in_flight)) is None
        assert code_of(await other.call(fresh.token, "t__read", {"q": "x"})) is None
    finally:
        await other_store.close()


async def test_a_tokens_refusals_past_its_rate_are_answered_rate_limited_and_not_recorded(world: World) -> None:
    from gateway.domain import RefusalLimits
    from gateway.errors import Refusal

    world.store.refusal_limits = RefusalLimits(rate=Rate(3, 60.0), max_per_run=None)
    run = await world.new_run()
    denied = Refusal("forbidden", "no")
    for _ in range(3):
        await world.store.record_rejection(
            run.run_id, tool="t__x", payload_sha256="0" * 64, refusal=denied, epoch=1, worker="worker-1"
        )
    with pytest.raises(Refusal) as raised:
        await world.store.record_rejection(
            run.run_id, tool="t__x", payload_sha256="0" * 64, refusal=denied, epoch=1, worker="worker-1"
        )
    assert raised.value.code == "rate_limited" and raised.value.details["refused_code"] == "forbidden"
    actions = await world.store.list_actions("acme", run.run_id, limit=100)
    assert len([a for a in actions.items if a.status is ActionStatus.REJECTED]) == 3
    world.clock.advance(60)
    await world.store.record_rejection(
        run.run_id, tool="t__x", payload_sha256="0" * 64, refusal=denied, epoch=1, worker="worker-1"
    )


async def test_refusals_the_limits_drop_are_counted_per_lease_token_and_limit_in_one_row_each(world: World) -> None:
    from gateway.domain import RefusalLimits
    from gateway.errors import Refusal

    world.store.refusal_limits = RefusalLimits(rate=Rate(3, 60.0), max_per_run=5)
    run = await world.new_run()
    other = await world.new_run()
    denied = Refusal("forbidden", "no")

    async def refuse(epoch: int, times: int) -> list[str]:
        codes = []
        for _ in range(times):
            try:
                await world.store.record_rejection(
                    run.run_id, tool="t__x", payload_sha256="0" * 64, refusal=denied, epoch=epoch, worker="w"
                )
                codes.append("recorded")
            except Refusal as refusal:
                codes.append(refusal.code if refusal.details.get("recorded", True) else "not_recorded")
        return codes

    assert await refuse(1, 40) == ["recorded"] * 3 + ["rate_limited"] * 37
    assert await refuse(2, 4) == ["recorded"] * 2 + ["not_recorded"] * 2  # the run keeps 5 in all
    dropped = await world.store.dropped_refusals(TENANT, run.run_id)
    assert (dropped.rate, dropped.max_per_run) == (37, 2)
    assert dropped.by_epoch == [(2, 0, 2), (1, 37, 0)]  # per token, newest first: one row each, however many
    assert await world.store.dropped_refusals(TENANT, other.run_id) == type(dropped)(0, 0, [])
    assert await world.store.dropped_refusals("other-tenant", run.run_id) == type(dropped)(0, 0, [])
    gauges = await world.store.gauges(TENANT, limit=10)
    assert gauges.refusals_dropped == {"rate": 37, "max_per_run": 2}
    actions = await world.store.list_actions(TENANT, run.run_id, limit=100)
    assert len([a for a in actions.items if a.status is ActionStatus.REJECTED]) == 5  # nothing else written


async def test_a_refusal_of_a_large_payload_records_its_size_beside_its_hash(world: World) -> None:
    run = await world.new_run()
    big = {"text": "y" * 200_000}
    result = await world.call(run.token, "t__denied", big)
    assert code_of(result) == "forbidden"
    events = await world.store.list_events(TENANT, run.run_id, limit=100)
    rejected = [e for e in events if e.type == "action_rejected"]
    assert [e.data["payload_bytes"] for e in rejected] == [len(canonical_json(big))]
    assert rejected[0].data["payload_sha256"] == sha256_hex(canonical_json(big))
