"""Limits at the edges: body and result size caps, rate limits, the per-run concurrency cap.

    LimitSettings      `limits:` in warrant.yaml, as the gateway uses it
    RateLimited        `rate_limited`, HTTP 429 with `Retry-After` (the API)
    check_api_rate     one API request against its tenant's and its key's rates (one store transaction)
    BodyCap            /mcp: a body over the cap is HTTP 413 with a JSON-RPC error, before any parsing
    cap_result         a downstream result over the cap: a read fails, a performed write is withheld

Tool calls are limited inside the admit transaction (gateway/store/sql/limits.py), so they
cost no extra round trip; the arithmetic is gateway/domain/limits.py. docs/limits.md says what
each limit does and why.
"""

from __future__ import annotations

import json
from collections import deque
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from gateway.adapters.base import Outcome, OutcomeKind
from gateway.domain.limits import CONCURRENCY_RETRY_S, CallLimits, Rate, RateLimits, retry_after_header
from gateway.domain.refusals import RefusalLimits
from gateway.errors import Code, InvalidRequest, WarrantError

if TYPE_CHECKING:
    from gateway.store.ports import RateStore
    from gateway.store.records import Principal

MiB = 2**20
DRAIN_MAX = 16 * MiB  # bytes of an over-cap body read and dropped before the 413; past it the connection is closed


@dataclass(frozen=True)
class LimitSettings:
    """`limits:` in warrant.yaml. Size caps and the concurrency cap are on by default; rates are off
    until an operator sets them (docs/limits.md says why)."""

    max_request_body: int = MiB
    max_tool_result: int = 8 * MiB
    run_concurrency: int | None = 16
    rate: RateLimits = field(default_factory=RateLimits)
    refusals: RefusalLimits = field(default_factory=RefusalLimits)

    def for_call(self, tenant: str, run_id: str) -> CallLimits:
        """A tools/call counts against its tenant and its run (the run is the lease's key: a new
        lease or a takeover does not start the count again)."""
        return CallLimits(self.run_concurrency, _rates(self.rate, tenant, f"run:{run_id}"))

    def for_api(self, principal: Principal) -> tuple[tuple[str, Rate], ...]:
        """An API request counts against its tenant and its API key."""
        key = f"key:{principal.key_id}" if principal.key_id else f"key:config:{principal.name}"
        return _rates(self.rate, principal.tenant, key)


def _rates(rate: RateLimits, tenant: str, key: str) -> tuple[tuple[str, Rate], ...]:
    scopes: list[tuple[str, Rate]] = []
    if rate.per_tenant is not None:
        scopes.append((f"tenant:{tenant}", rate.per_tenant))
    if rate.per_key is not None:
        scopes.append((key, rate.per_key))
    return tuple(scopes)


class RateLimited(WarrantError):
    """Too many requests for a tenant, a key or a run: try again after `retry_after_s`."""

    code = Code.RATE_LIMITED
    http_status = 429

    def headers(self) -> dict[str, str]:
        return {"Retry-After": retry_after_header(float(self.details.get("retry_after_s", CONCURRENCY_RETRY_S)))}


def too_large(what: str, cap: int) -> InvalidRequest:
    error = InvalidRequest(f"the {what} is larger than {cap} bytes", code=Code.PAYLOAD_TOO_LARGE, max_bytes=cap)
    return error.with_status(413)


async def check_api_rate(store: RateStore, limits: LimitSettings, principal: Principal) -> None:
    """Raises: RateLimited when the principal's tenant or key is over its rate (nothing is counted then)."""
    scopes = limits.for_api(principal)
    if not scopes:
        return
    refused = await store.take_rate(scopes)
    if refused is not None:
        scope, wait = refused
        raise RateLimited(
            f"too many requests for this {scope.partition(':')[0]}; try again in {retry_after_header(wait)} s",
            limit=scope.partition(":")[0],
            retry_after_s=round(wait, 3),
        )


# -- /mcp ----------------------------------------------------------------------------------------
class BodyCap:
    """ASGI wrapper for /mcp: a request body over `cap` bytes is answered 413 with a JSON-RPC error
    body (id null: it was never parsed), by its Content-Length when it declares one, else once the
    bytes read pass the cap. A body within the cap reaches `app` whole, as one message."""

    def __init__(self, app: ASGIApp, cap: int) -> None:
        self.app = app
        self.cap = cap

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length", b"")
        if declared.isdigit() and int(declared) > self.cap:
            await self._refuse(receive, send, 0)
            return
        chunks: list[bytes] = []
        size = 0
        cached: deque[Message] = deque()
        while True:
            message = await receive()
            if message["type"] != "http.request":
                cached.append(message)  # the client went away: the app hears it
                break
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.cap:
                await self._refuse(receive, send, size, more=message.get("more_body", False))
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        cached.appendleft({"type": "http.request", "body": b"".join(chunks), "more_body": False})

        async def replay() -> Message:
            return cached.popleft() if cached else await receive()

        await self.app(scope, replay, send)

    async def _refuse(self, receive: Receive, send: Send, read: int, *, more: bool = True) -> None:
        # The rest of the body is read and dropped (up to DRAIN_MAX), so that the client, still
        # writing it, reads this answer instead of a connection reset.
        while more and read <= DRAIN_MAX:
            rest = await receive()
            if rest["type"] != "http.request":
                return
            read += len(rest.get("body", b""))
            more = rest.get("more_body", False)
        message = f"[payload_too_large] the request body is larger than {self.cap} bytes"
        error = {"code": -32600, "message": message, "data": {"code": Code.PAYLOAD_TOO_LARGE, "max_bytes": self.cap}}
        data = json.dumps({"jsonrpc": "2.0", "id": None, "error": error}).encode()
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]
        headers.append((b"connection", b"close"))
        await send({"type": "http.response.start", "status": 413, "headers": headers})
        await send({"type": "http.response.body", "body": data})


# -- downstream results -----------------------------------------------------------------------------
def result_size(outcome: Outcome) -> int:
    """Bytes of a result as the agent would receive it (its content blocks and structured content, JSON)."""
    body = {"content": outcome.content, "structured": outcome.structured}
    return len(json.dumps(body, ensure_ascii=False, separators=(",", ":"), default=str).encode())


def cap_result(outcome: Outcome, cap: int) -> Outcome:
    """A succeeded outcome whose result is over `cap` bytes, with its body withheld (`withheld` set).

    The adapter may have withheld it already (it stopped reading); either way the gate answers
    `payload_too_large`: a write stays succeeded (it was performed), a read fails."""
    if outcome.kind is not OutcomeKind.SUCCEEDED:
        return outcome
    size = outcome.withheld
    if size is None:
        size = result_size(outcome)
        if size <= cap:
            return outcome
    receipt: dict[str, Any] = {**(outcome.receipt or {}), "withheld": True, "result_bytes": size}
    return replace(outcome, content=[], structured=None, receipt=receipt, withheld=size)


def withheld_text(size: int, cap: int, *, write: bool) -> str:
    over = f"the tool's result ({size} bytes seen) is over the gateway's cap of {cap} bytes"
    if write:
        return f"{over}: the write WAS performed and is recorded as succeeded with its receipt; the result is withheld"
    return f"{over}; it is not passed on"
