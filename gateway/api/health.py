"""`/healthz` and `/metrics`: the gateway as an operator's monitoring sees it.

`/healthz` needs no key (load balancers and orchestrators probe it) and names no run, tenant or
secret: the store (a trivial query, bounded by `HEALTH_TIMEOUT`), its background work (the WAL
checkpointer), every adapter (its `health()`: a downstream's supervisor, its connection) and the
watchdog (its last tick).
All ok is 200 `{"status": "ok", ...}`; anything else is 503 `{"status": "degraded", ...}`,
`checks` naming each.

`/metrics` names run ids, so it takes an API key with `metrics.read` (auditor, admin): the
gauges are the key's tenant's; the counters are the process's and carry no ids.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from gateway import __version__
from gateway.api.routes import endpoint
from gateway.errors import Code, WarrantError
from gateway.observe.metrics import BUDGET_RUNS, CONTENT_TYPE
from gateway.service import Gateway
from gateway.store.records import Principal

log = logging.getLogger("warrant.health")

HEALTH_TIMEOUT = 2.0  # seconds the store has to answer a trivial query


async def healthz(request: Request) -> Response:
    gateway: Gateway = request.app.state.gateway
    checks = await health_checks(gateway)
    ok = all(check.get("status") == "ok" for check in checks.values())
    body = {
        "status": "ok" if ok else "degraded",
        "version": __version__,
        "process_id": gateway.store.process_id,
        "tools": len(gateway.catalog),
        "checks": checks,
    }
    return JSONResponse(body, status_code=200 if ok else 503)


async def health_checks(gateway: Gateway) -> dict[str, dict[str, Any]]:
    """Every check by name: `store`, `checkpointer`, `adapter:<name>`, `watchdog` (its last tick
    at most three ticks old); each at least `{status}`."""
    try:
        checks = await asyncio.wait_for(gateway.store.health(), HEALTH_TIMEOUT)
    except TimeoutError:
        checks = {"store": {"status": "down", "code": Code.STORE_UNAVAILABLE, "timeout": HEALTH_TIMEOUT}}
    except WarrantError as exc:
        checks = {"store": {"status": "down", "code": exc.code}}
    for adapter in gateway.adapters:
        try:
            report = dict(adapter.health())
        except Exception:
            log.exception("the health check of adapter %s failed", adapter.name)
            report = {"status": "down", "code": Code.HEALTH_CHECK_FAILED}
        checks[f"adapter:{adapter.name}"] = report
    if gateway.watchdog is not None:
        checks["watchdog"] = gateway.watchdog.health()
    return checks


@endpoint("metrics.read")
async def metrics(request: Request, principal: Principal, gateway: Gateway) -> Response:
    gauges = await gateway.store.gauges(principal.tenant, limit=BUDGET_RUNS)
    return Response(gateway.gate.metrics.render(gauges, gateway.clock.now()), media_type=CONTENT_TYPE)
