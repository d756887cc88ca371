"""Reconciliation: ask each adapter whether an `unknown` action happened, and settle what it proves.

An adapter's lookup answers succeeded (with the destination's receipt), failed, or None for
"cannot tell". Only a proof moves an action out of `unknown`; silence leaves it there.
"""

from __future__ import annotations

import logging

from gateway.adapters.base import CallRequest
from gateway.catalog.catalog import Catalog
from gateway.domain.lifecycle import ActionStatus
from gateway.domain.settlement import Settlement
from gateway.errors import Code, Conflict
from gateway.safeguards import ALL_ON, Safeguards
from gateway.store.ports import ReconcileStore
from gateway.store.records import ActionRecord

log = logging.getLogger("warrant.reconcile")


async def reconcile_run(
    store: ReconcileStore, catalog: Catalog, tenant: str, run_id: str, now: float, *, safeguards: Safeguards = ALL_ON
) -> list[ActionRecord]:
    """Try every `unknown` action of the run once (`now`: epoch seconds); returns the actions it settled.
    `safeguards`: the drill's switches (its `during_resume` failpoint)."""
    settled: list[ActionRecord] = []
    cursor: str | None = None
    while True:
        page = await store.list_actions(tenant, run_id, cursor=cursor, limit=500)
        for action in page.items:
            if action.status is ActionStatus.UNKNOWN:
                done = await reconcile_action(store, catalog, action, now, safeguards=safeguards)
                if done is not None:
                    settled.append(done)
        if page.next_cursor is None:
            return settled
        cursor = page.next_cursor


async def reconcile_action(
    store: ReconcileStore, catalog: Catalog, action: ActionRecord, now: float, *, safeguards: Safeguards = ALL_ON
) -> ActionRecord | None:
    spec = catalog.get(action.tool)
    if spec is None:
        return None
    arguments = await store.get_blob(action.payload_sha256)
    request = CallRequest(
        tool=spec.tool,
        arguments=arguments if isinstance(arguments, dict) else {},
        run_id=action.run_id,
        action_id=action.action_id,
        idempotency_key=action.idempotency_key,
        timeout=spec.timeout,
    )
    try:
        outcome = await spec.adapter.lookup(request, action.created_at, now)
    except Exception:
        log.exception("lookup of %s through %s failed", action.action_id, spec.adapter.name)
        return None
    if outcome is None:
        return None
    # Only a proof moves an action out of `unknown` (gateway/domain/settlement.py).
    settlement = Settlement.reconciled(
        outcome.kind,
        code=outcome.code,
        receipt=outcome.receipt,
        content=outcome.content,
        structured=outcome.structured,
        actual_spend=outcome.spend(catalog.currency),
        estimate_spend=spec.cost_spend,
        max_spend=spec.cost_max,
    )
    if settlement is None:
        return None
    safeguards.hit("during_resume", action.tool)  # proved, not yet recorded
    try:
        result = await store.settle(action.action_id, settlement)
    except Conflict as exc:
        if exc.code != Code.INVALID_TRANSITION:
            raise
        # Another reconciler (the watchdog, a resume, another replica) settled it since we read
        # it: its record stands, and this pass has nothing to add (nor a reason to fail).
        log.info("%s was settled by another reconciler meanwhile: %s", action.action_id, exc.message)
        return None
    return result.action
