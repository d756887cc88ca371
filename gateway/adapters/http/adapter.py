"""HTTP APIs (`kind: http`): a REST API fronted by a YAML document, no code.

    http_config.py    the document: every field, the argument mapping rules
    http_mapping.py   arguments to a request (path, query string, JSON body)
    http_outcome.py   how an exchange ends: the classification table
    http.py           this adapter: one shared client, the bounded retry loop, the lookup

A call and all its retries end within `DEADLINE_SHARE` of the call's timeout, before the gate's
own bound: each attempt's timeout is what remains, and a wait that would pass the deadline is
not waited. Writes are retried only where the table says (a connect failure: nothing left; a
409/429/503 to a keyed write); reads also on timeouts and 5xx. At most `MAX_ATTEMPTS` attempts.
An answer's body is read up to the gateway's `limits.max_tool_result` (else `MAX_BODY`) bytes; a
2xx past it is a success whose body is withheld (the gate answers `payload_too_large`), unless
the tool's `receipt_status` must be read from the body to know (then malformed, as below).

`lookup` asks the tool's `lookup` request whether a call with this key happened: a 2xx answer
naming the object (`receipt_id`) proves it did; a 404 proves it did not only when asked at least
one tool timeout after dispatch and within `key_retention`; anything else answers None.

Only the configured headers leave (plus `User-Agent: warrant-gateway`, `Accept`, and the
gateway's key in `idempotency_header`): never the agent's lease token. Redirects are not
followed; the environment (proxies, .netrc) is not read.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import Any
from urllib.parse import urlencode

import httpx

from gateway import backoff
from gateway.adapters.base import Adapter, CallRequest, Outcome, OutcomeKind, ToolDefinition
from gateway.adapters.http.config import HttpAdapterConfig, HttpToolConfig
from gateway.adapters.http.mapping import MappingError, Planned, plan_call, plan_lookup
from gateway.adapters.http.outcome import (
    Answer,
    Exchange,
    Redactor,
    Retry,
    failed,
    on_error,
    on_response,
    settle,
    success,
)
from gateway.errors import Code

log = logging.getLogger("warrant.adapters.http")

USER_AGENT = "warrant-gateway"
DEADLINE_SHARE = 0.9  # the adapter answers within this share of the call's timeout, before the gate's own
MAX_ATTEMPTS = 6
MIN_ATTEMPT = 0.05  # seconds: an attempt with less time than this left is not started
MAX_BODY = 16 * 1024 * 1024  # bytes of an answer read (decoded); a longer 2xx is malformed, never success
CONNECT_TIMEOUT = 5.0  # seconds at most per connect, so a write whose connect failed can still be retried
_SENSITIVE = ("auth", "token", "secret", "key", "cookie", "password", "signature")


class HttpAdapter(Adapter):
    """Raises nothing for a destination's failure; see http_outcome.py for every outcome."""

    def __init__(
        self,
        config: HttpAdapterConfig,
        *,
        secrets: Iterable[str] = (),
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        self.name = config.name
        self.trust_read_only_hint = config.trust_read_only_hint
        self._config = config
        self._clock = clock
        self._wall_clock = wall_clock
        self._redactor = Redactor([*secrets, *_header_secrets(config)])
        self._definitions = [self._definition(name, tool) for name, tool in config.tools.items()]
        self._client: httpx.AsyncClient | None = None

    # -- Adapter -----------------------------------------------------------------------------
    def definitions(self) -> list[ToolDefinition]:
        return list(self._definitions)

    async def start(self) -> None:
        self._http()

    async def close(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            await client.aclose()

    def destination(self, tool: str, arguments: Any) -> str:
        config = self._config.tools.get(tool)
        if config is None or not isinstance(arguments, dict):
            return super().destination(tool, arguments)
        try:
            planned = plan_call(config, arguments, "IDEMPOTENCY_KEY")
        except MappingError:
            return super().destination(tool, arguments)
        query = f"?{urlencode(planned.params)}" if planned.params else ""
        return f"{planned.method} {planned.path}{query} on the {self.name} API (adapter {self.name}, tool {tool})"

    def keyed(self, tool: str) -> bool:
        config = self._config.tools.get(tool)
        return config is not None and config.idempotency_header is not None

    async def call(self, request: CallRequest) -> Outcome:
        tool = self._config.tools.get(request.tool)
        if tool is None:
            return Outcome(OutcomeKind.NOT_SENT, code=Code.TOOL_NOT_FOUND, message=f"{self.name} has no such tool")
        deadline = self._clock() + request.timeout * DEADLINE_SHARE
        try:
            planned = plan_call(tool, request.arguments, request.idempotency_key)
        except MappingError as exc:
            return Outcome(OutcomeKind.NOT_SENT, code=Code.INVALID_ARGUMENTS, message=str(exc))
        keyed = request.write and request.idempotency_key is not None and tool.idempotency_header is not None
        ex = Exchange(self.name, tool, request.write, keyed, self._redactor)
        last: Retry | None = None
        maybe_done = sent = False
        if request.one_attempt:  # the gate retries, under the tool's policy (docs/retries.md)
            step = await self._attempt(ex, planned, deadline - self._clock())
            if isinstance(step, Outcome):
                return step
            ended = settle(step.at_bound, write=request.write, maybe_done=step.maybe_done, sent=step.sent)
            return replace(ended, transient=step.cause or step.at_bound.code, retry_after=step.wait)
        for attempt in range(1, MAX_ATTEMPTS + 1):
            remaining = deadline - self._clock()
            if remaining < MIN_ATTEMPT:
                break
            step = await self._attempt(ex, planned, remaining)
            if isinstance(step, Outcome):
                return settle(step, write=request.write, maybe_done=maybe_done, sent=sent)
            last = step
            maybe_done, sent = maybe_done or step.maybe_done, sent or step.sent
            wait = step.wait if step.wait is not None else backoff.backoff_delay(attempt)
            if attempt == MAX_ATTEMPTS or self._clock() + wait > deadline - MIN_ATTEMPT:
                break
            code = step.at_bound.code
            log.debug("%s: %s attempt %d: %s; again in %.2f s", self.name, request.tool, attempt, code, wait)
            await backoff.sleep(wait)
        if last is None:
            return Outcome(OutcomeKind.NOT_SENT, code=Code.UPSTREAM_UNAVAILABLE, message="no time left to send it")
        return settle(last.at_bound, write=request.write, maybe_done=maybe_done, sent=sent)

    async def lookup(self, request: CallRequest, dispatched_at: float, now: float) -> Outcome | None:
        tool = self._config.tools.get(request.tool)
        if tool is None or tool.lookup is None or request.idempotency_key is None:
            return None
        try:
            planned = plan_lookup(tool, tool.lookup, request.arguments, request.idempotency_key)
            response = await self._send(planned, self._config.timeout_of(tool))
        except (MappingError, httpx.HTTPError) as exc:
            log.info("%s: lookup for %s got no answer (%s)", self.name, request.tool, type(exc).__name__)
            return None
        status = response.status
        if 200 <= status < 300:
            outcome = success(Exchange(self.name, tool, True, True, self._redactor), response)
            return outcome if isinstance(outcome, Outcome) else None
        if status == 404 and self._absence_counts(tool, now - dispatched_at):
            receipt = {"status": 404, "lookup": True}
            return failed(Code.UPSTREAM_FAILED, "the destination has no record of it", receipt)
        return None

    # -- internals ---------------------------------------------------------------------------
    async def _attempt(self, ex: Exchange, planned: Planned, remaining: float) -> Outcome | Retry:
        try:
            response = await self._send(planned, remaining)
        except httpx.HTTPError as exc:
            return on_error(ex, exc)
        return on_response(ex, response, self._wall_clock())

    async def _send(self, planned: Planned, seconds: float) -> Answer:
        """One exchange, all of it (a slow body too) within `seconds`, the body read up to `MAX_BODY`.

        Raises: httpx.HTTPError (httpx.ReadTimeout when the bound passes while the answer comes).
        """
        client = self._http()
        request = client.build_request(
            planned.method,
            planned.path,
            params=tuple(planned.params) if planned.params else None,
            json=planned.json,
            headers=planned.headers,
            timeout=httpx.Timeout(seconds, connect=min(seconds, CONNECT_TIMEOUT)),
        )
        try:
            async with asyncio.timeout(seconds):
                response = await client.send(request, stream=True)
                try:
                    body, complete = bytearray(), True
                    limit = self.max_result_bytes or MAX_BODY
                    async for chunk in response.aiter_bytes():
                        body += chunk
                        if len(body) > limit:
                            complete = False  # what was read is kept: its size is reported
                            break
                finally:
                    await response.aclose()
        except TimeoutError:
            raise httpx.ReadTimeout("no complete answer within the call's bound", request=request) from None
        try:
            text = bytes(body).decode(response.encoding or "utf-8", errors="replace")
        except LookupError:  # a charset Python does not know
            text = bytes(body).decode("utf-8", errors="replace")
        return Answer(response.status_code, response.headers, bytes(body), text, planned.method, complete)

    def _absence_counts(self, tool: HttpToolConfig, elapsed: float) -> bool:
        """A 404 proves "not done" only after the call's own bound, and while the key is remembered."""
        retention = self._config.key_retention
        return retention is not None and self._config.timeout_of(tool) <= elapsed <= retention

    def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            limits = httpx.Limits(
                max_connections=self._config.max_connections,
                max_keepalive_connections=min(self._config.max_connections, 20),
                keepalive_expiry=30.0,
            )
            self._client = httpx.AsyncClient(
                base_url=self._config.base_url,
                headers={"User-Agent": USER_AGENT, "Accept": "application/json", **self._config.headers},
                limits=limits,
                follow_redirects=False,
                trust_env=False,
            )
        return self._client

    def _definition(self, name: str, tool: HttpToolConfig) -> ToolDefinition:
        annotations: dict[str, Any] = dict(tool.annotations or {})
        if tool.read_only:
            annotations["readOnlyHint"] = True
        return ToolDefinition(
            name=name,
            description=tool.description,
            input_schema=tool.input_schema,
            annotations=annotations or None,
            timeout=self._config.timeout_of(tool),
            expose_as=tool.expose_as,
        )


def _header_secrets(config: HttpAdapterConfig) -> list[str]:
    """Values of headers whose names say they carry credentials, whole and without their scheme
    (`Bearer x` → `x`), written into the document itself rather than referenced."""
    headers = [config.headers, *(tool.headers for tool in config.tools.values())]
    out: list[str] = []
    for name, value in (item for h in headers for item in h.items()):
        if any(word in name.lower() for word in _SENSITIVE):
            out.extend([value, value.partition(" ")[2]])
    return out
