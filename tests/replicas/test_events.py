"""A run's history streams from every replica: events admitted through A reach an SSE client of B."""

from __future__ import annotations

import json
import secrets
import statistics
import time
from datetime import datetime
from typing import Any

import anyio
import httpx
import pytest
from anyio.streams.memory import MemoryObjectSendStream

from tests.replicas.cluster import WAIT, Cluster

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

CALLS = 12
CATCH_UP = 10.0  # seconds the stream on B has to show the last entry A's history shows
LATE = 5.0  # seconds: an entry later than this on B was not streamed "at once" (B polls every 0.25 s)


async def follow(url: str, key: str, sink: MemoryObjectSendStream[tuple[float, dict[str, Any]]]) -> None:
    """Read the run's event stream at `url`, sending (arrival time, entry) to `sink` until cancelled."""
    headers = {"Authorization": f"Bearer {key}", "Accept": "text/event-stream"}
    async with (
        httpx.AsyncClient(timeout=httpx.Timeout(WAIT, read=None)) as http,
        http.stream("GET", url, headers=headers) as answer,
    ):
        assert answer.status_code == 200, await answer.aread()
        assert answer.headers["content-type"].startswith("text/event-stream")
        frame: dict[str, str] = {}
        async for line in answer.aiter_lines():
            if line:
                field, _, value = line.partition(": ")
                frame[field] = value
                continue
            if "data" in frame:
                entry = json.loads(frame["data"])
                assert (frame["id"], frame["event"]) == (str(entry["seq"]), entry["type"])
                await sink.send((time.time(), entry))
            frame = {}


async def test_events_admitted_through_a_stream_from_b_in_order_none_missing(shared_cluster: Cluster) -> None:
    cluster = shared_cluster
    a, b = cluster.replicas
    run_id, token = await cluster.start_run(via=a)
    received: list[tuple[float, dict[str, Any]]] = []
    sink, source = anyio.create_memory_object_stream[tuple[float, dict[str, Any]]](1000)

    async def take_until(seq: int) -> None:
        """Receive from B's stream until the entry `seq` arrived (within CATCH_UP)."""
        with anyio.fail_after(CATCH_UP):
            while not received or received[-1][1]["seq"] < seq:
                received.append(await source.receive())

    async with anyio.create_task_group() as group, sink, source:
        group.start_soon(follow, f"{b.url}/api/runs/{run_id}/events", b.keys["auditor"], sink)
        before = await a.ok("GET", f"/api/runs/{run_id}/events", "auditor", params={"limit": "1000"})
        await take_until(before["items"][-1]["seq"])  # caught up with the run's start: the rest is followed live
        live = len(received)
        agent = a.agent(token)
        tag = secrets.token_hex(4)
        for i in range(CALLS):
            reply = await (
                agent.call("crm__create_contact", {"email": f"stream-{tag}-{i}@acme.example"})
                if i % 2 == 0
                else agent.call("crm__search_contacts", {"q": tag})
            )
            assert reply.ok, reply
        history = await a.ok("GET", f"/api/runs/{run_id}/events", "auditor", params={"limit": "1000"})
        last = history["items"][-1]["seq"]
        await take_until(last)
        group.cancel_scope.cancel()

    streamed = [entry for _, entry in received]
    # Every entry A's history holds, in order, each once, exactly as the JSON list shows it.
    assert [entry["seq"] for entry in streamed] == list(range(1, last + 1))
    assert streamed == history["items"]
    # Latency: from the entry's commit time (the database's clock, on this same host) to its arrival on B.
    followed = [arrived - datetime.fromisoformat(entry["at"]).timestamp() for arrived, entry in received[live:]]
    assert max(followed) < LATE, followed
    p50, worst = statistics.median(followed) * 1000, max(followed) * 1000
    print(f"{len(streamed)} entries streamed from B, {len(followed)} live: p50 {p50:.0f} ms, max {worst:.0f} ms")


async def test_a_key_revoked_through_a_ends_its_stream_on_b_within_a_second(shared_cluster: Cluster) -> None:
    a, b = shared_cluster.replicas
    run_id, _ = await shared_cluster.start_run(via=a)
    name = f"watcher-{secrets.token_hex(4)}"
    created = await a.ok("POST", "/api/keys", "admin", json={"name": name, "roles": ["auditor"]})
    headers = {"Authorization": f"Bearer {created['key']}", "Accept": "text/event-stream"}
    async with (
        httpx.AsyncClient(timeout=httpx.Timeout(WAIT, read=None)) as http,
        http.stream("GET", f"{b.url}/api/runs/{run_id}/events", headers=headers) as answer,
    ):
        assert answer.status_code == 200
        lines = answer.aiter_lines()
        with anyio.fail_after(WAIT):
            async for line in lines:
                if line.startswith("data: "):
                    break  # the stream on B is live
        await a.ok("POST", f"/api/keys/{created['key_id']}/revoke", "admin", json={})
        with anyio.fail_after(1.5):  # KEY_RECHECK_S (0.5) plus a poll, on a loaded machine
            async for _ in lines:
                pass
