"""A run's history streams from every replica: events admitted through A reach an SSE client of B.

"Live" is an ordering here, not a latency: each call's entries reach B's stream before the agent
makes its next call through A (each wait bounded), and the stream is A's history, in order, whole.
"""

from __future__ import annotations

import json
import secrets
from typing import Any

import anyio
import httpx
import pytest
from anyio.streams.memory import MemoryObjectSendStream

from tests.replicas.cluster import WAIT, Cluster

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

CALLS = 12
CATCH_UP = 10.0  # seconds: the bound on B's stream showing the last entry A's history shows
REVOKED = 5.0  # seconds: the bound on a revoked key's stream ending (it rechecks every 0.5 s)


async def follow(url: str, key: str, sink: MemoryObjectSendStream[dict[str, Any]]) -> None:
    """Read the run's event stream at `url`, sending each entry to `sink` until cancelled."""
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
                await sink.send(entry)
            frame = {}


async def test_events_admitted_through_a_stream_from_b_in_order_none_missing(shared_cluster: Cluster) -> None:
    cluster = shared_cluster
    a, b = cluster.replicas
    run_id, token = await cluster.start_run(via=a)
    received: list[dict[str, Any]] = []
    sink, source = anyio.create_memory_object_stream[dict[str, Any]](1000)

    async def take_until(seq: int) -> None:
        """Receive from B's stream until the entry `seq` arrived (within CATCH_UP)."""
        with anyio.fail_after(CATCH_UP):
            while not received or received[-1]["seq"] < seq:
                received.append(await source.receive())

    async with anyio.create_task_group() as group, sink, source:
        group.start_soon(follow, f"{b.url}/api/runs/{run_id}/events", b.keys["auditor"], sink)
        await take_until((await cluster.ledger(run_id))[-1]["seq"])  # caught up with the run's start
        agent = a.agent(token)
        tag = secrets.token_hex(4)
        for i in range(CALLS):
            reply = await (
                agent.call("crm__create_contact", {"email": f"stream-{tag}-{i}@acme.example"})
                if i % 2 == 0
                else agent.call("crm__search_contacts", {"q": tag})
            )
            assert reply.ok, reply
            # Live: this call's entries are on B's stream before the next call is made through A.
            last = (await cluster.ledger(run_id))[-1]["seq"]
            await take_until(last)
            assert received[-1]["seq"] == last, (received[-1], last)
        history = await cluster.ledger(run_id)
        group.cancel_scope.cancel()

    # Every entry A's history holds, in order, each once, exactly as the JSON list shows it.
    assert [entry["seq"] for entry in received] == list(range(1, last + 1))
    assert received == history


async def test_a_key_revoked_through_a_ends_its_stream_on_b_and_b_refuses_it(shared_cluster: Cluster) -> None:
    """The stream on B ends once the revocation through A has committed (bounded by REVOKED), and
    B refuses the key from then on. How soon is tests/api/test_events_sse.py's to time, on one process."""
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
        with anyio.fail_after(REVOKED):  # KEY_RECHECK_S (0.5) plus a poll, on a loaded machine
            async for _ in lines:
                pass
    refused = await b.request(
        "GET", f"/api/runs/{run_id}/events", headers={"Authorization": f"Bearer {created['key']}"}
    )
    assert refused.status_code == 401, refused.text
