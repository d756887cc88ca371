"""Verify replays each chain against the state rows the gate decides from (gateway/store/replay.py).

The edits go around the store, straight at the database, as someone with write access would; the
chain itself stays intact, so only the replay can name them.
"""

from __future__ import annotations

import pytest

from gateway.domain import PurgeScope, parse_contract
from gateway.store.records import SettleKind, Settlement
from tests.contracts import child_contract
from tests.harness import OPS, TENANT, World

CHILD = child_contract(
    goal="a part", budgets={"spend": "1.00", "tool_calls": 5}, authority={"allow": ["t__paid", "t__read"]}
)

pytestmark = pytest.mark.anyio


def _bad(report: object) -> tuple[str, str]:
    bad = getattr(report, "first_bad", None)
    assert bad is not None, "verify found nothing wrong"
    return bad.run_id, bad.code


async def test_a_ledger_of_writes_approvals_denials_and_refusals_still_verifies(world: World) -> None:
    run = await world.new_run()
    await world.call(run.token, "t__write", {"text": "a"})
    approved = await world.call(run.token, "t__approve", {"text": "yes"})
    await world.decide(approved)
    await world.call(run.token, "t__approve", {"text": "yes"})
    await world.decide(await world.call(run.token, "t__approve", {"text": "no"}), approve=False)
    await world.call(run.token, "x__read", {"q": "outside"})
    report = await world.store.verify_ledger()
    assert (report.ok, report.first_bad) == (True, None)


async def test_verify_catches_a_succeeded_write_marked_failed(world: World) -> None:
    # A failed write's operation may be executed again: the edit would repeat a real side effect.
    run = await world.new_run()
    action = await world.action(await world.call(run.token, "t__write", {"text": "once"}))
    world.backend.set_row("actions", "action_id", action.action_id, status="failed", code="upstream_error")
    assert _bad(await world.store.verify_ledger()) == (run.run_id, "action_row_edited")


async def test_verify_catches_a_denied_approval_marked_approved(world: World) -> None:
    run = await world.new_run()
    denied = await world.decide(await world.call(run.token, "t__approve", {"text": "pay"}), approve=False)
    world.backend.set_row("approvals", "approval_id", denied.approval_id, status="approved")
    assert _bad(await world.store.verify_ledger()) == (run.run_id, "approval_row_edited")


async def test_verify_catches_a_deleted_action_row(world: World) -> None:
    run = await world.new_run()
    action = await world.action(await world.call(run.token, "t__write", {"text": "gone"}))
    world.backend.delete_row("actions", "action_id", action.action_id)
    assert _bad(await world.store.verify_ledger()) == (run.run_id, "action_row_missing")


async def test_verify_catches_a_deleted_payload_body(world: World) -> None:
    run = await world.new_run()
    action = await world.action(await world.call(run.token, "t__write", {"text": "kept"}))
    world.backend.delete_row("blobs", "sha256", action.payload_sha256)
    assert _bad(await world.store.verify_ledger()) == (run.run_id, "body_missing")


async def test_verify_catches_a_cancelled_run_marked_running(world: World) -> None:
    run = await world.new_run()
    await world.store.cancel(OPS, run.run_id, "stop", hard=False)
    world.backend.set_row("runs", "run_id", run.run_id, status="running")
    assert _bad(await world.store.verify_ledger()) == (run.run_id, "run_row_edited")


async def test_expired_approvals_a_cancel_and_a_successor_still_verify(world: World) -> None:
    run = await world.new_run()
    await world.call(run.token, "t__approve", {"text": "late"})
    world.clock.advance(600)  # past decide_within: the next transaction expires it
    await world.call(run.token, "t__write", {"text": "after"})
    await world.store.cancel(OPS, run.run_id, "stop", hard=False)
    await world.store.create_successor(OPS, run.run_id, reason="carry on", extend_by=None)
    report = await world.store.verify_ledger()
    assert (report.ok, report.first_bad) == (True, None)


# -- anchors: a run deleted whole, a rollback to an older MAC'd head (gateway/store/anchor.py) -----
RUN_TABLES = ("events", "actions", "approvals", "milestones", "checkpoints", "charges", "leases")


