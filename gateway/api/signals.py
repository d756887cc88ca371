"""The operator API's signals (docs/decisions/0027-waits.md).

    POST /api/runs/{id}/signal  {name, payload, idempotency_key}: the signal as recorded

`runs.signal`: an operator's key, or a worker key the run's contract gives it (as for usage).
Recorded once per idempotency key: a second send of the key answers the first signal (`replayed`)
and wakes nothing; the key with another name or payload is 409 `idempotency_conflict`. A payload
past 16 KB as canonical JSON is 422 `signal_invalid`; a run that is over, 409 `run_<status>`.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from gateway.api.bodies import SignalBody
from gateway.api.routes import endpoint, read_model, run_to_act_for
from gateway.clock import isoformat
from gateway.domain.waits import signal_problems
from gateway.errors import Code, InvalidRequest
from gateway.service import Gateway
from gateway.store.records import Principal


@endpoint("runs.signal")
async def signal_run(request: Request, principal: Principal, gateway: Gateway) -> Response:
    body = await read_model(request, SignalBody)
    run = await run_to_act_for(gateway, principal, request.path_params["run_id"])
    problems = signal_problems(body.name, body.payload, body.idempotency_key)
    if problems:
        raise InvalidRequest("the signal is not one the gateway records", code=Code.SIGNAL_INVALID, problems=problems)
    answer = await gateway.store.signal_run(
        principal, run.run_id, name=body.name, payload=body.payload, idempotency_key=body.idempotency_key
    )
    signal = answer.signal
    view = {
        "signal_id": signal.signal_id,
        "run_id": signal.run_id,
        "name": signal.name,
        "at": isoformat(signal.received_at),
        "by": signal.principal,
        "payload_sha256": signal.payload_sha256,
        "payload_purged": signal.payload_purged_at is not None,
        "woke_wait_id": signal.wait_id,
        "status": answer.status.value,
        "replayed": answer.replayed,
    }
    return JSONResponse(view)


routes = [Route("/api/runs/{run_id}/signal", signal_run, methods=["POST"])]
