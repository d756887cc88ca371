"""Webhooks: a receiver on loopback gets the watchdog's alerts signed, retried after a failure,
heartbeats on their own schedule, and each alert once when two gateway processes share the store.
Also the watchdog in `/healthz` and `/metrics` of a served gateway. Time is a moved clock."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field, replace
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from gateway.runtime.settings import WatchdogSettings, Webhook
from gateway.runtime.watchdog import Watchdog
from gateway.runtime.webhooks import DELIVERY_HEADER, SIGNATURE_HEADER, Deliverer, sign, verify
from gateway.store import Store
from gateway.store.records import RaisedAlert
from tests.api.conftest import CONTRACT, Api
from tests.harness import Run, World, uvicorn_serving

pytestmark = pytest.mark.anyio

SECRET = b"whsec-test-only"
SETTINGS = WatchdogSettings(tick=5, heartbeat=60, delivery_attempts=3, delivery_timeout=5)


@dataclass
class Receiver:
    """A webhook receiver: records every request; answers 500 to the first `failures` alerts."""

    failures: int = 0
    got: list[tuple[dict[str, str], bytes]] = field(default_factory=list)

    async def endpoint(self, request: Request) -> Response:
        body = await request.body()
        self.got.append((dict(request.headers), body))
        if json.loads(body)["kind"] != "heartbeat" and self.failures > 0:
            self.failures -= 1
            return Response(status_code=500)
        return Response(status_code=204)

    def bodies(self, kind: str | None = None) -> list[dict[str, Any]]:
        found = [json.loads(body) for _, body in self.got]
        return [b for b in found if kind is None or b["kind"] == kind]


@pytest.fixture
async def receiver() -> AsyncIterator[tuple[Receiver, str]]:
    hook = Receiver()
    async with uvicorn_serving(Starlette(routes=[Route("/hook", hook.endpoint, methods=["POST"])])) as url:
        yield hook, f"{url}/hook"


def parts(world: World, store: Store, url: str, **hook: Any) -> tuple[Watchdog, Deliverer]:
    webhook = Webhook(hook.pop("name", "ops"), url, SECRET, hook.pop("events", None))
    settings = replace(SETTINGS, **hook)
    dog = Watchdog(store, world.clock, settings, [webhook])
    return dog, Deliverer(store, world.clock, [webhook], timeout=settings.delivery_timeout)


@contextlib.asynccontextmanager
async def one_alert(world: World, url: str) -> AsyncIterator[tuple[Run, RaisedAlert, Deliverer]]:
    """A run whose worker stopped renewing, its `lease_missed` alert raised for a receiver at `url`."""
    dog, deliverer = parts(world, world.store, url, events=frozenset({"lease_missed"}))
    try:
        run = await world.new_run(lease_ttl="1m")
        world.clock.advance(60)
        [raised] = (await dog.tick()).raised
        yield run, raised, deliverer
    finally:
        await deliverer.aclose()


async def test_a_receiver_gets_a_signed_alert_and_its_retry_after_failing_once(
    world: World, receiver: tuple[Receiver, str]
) -> None:
    hook, url = receiver
    hook.failures = 1
    async with one_alert(world, url) as (run, raised, deliverer):
        assert await deliverer.deliver_due() == 1
        assert len(hook.got) == 1  # answered 500
        assert await deliverer.deliver_due() == 0  # the retry is not due yet: backoff, no hammering
        world.clock.advance(5)  # the first retry comes within 5 s (2.5 to 5, jittered)
        assert await deliverer.deliver_due() == 1
    assert len(hook.got) == 2
    for headers, body in hook.got:
        assert verify(SECRET, body, headers[SIGNATURE_HEADER.lower()], world.clock.now())
        assert not verify(b"another secret", body, headers[SIGNATURE_HEADER.lower()], world.clock.now())
        assert headers["content-type"] == "application/json"
    first, second = hook.got
    assert first[1] == second[1] and first[0][DELIVERY_HEADER.lower()] == second[0][DELIVERY_HEADER.lower()]
    body = json.loads(first[1])
    assert body == {
        "v": 1,
        "id": f"evt_{run.run_id}_{body['seq']}",  # the alert's ledger entry: the same on every retry
        "seq": body["seq"],
        "type": "alert",
        "kind": "lease_missed",
        "alert_id": raised.alert_id,
        "message": body["message"],
        "run_id": run.run_id,
        "tenant": "acme",
        "at": body["at"],
        "data": body["data"],
    }
    assert body["data"]["worker"] == "worker-1"
    [delivered] = await world.store.list_deliveries(status="delivered")
    assert (delivered.attempts, delivered.last_error) == (2, None)


async def test_the_signature_is_hmac_sha256_over_the_timestamp_and_the_raw_body() -> None:
    body = b'{"id":"alr_1","kind":"stalled"}'
    header = sign(SECRET, body, 1_800_000_000)
    assert header.startswith("t=1800000000,v1=")
    assert verify(SECRET, body, header, 1_800_000_100)
    assert not verify(SECRET, body + b" ", header, 1_800_000_100)  # the body as received, byte for byte
    assert not verify(SECRET, body, header, 1_800_000_000 + 301)  # too old: a replay
    assert not verify(SECRET, body, "v1=deadbeef", 1_800_000_000)


async def test_a_delivery_that_keeps_failing_is_recorded_failed_after_its_attempts(
    world: World, receiver: tuple[Receiver, str]
) -> None:
    hook, url = receiver
    hook.failures = 100
    async with one_alert(world, url) as (_, _, deliverer):
        for _ in range(5):
            await deliverer.deliver_due()
            world.clock.advance(60)
    assert len(hook.got) == SETTINGS.delivery_attempts
    [failed] = await world.store.list_deliveries(status="failed")
    assert (failed.attempts, failed.last_error) == (3, "HTTP 500")


async def test_a_receiver_that_does_not_answer_is_retried_like_one_that_fails(world: World) -> None:
    async with one_alert(world, "http://127.0.0.1:9/hook") as (_, _, deliverer):
        assert await deliverer.deliver_due() == 1
    [pending] = await world.store.list_deliveries(status="pending")
    assert pending.attempts == 1 and pending.last_error is not None and "ConnectError" in pending.last_error


async def test_heartbeats_reach_the_receiver_every_interval_from_the_lease_holder(
    world: World, receiver: tuple[Receiver, str]
) -> None:
    hook, url = receiver
    dog, deliverer = parts(world, world.store, url)
    try:
        for _ in range(25):  # two minutes of ticks
            await dog.tick()
            await deliverer.deliver_due()
            world.clock.advance(5)
    finally:
        await deliverer.aclose()
    beats = hook.bodies("heartbeat")
    assert len(beats) == 3  # at 0, 60 and 120 s
    assert beats[0]["data"] == {"process_id": world.store.process_id} and beats[0]["run_id"] is None


async def test_two_gateway_processes_on_one_store_send_each_alert_once(
    world: World, receiver: tuple[Receiver, str]
) -> None:
    hook, url = receiver
    other = world.backend.store(world.clock, process_id="gateway-b")
    await other.open()
    a, a_send = parts(world, world.store, url)
    b, b_send = parts(world, other, url)
    try:
        runs = [await world.new_run(lease_ttl="1m", budgets={"writes": 1}) for _ in range(3)]
        for run in runs:
            await world.call(run.token, "t__write", {"text": "x"})  # writes exhausted: two alerts each
        world.clock.advance(60)  # and every lease missed: a third
        await asyncio.gather(a.tick(), b.tick())
        await asyncio.gather(a_send.deliver_due(), b_send.deliver_due())
        world.clock.advance(15)  # a stops; b takes the lease over and sees the same conditions afresh
        assert (await b.tick()).raised == []
        world.clock.advance(5)
        await b.tick()
        await asyncio.gather(a_send.deliver_due(), b_send.deliver_due(), b_send.deliver_due())
    finally:
        await a_send.aclose()
        await b_send.aclose()
        await other.close()
    alerts = [body["id"] for body in hook.bodies() if body["kind"] != "heartbeat"]
    assert len(alerts) == 9 and len(set(alerts)) == 9
    kinds = sorted(body["kind"] for body in hook.bodies() if body["kind"] != "heartbeat")
    assert kinds == ["budget_80"] * 3 + ["budget_exhausted"] * 3 + ["lease_missed"] * 3


async def test_healthz_reports_the_watchdog_and_turns_unhealthy_when_it_stops(api: Api) -> None:
    watchdog = api.gateway.watchdog
    assert watchdog is not None
    async with api.client(None) as c:
        ok = await c.get("/healthz")
        assert (ok.status_code, ok.json()["checks"]["watchdog"]["status"]) == (200, "ok")
        stopped_at = watchdog.last_tick or 0.0
        watchdog._monotonic = lambda: stopped_at + 3 * watchdog.settings.tick + 1  # no tick since
        down = await c.get("/healthz")
    assert (down.status_code, down.json()["status"]) == (503, "degraded")
    assert down.json()["checks"]["watchdog"]["status"] == "down"
    assert down.json()["checks"]["watchdog"]["code"] == "watchdog_stalled"


async def test_metrics_count_the_alerts_raised_by_kind(api: Api) -> None:
    watchdog = api.gateway.watchdog
    assert watchdog is not None
    async with api.client("op") as c:
        run = (await c.post("/api/runs", json=CONTRACT)).json()
        assert (await c.post(f"/api/runs/{run['run_id']}/lease", json={"worker": "w1"})).status_code == 201
    api.clock.advance(300)  # the contract's lease_ttl
    raised = (await watchdog.tick()).raised
    assert [r.alert.kind for r in raised] == ["lease_missed"]
    async with api.client("aud") as c:
        text = (await c.get("/metrics")).text
    assert 'warrant_alerts_total{kind="lease_missed"} 1.0' in text
