"""A small pool of kept-alive HTTP/1.1 connections to one origin, for one POST at a time each.

The lean downstream MCP path (gateway/adapters/mcp/lean_client.py) sends one JSON POST per tool call.
httpx2 + httpcore2 cost about 1.4 ms of CPU per such request on the benchmark's machine, h11
alone (framing only) 0.5 ms, this 0.25 ms. It does only what that path needs: it writes one
request shape, and reads an answer strictly by RFC 9112's framing rules (1xx skipped; chunked,
Content-Length, or until close; `Connection: close` and HTTP/1.0 end the connection). No
redirects, proxies, cookies, compression or HTTP/2; TLS with the same default context httpx2
builds. An answer it cannot frame is `Lost`, never guessed at.

What a failure means for the request, which the caller turns into an outcome:

    Unsent       nothing was written: the connection could not be opened in time
    TimeoutError the request was written (or may have been); no complete answer in time
    Lost         the connection failed or the answer was not valid HTTP, after writing began
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import ssl
import time
from dataclasses import dataclass
from urllib.parse import urlsplit

from gateway.bounded import BoundedDict

IDLE_FOR = 2.0  # seconds an idle connection is kept: below common server keep-alive timeouts (uvicorn: 5 s)
IDLE_MAX = 32  # idle connections kept at most
LINES_KEPT = 256  # distinct header sets whose encoded lines are kept (a tool's, its Mcp-Param values)
READ_SIZE = 65536
MAX_BODY = 64 * 1024 * 1024  # an answer larger than this is not read to its end
_STATUS = re.compile(rb"HTTP/1\.([01]) ([1-9][0-9][0-9])(?: [^\r\n]*)?")
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_VALUE = re.compile(r"[\t\x20-\x7e\x80-\xff]*")


class Unsent(Exception):
    """Nothing of the request left this process."""


class Lost(Exception):
    """The connection failed (or answered with something that is not HTTP) after the request was sent."""


class _Unframed(Exception):
    """An answer this reader does not frame (a malformed or unsupported head)."""


@dataclass(frozen=True)
class Answer:
    status: int
    headers: dict[str, str]  # lower-case names; a repeated header keeps its last value
    body: bytes


class _Connection:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.reusable = False  # the last answer was read to its end and the server keeps the connection
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
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        self._tls: ssl.SSLContext | None = None
        if parts.scheme == "https":
            import httpx2  # the same trust store and settings as the SDK path's client

            self._tls = httpx2.create_ssl_context()
        default_port = self.port == (443 if self._tls is not None else 80)
        authority = f"[{self.host}]" if ":" in self.host else self.host
        fixed = [("host", authority if default_port else f"{authority}:{self.port}")]
        fixed += [(name.lower(), value) for name, value in headers.items() if name.lower() != "host"]
        self._head = f"POST {target} HTTP/1.1\r\n".encode() + header_lines(fixed)
        self._connect_timeout = connect_timeout
        self._idle: list[_Connection] = []
        self._closed = False
        # Checked and encoded header lines by the headers asked for: a tool's calls repeat theirs.
        self._lines: BoundedDict[tuple[tuple[str, str], ...], bytes] = BoundedDict(LINES_KEPT)

    async def post(self, body: bytes, headers: list[tuple[str, str]], within: float) -> Answer:
        """One POST and its whole answer.

        Raises:
            ValueError: a header that cannot be sent as it is (nothing was sent).
            Unsent: no connection could be opened within the connect timeout (or `within` seconds).
            TimeoutError: no complete answer within `within` seconds once the request was being written.
            Lost: the connection failed after writing began, or the answer was not valid HTTP.
        """
        lines = self._lines.get(key := tuple(headers))
        if lines is None:
            lines = header_lines(headers)  # raises before anything is remembered
            self._lines.put(key, lines)
        request = b"%s%scontent-length: %d\r\n\r\n%s" % (self._head, lines, len(body), body)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + within
        connection = self._reuse()
        if connection is None:
            connection = await self._connect(min(self._connect_timeout, max(0.0, deadline - loop.time())))
        done = False
        try:
            async with asyncio.timeout_at(deadline):
                answer = await self._exchange(connection, request)
            done = True
        except TimeoutError:
            raise  # an OSError too: not a lost connection, no answer in time
        except (OSError, EOFError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, _Unframed) as exc:
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
        if self._closed or not connection.reusable:
            connection.close()  # `Connection: close`, HTTP/1.0, or an answer read until close
            return
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

    async def _exchange(self, connection: _Connection, request: bytes) -> Answer:
        connection.reusable = False
        connection.writer.write(request)
        await connection.writer.drain()
        reader = connection.reader
        while True:
            status, version, names = _parse_head(await reader.readuntil(b"\r\n\r\n"))
            if status >= 200:
                break  # 1xx: another head follows
        keep = version == 1 and "close" not in _tokens(names.get("connection", ""))
        encoding = names.get("transfer-encoding")
        if status in (204, 304):
            data = b""
        elif encoding is not None:
            if _tokens(encoding)[-1:] != ["chunked"]:
                data, keep = await _until_close(reader), False
            else:
                data = await _chunked(reader)
            keep = keep and "content-length" not in names
        elif "content-length" in names:
            length = names["content-length"]
            if not length.isdigit() or int(length) > MAX_BODY:
                raise _Unframed("content-length")
            data = await reader.readexactly(int(length))
        else:
            data, keep = await _until_close(reader), False
        connection.reusable = keep
        return Answer(status, names, data)


def header_lines(headers: list[tuple[str, str]]) -> bytes:
    """Header lines to send. Raises: ValueError for a name or value that would break the request."""
    lines = []
    for name, value in headers:
        if not _TOKEN.fullmatch(name) or not _VALUE.fullmatch(value):
            raise ValueError(f"header {name!r} cannot be sent as it is")
        lines.append(f"{name}: {value}\r\n")
    return "".join(lines).encode("latin-1")


def _parse_head(head: bytes) -> tuple[int, int, dict[str, str]]:
    """Status, minor version and headers (lower-case names; a repeated header: its values joined by ", ")."""
    lines = head[:-4].split(b"\r\n")
    match = _STATUS.fullmatch(lines[0])
    if match is None:
        raise _Unframed("status line")
    names: dict[str, str] = {}
    for line in lines[1:]:
        name, colon, value = line.decode("latin-1").partition(":")
        if not colon or not _TOKEN.fullmatch(name):
            raise _Unframed("header line")  # an obsolete line fold included
        key, value = name.lower(), value.strip(" \t")
        if key == "content-length" and key in names and names[key] != value:
            raise _Unframed("two content-lengths")
        names[key] = f"{names[key]}, {value}" if key in names and key != "content-length" else value
    return int(match.group(2)), int(match.group(1)), names


def _tokens(value: str) -> list[str]:
    return [token.strip().lower() for token in value.split(",") if token.strip()]


async def _chunked(reader: asyncio.StreamReader) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while True:
        line = await reader.readuntil(b"\r\n")
        digits = line[:-2].split(b";", 1)[0].strip()
        if not digits or any(c not in b"0123456789abcdefABCDEF" for c in digits):
            raise _Unframed("chunk size")
        length = int(digits, 16)
        if length == 0:
            while await reader.readuntil(b"\r\n") != b"\r\n":
                pass  # trailer fields
            return b"".join(chunks)
        size += length
        if size > MAX_BODY:
            raise _Unframed("too large")
        chunks.append((await reader.readexactly(length + 2))[:-2])


async def _until_close(reader: asyncio.StreamReader) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while data := await reader.read(READ_SIZE):
        size += len(data)
        if size > MAX_BODY:
            raise _Unframed("too large")
        chunks.append(data)
    return b"".join(chunks)
