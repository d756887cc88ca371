"""A small pool of kept-alive HTTP/1.1 connections to one origin, for one POST at a time each.

The lean downstream MCP path (gateway/adapters/mcp_http.py) sends one JSON POST per tool call.
httpx2 + httpcore2 cost about 1.4 ms of CPU per such request on the benchmark's machine; this,
with h11 doing the HTTP/1.1 framing (chunked bodies, keep-alive, `Connection: close`), about
0.3 ms. It does only what that path needs: no redirects, proxies, cookies, compression or
HTTP/2; TLS with the same default context httpx2 builds.

What a failure means for the request, which the caller turns into an outcome:

    Unsent       nothing was written: the connection could not be opened in time
    TimeoutError the request was written (or may have been); no complete answer in time
    Lost         the connection failed or the answer was not valid HTTP, after writing began
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import time
from dataclasses import dataclass
from urllib.parse import urlsplit

import h11

IDLE_FOR = 2.0  # seconds an idle connection is kept: below common server keep-alive timeouts (uvicorn: 5 s)
IDLE_MAX = 32  # idle connections kept at most
READ_SIZE = 65536
MAX_BODY = 64 * 1024 * 1024  # an answer larger than this is not read to its end


class Unsent(Exception):
    """Nothing of the request left this process."""


class Lost(Exception):
    """The connection failed (or answered with something that is not HTTP) after the request was sent."""


@dataclass(frozen=True)
class Answer:
    status: int
    headers: dict[str, str]  # lower-case names; a repeated header keeps its last value
    body: bytes


class _Connection:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.h11 = h11.Connection(h11.CLIENT)
        self.idle_since = 0.0

    def usable(self, now: float) -> bool:
        """Still open as far as this process can tell (a server that closed it sent EOF, which was read)."""
        return (
            now - self.idle_since < IDLE_FOR
            and not self.reader.at_eof()
            and self.reader.exception() is None
            and not self.writer.is_closing()
        )

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.writer.close()


class Http11Pool:
    """POSTs to one URL over kept-alive connections: one connection per request in flight."""

    def __init__(self, url: str, headers: dict[str, str], connect_timeout: float) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError("an http:// or https:// URL is required")
        self.host = parts.hostname
        self.port = parts.port or (443 if parts.scheme == "https" else 80)
        self.target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        self._tls: ssl.SSLContext | None = None
        if parts.scheme == "https":
            import httpx2  # the same trust store and settings as the SDK path's client

            self._tls = httpx2.create_ssl_context()
        default_port = self.port == (443 if self._tls is not None else 80)
        authority = f"[{self.host}]" if ":" in self.host else self.host
        self._headers = [("host", authority if default_port else f"{authority}:{self.port}")]
        self._headers += [(name.lower(), value) for name, value in headers.items() if name.lower() != "host"]
        self._connect_timeout = connect_timeout
        self._idle: list[_Connection] = []
        self._closed = False

    async def post(self, body: bytes, headers: list[tuple[str, str]], within: float) -> Answer:
        """One POST and its whole answer.

        Raises:
            Unsent: no connection could be opened within the connect timeout (or `within` seconds).
            TimeoutError: no complete answer within `within` seconds once the request was being written.
            Lost: the connection failed after writing began, or the answer was not valid HTTP.
        """
        loop = asyncio.get_running_loop()
        deadline = loop.time() + within
        connection = self._reuse()
        if connection is None:
            connection = await self._connect(min(self._connect_timeout, max(0.0, deadline - loop.time())))
        done = False
        try:
            async with asyncio.timeout_at(deadline):
                answer = await self._exchange(connection, body, headers)
            done = True
        except (OSError, EOFError, h11.ProtocolError, asyncio.IncompleteReadError) as exc:
            raise Lost(type(exc).__name__) from exc
        finally:
            if not done:
                connection.close()
        self._release(connection)
        return answer

    async def aclose(self) -> None:
        self._closed = True
        idle, self._idle = self._idle, []
        for connection in idle:
            connection.close()

    def _reuse(self) -> _Connection | None:
        now = time.monotonic()
        while self._idle:
            connection = self._idle.pop()
            if connection.usable(now):
                return connection
            connection.close()
        return None

    def _release(self, connection: _Connection) -> None:
        state = connection.h11
        if self._closed or state.our_state is not h11.DONE or state.their_state is not h11.DONE:
            connection.close()  # `Connection: close`, HTTP/1.0, or an answer cut short
            return
        state.start_next_cycle()
        connection.idle_since = time.monotonic()
        self._idle.append(connection)
        if len(self._idle) > IDLE_MAX:
            self._idle.pop(0).close()

    async def _connect(self, within: float) -> _Connection:
        hostname = self.host if self._tls is not None else None
        try:
            async with asyncio.timeout(within):
                reader, writer = await asyncio.open_connection(
                    self.host, self.port, ssl=self._tls, server_hostname=hostname, limit=READ_SIZE
                )
        except (OSError, TimeoutError, ssl.SSLError) as exc:
            raise Unsent(type(exc).__name__) from exc
        return _Connection(reader, writer)

    async def _exchange(self, connection: _Connection, body: bytes, headers: list[tuple[str, str]]) -> Answer:
        state = connection.h11
        request = h11.Request(
            method="POST",
            target=self.target,
            headers=[*self._headers, *headers, ("content-length", str(len(body)))],
        )
        parts = [state.send(request), state.send(h11.Data(data=body)), state.send(h11.EndOfMessage())]
        connection.writer.write(b"".join(part for part in parts if part))
        await connection.writer.drain()
        response: h11.Response | None = None
        chunks: list[bytes] = []
        size = 0
        while True:
            event = state.next_event()
            if event is h11.NEED_DATA:
                data = await connection.reader.read(READ_SIZE)
                if not data:
                    raise EOFError("the connection closed before the answer ended")
                state.receive_data(data)
            elif isinstance(event, h11.Response):
                response = event
            elif isinstance(event, h11.Data):
                size += len(event.data)
                if size > MAX_BODY:
                    raise h11.RemoteProtocolError("the answer is too large")
                chunks.append(bytes(event.data))
            elif isinstance(event, h11.EndOfMessage):
                break
            elif isinstance(event, h11.ConnectionClosed):
                raise EOFError("the connection closed before the answer ended")
            # h11.InformationalResponse (1xx): wait for the final response
        assert response is not None
        names = {name.decode("latin-1"): value.decode("latin-1") for name, value in response.headers}
        return Answer(response.status_code, names, b"".join(chunks))
