"""Through the gate and reconciliation: an HTTP write whose outcome is unknown is settled by the
adapter's lookup, with the gateway's clock deciding whether a 404 counts."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass

import anyio
import pytest
import respx

from gateway.catalog import Catalog
from gateway.clock import ManualClock
from gateway.domain import ActionStatus, parse_contract
from gateway.gate import Gate, reconcile_action, reconcile_run
from gateway.policy import ToolPolicy
from gateway.store import Store
from tests.adapters.http_world import mocked_crm
from tests.harness import OPS, TENANT, WAIT, Backend, contract

pytestmark = pytest.mark.anyio


@dataclass
class Gateway:
    store: Store
    catalog: Catalog
    gate: Gate
    clock: ManualClock
    router: respx.MockRouter
    run_id: str
    token: str


@pytest.fixture
async def crm(backend: Backend, clock: ManualClock, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Gateway]:
    store = backend.store(clock, process_id="test-gateway")
    await store.open()
    with mocked_crm(monkeypatch) as mocked:
        adapter = mocked.adapter()
        catalog = Catalog([adapter], {"crm__create_contact": ToolPolicy(effect="write")})
        run = await store.create_run(OPS, parse_contract(contract(authority={"allow": ["crm__*"]})))
        grant = await store.acquire_lease(OPS, run.run_id, "worker-1", takeover=False)
        gate = Gate(store, catalog, clock)
        try:
            yield Gateway(store, catalog, gate, clock, mocked.router, run.run_id, grant.token)
        finally:
            await adapter.close()
            await store.close()


async def _unknown_write(crm: Gateway) -> str:
    crm.router.post("/contacts").respond(500)
    with anyio.fail_after(WAIT):
        result = await crm.gate.call(crm.token, "crm__create_contact", {"email": "a@acme.example"})
    assert result.code == "outcome_unknown"
    actions = (await crm.store.list_actions(TENANT, crm.run_id, limit=10)).items
    assert [a.status for a in actions] == [ActionStatus.UNKNOWN]
    return actions[0].action_id


async def test_a_404_one_timeout_after_dispatch_settles_an_unknown_write_as_failed(crm: Gateway) -> None:
    action_id = await _unknown_write(crm)
    crm.router.get(url__regex=r"/contacts/by-key/wk_.+").respond(404)
    assert await reconcile_run(crm.store, crm.catalog, TENANT, crm.run_id, crm.clock.now()) == []
    crm.clock.advance(11)
    settled = await reconcile_run(crm.store, crm.catalog, TENANT, crm.run_id, crm.clock.now())
    assert [(a.action_id, a.status) for a in settled] == [(action_id, ActionStatus.FAILED)]


async def test_a_lookup_naming_the_object_settles_an_unknown_write_as_succeeded(crm: Gateway) -> None:
    action_id = await _unknown_write(crm)
    crm.router.get(url__regex=r"/contacts/by-key/wk_.+").respond(200, json={"id": "c-1"})
    settled = await reconcile_run(crm.store, crm.catalog, TENANT, crm.run_id, crm.clock.now())
    assert [(a.action_id, a.status) for a in settled] == [(action_id, ActionStatus.SUCCEEDED)]
    assert settled[0].receipt is not None and settled[0].receipt["id"] == "c-1"


async def test_an_action_another_reconciler_settled_first_is_left_as_it_was_recorded(crm: Gateway) -> None:
    # Resume and the watchdog both list the run's unknown actions, then look each up: the slower of
    # the two finds it settled already. That is no failure of the resume; the first record stands.
    action_id = await _unknown_write(crm)
    stale = await crm.store.get_action(TENANT, action_id)
    crm.router.get(url__regex=r"/contacts/by-key/wk_.+").respond(200, json={"id": "c-1"})
    settled = await reconcile_run(crm.store, crm.catalog, TENANT, crm.run_id, crm.clock.now())
    assert [a.status for a in settled] == [ActionStatus.SUCCEEDED]
    assert await reconcile_action(crm.store, crm.catalog, stale, crm.clock.now()) is None
    again = await crm.store.get_action(TENANT, action_id)
    assert again.status is ActionStatus.SUCCEEDED and again.receipt == settled[0].receipt
