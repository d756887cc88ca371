"""The operator API's dead letters (docs/retries.md, docs/decisions/0030-retries.md).

    GET  /api/runs/{id}/dead-letters          the run's dead letters, oldest first   (runs.read)
    POST /api/dead-letters/{id}/retry {reason}    its call again, fresh operation id (actions.resolve)
    POST /api/dead-letters/{id}/resolve {reason}  dealt with otherwise                (actions.resolve)
    POST /api/dead-letters/{id}/drop {reason}     given up                            (actions.resolve)

Another tenant's run or dead letter is 404, as everywhere. A dead letter is decided once: a
second decision is 409 `invalid_transition`. A retry answers the call's result beside the dead
letter; a call the gate refused (a paused run, an approval it now asks for) leaves it open.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from gateway.api.bodies import DeadLetterBody
from gateway.api.routes import endpoint, read_model
from gateway.service import Gateway
from gateway.store.records import Principal
from gateway.store.retry_records import DeadLetterStatus


@endpoint("runs.read")
async def list_dead_letters(request: Request, principal: Principal, gateway: Gateway) -> Response:
    letters = await gateway.store.list_dead_letters(principal.tenant, request.path_params["run_id"])
    return JSONResponse({"items": [d.view() for d in letters], "next_cursor": None})


@endpoint("actions.resolve")
async def retry_dead_letter(request: Request, principal: Principal, gateway: Gateway) -> Response:
    body = await read_model(request, DeadLetterBody)
    letter, result = await gateway.retry_dead_letter(principal, request.path_params["dead_letter_id"], body.reason)
    answer: dict[str, Any] = {
        "is_error": result.is_error,
        "code": result.code,
        "action_id": result.meta.get("warrant/action_id"),
        "structured": result.structured,
    }
    return JSONResponse({"dead_letter": letter.view(), "result": answer})


async def _decide(request: Request, principal: Principal, gateway: Gateway, status: DeadLetterStatus) -> Response:
    body = await read_model(request, DeadLetterBody)
    letter = await gateway.store.decide_dead_letter(
        principal, request.path_params["dead_letter_id"], status, body.reason
    )
    return JSONResponse(letter.view())


@endpoint("actions.resolve")
async def resolve_dead_letter(request: Request, principal: Principal, gateway: Gateway) -> Response:
    return await _decide(request, principal, gateway, DeadLetterStatus.RESOLVED)


@endpoint("actions.resolve")
async def drop_dead_letter(request: Request, principal: Principal, gateway: Gateway) -> Response:
    return await _decide(request, principal, gateway, DeadLetterStatus.DROPPED)


routes = [
    Route("/api/runs/{run_id}/dead-letters", list_dead_letters, methods=["GET"]),
    Route("/api/dead-letters/{dead_letter_id}/retry", retry_dead_letter, methods=["POST"]),
    Route("/api/dead-letters/{dead_letter_id}/resolve", resolve_dead_letter, methods=["POST"]),
    Route("/api/dead-letters/{dead_letter_id}/drop", drop_dead_letter, methods=["POST"]),
]
