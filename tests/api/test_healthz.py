"""GET /healthz against a real server: the store, its checkpointer and every adapter, each named;
any of them down is 503 `degraded`, with the fields /healthz always had."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from gateway.api import health as observe
from gateway.errors import StoreError
from gateway.store.reports import HealthReport
from tests.api.conftest import Api

pytestmark = pytest.mark.anyio


async def health(api: Api) -> tuple[int, dict[str, Any]]:
    async with api.client(None) as c:  # no key: probes carry none
        r = await c.get("/healthz")
    body: dict[str, Any] = r.json()
    return r.status_code, body


async def test_a_healthy_gateway_reports_every_check_ok(api: Api) -> None:
    status, body = await health(api)
    assert (status, body["status"]) == (200, "ok")
    assert body["version"] and body["process_id"] == api.gateway.store.process_id and body["tools"] == 3
    assert body["checks"].pop("watchdog")["status"] == "ok"
    assert body["checks"] == {
        "store": {"status": "ok"},
        "checkpointer": {"status": "ok"},
        "adapter:shop": {"status": "ok"},
    }


async def test_a_store_that_does_not_answer_in_time_is_degraded(api: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    async def stuck() -> HealthReport:
        await asyncio.Event().wait()  # never set: the bound must end it
        raise AssertionError("unreachable")

    monkeypatch.setattr(observe, "HEALTH_TIMEOUT", 0.05)
    monkeypatch.setattr(api.gateway.store, "health", stuck)
    status, body = await health(api)
    assert (status, body["status"]) == (503, "degraded")
    assert body["checks"]["store"]["status"] == "down"
    assert body["checks"]["store"]["code"] == "store_unavailable"
    assert body["checks"]["adapter:shop"] == {"status": "ok"}


async def test_a_store_that_fails_is_degraded_with_its_code(api: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    async def failing() -> HealthReport:
        raise StoreError("disk I/O error")

    monkeypatch.setattr(api.gateway.store, "health", failing)
    status, body = await health(api)
    assert (status, body["checks"]["store"]) == (503, {"status": "down", "code": "store_unavailable"})
    assert "disk" not in str(body)  # no error text on an unauthenticated route


async def test_a_dead_checkpointer_thread_is_degraded(api: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    checkpointer = api.gateway.store._db._checkpointer  # type: ignore[attr-defined]
    dead = threading.Thread(target=lambda: None)
    dead.start()
    dead.join()
    monkeypatch.setattr(checkpointer, "_thread", dead)
    status, body = await health(api)
    assert (status, body["status"], body["checks"]["checkpointer"]) == (503, "degraded", {"status": "down"})
    assert body["checks"]["store"] == {"status": "ok"}


async def test_an_adapter_that_reports_itself_down_is_degraded(api: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    (adapter,) = api.gateway.adapters
    monkeypatch.setattr(adapter, "health", lambda: {"status": "down", "connected": False})
    status, body = await health(api)
    assert (status, body["checks"]["adapter:shop"]) == (503, {"status": "down", "connected": False})


async def test_an_adapter_whose_check_raises_is_down_without_its_text(
    api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken() -> dict[str, Any]:
        raise RuntimeError("token=supersecret")

    (adapter,) = api.gateway.adapters
    monkeypatch.setattr(adapter, "health", broken)
    status, body = await health(api)
    assert (status, body["checks"]["adapter:shop"]) == (503, {"status": "down", "code": "health_check_failed"})
    assert "supersecret" not in str(body)
