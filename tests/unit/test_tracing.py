"""Traces, with the OpenTelemetry SDK's in-memory exporter: one span per MCP request, gate decision and
downstream call, carrying run, action and tenant ids and never a payload; and the OTLP set-up."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared import _otel as mcp_otel
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import ProxyTracer, SpanKind
from opentelemetry.util._once import Once

from gateway.adapters import OutcomeKind
from gateway.adapters.mcp import lean_client as mcp_http
from gateway.observe import tracing
from tests.api.conftest import CONTRACT, make_app
from tests.harness import TENANT, WAIT, World, code_of, uvicorn_serving

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[2]
SECRETS = ("secret-query-text", "card-4242-secret")  # arguments that must never reach a span


@pytest.fixture(scope="module")
def exporter() -> Iterator[InMemorySpanExporter]:
    """The SDK, installed for this module, into memory; uninstalled afterwards, so later tests run
    with tracing off as a gateway without an SDK does."""
    provider = trace.get_tracer_provider()
    installed = not isinstance(provider, TracerProvider)
    if installed:
        provider = TracerProvider()
        trace.set_tracer_provider(provider)
    memory = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    yield memory
    memory.shutdown()
    if installed:  # what the SDK's own test helper (`reset_trace_globals`) does: one provider per process
        provider.shutdown()
        trace._TRACER_PROVIDER = None
        trace._TRACER_PROVIDER_SET_ONCE = Once()
        # Tracers made at import (the MCP SDK client's, the lean path's) keep the real tracer once
        # used: forget it, or later tests would still send a traceparent.
        for made_at_import in (mcp_otel._tracer, mcp_http._tracer):
            if isinstance(made_at_import, ProxyTracer):
                made_at_import._real_tracer = None
    assert tracing.enabled() is not installed


@pytest.fixture
def spans(exporter: InMemorySpanExporter) -> InMemorySpanExporter:
    exporter.clear()
    return exporter


def named(spans: InMemorySpanExporter, name: str) -> list[ReadableSpan]:
    return [s for s in spans.get_finished_spans() if s.name == name]


def everything_said(spans: InMemorySpanExporter) -> str:
    """Every name, attribute and event of every span, as text."""
    return json.dumps(
        [
            {
                "name": s.name,
                "attributes": dict(s.attributes or {}),
                "events": [dict(e.attributes or {}) for e in s.events],
            }
            for s in spans.get_finished_spans()
        ],
        default=str,
    )


async def test_an_mcp_tool_call_is_a_request_span_a_decision_span_and_a_downstream_span(
    spans: InMemorySpanExporter, tmp_path: Path
) -> None:
    app, _, _ = make_app(tmp_path)
    async with uvicorn_serving(app) as url:
        async with httpx.AsyncClient(base_url=url, headers={"Authorization": "Bearer key-ops"}, timeout=WAIT) as api:
            run_id = (await api.post("/api/runs", json=CONTRACT)).json()["run_id"]
            token = (await api.post(f"/api/runs/{run_id}/lease", json={"worker": "w1"})).json()["token"]
        async with (
            httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=WAIT) as http,
            Client(streamable_http_client(f"{url}/mcp", http_client=http), mode="auto", cache=None) as client,
        ):
            spans.clear()  # the handshake and listing aside: one call from here
            result = await client.call_tool("shop__charge", {"card": SECRETS[1]})
            assert not result.is_error
    action_id = result.meta["warrant/action_id"] if result.meta else None
    # The SDK client may list the tools before calling one: each MCP request has its own span.
    (request,) = [s for s in named(spans, "POST /mcp") if (s.attributes or {}).get("warrant.action_id")]
    (decision,) = named(spans, "warrant.gate")
    (downstream,) = named(spans, "warrant.downstream")
    ids = {"warrant.run_id": run_id, "warrant.tenant": "acme", "warrant.action_id": action_id}
    for span in (request, decision, downstream):
        assert ids.items() <= dict(span.attributes or {}).items(), span.name
    assert request.kind is SpanKind.SERVER and downstream.kind is SpanKind.CLIENT
    assert (request.attributes or {})["http.response.status_code"] == 200
    assert (decision.attributes or {})["warrant.tool"] == "shop__charge"
    assert (downstream.attributes or {})["warrant.outcome"] == "succeeded"
    assert decision.parent is not None and decision.parent.span_id == request.context.span_id
    assert downstream.parent is not None and downstream.parent.span_id == decision.context.span_id
    said = everything_said(spans)
    assert SECRETS[1] not in said and token not in said and "charge-1" not in said  # argument, token, result


async def test_a_refused_call_is_a_decision_span_with_its_code_and_no_downstream_span(
    spans: InMemorySpanExporter, world: World
) -> None:
    run = await world.new_run()
    refused = await world.call(run.token, "t__denied", {"q": SECRETS[0]})
    assert code_of(refused) == "forbidden"
    (decision,) = named(spans, "warrant.gate")
    attributes = dict(decision.attributes or {})
    assert attributes["warrant.code"] == "forbidden"
    assert attributes["warrant.run_id"] == run.run_id and attributes["warrant.tenant"] == TENANT
    assert attributes["warrant.action_id"] == refused.meta["warrant/action_id"]
    assert named(spans, "warrant.downstream") == []
    assert code_of(await world.call(run.token, "t__read", {"q": SECRETS[0]})) is None
    (read,) = named(spans, "warrant.downstream")
    assert (read.attributes or {})["warrant.tool"] == "t__read"
    assert SECRETS[0] not in everything_said(spans)


def configure_in_a_fresh_process(env: dict[str, str], *, hide: str | None = None) -> dict[str, Any]:
    """`tracing.configure(env)` where no provider was ever installed: what it did, and what it logged."""
    script = (
        "import json, logging, sys\n"
        f"if {hide!r}: sys.modules[{hide!r}] = None\n"
        "logging.basicConfig(level=logging.INFO, stream=sys.stderr)\n"
        "from opentelemetry import trace\n"
        "from gateway.observe import tracing\n"
        f"done = tracing.configure({env!r})\n"
        "print(json.dumps({'installed': done, 'enabled': tracing.enabled(),"
        " 'provider': type(trace.get_tracer_provider()).__name__}))\n"
    )
    clean = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    proc = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, env=clean, capture_output=True, text=True, timeout=WAIT
    )
    assert proc.returncode == 0, proc.stderr
    report: dict[str, Any] = json.loads(proc.stdout)
    report["log"] = proc.stderr
    return report


def test_traces_are_exported_over_otlp_only_when_an_endpoint_is_configured() -> None:
    off = configure_in_a_fresh_process({})
    assert (off["installed"], off["enabled"]) == (False, False)
    on = configure_in_a_fresh_process({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9"})
    assert (on["installed"], on["enabled"], on["provider"]) == (True, True, "TracerProvider")
    disabled = configure_in_a_fresh_process({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x", "OTEL_SDK_DISABLED": "true"})
    assert disabled["installed"] is False


def test_an_endpoint_without_the_sdk_installed_warns_and_leaves_traces_off() -> None:
    exporter = "opentelemetry.exporter.otlp.proto.http.trace_exporter"
    missing = configure_in_a_fresh_process({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9"}, hide=exporter)
    assert (missing["installed"], missing["enabled"]) == (False, False)
    assert "WARNING:warrant.tracing" in missing["log"] and "warrant-gateway[otel]" in missing["log"]


async def test_a_downstream_mcp_call_carries_the_trace_on_the_lean_path_as_through_the_sdk_client(
    exporter: InMemorySpanExporter,
) -> None:
    from tests.adapters.test_mcp_adapter import request
    from tests.adapters.test_mcp_lean_http import Recorder, adapter_for, serving

    recorder = Recorder()
    async with serving(recorder, stateless=True, json_response=True) as url:
        async with adapter_for(url) as lean, adapter_for(url, lean_http=False) as sdk:
            assert lean.lean and not sdk.lean
            for adapter in (lean, sdk):
                outcome = await adapter.call(request("echo", {"region": "eu"}, write=True, key="wk_traced"))
                assert outcome.kind is OutcomeKind.SUCCEEDED
    through_lean, through_sdk = recorder.calls
    assert through_lean["meta"]["traceparent"].startswith("00-"), through_lean["meta"]
    assert through_sdk["meta"]["traceparent"].startswith("00-"), through_sdk["meta"]
    sent = [span for span in exporter.get_finished_spans() if span.name == "MCP send tools/call echo"]
    assert len(sent) >= 2 and all(span.kind is SpanKind.CLIENT for span in sent)
