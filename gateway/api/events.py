"""`GET /api/runs/{run_id}/events`: a run's history as JSON pages, or followed as Server-Sent Events.

Both read the durable history (the store's events table) and nothing else: a stream polls the
store every `POLL_S` for entries after the last one it sent, so an event committed by any process
or replica is seen, and nothing held in memory decides what a client gets.

A stream (`Accept: text/event-stream`) sends each entry as

    id: <seq>
    event: <type>
    data: <the entry as the JSON list shows it>

starting after the `Last-Event-ID` header (what a reconnecting EventSource sends), else after
`?cursor=` / `?after=`, else from the first entry. Sequence numbers are per run and an entry
becomes visible only after every lower one (the chain head serializes a run's appends), so a
client that resumes from the last id it received misses nothing and sees nothing twice.

It stays open while the client does, also after the run is terminal: reconciliation and an
operator's resolve still append entries then. A comment line (`: keepalive`) goes out after
`HEARTBEAT_S` without any other write, so proxies keep the connection. It ends when the client
disconnects, when the server begins a graceful shutdown, and when the store cannot answer (the
client resumes from its last id).
"""

from __future__ import annotations

import json
import logging
import signal
from collections.abc import Awaitable, Callable
from contextlib import suppress

import anyio
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import Receive, Scope, Send

from gateway.api.views import event_view
from gateway.errors import Code, InvalidRequest, WarrantError
from gateway.service import Gateway
from gateway.store.records import EventRecord

log = logging.getLogger("warrant.api")

POLL_S = 0.25  # how often an open stream asks the store for new entries
HEARTBEAT_S = 15.0  # the longest a stream stays silent
KEY_RECHECK_S = 0.5  # how often an open stream asks again whether its API key may still read (<= 1 s)
BATCH = 500  # entries read per store call while catching up
RETRY_MS = 2000  # what an EventSource waits before it reconnects
MAX_SEQ_DIGITS = 18  # a seq fits a signed 64-bit integer

Reader = Callable[[int], Awaitable[list[EventRecord]]]
Recheck = Callable[[], Awaitable[bool]]


def wants_stream(request: Request) -> bool:
    return "text/event-stream" in request.headers.get("accept", "").lower()


def start_after(request: Request) -> int:
    """The seq to start after. `Last-Event-ID` wins over the query: an EventSource reconnects to
    the URL it was opened with, cursor included, and says in the header how far it got.

    Raises: InvalidRequest `invalid_cursor` for anything but a seq.
    """
    raw = (
        request.headers.get("last-event-id")
        or request.query_params.get("cursor")
        or request.query_params.get("after")
        or "0"
    )
    if not (raw.isascii() and raw.isdigit() and len(raw) <= MAX_SEQ_DIGITS):
        raise InvalidRequest("the cursor must be the seq of the last event seen", code=Code.INVALID_CURSOR)
    return int(raw)


async def run_events(
    request: Request,
    tenant: str,
    gateway: Gateway,
    *,
    limit: int,
    recheck: Recheck | None = None,
    named: bool = True,
) -> Response:
    """A page of entries as JSON, or the stream. `recheck` answers whether the caller's key may
    still read (a stream outlives the request that authenticated it: a revoked key's stream ends
    within KEY_RECHECK_S, on every replica: it reads the store). `named=False` leaves out each
    frame's `event:` line, so that a browser's EventSource gets every entry as a `message` (the console's timeline).
    Raises: NotFound (also another tenant's run); InvalidRequest `invalid_cursor`."""
    run_id = request.path_params["run_id"]
    after = start_after(request)
    if wants_stream(request):
        await gateway.store.get_run(tenant, run_id)  # 404 as JSON, before the stream starts

        async def read(after: int) -> list[EventRecord]:
            return await gateway.store.list_events(tenant, run_id, after=after, limit=BATCH)

        return EventStream(read, after, recheck=recheck, named=named)
    events = await gateway.store.list_events(tenant, run_id, after=after, limit=limit + 1)
    more = len(events) > limit
    events = events[:limit]
    next_cursor = str(events[-1].seq) if more else None
    return JSONResponse({"items": [event_view(e) for e in events], "next_cursor": next_cursor})


def server_exiting() -> bool:
    """Whether the uvicorn serving this process has begun its graceful shutdown.

    uvicorn waits for every open response before it stops and tells the application nothing
    until they are done (the lifespan's shutdown comes after), so an endless stream would hold
    it forever. While it serves in the main thread its `Server.handle_exit` is the SIGTERM
    handler, which leads to its `should_exit` flag (sse-starlette, the MCP SDK's SSE library,
    finds it the same way). Elsewhere this is False, and a stream ends with its client.
    """
    server = getattr(signal.getsignal(signal.SIGTERM), "__self__", None)
    return getattr(server, "should_exit", False) is True


def frame(event: EventRecord, named: bool = True) -> bytes:
    data = json.dumps(event_view(event), ensure_ascii=False, separators=(",", ":"))
    name = f"event: {event.type}\n" if named else ""
    return f"id: {event.seq}\n{name}data: {data}\n\n".encode()


class EventStream(Response):
    """The ASGI response that follows a run's history; see the module docstring."""

    media_type = "text/event-stream"

    def __init__(
        self,
        read: Reader,
        after: int,
        *,
        exiting: Callable[[], bool] = server_exiting,
        recheck: Recheck | None = None,
        named: bool = True,
    ) -> None:
        self.status_code = 200
        self.background = None
        self._read = read
        self._recheck = recheck
        self._after = after
        self._exiting = exiting
        self._disconnected = False
        self._named = named
        self.init_headers({"cache-control": "no-store", "x-accel-buffering": "no"})

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await send({"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers})
        if scope.get("method") != "HEAD":
            async with anyio.create_task_group() as group:
                group.start_soon(self._watch_disconnect, receive, group.cancel_scope)
                try:
                    await self._pump(send)
                except OSError:  # an ASGI 2.4 server says so when the client is gone
                    self._disconnected = True
                finally:
                    group.cancel_scope.cancel()
        if not self._disconnected:
            with suppress(OSError):
                await send({"type": "http.response.body", "body": b"", "more_body": False})

    async def _watch_disconnect(self, receive: Receive, scope: anyio.CancelScope) -> None:
        while (await receive())["type"] != "http.disconnect":
            pass
        self._disconnected = True
        scope.cancel()

    async def _pump(self, send: Send) -> None:
        after = self._after
        await _write(send, f"retry: {RETRY_MS}\n\n".encode())
        last_write = last_check = anyio.current_time()
        while not self._exiting():
            if self._recheck is not None and anyio.current_time() - last_check >= KEY_RECHECK_S:
                if not await self._recheck():
                    log.info("an event stream ends: its API key may no longer read")
                    return
                last_check = anyio.current_time()
            try:
                events = await self._read(after)
            except WarrantError as error:
                log.warning("an event stream ends: the store did not answer (%s)", error.message)
                return
            if events:
                await _write(send, b"".join(frame(e, self._named) for e in events))
                after = events[-1].seq
                last_write = anyio.current_time()
                if len(events) >= BATCH:
                    continue  # catching up: no pause between batches
            elif anyio.current_time() - last_write >= HEARTBEAT_S:
                await _write(send, b": keepalive\n\n")
                last_write = anyio.current_time()
            await anyio.sleep(POLL_S)


async def _write(send: Send, chunk: bytes) -> None:
    await send({"type": "http.response.body", "body": chunk, "more_body": True})
