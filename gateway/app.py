"""`warrant serve`: one Starlette app. MCP at /mcp, the operator API under /api, /healthz, /metrics,
the operator console at / (gateway/console/).

Resources live in the lifespan: the store is opened, orphaned actions of dead processes are
marked `unknown`, adapters are started, the watchdog and its webhook deliveries run in tasks of
their own; all of it is closed in reverse on the way out.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import AsyncIterator, Sequence

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp

from gateway import accelerators
from gateway.adapters.base import Adapter
from gateway.api.connections import routes as connection_routes
from gateway.api.dead_letters import routes as dead_letter_routes
from gateway.api.health import healthz, metrics
from gateway.api.host_guard import HostGuard, guards
from gateway.api.keys import routes as key_routes
from gateway.api.lineage import routes as lineage_routes
from gateway.api.reports import routes as report_routes
from gateway.api.retention import routes as retention_routes
from gateway.api.routes import error_response
from gateway.api.routes import routes as api_routes
from gateway.api.signals import routes as signal_routes
from gateway.api.tools import routes as tool_routes
from gateway.catalog.catalog import Catalog
from gateway.catalog.pins import Pins
from gateway.clock import Clock, OffsetClock, SystemClock
from gateway.config import Settings, load_adapter
from gateway.console import console_routes
from gateway.domain.events import Outbox, Subscriber
from gateway.errors import Code, ConfigError, NotFound
from gateway.gate.in_flight import InFlight
from gateway.gate.limits import BodyCap
from gateway.gate.pipeline import Gate
from gateway.mcp.runs import PATH as RUNS_PATH
from gateway.mcp.runs import WorkerKeyRoute
from gateway.mcp.server import LeaseTokenGuard, build_mcp_server, fast_path, mcp_app, running
from gateway.oauth.provider import WarrantAuthorization
from gateway.oauth.resource import OAuthResource
from gateway.oauth.routes import oauth_routes
from gateway.observe import tracing
from gateway.policy.loader import load_policy_set
from gateway.runtime.cancel_relay import relaying
from gateway.runtime.retention import Purger
from gateway.runtime.shutdown import Drain, DrainGuard
from gateway.runtime.watchdog import Watchdog, watching
from gateway.runtime.webhooks import Deliverer
from gateway.safeguards import Failpoint, Safeguards
from gateway.service import Gateway
from gateway.store.factory import open_store
from gateway.store.records import AlertRoutes
from gateway.tools.calls import ToolCalls
from gateway.tools.evidence import build_fetcher
from gateway.tools.progress import Progress
from gateway.tools.tasks import Planning
from gateway.tools.waits import Waiting

log = logging.getLogger("warrant")


def build_catalog(
    settings: Settings, extra_adapters: Sequence[Adapter] = (), fence: accelerators.Accelerators | None = None
) -> tuple[Catalog, list[Adapter]]:
    """`fence`: which accelerators serve (gateway/accelerators.py); None: every switch on."""
    fence = fence or accelerators.default()
    policies = load_policy_set(list(settings.policy_files))
    adapters = [load_adapter(path, fence=fence) for path in settings.adapter_files] + list(extra_adapters)
    quick = fence.on(accelerators.QUICK_SCHEMA)
    catalog = Catalog(
        adapters, policies.tools, policies.currency, quick_schema=quick, shared_limits=policies.shared_limits
    )
    return catalog, adapters


async def start_adapters(adapters: Sequence[Adapter], started: list[Adapter]) -> None:
    """Start every adapter at once (each may wait a bounded time for its downstream's first
    listing); `started` collects those to close. Raises: the first adapter's failure."""

    async def start(adapter: Adapter) -> None:
        await adapter.start()
        started.append(adapter)

    results = await asyncio.gather(*(start(a) for a in adapters), return_exceptions=True)
    for result in results:
        if isinstance(result, BaseException):
            raise result


async def not_found(request: Request, exc: Exception) -> Response:
    return error_response(NotFound(f"no route {request.method} {request.url.path}"))


async def method_not_allowed(request: Request, exc: Exception) -> Response:
    """A route that exists but not for this method: the JSON envelope, and the Allow header."""
    headers = dict(getattr(exc, "headers", None) or {})
    body = {
        "error": {"code": Code.METHOD_NOT_ALLOWED, "message": f"{request.method} is not served at {request.url.path}"}
    }
    return JSONResponse(body, status_code=405, headers=headers)


