"""Stored API keys: only their hash, valid until revoked or expired at the store's clock, rotated with an overlap."""

from __future__ import annotations

import pytest

from gateway.domain import ApiKeyRecord, KeyStatus, api_key_hash, mint_api_key, parse_contract, token_hash
from gateway.errors import Conflict, InvalidRequest, NotFound, Refusal
from gateway.store.records import Principal
from tests.harness import OPS, TENANT, World, contract

pytestmark = pytest.mark.anyio

ADMIN = Principal("root", TENANT, frozenset({"admin"}))
OTHER = Principal("boss", "globex", frozenset({"admin"}))


async def create(
    world: World, name: str = "ci", *, expires_in: int | None = None, by: Principal = ADMIN
) -> tuple[str, ApiKeyRecord]:
    """A new key's secret (the store only ever sees its hash) and its record."""
    key = mint_api_key()
    roles = frozenset({"operator", "auditor"})
    record = await world.store.create_api_key(
        by, name=name, roles=roles, key_sha256=api_key_hash(key), expires_in=expires_in
    )
    return key, record


async def rotate(
    world: World, key_id: str, overlap: int = 3600, *, by: Principal = ADMIN
) -> tuple[str, ApiKeyRecord, ApiKeyRecord]:
    """The new key's secret, its record and the old key's record after the rotation."""
    key = mint_api_key()
    new, old = await world.store.rotate_api_key(
        by, key_id, key_sha256=api_key_hash(key), overlap=overlap, expires_in=None
    )
    return key, new, old


async def test_a_created_key_is_found_by_its_hash_only(world: World) -> None:
    key = mint_api_key()
    created = await world.store.create_api_key(
        ADMIN, name="ci", roles=frozenset({"operator"}), key_sha256=api_key_hash(key), expires_in=None
    )
    found = await world.store.find_api_key(api_key_hash(key))
    assert found == created
    assert (created.tenant, created.name, created.roles, created.created_by) == (TENANT, "ci", {"operator"}, "root")
    assert created.key_id.startswith("key_")
    assert created.created_at == world.clock.now() and created.expires_at is None
    assert await world.store.find_api_key(api_key_hash(key + "x")) is None


async def test_a_revoked_key_is_not_found_and_revoking_again_changes_nothing(world: World) -> None:
    key, created = await create(world)
    world.clock.advance(5)
    revoked = await world.store.revoke_api_key(ADMIN, created.key_id, reason="left")
    assert (revoked.revoked_at, revoked.revoked_by) == (world.clock.now(), "root")
    assert revoked.status(world.clock.now()) is KeyStatus.REVOKED
    assert await world.store.find_api_key(api_key_hash(key)) is None
    world.clock.advance(5)
    assert await world.store.revoke_api_key(ADMIN, created.key_id) == revoked


async def test_a_key_expires_at_the_store_clock(world: World) -> None:
    key, _ = await create(world, expires_in=60)
    world.clock.advance(59)
    assert await world.store.find_api_key(api_key_hash(key)) is not None
    world.clock.advance(1)
    assert await world.store.find_api_key(api_key_hash(key)) is None


async def test_rotation_keeps_the_old_key_valid_for_the_overlap_only(world: World) -> None:
    old_key, old = await create(world, expires_in=90 * 86400)
    world.clock.advance(100)
    new_key, new, old_after = await rotate(world, old.key_id, 3600)
    now = world.clock.now()
    assert (new.name, new.roles, new.tenant, new.rotated_from, new.expires_at) == (
        old.name,
        old.roles,
        TENANT,
        old.key_id,
        None,
    )
    assert (old_after.expires_at, old_after.rotated_to) == (now + 3600, new.key_id)
    world.clock.advance(3599)
    assert await world.store.find_api_key(api_key_hash(old_key)) is not None
    assert await world.store.find_api_key(api_key_hash(new_key)) == new
    world.clock.advance(1)
    assert await world.store.find_api_key(api_key_hash(old_key)) is None
    assert await world.store.find_api_key(api_key_hash(new_key)) == new


async def test_an_overlap_never_extends_a_key_that_expires_sooner(world: World) -> None:
    _, created = await create(world, expires_in=60)
    _, _, old = await rotate(world, created.key_id, 3600)
    assert old.expires_at == created.expires_at


async def test_only_an_active_key_can_be_rotated(world: World) -> None:
    ids = {
        "rotated": (await create(world, "a"))[1].key_id,
        "revoked": (await create(world, "b"))[1].key_id,
        "expired": (await create(world, "c", expires_in=1))[1].key_id,
    }
    await rotate(world, ids["rotated"])
    await world.store.revoke_api_key(ADMIN, ids["revoked"])
    world.clock.advance(1)
    for status, key_id in ids.items():
        with pytest.raises(Conflict) as refused:
            await rotate(world, key_id, 0)
        assert (refused.value.code, refused.value.details["status"]) == ("key_not_active", status)


