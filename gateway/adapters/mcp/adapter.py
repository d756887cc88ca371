"""Downstream MCP servers (`kind: mcp`): over stdio (`command`) or streamable HTTP (`url`).

    name: files
    kind: mcp
    command: [python, examples/mcp_files_server.py]   # or url: http://127.0.0.1:9000/mcp (+ headers)
    pin: first_use                                    # or manual (gateway/catalog/pins.py)
    timeout: 30                                       # seconds per call; tools: {name: {timeout, expose_as}}

One supervising task per downstream owns its `mcp.Client`: it enters and exits the client in that
same task (the SDK's cancel scopes demand it), lists the tools, publishes the client for calls,
watches it, and reconnects with exponential backoff and jitter when the child dies or the URL
stops answering. Calls only use the published client, and check that it is still open first.
The tools are listed again on every reconnect, every `refresh_every` seconds (the liveness probe:
the current protocol has no ping), and on `notifications/tools/list_changed` where the server
sends it (2025-11-25 sessions); listeners (the pins) hear of each listing.

How a call ends (DESIGN.md's action lifecycle):

    no open connection within the call's bound: nothing sent        not_sent   upstream_unavailable
    the server answered isError                                      failed     upstream_failed, its text
    a JSON-RPC error meaning "not processed" (-32600/1/2)            failed     upstream_failed
    no answer in time, connection lost after sending, other errors   write: unknown
                                                                     read:  retried within its timeout,
                                                                            then failed upstream_unavailable
    an answer                                                        succeeded, `_meta` stamps stripped

The gateway's idempotency key travels in `_meta["warrant/idempotency_key"]`; the agent's lease
token never leaves the gateway. Cancelling `call` cancels the downstream request (the SDK sends
`notifications/cancelled`; the lean path closes the request's connection).

Over streamable HTTP, a downstream that speaks the 2026-07-28 protocol and answers in plain JSON
gets its calls through a lean path (gateway/adapters/mcp/lean_client.py: one POST on a kept-alive
connection, about a fifth of the SDK client's CPU); its failures map to the same outcomes. The
lean path and its HTTP/1.1 pool are accelerators (gateway/accelerators.py `mcp_client`, `http11`):
off, the SDK client (or, for the pool, httpx2) serves.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import sys
from collections.abc import AsyncIterator, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Literal, TextIO

import anyio
import httpx2
import mcp.types as types
from mcp import Client, MCPError, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from pydantic import BaseModel, ConfigDict, Field, model_validator

from gateway import __version__, accelerators
from gateway.adapters.base import Adapter, CallRequest, Listener, Outcome, OutcomeKind, ToolDefinition
from gateway.adapters.http.http11 import Http11Pool
from gateway.adapters.http.httpx_pool import HttpxPool
from gateway.backoff import backoff_delay
from gateway.bounded import BoundedSet
from gateway.canonical import canonical_json, sha256_hex
from gateway.errors import Code

if TYPE_CHECKING:
    from gateway.adapters.mcp.lean_client import LeanCaller, Pool

log = logging.getLogger("warrant.adapters.mcp")

IDEMPOTENCY_META = "warrant/idempotency_key"
RESERVED_META_PREFIX = "io.modelcontextprotocol/"
READ_ATTEMPTS = 3
UNSENT_MAX = 1024  # idempotency keys of calls that never connected, remembered per adapter
DEADLINE_SHARE = 0.9  # the adapter answers within this share of the call's timeout, before the gate's own
PROBE_EVERY = 1.0  # seconds between checks that the connection is still open (no I/O)
MAX_PAGES = 100
_NOT_PROCESSED = frozenset({types.INVALID_REQUEST, types.METHOD_NOT_FOUND, types.INVALID_PARAMS})
CLIENT_INFO = types.Implementation(name="warrant", version=__version__)


class ToolOverride(BaseModel):
    model_config = ConfigDict(extra="forbid")
    timeout: float | None = Field(None, gt=0, le=3600)
    expose_as: str | None = None


class McpAdapterConfig(BaseModel):
    """An adapter document of kind `mcp`, after `${NAME}` interpolation (gateway/config.py)."""

    model_config = ConfigDict(extra="forbid")
    name: str
    kind: Literal["mcp"] = "mcp"
    command: list[str] | None = Field(None, min_length=1)
    cwd: str | None = None
    env: dict[str, str] = Field(default_factory=dict)
    url: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    pin: Literal["first_use", "manual"] = "first_use"
    trust_read_only_hint: bool = False
    timeout: float = Field(30.0, gt=0, le=3600)
    connect_wait: float = Field(5.0, ge=0, le=300)  # how long a call waits for a lost connection to return
    start_wait: float = Field(10.0, ge=0, le=300)  # how long start-up waits for the first listing
    refresh_every: float = Field(30.0, gt=0)
    lean_http: bool = True  # calls over one plain POST when the downstream answers JSON statelessly; false: SDK
    tools: dict[str, ToolOverride] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _one_transport(self) -> McpAdapterConfig:
        if (self.command is None) == (self.url is None):
            raise ValueError("give exactly one of command (stdio) or url (streamable HTTP)")
        if self.url is not None:
            if not self.url.startswith(("http://", "https://")):
                raise ValueError("url must be an http:// or https:// URL")
            if self.env or self.cwd:
                raise ValueError("env and cwd are for a command; a url takes headers")
        if self.command is not None and self.headers:
            raise ValueError("headers are for a url; a command takes env")
        return self


class McpAdapter(Adapter):
    """One downstream MCP server as an `Adapter`: its tools for the catalog, its calls as `Outcome`s.

    Owns the supervising task and, through it, the one `mcp.Client` of this downstream (entered
    and exited in that task), the tools as last listed (or restored from the pins until the first
    listing), the listeners told of each listing, the lean path's connections and caller when
    the downstream passed its probe (and the `mcp_client` accelerator is on), and the idempotency
    keys of calls whose request never connected (so such a write is `not_sent`, not `unknown`).

    Invariants: a call uses only the published client, and only while it is open; a write gets
    one attempt (reads are retried within their timeout), and leaves the lean path for the SDK
    client only when the server did not process it (`Fallback`); every call answers within
    `DEADLINE_SHARE` of its timeout, before the gate's own bound; the agent's lease token never
    reaches the downstream, the gateway's idempotency key does (`_meta`).

    Built from an adapter document by gateway/config.py (`kind: mcp`, after interpolation), then
    `start()`ed by the app, which waits up to `start_wait` for the first listing; `close()` stops
    the supervisor and the child process or connections.
    """

    def __init__(
        self,
        config: McpAdapterConfig,
        *,
        errlog: TextIO | None = None,
        accelerators: accelerators.Accelerators | None = None,
    ) -> None:
        """`accelerators`: whether the lean path (`mcp_client`) and its HTTP/1.1 pool (`http11`)
        serve; None: as gateway/accelerators.py decides for the installed SDK."""
        self.name = config.name
        self.pin = config.pin
        self.trust_read_only_hint = config.trust_read_only_hint
        self.connections = 0  # connections established so far (metrics, tests)
        self._config = config
        self._errlog = errlog
        self._definitions: list[ToolDefinition] = []
        self._live = False  # the definitions come from a listing, not from the pins
        self._listeners: list[Listener] = []
        self._client: Client | None = None
        self._up = asyncio.Event()  # set while a client is published
        self._listed = asyncio.Event()  # the first listing happened
        self._wake = asyncio.Event()  # the supervisor looks at its connection now
        self._refresh_wanted = False
        self._refreshed = asyncio.Event()
        self._unsent: BoundedSet[str] = BoundedSet(UNSENT_MAX)  # idempotency keys whose POST never connected
        self._task: asyncio.Task[None] | None = None
        self._accelerators = accelerators
        self._pool: Pool | None = None  # the lean path's connections (url only)
        self._lean: LeanCaller | None = None  # set while the published client's downstream passed the probe

    @property
    def lean(self) -> bool:
        """Whether calls take the lean HTTP path now (gateway/adapters/mcp/lean_client.py)."""
        return self._lean is not None and self._lean.enabled

    # -- Adapter -----------------------------------------------------------------------------
    def definitions(self) -> list[ToolDefinition]:
        return list(self._definitions)

    def watch(self, listener: Listener) -> None:
        self._listeners.append(listener)

    def restore(self, definitions: Sequence[ToolDefinition]) -> None:
        if not self._live:
            self._definitions = [self._local(d) for d in definitions]

    async def start(self) -> None:
        """Start the supervisor and wait (bounded by `start_wait`) for the first listing."""
        if self._task is None:
            self._task = asyncio.create_task(self._supervise(), name=f"warrant mcp adapter {self.name}")
        with anyio.move_on_after(self._config.start_wait):
            await self._listed.wait()
        if not self._listed.is_set():
            log.warning(
                "MCP server %s did not list its tools within %g s; starting with its %d pinned tool(s)",
                self.name,
                self._config.start_wait,
                len(self._definitions),
            )

    async def close(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            # The SDK bounds a stdio child's shutdown (close stdin, SIGTERM, SIGKILL) itself.
            await asyncio.wait({task}, timeout=30)
        if self._pool is not None:
            await self._pool.aclose()

    async def refresh(self) -> None:
        """List the tools now (after a change the server does not announce). Returns once listed."""
        self._refresh_wanted = True
        self._refreshed.clear()
        self._wake.set()
        await self._refreshed.wait()

    def destination(self, tool: str, arguments: Any) -> str:
        over = "stdio" if self._config.command is not None else "streamable HTTP"
        return f"tool {tool} of the downstream MCP server of adapter {self.name} (over {over})"

    async def call(self, request: CallRequest) -> Outcome:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + request.timeout * DEADLINE_SHARE
        meta: Any = {IDEMPOTENCY_META: request.idempotency_key} if request.idempotency_key else None
        attempts = 1 if request.write else READ_ATTEMPTS
        for attempt in range(attempts):
            client = await self._connection(deadline)
            remaining = deadline - loop.time()
            if client is None or remaining <= 0:
                if attempt == 0:
                    return Outcome(
                        OutcomeKind.NOT_SENT,
                        code=Code.UPSTREAM_UNAVAILABLE,
                        message=f"the MCP server {self.name} is not reachable",
                    )
                break
            try:
                result = await self._call_tool(client, request, meta, remaining / (attempts - attempt))
            except MCPError as exc:
                outcome = self._error(exc, request)
                if outcome is None:
                    continue
                return outcome
            except Exception as exc:
                # An answer the SDK would not accept (a result that breaks its output schema, ...).
                log.warning("MCP server %s: unreadable answer to %s: %s", self.name, request.tool, type(exc).__name__)
                unreadable = f"the answer of the MCP server {self.name} was unreadable"
                return _uncertain(request, Code.UPSTREAM_FAILED, unreadable)
            return to_outcome(result)
        return Outcome(
            OutcomeKind.FAILED,
            code=Code.UPSTREAM_UNAVAILABLE,
            message=f"no answer from the MCP server {self.name} within {request.timeout:g} s ({attempts} attempts)",
        )

    # -- calls -------------------------------------------------------------------------------
    async def _call_tool(self, client: Client, request: CallRequest, meta: Any, within: float) -> types.CallToolResult:
        lean = self._lean
        if lean is not None and lean.client is client and lean.enabled:
            try:
                return await lean.call_tool(request.tool, request.arguments, meta, within)
            except lean.fallback as exc:
                log.info("MCP server %s: %s; this call goes through the SDK client", self.name, exc)
        return await client.call_tool(request.tool, request.arguments, read_timeout_seconds=within, meta=meta)

    async def _connection(self, deadline: float) -> Client | None:
        """The published client if it is open, else wait (bounded) for the supervisor's next one."""
        loop = asyncio.get_running_loop()
        until = min(deadline, loop.time() + self._config.connect_wait)
        while True:
            client = self._client
            if client is not None:
                if not _closed(client):
                    return client
                self._unpublish(client)
                self._wake.set()
            remaining = until - loop.time()
            if remaining <= 0:
                return None
            with anyio.move_on_after(remaining):
                await self._up.wait()

    def _error(self, exc: MCPError, request: CallRequest) -> Outcome | None:
        """The outcome of a call the SDK answered with an error; None: retry this read."""
        if exc.code == types.CONNECTION_CLOSED:
            self._wake.set()
            if request.idempotency_key is not None and request.idempotency_key in self._unsent:
                return Outcome(
                    OutcomeKind.NOT_SENT,
                    code=Code.UPSTREAM_UNAVAILABLE,
                    message=f"the MCP server {self.name} could not be reached",
                )
            if request.write:
                return _uncertain(request, Code.UPSTREAM_UNAVAILABLE, f"the connection to {self.name} was lost")
            return None
        if exc.code == types.REQUEST_TIMEOUT:
            if request.write:
                return _uncertain(request, Code.UPSTREAM_UNAVAILABLE, f"no answer from {self.name} in time")
            return None
        if exc.code in _NOT_PROCESSED:
            return Outcome(
                OutcomeKind.FAILED,
                code=Code.UPSTREAM_FAILED,
                message=f"the MCP server {self.name} refused the call: {exc.message}"[:2000],
            )
        # An internal error of the server (or a code of its own): it may have acted before failing.
        return _uncertain(request, Code.UPSTREAM_FAILED, f"the MCP server {self.name} failed: {exc.message}"[:2000])

    # -- the supervisor ----------------------------------------------------------------------
    async def _supervise(self) -> None:
        failures = 0
        while True:
            reason = "the connection closed"
            try:
                async with self._open() as client:
                    await self._probe(client)  # first: start() returns once listed, lean or not
                    await self._list(client)
                    self._publish(client)
                    failures = 0
                    await self._watch(client)
            except BaseException as exc:  # an ExceptionGroup around a connect error, a spawn failure, a timeout
                task = asyncio.current_task()
                if isinstance(exc, KeyboardInterrupt | SystemExit) or (task is not None and task.cancelling()):
                    raise  # close(), or the process is going down
                reason = _describe(exc)
            finally:
                self._unpublish(None)
            failures += 1
            delay = backoff_delay(failures)
            log.warning("MCP server %s: %s; reconnecting in %.1f s", self.name, reason, delay)
            await asyncio.sleep(delay)

    @contextlib.asynccontextmanager
    async def _open(self) -> AsyncIterator[Client]:
        config = self._config
        async with contextlib.AsyncExitStack() as stack:
            if config.command is not None:
                params = StdioServerParameters(
                    command=config.command[0], args=config.command[1:], env=config.env or None, cwd=config.cwd
                )
                transport: Any = stdio_client(params, errlog=_child_stderr(self._errlog))
            else:
                assert config.url is not None
                slowest = max([config.timeout, *(t.timeout or 0 for t in config.tools.values())])
                http = await stack.enter_async_context(
                    httpx2.AsyncClient(
                        headers=config.headers,
                        transport=_TrackingTransport(self._unsent),
                        timeout=httpx2.Timeout(2 * slowest + 30, connect=min(10.0, config.timeout)),
                    )
                )
                transport = streamable_http_client(config.url, http_client=http)
            client = Client(
                transport,
                cache=None,
                message_handler=self._on_message,
                client_info=CLIENT_INFO,
            )
            yield await stack.enter_async_context(client)

    async def _list(self, client: Client) -> None:
        """List every tool (all pages); tell the listeners. Raises on any failure: reconnect."""
        tools: list[types.Tool] = []
        cursor: str | None = None
        with anyio.fail_after(self._config.timeout):
            for _ in range(MAX_PAGES):
                page = await client.list_tools(cursor=cursor)
                tools.extend(page.tools)
                cursor = page.next_cursor
                if cursor is None:
                    break
        if self._lean is not None and self._lean.client is client:
            self._lean.learn(tools)
        definitions = [self._local(_definition(tool)) for tool in tools]
        changed = not self._live or _fingerprint(definitions) != _fingerprint(self._definitions)
        self._definitions, self._live = definitions, True
        self._refresh_wanted = False
        if changed:
            for listener in self._listeners:
                try:
                    await listener(self)
                except Exception:
                    log.exception("a listener of MCP server %s failed", self.name)
        self._listed.set()
        self._refreshed.set()

    async def _watch(self, client: Client) -> None:
        """Until the connection is found closed: probe it, list again when asked or when due."""
        loop = asyncio.get_running_loop()
        due = loop.time() + self._config.refresh_every
        while True:
            self._wake.clear()
            with anyio.move_on_after(max(0.0, min(PROBE_EVERY, due - loop.time()))):
                await self._wake.wait()
            if _closed(client) or self._client is not client:
                return
            if self._refresh_wanted or loop.time() >= due:
                await self._list(client)
                due = loop.time() + self._config.refresh_every

    async def _probe(self, client: Client) -> None:
        """Set up the lean path when the downstream speaks 2026-07-28 and answers in plain JSON."""
        self._lean = None
        fence = self._accelerators or accelerators.default()
        if self._config.url is None or not self._config.lean_http or not fence.on(accelerators.MCP_CLIENT):
            return
        try:
            from gateway.adapters.mcp.lean_client import LeanCaller, lean_version
        except ImportError as exc:  # a name it takes from the SDK moved: the SDK client serves
            accelerators.gone(accelerators.MCP_CLIENT, exc)
            return
        version = lean_version(client)
        if version is None:
            return
        if self._pool is None:
            pool = Http11Pool if fence.on(accelerators.HTTP11) else HttpxPool
            try:
                self._pool = pool(self._config.url, self._config.headers, min(10.0, self._config.timeout))
            except ValueError as exc:  # a configured header this path cannot write as it is
                log.info("MCP server %s: calls go through the SDK client (%s)", self.name, exc)
                return
        info = CLIENT_INFO.model_dump(by_alias=True, mode="json", exclude_none=True)
        lean = LeanCaller(client, self._pool, version, info, self._unsent)
        if await lean.probe(self._config.timeout):
            self._lean = lean  # its x-mcp-header maps come with the listing
        else:
            log.info("MCP server %s does not answer in plain JSON: calls go through the SDK client", self.name)

    async def _on_message(self, message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            self._refresh_wanted = True
            self._wake.set()

    def _publish(self, client: Client) -> None:
        self._client = client
        self.connections += 1
        self._up.set()
        log.info("MCP server %s connected (%d tools)", self.name, len(self._definitions))

    def _unpublish(self, client: Client | None) -> None:
        """Withdraw `client` (None: whatever is published)."""
        if client is None or self._client is client:
            self._client = None
            self._lean = None
            self._up.clear()

    def _local(self, definition: ToolDefinition) -> ToolDefinition:
        """A downstream definition with this gateway's settings for it: timeout and alias."""
        override = self._config.tools.get(definition.name)
        return replace(
            definition,
            timeout=(override.timeout if override is not None and override.timeout else self._config.timeout),
            expose_as=override.expose_as if override is not None else None,
        )


class _TrackingTransport(httpx2.AsyncBaseTransport):
    """Remembers the idempotency keys of calls whose POST never reached the server (connect
    failed), so such a write is `not_sent` rather than `unknown`."""

    def __init__(self, unsent: BoundedSet[str]) -> None:
        self._inner = httpx2.AsyncHTTPTransport()
        self._unsent = unsent

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        try:
            return await self._inner.handle_async_request(request)
        except (httpx2.ConnectError, httpx2.ConnectTimeout):
            key = _idempotency_key_of(request)
            if key is not None:
                self._unsent.add(key)
            raise

    async def aclose(self) -> None:
        await self._inner.aclose()


def _idempotency_key_of(request: httpx2.Request) -> str | None:
    if request.method != "POST":
        return None
    try:
        body = json.loads(request.content)
        key = body["params"]["_meta"][IDEMPOTENCY_META]
    except (ValueError, TypeError, KeyError, httpx2.RequestNotRead):
        return None
    return key if isinstance(key, str) else None


def _child_stderr(explicit: TextIO | None) -> Any:
    """Where a stdio child's stderr goes: a stream with a file descriptor (a captured or replaced
    `sys.stderr` may have none, and the child could not start), else None: the gateway's own fd 2."""
    for stream in (explicit, sys.stderr, sys.__stderr__):
        try:
            if stream is not None:
                stream.fileno()
                return stream
        except (AttributeError, OSError, ValueError):
            continue
    return None


def _closed(client: Client) -> bool:
    """Whether the client's connection is known to be closed (a dead child, a torn-down transport).

    The SDK has no public flag; its session's dispatcher's `_closed` is a private name
    (gateway/accelerators.py `DISPATCHER_CLOSED`): missing, the connection counts as open (logged
    once) until a call or a listing on it fails. Pinned by tests/adapters/test_mcp_adapter.py (a
    killed child is noticed without a call).
    """
    try:
        session = client.session
    except Exception:
        return True  # not entered, or exited
    closed = getattr(getattr(session, "_dispatcher", None), "_closed", None)
    if not isinstance(closed, bool):
        accelerators.missing(accelerators.DISPATCHER_CLOSED)
        return False
    return closed


def _definition(tool: types.Tool) -> ToolDefinition:
    annotations = None
    if tool.annotations is not None:
        annotations = tool.annotations.model_dump(by_alias=True, mode="json", exclude_none=True)
    return ToolDefinition(
        name=tool.name,
        description=tool.description or "",
        input_schema=dict(tool.input_schema),
        annotations=annotations or None,
        output_schema=dict(tool.output_schema) if tool.output_schema is not None else None,
    )


def _fingerprint(definitions: Sequence[ToolDefinition]) -> list[tuple[str, str, str]]:
    return sorted((d.name, d.sha256(), json.dumps(d.annotations, sort_keys=True)) for d in definitions)


def to_outcome(result: types.CallToolResult) -> Outcome:
    """A downstream result as the gate records it: stamps stripped, isError a failure with its text."""
    content = [strip_stamps(b.model_dump(by_alias=True, mode="json", exclude_none=True)) for b in result.content]
    if result.is_error:
        text = " ".join(str(b.get("text", "")) for b in content if b.get("type") == "text").strip()
        return Outcome(
            OutcomeKind.FAILED, content=content, code=Code.UPSTREAM_FAILED, message=(text or "the tool failed")[:2000]
        )
    structured = result.structured_content
    try:
        digest = sha256_hex(canonical_json({"content": content, "structured": structured}))
    except ValueError:  # a number RFC 8785 cannot write (NaN): digest the plain JSON instead
        digest = sha256_hex(json.dumps({"content": content, "structured": structured}, sort_keys=True).encode())
    receipt: dict[str, Any] = {"digest": digest}
    if isinstance(structured, dict) and isinstance(structured.get("id"), str | int):
        receipt["id"] = structured["id"]
    return Outcome(OutcomeKind.SUCCEEDED, content=content, structured=structured, receipt=receipt)


def strip_stamps(value: Any) -> Any:
    """Drop the downstream's `_meta` stamps (server info, reserved `io.modelcontextprotocol/*` keys)."""
    if isinstance(value, list):
        return [strip_stamps(v) for v in value]
    if not isinstance(value, dict):
        return value
    out: dict[str, Any] = {}
    for key, item in value.items():
        if key == "_meta" and isinstance(item, dict):
            kept = {k: v for k, v in item.items() if not k.startswith(RESERVED_META_PREFIX) and k != "serverInfo"}
            if kept:
                out[key] = kept
        else:
            out[key] = strip_stamps(item)
    return out


def _uncertain(request: CallRequest, read_code: str, message: str) -> Outcome:
    if request.write:
        return Outcome(OutcomeKind.UNKNOWN, code=Code.OUTCOME_UNKNOWN, message=message)
    return Outcome(OutcomeKind.FAILED, code=read_code, message=message)


def _describe(exc: BaseException) -> str:
    """One line about why a connection ended, without secrets (no URLs with credentials, no headers)."""
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(_describe(e) for e in exc.exceptions[:3])
    if isinstance(exc, TimeoutError):
        return "no answer in time"
    if isinstance(exc, MCPError):
        return f"error {exc.code}"
    if isinstance(exc, OSError):
        return f"cannot start or reach it ({type(exc).__name__}: {exc.strerror or exc})"
    return type(exc).__name__