def create_app(settings: Settings, *, clock: Clock | None = None, extra_adapters: Sequence[Adapter] = ()) -> Starlette:
    """Raises: ConfigError for an invalid catalog (before anything is opened). Tools a downstream
    MCP server lists are checked once the adapters started, in the lifespan: a problem stops it."""
    clock = clock or SystemClock()
    if settings.clock_offset_s:
        log.warning(
            "DRILL MODE: this process's clock is %+g s off; never run a deployment like this",
            settings.clock_offset_s,
        )
        clock = OffsetClock(clock, settings.clock_offset_s)
    # Each fast path that mirrors a dependency: its switch, the installed version, its private names.
    fence = accelerators.settle(settings.accelerators)
    catalog, adapters = build_catalog(settings, extra_adapters, fence)
    limits = settings.limits
    for adapter in adapters:
        adapter.max_result_bytes = limits.max_tool_result  # an adapter reading a body stops past it
    tracing.configure(os.environ)  # OpenTelemetry's own variables; traces stay off without them

    def gate_of() -> Gate:
        gateway: Gateway = app.state.gateway
        return gateway.gate

    def calls_of() -> ToolCalls:
        calls: ToolCalls = app.state.tool_calls
        return calls

    server = build_mcp_server(calls_of, catalog)
    mcp = mcp_app(server, settings.host, settings.limits.max_request_body)
    # The process's calls in flight: the drain (begun by `warrant serve`'s first SIGTERM,
    # gateway/runtime/shutdown.py) lives as long as the app, the gate only as long as its lifespan.
    in_flight = InFlight()
    drain = Drain(in_flight)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        # The drill's switches (gateway/safeguards.py): every safeguard on unless `drill:` says otherwise.
        safeguards = Safeguards(
            {name: Failpoint(name, e.action, e.tool, e.skip) for name, e in settings.failpoints.items()},
            settings.sabotage,
        )
        safeguards.announce()
        async with (
            open_store(
                settings.database,
                clock=clock,
                ledger_key=settings.ledger_key,
                migrate=settings.migrate_on_start,
                refusal_limits=limits.refusals,
                safeguards=safeguards,
                # The alerts the store raises itself, and every ledger entry, go to the webhooks
                # that take their kind or type (gateway/store/sql/outbox.py).
                alert_routes=AlertRoutes(
                    tuple((hook.name, hook.events) for hook in settings.webhooks),
                    settings.watchdog.delivery_attempts,
                    console_url=settings.oauth.public_url,  # an approval's alerts link to its console page
                ),
                outbox=Outbox(
                    tuple(Subscriber(hook.name, hook.events) for hook in settings.webhooks),
                    max_attempts=settings.watchdog.delivery_attempts,
                ),
            ) as store,
            running(server),
        ):
            # Every expiry is decided on the store's time: on PostgreSQL the database's clock,
            # which every replica shares (this process's clock corrected, outside transactions).
            store_clock = store.clock
            orphans = await store.mark_orphans_unknown()
            if orphans:
                log.warning(
                    "%d action(s) of an earlier gateway process are now unknown: %s",
                    len(orphans),
                    ", ".join(orphans[:10]),
                )
            started: list[Adapter] = []
            try:
                pins = Pins(store, catalog)
                await pins.load()
                for adapter in adapters:
                    pins.follow(adapter)
                await start_adapters(adapters, started)
                catalog.check()  # downstream tools are listed now: a collision stops start-up here
                gate = Gate(
                    store,
                    catalog,
                    store_clock,
                    limits=limits,
                    idempotency_for=settings.retention.idempotency,
                    in_flight=in_flight,
                    safeguards=safeguards,
                )
                watchdog = Watchdog(
                    store,
                    store_clock,
                    settings.watchdog,
                    settings.webhooks,
                    catalog=catalog,
                    metrics=gate.metrics,
                    purger=Purger(store, store_clock, settings.retention),
                    safeguards=safeguards,
                )
                deliverer = Deliverer(store, store_clock, settings.webhooks, timeout=settings.watchdog.delivery_timeout)
                fetcher = build_fetcher(settings.artifacts)
                progress = Progress(gate, fetcher, store_clock, settings.validators)
                app.state.tool_calls = ToolCalls(gate, progress, Planning(progress), Waiting(gate, store))
                app.state.gateway = Gateway(
                    store,
                    catalog,
                    gate,
                    store_clock,
                    adapters,
                    settings.api_keys,
                    pins=pins,
                    watchdog=watchdog,
                    progress=progress,
                )
                # Hard cancels taken on other replicas abort this one's calls in flight (PostgreSQL).
                async with watching(watchdog, deliverer), relaying(store, gate), contextlib.aclosing(fetcher):
                    yield
            finally:
                for adapter in reversed(started):
                    with contextlib.suppress(Exception):
                        await adapter.close()

    def gateway_of() -> Gateway:
        gateway: Gateway = app.state.gateway
        return gateway

    front = LeaseTokenGuard(mcp, gate_of, fast_path(server, calls_of, catalog, on=fence.on(accelerators.MCP_FRONT)))
    # MCP authorization (gateway/oauth/): /mcp as an OAuth resource, the gateway as its server.
    authorization = (
        WarrantAuthorization(gateway_of, settings.oauth, settings.ledger_key) if settings.oauth.enabled else None
    )
    resource: ASGIApp = front if authorization is None else OAuthResource(front, authorization, gateway_of)
    routes = [
        Route("/healthz", healthz, methods=["GET"]),
        Route("/metrics", metrics, methods=["GET"]),
        Route("/mcp", tracing.traced_mcp(BodyCap(resource, limits.max_request_body))),
        # A worker key naming its run: the gateway holds the lease for it (gateway/mcp/runs.py).
        Route(RUNS_PATH, tracing.traced_mcp(BodyCap(WorkerKeyRoute(front, gateway_of), limits.max_request_body))),
        *api_routes,
        *tool_routes,
        *key_routes,
        *connection_routes,
        *lineage_routes,
        *signal_routes,
        *dead_letter_routes,
        *report_routes,
        *retention_routes,
        *(oauth_routes(authorization) if authorization is not None else []),
        *console_routes(settings.ledger_key, authorization, settings.oidc, settings.oauth.public_url),
    ]
    app = Starlette(
        routes=routes,
        lifespan=lifespan,
        exception_handlers={404: not_found, 405: method_not_allowed},
        middleware=[
            *([Middleware(HostGuard, allowed=settings.allowed_hosts)] if guards(settings.host) else []),
            Middleware(DrainGuard, drain=drain),
        ],
    )
    app.state.drain = drain
    app.state.limits = limits  # the API's body cap and rates (gateway/api/routes.py)
    app.state.accelerators = fence  # which fast paths serve (tests, gateway/accelerators.py)
    return app


__all__ = ["ConfigError", "create_app"]