async def test_an_anchor_still_holds_after_normal_operation(world: World) -> None:
    run = await world.new_run()
    await world.call(run.token, "t__write", {"text": "a"})
    anchor = await world.store.ledger_anchor()
    await world.call(run.token, "t__write", {"text": "b"})
    await world.new_run()  # a run made after the anchor is not its concern
    assert await world.store.check_anchor(anchor) is None
    assert (await world.store.verify_ledger()).ok


async def test_an_anchor_names_a_run_deleted_whole(world: World) -> None:
    run = await world.new_run()
    await world.call(run.token, "t__write", {"text": "gone"})
    kept = await world.new_run()
    anchor = await world.store.ledger_anchor()
    world.backend._execute(
        *((f"DELETE FROM {table} WHERE run_id = ?", (run.run_id,)) for table in RUN_TABLES),
        ("DELETE FROM runs WHERE run_id = ?", (run.run_id,)),
    )
    assert (await world.store.verify_ledger()).ok  # the rest of the store is consistent
    bad = await world.store.check_anchor(anchor)
    assert bad is not None and (bad.run_id, bad.code) == (run.run_id, "run_deleted")
    assert kept.run_id in anchor["runs"]


async def test_an_anchor_names_a_rollback_to_an_older_genuinely_macd_head(world: World) -> None:
    run = await world.new_run()
    await world.call(run.token, "t__write", {"text": "first"})
    old_events = world.backend.events(run.run_id)
    old_run = world.backend._execute(
        ("SELECT head_seq, head_hash, head_mac FROM runs WHERE run_id = ?", (run.run_id,))
    )[0]
    await world.call(run.token, "t__write", {"text": "second"})
    anchor = await world.store.ledger_anchor()
    # Restore the older chain and head (a copy of the database from before the second write).
    newer = [e["seq"] for e in world.backend.events(run.run_id) if e["seq"] > old_events[-1]["seq"]]
    world.backend.delete_events(run.run_id, *newer)
    world.backend._execute(
        (
            "UPDATE runs SET head_seq = ?, head_hash = ?, head_mac = ? WHERE run_id = ?",
            (old_run["head_seq"], old_run["head_hash"], old_run["head_mac"], run.run_id),
        )
    )
    chain = await world.store.verify_ledger()
    assert chain.first_bad is None or chain.first_bad.code != "head_mac_invalid"  # the old head's MAC is genuine
    bad = await world.store.check_anchor(anchor)
    assert bad is not None and (bad.run_id, bad.code) == (run.run_id, "head_rolled_back")


async def test_an_anchor_that_was_edited_or_is_of_another_tenant_is_refused(world: World) -> None:
    run = await world.new_run()
    anchor = await world.store.ledger_anchor()
    forged = anchor | {"runs": {**anchor["runs"], run.run_id: [99, "0" * 64]}}
    bad = await world.store.check_anchor(forged)
    assert bad is not None and bad.code == "anchor_invalid"
    bad = await world.store.check_anchor(anchor, tenant="another")
    assert bad is not None and bad.code == "anchor_invalid"
    tenant_anchor = await world.store.ledger_anchor(TENANT)
    assert await world.store.check_anchor(tenant_anchor, tenant=TENANT) is None


async def test_verify_catches_a_runs_spent_counters_reset(world: World) -> None:
    run = await world.new_run()
    await world.call(run.token, "t__write", {"text": "paid for"})
    await world.store.report_usage(OPS, run.run_id, kind="model", amount=7, note=None, ref=None)
    assert (await world.store.verify_ledger()).ok
    for column in ("spend_spent", "writes_spent", "tool_calls_spent"):
        before = world.backend._execute((f"SELECT {column} AS v FROM runs WHERE run_id = ?", (run.run_id,)))[0]["v"]
        world.backend.set_row("runs", "run_id", run.run_id, **{column: 0})
        assert _bad(await world.store.verify_ledger()) == (run.run_id, "run_row_edited"), column
        world.backend.set_row("runs", "run_id", run.run_id, **{column: before})
    assert (await world.store.verify_ledger()).ok


