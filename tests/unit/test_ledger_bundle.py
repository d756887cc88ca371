"""Evidence bundles: exported from a real run (reads, writes, an approval, a refusal, an unknown
outcome), verified offline, and every kind of tampering named by its code and first bad item."""

from __future__ import annotations

import json
from typing import Any

import pytest

from gateway.api import bundle_lines
from gateway.canonical import canonical_json, sha256_hex
from gateway.domain import PurgeScope
from gateway.domain.tasks import TASK_ID_META, TaskStatus, parse_plan
from gateway.store.bundle import BundleReport, line_kind, verify_bundle
from gateway.store.chain import GENESIS, entry_hash
from tests.harness import LEDGER_KEY, TENANT, World, code_of, edited_body

pytestmark = pytest.mark.anyio

Bundle = list[dict[str, Any]]


async def export(world: World, run_id: str) -> list[str]:
    snapshot = await world.store.export_snapshot(TENANT, run_id)
    text = "".join([chunk async for chunk in bundle_lines(world.store, snapshot, world.clock.now())])
    return text.splitlines()


async def a_full_run(world: World) -> list[str]:
    """A run with reads, writes, an approved write, a refusal and an unknown outcome, exported."""
    run = await world.new_run()
    assert code_of(await world.call(run.token, "t__read", {"q": "first"})) is None
    assert code_of(await world.call(run.token, "t__write", {"text": "hello"})) is None
    assert code_of(await world.call(run.token, "t__paid", {"text": "invoice"})) is None
    asked = await world.call(run.token, "t__approve", {"text": "big"})
    assert code_of(asked) == "approval_required"
    await world.decide(asked)
    assert code_of(await world.call(run.token, "t__approve", {"text": "big"})) is None
    assert code_of(await world.call(run.token, "t__denied", {})) == "forbidden"
    world.tools.modes["write"] = "crash"
    assert code_of(await world.call(run.token, "t__write", {"text": "lost"})) == "outcome_unknown"
    assert code_of(await world.call(run.token, "t__read", {"q": "second"})) is None
    return await export(world, run.run_id)


def parsed(lines: list[str]) -> Bundle:
    return [json.loads(line) for line in lines]


def written(bundle: Bundle) -> list[str]:
    return [json.dumps(obj, ensure_ascii=False, separators=(",", ":")) for obj in bundle]


def verify(bundle: Bundle | list[str], key: bytes = LEDGER_KEY) -> BundleReport:
    lines = written(bundle) if bundle and isinstance(bundle[0], dict) else bundle
    return verify_bundle(lines, key)  # type: ignore[arg-type]


def first_bad(bundle: Bundle, key: bytes = LEDGER_KEY) -> tuple[str, str, Any, str | None]:
    report = verify(bundle, key)
    assert report.first_bad is not None, "tampering went unnoticed"
    return report.first_bad.code, report.first_bad.item, report.first_bad.ref, report.first_bad.field


def where(bundle: Bundle, kind: str, **match: Any) -> int:
    """The index of the first line of `kind` whose fields (or event data) match."""
    for i, obj in enumerate(bundle):
        if obj["kind"] != kind:
            continue
        fields = {**obj, **json.loads(obj["body"])["data"]} if kind == "event" else obj
        if all(fields.get(k) == v for k, v in match.items()):
            return i
    raise AssertionError(f"no {kind} line with {match}")


def rechained(bundle: Bundle) -> Bundle:
    """Every link and hash recomputed and the head moved, as someone without the key would."""
    prev = GENESIS
    for obj in bundle:
        if obj["kind"] == "event":
            obj["prev_hash"], obj["hash"] = prev, entry_hash(prev, obj["body"])
            prev = obj["hash"]
    bundle[0]["head"]["hash"] = prev
    return bundle


async def test_an_exported_bundle_verifies_offline(world: World) -> None:
    lines = await a_full_run(world)
    kinds = [line_kind(line) or "" for line in lines]
    order = ["bundle", "event", "action", "blob", "end"]
    assert kinds[0] == "bundle" and kinds[-1] == "end"
    assert kinds == sorted(kinds, key=order.index)
    report = verify(lines)
    assert report.first_bad is None and report.ok
    bundle = parsed(lines)
    header = bundle[0]
    assert report.head_seq == header["head"]["seq"] == report.events == kinds.count("event")
    actions = [obj for obj in bundle if obj["kind"] == "action"]
    assert report.actions == len(actions)
    assert {(a["tool"], a["status"]) for a in actions} == {
        ("t__read", "succeeded"),
        ("t__write", "succeeded"),
        ("t__paid", "succeeded"),
        ("t__approve", "succeeded"),
        ("t__denied", "rejected"),
        ("t__write", "unknown"),
    }
    # Every body the chain names: the contract, each stored payload (not the refused one's), each result.
    blobs = {obj["sha256"] for obj in bundle if obj["kind"] == "blob"}
    assert header["run"]["contract_sha256"] in blobs
    assert {a["payload_sha256"] for a in actions if a["status"] != "rejected"} <= blobs
    assert {a["result_sha256"] for a in actions if a["result_sha256"]} <= blobs
    assert report.blobs == len(blobs) and report.purged == 0


