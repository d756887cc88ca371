"""Operation ids (gate step 4): an identical write is replayed, never repeated by accident."""

from __future__ import annotations

import pytest

from gateway.domain import ActionStatus, idempotency_key
from gateway.gate import META_ACTION_ID, META_REPLAYED
from tests.harness import TENANT, World, code_of, op, text_of

pytestmark = pytest.mark.anyio


async def test_an_identical_write_is_replayed_from_the_record_without_a_second_side_effect(world: World) -> None:
    run = await world.new_run()
    first = await world.call(run.token, "t__write", {"text": "hello"})
    action_id = first.meta[META_ACTION_ID]

    replay = await world.call(run.token, "t__write", {"text": "hello"})
    assert code_of(replay) is None
    assert text_of(replay).startswith(f"not executed again: identical to action {action_id}")
    assert replay.meta[META_REPLAYED] is True and replay.meta[META_ACTION_ID] == action_id
    # No output schema: the replay says so in structuredContent too, carrying the recorded result.
    assert first.structured is not None
    assert replay.structured == {
        **first.structured,
        "replayed": True,
        "action_id": action_id,
        "not_executed_again": replay.content[0]["text"],
    }
    assert world.tools.effects == [("write", {"text": "hello"})]
    assert (await world.run(run.run_id)).spent["writes"] == 1


async def test_the_same_payload_written_in_another_key_order_or_number_form_is_the_same_write(world: World) -> None:
    run = await world.new_run()
    await world.call(run.token, "t__write", {"text": "x", "copies": 1})
    again = await world.call(run.token, "t__write", {"copies": 1.0, "text": "x"})
    assert again.meta[META_REPLAYED] is True
    assert len(world.tools.effects) == 1


async def test_reads_are_never_replayed(world: World) -> None:
    run = await world.new_run()
    await world.call(run.token, "t__read", {"q": "x"})
    second = await world.call(run.token, "t__read", {"q": "x"})
    assert second.meta[META_REPLAYED] is False
    assert len(world.tools.effects) == 2


async def test_a_changed_payload_under_the_same_client_operation_id_is_an_idempotency_conflict(world: World) -> None:
    run = await world.new_run()
    first = await world.call(run.token, "t__write", {"text": "v1"}, op("invoice-42"))
    assert code_of(first) is None

    changed = await world.call(run.token, "t__write", {"text": "v2"}, op("invoice-42"))
    assert code_of(changed) == "idempotency_conflict"
    assert changed.structured is not None
    assert changed.structured["error"]["action_id"] == first.meta[META_ACTION_ID]
    same = await world.call(run.token, "t__write", {"text": "v1"}, op("invoice-42"))
    assert same.meta[META_REPLAYED] is True
    assert world.tools.effects == [("write", {"text": "v1"})]


async def test_a_fresh_client_operation_id_is_a_deliberate_second_write(world: World) -> None:
    run = await world.new_run()
    await world.call(run.token, "t__write", {"text": "ping"}, op("first"))
    second = await world.call(run.token, "t__write", {"text": "ping"}, op("second"))
    assert second.meta[META_REPLAYED] is False
    assert len(world.tools.effects) == 2


async def test_repeat_performs_a_deliberate_repeat_once(world: World) -> None:
    run = await world.new_run()
    original = await world.call(run.token, "t__write", {"text": "send"})
    original_id = original.meta[META_ACTION_ID]

    repeated = await world.gate.repeat(run.token, original_id, "the customer asked for a second copy")
    assert code_of(repeated) is None and repeated.meta[META_REPLAYED] is False
    repeat_action = await world.action(repeated)
    assert (repeat_action.repeat_of, repeat_action.status) == (original_id, ActionStatus.SUCCEEDED)
    assert repeat_action.operation_id != (await world.action(original_id)).operation_id

    # The same repeat asked again is the same operation: replayed, not a third side effect.
    again = await world.gate.repeat(run.token, original_id, "the customer asked for a second copy")
    assert again.meta[META_REPLAYED] is True and again.meta[META_ACTION_ID] == repeat_action.action_id
    assert text_of(again).startswith(f"not executed again: identical to action {repeat_action.action_id}")
    assert world.tools.effects == [("write", {"text": "send"}), ("write", {"text": "send"})]


async def test_repeat_needs_a_reason_and_a_succeeded_write_of_the_lineage(world: World) -> None:
    run = await world.new_run()
    read = await world.call(run.token, "t__read", {"q": "x"})
    write = await world.call(run.token, "t__write", {"text": "x"})
    assert code_of(await world.gate.repeat(run.token, write.meta[META_ACTION_ID], "  ")) == "invalid_arguments"
    assert code_of(await world.gate.repeat(run.token, read.meta[META_ACTION_ID], "again")) == "invalid_arguments"
    assert code_of(await world.gate.repeat(run.token, "act_nonexistent", "again")) == "invalid_arguments"
    other = await world.new_run()
    assert code_of(await world.gate.repeat(other.token, write.meta[META_ACTION_ID], "again")) == "invalid_arguments"
    world.tools.modes["write"] = "crash"
    unknown = await world.call(run.token, "t__write", {"text": "y"})
    assert code_of(await world.gate.repeat(run.token, unknown.meta[META_ACTION_ID], "again")) == "outcome_unknown"
    assert len(world.tools.effects) == 2


async def test_a_write_that_was_not_sent_may_be_retried_under_the_same_operation(world: World) -> None:
    run = await world.new_run()
    world.tools.modes["write"] = "not_sent"
    failed = await world.call(run.token, "t__write", {"text": "x"})
    assert failed.is_error and (await world.action(failed)).status is ActionStatus.FAILED
    world.tools.modes["write"] = "ok"
    retried = await world.call(run.token, "t__write", {"text": "x"})
    assert code_of(retried) is None and retried.meta[META_REPLAYED] is False
    assert world.tools.effects == [("write", {"text": "x"})]


async def test_the_destination_sees_a_minted_idempotency_key_never_the_operation_id(world: World) -> None:
    run = await world.new_run()
    result = await world.call(run.token, "t__write", {"text": "x"}, op("client-op-1"))
    action = await world.action(result)
    assert action.operation_id == "client-op-1"
    assert action.idempotency_key == idempotency_key(TENANT, run.lineage_id, "client-op-1")
    assert action.idempotency_key is not None and action.idempotency_key.startswith("wk_")
    assert world.tools.keys == [action.idempotency_key]
