"""Ledger verification: each run's hash chain, and its head MAC'd with a key the store never holds.

The tampering goes around the store, straight at the database (see `Backend` in tests/harness.py),
as someone with write access to the file would.
"""

from __future__ import annotations

import json

import pytest

from gateway.clock import ManualClock
from gateway.store.chain import entry_hash
from tests.harness import TENANT, Run, World, edited_body

pytestmark = pytest.mark.anyio


async def _two_runs_with_history(world: World) -> tuple[Run, Run]:
    """Two runs; the second, the one tampered with, has a few calls in its chain."""
    first = await world.new_run()
    await world.call(first.token, "t__write", {"text": "first"})
    second = await world.new_run()
    for text in ("a", "b", "c"):
        await world.call(second.token, "t__write", {"text": text})
    return first, second


def _first_bad(report: object) -> tuple[str, int | None]:
    bad = getattr(report, "first_bad", None)
    assert bad is not None, "verify found nothing wrong"
    return bad.run_id, bad.seq


async def test_an_untouched_ledger_verifies_and_counts_every_entry(world: World) -> None:
    first, second = await _two_runs_with_history(world)
    report = await world.store.verify_ledger()
    entries = len(await world.events(first.run_id)) + len(await world.events(second.run_id))
    assert (report.ok, report.runs, report.entries, report.first_bad) == (True, 2, entries, None)
    assert (await world.store.verify_ledger(TENANT)).ok
    assert (await world.store.verify_ledger("another-tenant")).runs == 0


async def test_verify_names_an_edited_entry(world: World) -> None:
    _, run = await _two_runs_with_history(world)
    row = world.backend.events(run.run_id)[3]
    world.backend.set_event(run.run_id, row["seq"], body=edited_body(row["body"], worker="mallory"))
    report = await world.store.verify_ledger()
    assert not report.ok
    assert _first_bad(report) == (run.run_id, row["seq"])


async def test_verify_names_the_position_of_a_deleted_entry(world: World) -> None:
    _, run = await _two_runs_with_history(world)
    world.backend.delete_events(run.run_id, 4)
    assert _first_bad(await world.store.verify_ledger()) == (run.run_id, 4)


async def test_verify_names_the_first_of_two_reordered_entries(world: World) -> None:
    _, run = await _two_runs_with_history(world)
    world.backend.swap_events(run.run_id, 3, 4)
    assert _first_bad(await world.store.verify_ledger()) == (run.run_id, 3)


async def test_verify_names_the_first_missing_entry_of_a_cut_off_tail(world: World) -> None:
    _, run = await _two_runs_with_history(world)
    last = world.backend.events(run.run_id)[-1]["seq"]
    world.backend.delete_events(run.run_id, last - 1, last)  # the chain head still names `last`
    assert _first_bad(await world.store.verify_ledger()) == (run.run_id, last - 1)


async def test_verify_catches_an_edit_whose_chain_was_recomputed_without_the_ledger_key(world: World) -> None:
    _, run = await _two_runs_with_history(world)
    rows = world.backend.events(run.run_id)
    edited = 3
    prev = rows[edited - 2]["hash"]
    for row in rows[edited - 1 :]:
        body = edited_body(row["body"], worker="mallory") if row["seq"] == edited else row["body"]
        digest = entry_hash(prev, body)
        world.backend.set_event(run.run_id, row["seq"], body=body, prev_hash=prev, hash=digest)
        prev = digest
    world.backend.set_head(run.run_id, seq=rows[-1]["seq"], hash=prev)

    report = await world.store.verify_ledger()
    assert not report.ok
    # Every link checks out; only the head's MAC, which needs the key, gives the rewrite away. The
    # chain cannot say which earlier entry was changed, so verify names the head it cannot trust.
    assert _first_bad(report) == (run.run_id, rows[-1]["seq"])


async def test_a_store_holding_another_ledger_key_does_not_trust_the_heads(world: World) -> None:
    first, _ = await _two_runs_with_history(world)
    other = world.backend.store(ManualClock(world.clock.now()), ledger_key=b"not-the-key", process_id="auditor")
    await other.open()
    try:
        assert _first_bad(await other.verify_ledger()) == (first.run_id, len(await world.events(first.run_id)))
    finally:
        await other.close()


async def test_payload_bodies_are_stored_apart_from_the_chained_entries(world: World) -> None:
    run = await world.new_run()
    result = await world.call(run.token, "t__write", {"text": "secret"})
    action = await world.action(result)
    assert await world.store.get_blob(action.payload_sha256) == {"text": "secret"}
    # So retention can purge a body while the chain, which binds only its hash, still verifies.
    bodies = [json.loads(row["body"]) for row in world.backend.events(run.run_id)]
    assert all("secret" not in json.dumps(body) for body in bodies)