async def test_the_bundle_holds_the_exact_stored_entries(world: World) -> None:
    bundle = parsed(await a_full_run(world))
    stored = world.backend.events(bundle[0]["run"]["run_id"])
    events = [obj for obj in bundle if obj["kind"] == "event"]
    assert [(e["seq"], e["body"], e["prev_hash"], e["hash"]) for e in events] == [
        (row["seq"], row["body"], row["prev_hash"], row["hash"]) for row in stored
    ]


async def test_an_edited_event_fails_naming_its_seq(world: World) -> None:
    bundle = parsed(await a_full_run(world))
    i = where(bundle, "event", type="action_settled", status="unknown")
    bundle[i]["body"] = edited_body(bundle[i]["body"], status="failed")
    assert first_bad(bundle) == ("entry_edited", "event", bundle[i]["seq"], None)


async def test_a_deleted_event_fails_naming_its_position(world: World) -> None:
    bundle = parsed(await a_full_run(world))
    i = where(bundle, "event", type="action_rejected")
    seq = bundle.pop(i)["seq"]
    assert first_bad(bundle) == ("entry_missing", "event", seq, None)


async def test_reordered_events_fail_naming_the_first_moved_position(world: World) -> None:
    bundle = parsed(await a_full_run(world))
    i = where(bundle, "event", seq=3)
    bundle[i], bundle[i + 1] = bundle[i + 1], bundle[i]
    assert first_bad(bundle) == ("entry_missing", "event", 3, None)


async def test_a_cut_off_tail_fails_naming_the_first_missing_entry(world: World) -> None:
    bundle = parsed(await a_full_run(world))
    head = bundle[0]["head"]["seq"]
    cut = [obj for obj in bundle if not (obj["kind"] == "event" and obj["seq"] > head - 2)]
    assert first_bad(cut) == ("tail_missing", "event", head - 1, None)


async def test_a_chain_recomputed_after_an_edit_fails_on_the_heads_mac(world: World) -> None:
    bundle = parsed(await a_full_run(world))
    i = where(bundle, "event", type="action_rejected")
    bundle[i]["body"] = edited_body(bundle[i]["body"], code="approval_required")
    head = bundle[0]["head"]["seq"]
    assert first_bad(rechained(bundle)) == ("head_mac_invalid", "head", head, None)


async def test_a_wrong_key_fails_on_the_heads_mac(world: World) -> None:
    bundle = parsed(await a_full_run(world))
    assert first_bad(bundle, key=b"another ledger key") == ("head_mac_invalid", "head", bundle[0]["head"]["seq"], None)


@pytest.mark.parametrize(
    ("match", "field", "value"),
    [
        ({"tool": "t__write", "status": "succeeded"}, "status", "failed"),
        ({"tool": "t__paid"}, "payload_sha256", "0" * 64),
        ({"tool": "t__paid"}, "actual_spend", 0),
        ({"tool": "t__denied"}, "code", "budget_exhausted"),
        ({"tool": "t__read", "status": "succeeded"}, "result_sha256", "f" * 64),
        ({"tool": "t__write", "status": "succeeded"}, "idempotency_key", "wk_" + "a" * 52),
        ({"tool": "t__paid"}, "reserved", {"spend": 0, "tool_calls": 1, "writes": 1}),
        ({"tool": "t__approve"}, "approval_id", None),
        ({"tool": "t__write", "status": "unknown"}, "tenant", "globex"),
        ({"tool": "t__write", "status": "succeeded"}, "task_id", "a-task"),  # made for no task
        ({"tool": "t__read", "status": "succeeded"}, "task_id", "a-task"),
        ({"tool": "t__denied"}, "task_id", "a-task"),
    ],
)
async def test_an_edited_action_row_fails_naming_the_action_and_field(
    world: World, match: dict[str, Any], field: str, value: Any
) -> None:
    bundle = parsed(await a_full_run(world))
    i = where(bundle, "action", **match)
    bundle[i][field] = value
    assert first_bad(bundle) == ("action_mismatch", "action", bundle[i]["action_id"], field)


async def test_a_dropped_action_row_fails_naming_the_action(world: World) -> None:
    bundle = parsed(await a_full_run(world))
    dropped = bundle.pop(where(bundle, "action", tool="t__approve"))
    assert first_bad(bundle)[:3] == ("action_missing", "action", dropped["action_id"])


