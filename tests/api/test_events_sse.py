"""GET /api/runs/{id}/events as Server-Sent Events, against a real server: resume, follow, end."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import anyio
import httpx
import pytest
from starlette.types import Receive, Scope, Send

from gateway.api import events as sse
from tests.api.conftest import Api
from tests.api.test_keys import create_key, with_key
from tests.api.test_operator_api import create_run, lease
from tests.api.test_resolve import unknown_action

pytestmark = pytest.mark.anyio

STREAM = {"Accept": "text/event-stream"}
WAIT = 10.0


class Reader:
    """Parses an open SSE response into events ({id, event, data}) and comment lines."""

    def __init__(self, response: httpx.Response) -> None:
        assert response.status_code == 200, response.status_code
        assert response.headers["content-type"].startswith("text/event-stream")
        self._lines: AsyncIterator[str] = response.aiter_lines()
        self.fields: dict[str, str] = {}

    async def next(self) -> dict[str, Any] | None:
        """The next event, or None when the server ended the stream."""
        current: dict[str, Any] = {}
        async for line in self._lines:
            if line == "":
                if "data" in current:
                    current["data"] = json.loads(current["data"])
                    return current
                self.fields.update(current)
                current = {}
            elif not line.startswith(":"):
                name, _, value = line.partition(":")
                current[name] = value.removeprefix(" ")
        return None

    async def comment(self) -> str:
        """The next comment line (an event before it is an error)."""
        async for line in self._lines:
            if line.startswith(":"):
                return line[1:].strip()
            assert line == "", f"expected a comment, got {line!r}"
        raise AssertionError("the stream ended early")

    async def take(self, count: int) -> list[dict[str, Any]]:
        got = []
        for _ in range(count):
            event = await self.next()
            assert event is not None, "the stream ended early"
            got.append(event)
        return got


async def history(api: Api, run_id: str) -> list[dict[str, Any]]:
    async with api.client("aud") as c:
        page = (await c.get(f"/api/runs/{run_id}/events", params={"limit": "1000"})).json()
    items: list[dict[str, Any]] = page["items"]
    return items


async def test_a_client_that_reconnects_with_last_event_id_receives_every_event_once(api: Api) -> None:
    run = await create_run(api)
    rid = run["run_id"]
    grant = await lease(api, rid)
    for q in ("a", "b", "c"):
        await api.gateway.gate.call(grant["token"], "shop__find", {"q": q})
    received: list[dict[str, Any]] = []
    async with api.client("aud") as c:
        with anyio.fail_after(WAIT):
            async with c.stream("GET", f"/api/runs/{rid}/events", headers=STREAM) as r:
                reader = Reader(r)
                received += await reader.take(3)  # of 5: the client leaves mid-stream
        # While it is away: a write (admitted, settled), a pause and a resume.
        assert (await api.gateway.gate.call(grant["token"], "shop__charge", {"card": "ok"})).code is None
        async with api.client("op") as ops:
            assert (await ops.post(f"/api/runs/{rid}/pause", json={})).status_code == 200
            assert (await ops.post(f"/api/runs/{rid}/resume", json={})).status_code == 200
        missed = len(await history(api, rid)) - len(received)
        with anyio.fail_after(WAIT):
            resume = {**STREAM, "Last-Event-ID": received[-1]["id"]}
            async with c.stream("GET", f"/api/runs/{rid}/events", params={"cursor": "1"}, headers=resume) as r:
                reader = Reader(r)
                received += await reader.take(missed)
                # Still open: an entry committed now arrives too.
                await api.gateway.gate.call(grant["token"], "shop__find", {"q": "live"})
                received += await reader.take(1)
    expected = await history(api, rid)
    assert [e["id"] for e in received] == [str(n) for n in range(1, len(expected) + 1)]
    assert [e["data"] for e in received] == expected
    assert [e["event"] for e in received] == [e["type"] for e in expected]
    assert reader.fields["retry"] == str(sse.RETRY_MS)


async def test_a_quiet_stream_sends_keepalive_comments(api: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sse, "HEARTBEAT_S", 0.05)
    run = await create_run(api)
    async with api.client("aud") as c:
        with anyio.fail_after(WAIT):
            async with c.stream("GET", f"/api/runs/{run['run_id']}/events", headers=STREAM) as r:
                reader = Reader(r)
                assert [e["event"] for e in await reader.take(1)] == ["run_created"]
                assert await reader.comment() == "keepalive"
                async with api.client("op") as ops:  # and the stream still follows the run
                    await ops.post(f"/api/runs/{run['run_id']}/lease", json={"worker": "w"})
                assert [e["event"] for e in await reader.take(1)] == ["lease_granted"]


async def test_a_terminal_run_keeps_streaming_what_reconciliation_appends(api: Api) -> None:
    run, _, action_id = await unknown_action(api)
    rid = run["run_id"]
    async with api.client("op") as ops:
        assert (await ops.post(f"/api/runs/{rid}/cancel", json={})).json()["status"] == "cancelled"
        before = len(await history(api, rid))
        with anyio.fail_after(WAIT):
            async with ops.stream("GET", f"/api/runs/{rid}/events", headers=STREAM) as r:
                reader = Reader(r)
                assert (await reader.take(before))[-1]["event"] == "run_cancelled"
                resolved = await ops.post(
                    f"/api/actions/{action_id}/resolve", json={"status": "failed", "evidence": "no charge on file"}
                )
                assert resolved.status_code == 200, resolved.text
                late = await reader.take(1)
    assert late[0]["event"] == "action_settled"
    assert late[0]["data"]["data"]["action_id"] == action_id


async def test_a_stream_ends_when_the_client_leaves(api: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    ended = anyio.Event()
    serve = sse.EventStream.__call__

    async def watched(self: sse.EventStream, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await serve(self, scope, receive, send)
        finally:
            ended.set()

    monkeypatch.setattr(sse.EventStream, "__call__", watched)
    run = await create_run(api)
    async with api.client("aud") as c:
        with anyio.fail_after(WAIT):
            async with c.stream("GET", f"/api/runs/{run['run_id']}/events", headers=STREAM) as r:
                await Reader(r).take(1)
                assert not ended.is_set()
    with anyio.fail_after(WAIT):
        await ended.wait()


async def test_a_stream_ends_when_the_server_shuts_down(api: Api) -> None:
    assert api.server is not None
    run = await create_run(api)
    async with api.client("aud") as c:
        with anyio.fail_after(WAIT):
            async with c.stream("GET", f"/api/runs/{run['run_id']}/events", headers=STREAM) as r:
                reader = Reader(r)
                await reader.take(1)
                api.server.should_exit = True
                assert await reader.next() is None  # the server ended the stream, it did not hang


async def test_stream_requests_are_scoped_and_checked_before_streaming(api: Api) -> None:
    run = await create_run(api)
    path = f"/api/runs/{run['run_id']}/events"
    async with api.client("other") as c:
        foreign = await c.get(path, headers=STREAM)
    async with api.client("appr") as c:
        forbidden = await c.get(path, headers=STREAM)
    async with api.client("aud") as c:
        garbled = await c.get(path, headers={**STREAM, "Last-Event-ID": "seven"})
    assert (foreign.status_code, foreign.json()["error"]["code"]) == (404, "not_found")
    assert (forbidden.status_code, forbidden.json()["error"]["code"]) == (403, "forbidden")
    assert (garbled.status_code, garbled.json()["error"]["code"]) == (422, "invalid_cursor")


async def test_the_json_list_pages_by_seq_and_ends_with_a_null_cursor(api: Api) -> None:
    run = await create_run(api)
    grant = await lease(api, run["run_id"])
    await api.gateway.gate.call(grant["token"], "shop__find", {"q": "a"})
    seqs: list[int] = []
    cursor: str | None = None
    async with api.client("aud") as c:
        for _ in range(5):
            params = {"limit": "1", **({"cursor": cursor} if cursor else {})}
            page = (await c.get(f"/api/runs/{run['run_id']}/events", params=params)).json()
            seqs += [e["seq"] for e in page["items"]]
            cursor = page["next_cursor"]
            if cursor is None:
                break
    assert seqs == [1, 2, 3]


async def test_a_revoked_keys_stream_ends_within_a_second_without_any_setting(api: Api) -> None:
    run = await create_run(api)
    created = await create_key(api, "watcher2", ["auditor"])
    path = f"/api/runs/{run['run_id']}/events"
    async with with_key(api, created["key"]) as c, c.stream("GET", path, headers=STREAM) as r:
        reader = Reader(r)
        with anyio.fail_after(WAIT):
            assert (await reader.next()) is not None  # run_created: the stream is live
            async with api.client("ops") as ops:
                assert (await ops.post(f"/api/keys/{created['key_id']}/revoke", json={})).status_code == 200
        # KEY_RECHECK_S (0.5) plus one poll: well within a second, with room for a loaded machine.
        with anyio.fail_after(1.5):
            while (await reader.next()) is not None:
                pass
