"""The gate caches a token's run; a contract revision under that cache is noticed at admit."""

from __future__ import annotations

from typing import Any

import pytest

from gateway.domain import merge_patch, parse_contract, token_hash
from gateway.errors import Code
from tests.harness import OPS, World, code_of, contract, text_of

pytestmark = pytest.mark.anyio


async def test_a_call_after_the_contract_version_changed_is_decided_again_and_admitted(world: World) -> None:
    run = await world.new_run()
    assert code_of(await world.call(run.token, "t__read", {"q": "a"})) is None  # the gate now caches the run
    # Revised and read through the store, not this gate (another replica's warrant_status): the
    # gate's cached run still says v1.
    revised = parse_contract(merge_patch(contract(), {"spec_version": "v2", "budgets": {"writes": 50}}))
    await world.store.revise(OPS, run.run_id, contract=revised, reason="r", widening=False, base_spec_version="v1")
    await world.store.acknowledge_spec(token_hash(run.token))

    result = await world.call(run.token, "t__read", {"q": "b"})

    assert code_of(result) is None
    last = (await world.actions(run.run_id))[-1]
    assert last.status.value == "succeeded"
    assert len(await world.actions(run.run_id)) == 2


async def test_a_call_after_an_unread_revision_is_refused_spec_version_mismatch(world: World) -> None:
    run = await world.new_run()
    assert code_of(await world.call(run.token, "t__read", {"q": "a"})) is None
    revised = parse_contract(merge_patch(contract(), {"spec_version": "v2"}))
    await world.store.revise(OPS, run.run_id, contract=revised, reason="r", widening=False, base_spec_version="v1")

    assert code_of(await world.call(run.token, "t__read", {"q": "b"})) == "spec_version_mismatch"
    await world.gate.status(run.token)
    assert code_of(await world.call(run.token, "t__read", {"q": "c"})) is None


async def test_a_call_revised_twice_while_decided_is_refused_contract_revised_retryable(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = await world.new_run()
    assert code_of(await world.call(run.token, "t__read", {"q": "a"})) is None
    admit = world.store.admit
    landing = iter(["v2", "v3"])

    async def revised_just_before(intent: Any, facts: Any) -> Any:
        version = next(landing, None)
        if version is not None:  # another replica's revision commits just before this admit
            base = (await world.run(run.run_id)).spec_version
            revised = parse_contract(merge_patch(contract(), {"spec_version": version}))
            await world.store.revise(
                OPS, run.run_id, contract=revised, reason="r", widening=False, base_spec_version=base
            )
            await world.store.acknowledge_spec(token_hash(run.token))
        return await admit(intent, facts)

    monkeypatch.setattr(world.store, "admit", revised_just_before)
    calls = list(world.tools.calls)

    result = await world.call(run.token, "t__read", {"q": "b"})

    assert code_of(result) == Code.CONTRACT_REVISED and result.is_error
    assert result.structured is not None
    error = result.structured["error"]
    assert (error["retryable"], error["spec_version"]) == (True, "v3")
    assert text_of(result).startswith("[contract_revised] not executed")
    assert world.tools.calls == calls
    last = (await world.actions(run.run_id))[-1]
    assert (last.status.value, last.code) == ("rejected", "contract_revised")
    # Retryable: the same call again, with no revision landing, is decided on v3 and admitted.
    assert code_of(await world.call(run.token, "t__read", {"q": "b"})) is None
