"""OpenTelemetry traces: one span per MCP request, per gate decision and per downstream call.

    POST /mcp              (SERVER)  every MCP request; run, tenant and action once the gate knows them
      warrant.gate         (INTERNAL) one tools/call's decision, steps 1-8: tool, run, tenant, action, code
        warrant.downstream (CLIENT)  the adapter's call (step 7): tool, adapter, run, tenant, action, outcome

The gateway depends on the OpenTelemetry API only, which does nothing until an SDK is installed;
while none is, these hooks skip even the no-op spans. `configure` installs the SDK with an
OTLP/HTTP exporter when `OTEL_EXPORTER_OTLP_ENDPOINT` (or `..._TRACES_ENDPOINT`) is set and the
`warrant-gateway[otel]` extra is installed; the exporter reads the other standard `OTEL_*`
variables itself. It runs when the app is built, so the MCP request span wraps /mcp only where a
provider exists by then. Spans carry ids and codes, never arguments, results, evidence or tokens.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Awaitable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Protocol, TypeVar

from opentelemetry import trace
from opentelemetry.environment_variables import OTEL_PYTHON_TRACER_PROVIDER
from opentelemetry.trace import NoOpTracerProvider, ProxyTracerProvider, Span, SpanKind
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from gateway import __version__, accelerators
from gateway.store.records import ActionRecord

log = logging.getLogger("warrant.tracing")


class _Kind(Protocol):
    @property
    def value(self) -> str: ...


class Traced(Protocol):
    """What a downstream span records of an adapter's outcome (gateway/adapters/base.py `Outcome`):
    observe/ sits below the adapters, whose lean MCP client traces its own requests."""

    @property
    def kind(self) -> _Kind: ...

    @property
    def code(self) -> str | None: ...


OutcomeT = TypeVar("OutcomeT", bound=Traced)

# A proxy until a provider is installed, then that provider's tracer: the API's own idiom.
_tracer = trace.get_tracer("warrant", __version__)
_request_span: ContextVar[Span | None] = ContextVar("warrant_mcp_request_span", default=None)
_NOT_INSTALLED = (ProxyTracerProvider, NoOpTracerProvider)  # a tuple: isinstance is faster than with a union


# `get_tracer_provider()` looks the environment up on every call until a provider is set (a
# missed key raises inside os.environ: microseconds, several times per call on the hot path).
# Nothing set and no provider named in the environment (read once: it is read at start-up) is
# the common case, answered from the module's global; any other case asks the API as before.
# That global is a private name (gateway/accelerators.py `TRACER_PROVIDER`): gone, the API answers.
_NAMED_IN_ENV = OTEL_PYTHON_TRACER_PROVIDER in os.environ
_PROVIDER_GLOBAL = accelerators.TRACER_PROVIDER.attribute
_UNSET = object()


def enabled() -> bool:
    """Whether an SDK (or another real provider) is installed."""
    if not _NAMED_IN_ENV and getattr(trace, _PROVIDER_GLOBAL, _UNSET) is None:
        return False
    return not isinstance(trace.get_tracer_provider(), _NOT_INSTALLED)


def configure(env: Mapping[str, str]) -> bool:
    """Install the SDK with an OTLP exporter when the environment asks for one. True: installed.

    Not installed (and said so) when the SDK or the exporter is missing, or when a provider is
    installed already (e.g. by `opentelemetry-instrument`, whose provider is then used).
    """
    if not (env.get("OTEL_EXPORTER_OTLP_ENDPOINT") or env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")):
        return False
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true" or enabled():
        return False
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError:
        log.warning(
            "OTEL_EXPORTER_OTLP_ENDPOINT is set but the OpenTelemetry SDK or its OTLP exporter is not "
            "installed (pip install 'warrant-gateway[otel]'): traces are not exported"
        )
        return False
    attributes: dict[str, Any] = {"service.version": __version__}
    if not env.get("OTEL_SERVICE_NAME"):
        attributes["service.name"] = "warrant-gateway"
    provider = TracerProvider(resource=Resource.create(attributes))  # flushes at exit by itself
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)
    log.info("exporting traces over OTLP/HTTP")
    return True


@contextmanager
def decision(tool: str) -> Iterator[Span | None]:
    """The span of one gate decision (None while tracing is off)."""
    if not enabled():
        yield None
        return
    with _tracer.start_as_current_span("warrant.gate", attributes={"warrant.tool": tool}) as span:
        yield span


def tag_run(run_id: str, tenant: str) -> None:
    """Name the run and tenant on the current span and on its MCP request's span."""
    if enabled():
        _tag(trace.get_current_span(), {"warrant.run_id": run_id, "warrant.tenant": tenant})


def decided(span: Span | None, action_id: str | None, code: str | None) -> None:
    """The decision's action (refused calls are recorded as actions too) and its code, if any."""
    if span is None:
        return
    if action_id:
        _tag(span, {"warrant.action_id": action_id})
    if code:
        span.set_attribute("warrant.code", code)


def _tag(span: Span, attributes: dict[str, Any]) -> None:
    span.set_attributes(attributes)
    request = _request_span.get()
    if request is not None and request is not span:
        request.set_attributes(attributes)


async def downstream(tool: str, adapter: str, action: ActionRecord, call: Awaitable[OutcomeT]) -> OutcomeT:
    """Await an adapter's call inside its span."""
    if not enabled():
        return await call
    attributes = {
        "warrant.tool": tool,
        "warrant.adapter": adapter,
        "warrant.run_id": action.run_id,
        "warrant.tenant": action.tenant,
        "warrant.action_id": action.action_id,
    }
    with _tracer.start_as_current_span("warrant.downstream", kind=SpanKind.CLIENT, attributes=attributes) as span:
        outcome = await call
        span.set_attribute("warrant.outcome", outcome.kind.value)
        if outcome.code:
            span.set_attribute("warrant.code", outcome.code)
        return outcome


def traced_mcp(app: ASGIApp) -> ASGIApp:
    """/mcp with a span per request, or `app` itself while tracing is off (no cost at all)."""
    return TracedMcp(app) if enabled() else app


class TracedMcp:
    """ASGI wrapper for /mcp: one SERVER span per MCP request (stateless HTTP: one per POST)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not enabled():
            await self.app(scope, receive, send)
            return
        attributes = {"http.request.method": scope["method"], "url.path": scope["path"]}
        name = f"{scope['method']} /mcp"
        with _tracer.start_as_current_span(name, kind=SpanKind.SERVER, attributes=attributes) as span:
            token = _request_span.set(span)

            async def sending(message: Message) -> None:
                if message["type"] == "http.response.start":
                    span.set_attribute("http.response.status_code", message["status"])
                await send(message)

            try:
                await self.app(scope, receive, sending)
            finally:
                _request_span.reset(token)