async def test_verify_catches_an_epoch_wound_back_to_revive_a_superseded_token(world: World) -> None:
    run = await world.new_run()
    await world.takeover(run)
    world.backend.set_row("runs", "run_id", run.run_id, epoch=1)
    assert _bad(await world.store.verify_ledger()) == (run.run_id, "run_row_edited")


# -- the run row's counters: exactly what the chain accounts for --------------------------------
def _counters(world: World, run_id: str) -> dict[str, int]:
    columns = ("spend_spent", "tool_calls_spent", "writes_spent", "epoch")
    columns += ("spend_reserved", "tool_calls_reserved", "writes_reserved")
    row = world.backend._execute((f"SELECT {', '.join(columns)} FROM runs WHERE run_id = ?", (run_id,)))[0]
    return {c: row[c] for c in columns}


async def _ok(world: World) -> None:
    report = await world.store.verify_ledger()
    assert (report.ok, report.first_bad) == (True, None)


@pytest.mark.parametrize(
    "column",
    ["spend_spent", "tool_calls_spent", "writes_spent", "epoch", "spend_reserved", "tool_calls_reserved"],
)
async def test_verify_catches_a_runs_counter_edited_upward(world: World, column: str) -> None:
    # Raised spent starves the run (budget_exhausted), a raised epoch kills the live token, a raised
    # reservation holds budget nothing uses: each gives the run less than its contract says.
    run = await world.new_run()
    await world.call(run.token, "t__paid", {"text": "paid for"})
    await _ok(world)
    world.backend.set_row("runs", "run_id", run.run_id, **{column: _counters(world, run.run_id)[column] + 1})
    assert _bad(await world.store.verify_ledger()) == (run.run_id, "run_row_edited")


async def test_verify_catches_a_reservation_released_while_a_write_is_in_flight(world: World) -> None:
    run = await world.new_run()
    world.tools.modes["paid"] = "block"
    call = world.spawn(world.call(run.token, "t__paid", {"text": "in flight"}))
    await world.tools.wait_for_effects(1)
    await _ok(world)
    held = _counters(world, run.run_id)
    world.backend.set_row("runs", "run_id", run.run_id, spend_reserved=0, writes_reserved=0)
    assert _bad(await world.store.verify_ledger()) == (run.run_id, "run_row_edited")
    world.backend.set_row("runs", "run_id", run.run_id, spend_reserved=held["spend_reserved"], writes_reserved=1)
    world.tools.release.set()
    await world.settled(call)


async def test_counters_verify_through_flights_failures_unknowns_children_successors_purges_and_restores(
    world: World,
) -> None:
    run = await world.new_run()
    world.tools.actual_spend["paid"] = 7  # below the estimate: the rest goes back
    await world.call(run.token, "t__paid", {"text": "cheap"})
    for mode in ("failed", "not_sent"):
        world.tools.modes["write"] = mode
        await world.call(run.token, "t__write", {"text": mode})
    world.tools.modes["write"] = "crash"
    lost = await world.call(run.token, "t__write", {"text": "lost"})
    world.tools.modes["write"] = "ok"
    await world.store.report_usage(OPS, run.run_id, kind="model", amount=13, note=None, ref=None)
    await _ok(world)
    # A write and a read in flight at once: the write's reservation is chained, the read's only in its row.
    world.tools.modes["paid"] = world.tools.modes["read"] = "block"
    flying = [world.spawn(world.call(run.token, "t__paid", {"text": "flying"}))]
    await world.tools.wait_for_effects(2)
    flying.append(world.spawn(world.call(run.token, "t__read", {"q": "flying"})))
    await world.tools.wait_for_effects(3)
    await _ok(world)
    world.tools.release.set()
    for task in flying:
        await world.settled(task)
    world.tools.release.clear()
    world.tools.modes["paid"] = world.tools.modes["read"] = "ok"
    # The unknown write reconciled; a child carved, used and ended; another left live.
    assert lost.structured is not None
    await world.store.settle(lost.structured["error"]["action_id"], Settlement(SettleKind.SUCCEEDED, reason="found"))
    child = await world.store.create_child(OPS, run.run_id, parse_contract(CHILD))
    grant = await world.store.acquire_lease(OPS, child.run_id, "child-worker", takeover=False)
    await world.call(grant.token, "t__paid", {"text": "by the child"})
    await world.store.cancel(OPS, child.run_id, "done", hard=False)
    live = await world.store.create_child(OPS, run.run_id, parse_contract(CHILD))
    await _ok(world)
    # A takeover, a purge, a restore with a write in flight, a hard cancel, a successor.
    token = await world.takeover(run)
    world.tools.modes["write"] = "block"
    stuck = world.spawn(world.call(token, "t__write", {"text": "when the backup was taken"}))
    await world.tools.wait_for_effects(5)
    world.clock.advance(60)
    await world.store.purge_bodies(PurgeScope(tenant=TENANT), by="ops", reason="retention")
    await world.store.mark_restored(by="ops")
    await _ok(world)
    await world.store.cancel(OPS, run.run_id, "stop", hard=True)
    world.tools.release.set()
    await world.settled(stuck)
    await world.store.create_successor(OPS, run.run_id, reason="carry on", extend_by=None)
    await _ok(world)
    assert (await world.run(live.run_id)).status.terminal  # the parent's cancel reached it
    counters = _counters(world, run.run_id)
    assert counters["tool_calls_spent"] > 0 and counters["spend_spent"] > 0 and counters["epoch"] == 3


