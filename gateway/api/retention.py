"""`POST /api/ledger/purge`: purge settled actions' bodies on request, admin only (`ledger.purge`).

    {run_id?, action_id?, before?, reason?}   at least one of run_id, action_id, before

The same purge as the schedule's (gateway/runtime/retention.py, docs/retention.md), scoped to the key's
tenant and to every filter given: bodies of actions in flight or `unknown`, of pending or approved
approvals, checkpoints and milestone evidence are never taken, nor a body another record still
names. Each run whose bodies went records `bodies_purged` (by the key, with the reason) in its
chain. One request purges at most `BATCHES` batches; `more: true` says to send it again.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from gateway.api.audit import parse_time
from gateway.api.bodies import PurgeBody
from gateway.api.routes import endpoint, read_model
from gateway.domain.retention import PurgeReport, PurgeScope
from gateway.service import Gateway
from gateway.store.records import Principal

BATCHES = 25  # per request: 25 x PURGE_BATCH actions


@endpoint("ledger.purge")
async def purge(request: Request, principal: Principal, gateway: Gateway) -> Response:
    body = await read_model(request, PurgeBody)
    scope = PurgeScope(
        tenant=principal.tenant,
        before=parse_time(body.before) if body.before is not None else None,
        run_id=body.run_id,
        action_id=body.action_id,
    )
    report = PurgeReport()
    for _ in range(BATCHES):
        batch = await gateway.store.purge_bodies(scope, by=principal.name, reason=body.reason or "on request")
        report.add(batch)
        if not batch.more:
            break
    done: dict[str, Any] = {**report.as_dict(), "more": report.more}
    return JSONResponse(done)


routes = [Route("/api/ledger/purge", purge, methods=["POST"])]
