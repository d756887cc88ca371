"""The audit query: actions across a tenant's runs, filtered, newest first, paged by cursor."""

from __future__ import annotations

import pytest

from gateway.domain import parse_contract
from gateway.errors import InvalidRequest
from gateway.store.records import ActionRecord, Principal
from gateway.store.sql.rows import encode_cursor
from tests.harness import TENANT, World, contract

pytestmark = pytest.mark.anyio

OTHER_KEY = Principal("night-shift", TENANT, frozenset({"operator"}))


async def _history(world: World) -> tuple[str, str]:
    """Two runs. The first: a read, a write, a refused call, a failed write, then a takeover by
    another key and a write under it. The second: one write, an hour later."""
    first = await world.new_run()
    await world.call(first.token, "t__read", {"q": "a"})
    await world.call(first.token, "t__write", {"text": "one"})
    await world.call(first.token, "t__denied", {})
    world.tools.modes["write"] = "failed"
    await world.call(first.token, "t__write", {"text": "two"})
    world.tools.modes["write"] = "ok"
    grant = await world.store.acquire_lease(OTHER_KEY, first.run_id, "worker-2", takeover=True)
    await world.call(grant.token, "t__write", {"text": "three"})
    world.clock.advance(3600)
    second = await world.new_run()
    await world.call(second.token, "t__write", {"text": "four"})
    return first.run_id, second.run_id


async def _all(world: World, **filters: object) -> list[ActionRecord]:
    page = await world.store.audit_actions(TENANT, limit=1000, **filters)  # type: ignore[arg-type]
    assert page.next_cursor is None
    return page.items


async def test_audit_lists_every_action_of_the_tenant_newest_first(world: World) -> None:
    first, second = await _history(world)
    items = await _all(world)
    by_run = (await world.actions(first)) + (await world.actions(second))
    assert [a.action_id for a in items] == [a.action_id for a in reversed(by_run)]
    assert len(items) == 6


async def test_each_filter_narrows_to_the_actions_that_match(world: World) -> None:
    first, second = await _history(world)
    assert {a.tool for a in await _all(world, tool="t__read")} == {"t__read"}
    failed = await _all(world, status="failed")
    assert [(a.tool, a.status.value) for a in failed] == [("t__write", "failed")]
    refused = await _all(world, code="forbidden")
    assert [(a.tool, a.status.value) for a in refused] == [("t__denied", "rejected")]
    assert {a.run_id for a in await _all(world, run_id=second)} == {second}
    writes = await _all(world, run_id=first, tool="t__write", status="succeeded")
    assert len(writes) == 2
    assert await _all(world, tool="t__read", status="failed") == []


async def test_principal_matches_the_worker_or_the_key_that_granted_its_lease(world: World) -> None:
    await _history(world)
    by_worker = await _all(world, principal="worker-2")
    by_key = await _all(world, principal="night-shift")
    assert [a.action_id for a in by_worker] == [a.action_id for a in by_key]
    assert [a.worker for a in by_key] == ["worker-2"]
    # The ops key granted the first lease of both runs: every action made under those leases.
    assert {a.worker for a in await _all(world, principal="ops")} == {"worker-1"}
    assert len(await _all(world, principal="ops")) == 5
    assert await _all(world, principal="nobody") == []


async def test_time_filters_take_since_inclusive_and_until_exclusive(world: World) -> None:
    first, second = await _history(world)
    late = (await world.actions(second))[0]
    assert await _all(world, since=late.created_at) == [late]
    early = await _all(world, until=late.created_at)
    assert {a.run_id for a in early} == {first}
    assert await _all(world, since=late.created_at, until=late.created_at) == []


async def test_pages_follow_the_cursor_backwards_without_gaps_or_repeats(world: World) -> None:
    await _history(world)
    expected = [a.action_id for a in await _all(world)]
    seen: list[str] = []
    cursor = None
    for _ in range(10):
        page = await world.store.audit_actions(TENANT, cursor=cursor, limit=2)
        seen += [a.action_id for a in page.items]
        cursor = page.next_cursor
        if cursor is None:
            break
    assert seen == expected


async def test_another_tenants_actions_are_never_listed(world: World) -> None:
    await _history(world)
    stranger = Principal("intruder", "globex", frozenset({"operator"}))
    run = await world.store.create_run(stranger, parse_contract(contract()))
    grant = await world.store.acquire_lease(stranger, run.run_id, "worker-1", takeover=False)
    await world.call(grant.token, "t__write", {"text": "theirs"})
    assert run.run_id not in {a.run_id for a in await _all(world)}
    theirs = await world.store.audit_actions("globex")
    assert [a.run_id for a in theirs.items] == [run.run_id]
    assert (await world.store.audit_actions("globex", run_id=(await _all(world))[0].run_id)).items == []


@pytest.mark.parametrize("cursor", ["garbage!", encode_cursor(1 << 64)])
async def test_a_cursor_the_store_did_not_hand_out_is_refused(world: World, cursor: str) -> None:
    with pytest.raises(InvalidRequest) as caught:
        await world.store.audit_actions(TENANT, cursor=cursor)
    assert caught.value.code == "invalid_cursor"
