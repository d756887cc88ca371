"""Graceful shutdown: SIGTERM (or Ctrl-C) drains `warrant serve` before it exits (docs/operations.md).

    signal   → draining: `/healthz` answers 503 `{"status": "draining"}` so a load balancer stops
               sending; API and console writes are answered HTTP 503 `draining` with Retry-After
               (nothing done: safe to send to another replica); a new tool call is refused
               `draining` (retryable) before its admit, as a tool result the agent reads and the
               ledger records. Other MCP requests (tools/list, warrant_status) are still answered:
               an agent's client may list the tools again to check the result of its call in flight
             → calls in flight get `shutdown_grace` seconds to settle with their real outcome
             → the rest are aborted by the hard cancel's path: a write becomes `unknown` with the
               reason "gateway shut down" (reconciled later, never retried blindly), a read fails
             → uvicorn closes the listener and the connections (bounded by `CLOSE_WAIT_S`), the
               lifespan closes adapters and the store; exit 0.

A second Ctrl-C while draining exits at once: what is still in flight stays `admitted` and the
next start marks it `unknown` (store.mark_orphans_unknown), as after a crash.

uvicorn's own signal handling would close the listener at the first signal (no `/healthz` while
draining) and raise the signal again once stopped (exit status -15, not 0): `DrainingServer`
takes it over.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import socket
import time
from types import FrameType

import uvicorn
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from gateway import __version__
from gateway.errors import Code, Refusal
from gateway.gate.in_flight import InFlight

log = logging.getLogger("warrant.shutdown")

SHUT_DOWN_REASON = "gateway shut down"
RETRY_AFTER_S = 5  # what a refused client is told to wait (another replica may answer sooner)
CLOSE_WAIT_S = 3  # for the last responses and open streams once the calls settled
POLL_S = 0.02  # how often the drain looks whether the calls in flight have settled
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
FORCED_EXIT = 130  # the exit status after a second Ctrl-C (128 + SIGINT)


def draining_refusal() -> Refusal:
    return Refusal(
        Code.DRAINING,
        "the gateway is shutting down and admits no new call; nothing was done: call again shortly",
        retry_after=RETRY_AFTER_S,
    )


class Drain:
    """The process's drain: begun once, by the first SIGTERM or SIGINT.

    `in_flight`: the process's calls in flight (gateway/gate/in_flight.py), which the gate, built
    later in the app's lifespan, tracks its dispatches in.
    """

    def __init__(self, in_flight: InFlight) -> None:
        self.since: float | None = None  # monotonic time the drain began
        self.in_flight = in_flight

    @property
    def draining(self) -> bool:
        return self.since is not None

    def begin(self) -> None:
        """From now on nothing new is admitted (the front answers 503, the gate refuses)."""
        if self.since is None:
            self.since = time.monotonic()
        self.in_flight.refuse(draining_refusal())

    async def settle(self, grace: float) -> int:
        """Wait up to `grace` seconds for the calls in flight to settle, then abort the rest (they
        settle too: writes `unknown`, with the reason). Returns how many calls were aborted."""
        in_flight = self.in_flight
        try:
            async with asyncio.timeout(grace):
                while in_flight.busy():  # noqa: ASYNC110 - calls settle in their own tasks; polled, bounded
                    await asyncio.sleep(POLL_S)
            return 0
        except TimeoutError:
            return await in_flight.abort_all(SHUT_DOWN_REASON)


class DrainGuard:
    """ASGI middleware: while draining, `/healthz` says so and nothing new gets in."""

    def __init__(self, app: ASGIApp, drain: Drain) -> None:
        self.app = app
        self.drain = drain

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        since = self.drain.since
        if scope["type"] != "http" or since is None:
            await self.app(scope, receive, send)
            return
        path: str = scope["path"]
        headers = {"Retry-After": str(RETRY_AFTER_S)}
        if path == "/healthz":
            body = {"status": "draining", "version": __version__, "draining_for_s": round(time.monotonic() - since, 3)}
            response = JSONResponse(body, status_code=503, headers=headers)
        elif scope["method"] not in SAFE_METHODS and path != "/mcp":  # MCP: the gate refuses new calls
            response = JSONResponse({"error": draining_refusal().to_dict()}, status_code=503, headers=headers)
        else:  # MCP, and reads of the API and the console: an operator watches the drain
            await self.app(scope, receive, send)
            return
        await response(scope, receive, send)


class DrainingServer(uvicorn.Server):
    """uvicorn's server, whose first SIGTERM or SIGINT drains the gateway (`Drain`) before uvicorn's
    own shutdown; a second SIGINT exits at once (`forced`)."""

    def __init__(self, config: uvicorn.Config, drain: Drain, grace: float) -> None:
        super().__init__(config)
        self.drain = drain
        self.grace = grace
        self.forced = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._draining: asyncio.Task[None] | None = None

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        self._loop = asyncio.get_running_loop()
        await super().startup(sockets)

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        # Runs in the signal handler, between any two bytecodes of the loop: only flags and a
        # thread-safe hand-over to the loop here.
        if self._loop is None or not self.started:
            self.should_exit = True  # still starting: stop as uvicorn would, nothing is in flight
            return
        if self.drain.draining:
            if sig == signal.SIGINT:
                self.forced = self.force_exit = self.should_exit = True
            return
        self._loop.call_soon_threadsafe(self._begin, sig)

    def _begin(self, sig: int) -> None:
        if self._draining is None:
            self._draining = asyncio.create_task(self._drain(sig), name="drain")

    async def _drain(self, sig: int) -> None:
        name = signal.Signals(sig).name
        log.warning(
            "%s: draining; calls in flight get %g s to settle (a second Ctrl-C exits at once)", name, self.grace
        )
        self.drain.begin()
        try:
            aborted = await self.drain.settle(self.grace)
            if aborted:
                log.warning(
                    "%d call(s) did not settle within %g s: aborted, writes recorded unknown", aborted, self.grace
                )
            else:
                log.info("every call in flight settled")
        except Exception:
            log.exception("the drain failed; stopping anyway")
        finally:
            self.should_exit = True
