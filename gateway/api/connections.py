"""The operator API for a run's connected clients: the OAuth grants of MCP authorization
(gateway/oauth/), each a client a person let act for the run through the lease the gateway holds.

    GET  /api/runs/{id}/connections                   `{"items": [...]}`, newest first (`runs.read`)
    POST /api/runs/{id}/connections/{grant_id}/revoke {reason}: disconnect one (`runs.control`)

A connection is `active` while it can act for the run (not revoked, the run not finished, its
lease the run's current one and not revoked), `ended` when it can no more without anyone revoking
it (`reason`: `run_finished`, `lease_taken_over`, `key_revoked`; `message` says it in words), or
`revoked` (`reason`: why, as given; `revoked_by`: who). Revoking ends the client's tokens at once
and frees the run's lease when the grant still held it, so another worker may acquire it without
a takeover. Revoking a revoked connection changes nothing and answers it as it stands. Another
tenant's run or grant, and another run's grant, are 404.
"""

from __future__ import annotations

import logging
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from gateway.api.bodies import MAX_LISTED, DisconnectBody
from gateway.api.routes import endpoint, query_limit, read_model
from gateway.clock import isoformat
from gateway.service import Gateway
from gateway.store.records import OAuthGrant, Principal, RunRecord
from gateway.store.sql.oauth import ended_reason

log = logging.getLogger("warrant.api")


def connection_view(grant: OAuthGrant, run: RunRecord, now: float) -> dict[str, Any]:
    """One grant as the API shows it, with its status against the run as it stands now."""
    status, reason, message = "active", None, None
    if grant.revoked_at is not None:
        status, reason = "revoked", grant.revoked_reason
    else:
        ended = ended_reason(run, grant, now)
        if ended is not None:
            status, (reason, message) = "ended", ended
    return {
        "grant_id": grant.grant_id,
        "run_id": grant.run_id,
        "client_id": grant.client_id,
        "client_name": grant.client_name,
        "granted_by": grant.granted_by,
        "epoch": grant.epoch,
        "created_at": isoformat(grant.created_at),
        "refreshed_at": isoformat(grant.refreshed_at),
        "status": status,
        "reason": reason,
        "message": message,
        "revoked_at": isoformat(grant.revoked_at),
        "revoked_reason": grant.revoked_reason,
        "revoked_by": grant.revoked_by,
    }


@endpoint("runs.read")
async def list_connections(request: Request, principal: Principal, gateway: Gateway) -> Response:
    run_id = request.path_params["run_id"]
    limit = query_limit(request, 100, MAX_LISTED)
    run = await gateway.store.get_run(principal.tenant, run_id)
    grants = await gateway.store.list_oauth_grants(principal.tenant, run_id, limit=limit)
    now = gateway.clock.now()
    return JSONResponse({"items": [connection_view(g, run, now) for g in grants]})


@endpoint("runs.control")
async def revoke_connection(request: Request, principal: Principal, gateway: Gateway) -> Response:
    body = await read_model(request, DisconnectBody)
    run_id, grant_id = request.path_params["run_id"], request.path_params["grant_id"]
    await gateway.store.get_run(principal.tenant, run_id)  # 404 first for another tenant's run
    grant = await gateway.store.revoke_oauth_grant(
        grant_id, reason=body.reason.strip(), by=principal.name, tenant=principal.tenant, run_id=run_id
    )
    log.info("connection %s (%s) of run %s revoked by %s", grant.grant_id, grant.client_id, run_id, principal.name)
    run = await gateway.store.get_run(principal.tenant, run_id)
    return JSONResponse(connection_view(grant, run, gateway.clock.now()))


routes = [
    Route("/api/runs/{run_id}/connections", list_connections, methods=["GET"]),
    Route("/api/runs/{run_id}/connections/{grant_id}/revoke", revoke_connection, methods=["POST"]),
]