async def test_a_name_has_one_valid_key_at_a_time(world: World) -> None:
    _, created = await create(world, "ci")
    with pytest.raises(Conflict) as refused:
        await create(world, "ci")
    assert refused.value.code == "key_name_taken"
    await create(world, "ci", by=OTHER)  # names are per tenant
    await world.store.revoke_api_key(ADMIN, created.key_id)
    await create(world, "ci")  # the name is free once its key is not valid


async def test_keys_are_tenant_scoped(world: World) -> None:
    key, created = await create(world)
    with pytest.raises(NotFound):
        await world.store.get_api_key("globex", created.key_id)
    with pytest.raises(NotFound):
        await world.store.revoke_api_key(OTHER, created.key_id)
    with pytest.raises(NotFound):
        await rotate(world, created.key_id, by=OTHER)
    assert (await world.store.list_api_keys("globex")).items == []
    assert (await world.store.list_key_events("globex")).items == []
    assert await world.store.find_api_key(api_key_hash(key)) == created  # untouched by the other tenant


async def test_list_paginates_oldest_first_with_a_cursor(world: World) -> None:
    for name in ("a", "b", "c", "d", "e"):
        await create(world, name)
    first = await world.store.list_api_keys(TENANT, limit=3)
    rest = await world.store.list_api_keys(TENANT, cursor=first.next_cursor, limit=3)
    assert [k.name for k in first.items + rest.items] == ["a", "b", "c", "d", "e"]
    assert rest.next_cursor is None
    with pytest.raises(InvalidRequest):
        await world.store.list_api_keys(TENANT, cursor="garbage!")


async def test_every_change_is_recorded_with_who_and_when_and_never_the_key(world: World) -> None:
    key, created = await create(world, "ci")
    world.clock.advance(10)
    new_key, new, _ = await rotate(world, created.key_id, 60)
    world.clock.advance(10)
    await world.store.revoke_api_key(ADMIN, new.key_id, reason="leaked")
    events = (await world.store.list_key_events(TENANT)).items
    assert [(e.type, e.key_id, e.by) for e in events] == [
        ("key_created", created.key_id, "root"),
        ("key_rotated", created.key_id, "root"),
        ("key_created", new.key_id, "root"),
        ("key_revoked", new.key_id, "root"),
    ]
    assert (events[1].data["new_key_id"], events[1].data["overlap"]) == (new.key_id, 60)
    assert events[3].data["reason"] == "leaked"
    assert [e.at - events[0].at for e in events] == [0, 10, 10, 20]
    text = repr(events)
    assert key not in text and new_key not in text and api_key_hash(key) not in text
    only = (await world.store.list_key_events(TENANT, key_id=new.key_id)).items
    assert [e.type for e in only] == ["key_created", "key_revoked"]


async def test_revoking_a_key_ends_the_leases_it_granted_and_only_those(world: World) -> None:
    _, key = await create(world, "bot")
    bot = Principal("bot", TENANT, key.roles, key_id=key.key_id)
    run = await world.store.create_run(OPS, parse_contract(contract()))
    grant = await world.store.acquire_lease(bot, run.run_id, "worker-1", takeover=False)
    other = await world.new_run()  # leased by a bootstrap key: no key id
    assert (await world.call(grant.token, "t__write", {"text": "before"})).code is None

    await world.store.revoke_api_key(ADMIN, key.key_id, reason="leaked")
    assert (await world.call(grant.token, "t__write", {"text": "after"})).code == "lease_revoked"
    assert (await world.call(grant.token, "t__read", {"q": "a"})).code == "lease_revoked"
    assert [args["text"] for tool, args in world.tools.effects if tool == "write"] == ["before"]
    with pytest.raises(Refusal) as refused:
        await world.store.renew_lease(token_hash(grant.token))
    assert refused.value.code == "lease_revoked"
    assert (await world.run(run.run_id)).lease_revoked_at == world.clock.now()
    [ended] = [e for e in await world.events(run.run_id) if e.type == "lease_revoked"]
    assert (ended.data["key_id"], ended.data["epoch"], ended.data["by"]) == (key.key_id, grant.epoch, "root")
    assert (await world.call(other.token, "t__write", {"text": "other"})).code is None

    # A revoked lease holds nothing: a valid key leases the run again without a takeover.
    fresh = await world.store.acquire_lease(OPS, run.run_id, "worker-1", takeover=False)
    assert (await world.run(run.run_id)).lease_revoked_at is None
    assert (await world.call(fresh.token, "t__write", {"text": "after"})).code is None