# -- version 2: an action row's reason and times are the chain's (ledger_bundle.py's rule) ----------
def _named(report: object) -> tuple[str, str, str | None]:
    bad = getattr(report, "first_bad", None)
    assert bad is not None, "verify found nothing wrong"
    return bad.run_id, bad.code, bad.field


async def _action_of(world: World, run_id: str, tool: str) -> str:
    return next(a.action_id for a in reversed(await world.actions(run_id)) if a.tool == tool)


@pytest.mark.parametrize(
    ("tool", "column", "value"),
    [
        ("t__denied", "reason", "nothing was refused here"),  # a refusal's reason
        ("t__write", "reason", "someone explains it away"),  # a settle's (null) reason
        ("t__write", "created_at", 1_700_000_000.0),
        ("t__write", "settled_at", 1_700_000_000.0),
        ("t__write", "settled_at", None),
        ("t__read", "created_at", 1_700_000_000.0),  # a read's one entry: its admitted_at
        ("t__denied", "settled_at", 1_700_000_000.0),
    ],
)
async def test_verify_names_an_edited_reason_or_time_of_a_version_2_action(
    world: World, tool: str, column: str, value: object
) -> None:
    run = await world.new_run()
    await world.call(run.token, tool, {"q": "x"} if tool == "t__read" else {"text": "x"} if tool != "t__denied" else {})
    action_id = await _action_of(world, run.run_id, tool)
    await _ok(world)
    world.backend.set_row("actions", "action_id", action_id, **{column: value})
    assert _named(await world.store.verify_ledger()) == (run.run_id, "action_row_edited", column)


async def test_verify_names_an_edited_reason_or_time_after_a_reconcile_a_purge_and_a_restore(world: World) -> None:
    run = await world.new_run()
    world.tools.modes["write"] = "crash"
    lost = await world.call(run.token, "t__write", {"text": "lost"})
    world.tools.modes["write"] = "ok"
    await world.call(run.token, "t__write", {"text": "kept"})
    world.clock.advance(60)
    await world.store.purge_bodies(PurgeScope(tenant=TENANT), by="ops", reason="retention")
    await world.store.mark_restored(by="ops")
    assert lost.structured is not None
    action_id = lost.structured["error"]["action_id"]
    await world.store.settle(action_id, Settlement(SettleKind.SUCCEEDED, reason="found"))
    await _ok(world)
    for column, value in (("reason", "not found"), ("settled_at", world.clock.now() + 1)):
        before = world.backend._execute((f"SELECT {column} AS v FROM actions WHERE action_id = ?", (action_id,)))[0]
        world.backend.set_row("actions", "action_id", action_id, **{column: value})
        assert _named(await world.store.verify_ledger()) == (run.run_id, "action_row_edited", column)
        world.backend.set_row("actions", "action_id", action_id, **{column: before["v"]})
    await _ok(world)
