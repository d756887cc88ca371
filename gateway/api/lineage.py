"""The operator API for revisions, successors and delegated sub-runs (docs/progress.md).

    POST /api/runs/{id}/revise     {spec_version, patch, reason?}: the contract, merge-patched
    POST /api/runs/{id}/successor  {reason, extend_by?}: 201, the terminal run's one successor (409
                                   successor_exists naming it on a second request; 422 without a reason)
    POST /api/runs/{id}/children   a contract: 201, a sub-run carved out of the live parent

Revising and succeeding are `runs.control` (operators); a widening revision or an extension of a
successor's deadline also needs `runs.widen` (admins), else 403 `widening_requires_admin` naming
the widening changes. Delegating is `runs.create`.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from gateway.api.bodies import ReviseBody, SuccessorBody
from gateway.api.routes import endpoint, read_json, read_model
from gateway.api.views import run_view
from gateway.domain.contract import parse_contract
from gateway.domain.units import parse_duration
from gateway.errors import InvalidRequest
from gateway.service import Gateway
from gateway.store.records import Principal


@endpoint("runs.control")
async def revise_run(request: Request, principal: Principal, gateway: Gateway) -> Response:
    body = await read_model(request, ReviseBody)
    run, changes = await gateway.revise(
        principal, request.path_params["run_id"], spec_version=body.spec_version, patch=body.patch, reason=body.reason
    )
    return JSONResponse({**run_view(run, gateway.clock.now()), "changes": [c.as_dict() for c in changes]})


@endpoint("runs.control")
async def create_successor(request: Request, principal: Principal, gateway: Gateway) -> Response:
    body = await read_model(request, SuccessorBody)
    extend_by = None
    if body.extend_by is not None:
        try:
            extend_by = parse_duration(body.extend_by)
        except ValueError as exc:
            raise InvalidRequest(
                "extend_by is not a duration", problems=[{"field": "extend_by", "problem": str(exc)}]
            ) from None
    run = await gateway.successor(principal, request.path_params["run_id"], reason=body.reason, extend_by=extend_by)
    return JSONResponse(run_view(run, gateway.clock.now()), status_code=201)


@endpoint("runs.create")
async def create_child(request: Request, principal: Principal, gateway: Gateway) -> Response:
    contract = parse_contract(await read_json(request))
    run = await gateway.create_child(principal, request.path_params["run_id"], contract)
    return JSONResponse(run_view(run, gateway.clock.now()), status_code=201)


routes = [
    Route("/api/runs/{run_id}/revise", revise_run, methods=["POST"]),
    Route("/api/runs/{run_id}/successor", create_successor, methods=["POST"]),
    Route("/api/runs/{run_id}/children", create_child, methods=["POST"]),
]