async def test_an_edited_blob_fails_naming_its_sha256(world: World) -> None:
    bundle = parsed(await a_full_run(world))
    i = where(bundle, "blob", sha256=bundle[where(bundle, "action", tool="t__approve")]["payload_sha256"])
    bundle[i]["body"] = canonical_json({"text": "small"}).decode()
    assert first_bad(bundle) == ("blob_edited", "blob", bundle[i]["sha256"], None)


async def test_a_purged_body_is_listed_as_purged_and_the_bundle_still_verifies(world: World) -> None:
    bundle = parsed(await a_full_run(world))
    run_id = bundle[0]["run"]["run_id"]
    paid = bundle[where(bundle, "action", tool="t__paid")]
    # Listed as purged by hand, with no purge entry in the chain: refused (entry version 2).
    i = where(bundle, "blob", sha256=paid["payload_sha256"])
    bundle[i] = {"kind": "blob", "sha256": bundle[i]["sha256"], "purged": True}
    assert first_bad(bundle)[:3] == ("blob_purge_unrecorded", "blob", paid["payload_sha256"])
    # Purged for real: the purge entry names it.
    world.clock.advance(60)
    scope = PurgeScope(tenant=TENANT, action_id=paid["action_id"])
    await world.store.purge_bodies(scope, by="ops", reason="retention")
    bundle = parsed(await export(world, run_id))
    i = where(bundle, "blob", sha256=paid["payload_sha256"])
    assert bundle[i] == {"kind": "blob", "sha256": paid["payload_sha256"], "purged": True}
    report = verify(bundle)
    assert (report.ok, report.purged) == (True, 2)  # its payload and its result
    del bundle[i]  # a body neither held nor listed as purged
    assert first_bad(bundle)[:2] == ("blob_missing", "blob")


async def test_an_edited_run_header_fails_naming_the_field(world: World) -> None:
    bundle = parsed(await a_full_run(world))
    run_id = bundle[0]["run"]["run_id"]
    bundle[0]["run"]["status"] = "completed"
    assert first_bad(bundle) == ("run_mismatch", "run", run_id, "status")
    bundle = parsed(await export(world, run_id))
    contract = json.loads(bundle[0]["run"]["contract"])
    contract["budgets"]["spend"] = "1000000.00"
    bundle[0]["run"]["contract"] = canonical_json(contract).decode()
    bundle[0]["run"]["contract_sha256"] = sha256_hex(bundle[0]["run"]["contract"].encode())
    assert first_bad(bundle) == ("run_mismatch", "run", run_id, "contract_sha256")


async def test_a_bundle_cut_off_before_its_end_fails(world: World) -> None:
    lines = await a_full_run(world)
    report = verify(lines[:-1])
    assert report.first_bad is not None and report.first_bad.code == "bundle_incomplete"
    first_action = next(i for i, line in enumerate(lines) if json.loads(line)["kind"] == "action")
    report = verify(lines[: first_action + 2])  # cut inside the actions: the end line is missing
    assert report.first_bad is not None and report.first_bad.code in ("action_missing", "bundle_incomplete")
    assert verify_bundle(["not json"], LEDGER_KEY).first_bad.code == "bundle_malformed"  # type: ignore[union-attr]


async def test_a_run_exported_while_a_read_is_in_flight_still_verifies(world: World) -> None:
    run = await world.new_run()
    world.tools.modes["read"] = "block"
    task = world.spawn(world.gate.call(run.token, "t__read", {"q": "slow"}))
    await world.tools.wait_for_effects(1)
    report = verify(await export(world, run.run_id))  # the read's row is admitted, its one entry not written yet
    assert report.ok and report.actions == 1
    world.tools.release.set()
    assert code_of(await world.settled(task)) is None
    assert verify(await export(world, run.run_id)).ok


async def test_the_task_a_call_was_made_for_is_what_the_chain_records(world: World) -> None:
    run = await world.new_run()
    plan = parse_plan([{"id": "a", "title": "A"}, {"id": "b", "title": "B"}], max_tasks=9)
    await world.store.save_plan(run.run_id, epoch=1, worker="worker-1", expected_version=0, plan=plan)
    await world.store.move_task(run.run_id, epoch=1, worker="worker-1", task_id="a", status=TaskStatus.RUNNING)
    assert code_of(await world.call(run.token, "t__write", {"text": "x"}, {TASK_ID_META: "a"})) is None
    assert code_of(await world.call(run.token, "t__read", {"q": "x"}, {TASK_ID_META: "a"})) is None
    bundle = parsed(await export(world, run.run_id))
    assert verify(bundle).first_bad is None
    for tool in ("t__write", "t__read"):
        edited = parsed(written(bundle))
        i = where(edited, "action", tool=tool)
        assert edited[i]["task_id"] == "a"
        edited[i]["task_id"] = "b"
        assert first_bad(edited) == ("action_mismatch", "action", edited[i]["action_id"], "task_id")
