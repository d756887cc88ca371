"""The lean MCP path's HTTP/1.1 client (gateway/adapters/http/http11.py) against canned answers,
and against httpx2 (gateway/adapters/http/httpx_pool.py, what serves with `http11` off): the same
answer read from the same bytes, the same failure for bytes that are not an answer."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import anyio
import pytest

from gateway.adapters.http import Http11Pool, HttpxPool, Lost, Unsent
from tests.harness import free_port

pytestmark = pytest.mark.anyio

OK = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}"


@asynccontextmanager
async def canned(
    answer: Callable[[int], bytes], *, close: bool = False
) -> AsyncIterator[tuple[Http11Pool, list[asyncio.StreamWriter]]]:
    """A server answering each request on a connection with `answer(n)`; the list counts connections."""
    connections: list[asyncio.StreamWriter] = []

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted(connections, writer)
        try:
            n = 0
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = next(
                    int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.startswith(b"content-length")
                )
                await reader.readexactly(length)
                writer.write(answer(n))
                await writer.drain()
                n += 1
                if close:
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    pool = Http11Pool(f"http://127.0.0.1:{port}/mcp", {"Authorization": "Bearer downstream"}, 2.0)
    try:
        yield pool, connections
    finally:
        await pool.aclose()
        await stop(server, connections)


_HANDLERS: dict[asyncio.StreamWriter, asyncio.Task[object]] = {}  # each connection's handler task


def accepted(writers: list[asyncio.StreamWriter], writer: asyncio.StreamWriter) -> None:
    """A handler's first step: its connection is counted, and `stop` waits for the handler to end."""
    writers.append(writer)
    task = asyncio.current_task()
    assert task is not None
    _HANDLERS[writer] = task


async def stop(server: asyncio.Server, writers: list[asyncio.StreamWriter]) -> None:
    server.close()
    for writer in writers:
        writer.close()
    await server.wait_closed()
    # Python 3.11's wait_closed does not wait for the handlers: each sees its connection close and ends.
    with anyio.fail_after(10):
        await asyncio.gather(*(_HANDLERS.pop(writer) for writer in writers), return_exceptions=True)


async def post(pool: Http11Pool) -> tuple[int, dict[str, str], bytes]:
    answer = await pool.post(b'{"a":1}', [("content-type", "application/json")], 2.0)
    return answer.status, answer.headers, answer.body


async def test_a_kept_alive_connection_is_reused() -> None:
    async with canned(lambda n: OK) as (pool, connections):
        assert (await post(pool))[::2] == (200, b"{}")
        assert (await post(pool))[::2] == (200, b"{}")
    assert len(connections) == 1


@pytest.mark.parametrize(
    ("raw", "body", "reused"),
    [
        (
            b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n3;x=y\r\nabc\r\n2\r\nde\r\n0\r\nt: 1\r\n\r\n",
            b"abcde",
            True,
        ),
        (b"HTTP/1.1 100 Continue\r\n\r\n" + OK, b"{}", True),
        (b"HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\n\r\n", b"", True),
        (b"HTTP/1.1 200 OK\r\nconnection: close\r\ncontent-length: 2\r\n\r\n{}", b"{}", False),
        (b"HTTP/1.0 200 OK\r\ncontent-length: 2\r\n\r\n{}", b"{}", False),
    ],
)
async def test_answers_are_framed_by_rfc_9112(raw: bytes, body: bytes, reused: bool) -> None:
    async with canned(lambda n: raw) as (pool, connections):
        assert (await post(pool))[2] == body
        assert (await post(pool))[2] == body
    assert len(connections) == (1 if reused else 2)


async def test_an_answer_delimited_by_close_is_read_to_its_end() -> None:
    async with canned(lambda n: b"HTTP/1.1 200 OK\r\n\r\nall of it", close=True) as (pool, _):
        assert (await post(pool))[2] == b"all of it"


@pytest.mark.parametrize(
    "raw",
    [
        b"HTTP/2 200 OK\r\n\r\n",
        b"HTTP/1.1 200 OK\r\n folded\r\ncontent-length: 0\r\n\r\n",
        b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\ncontent-length: 3\r\n\r\n{}",
        b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n",
        b"HTTP/1.1 200 OK\r\ncontent-length: 9\r\n\r\n{}",
    ],
)
async def test_an_answer_that_cannot_be_framed_is_lost(raw: bytes) -> None:
    async with canned(lambda n: raw, close=True) as (pool, _):
        with pytest.raises(Lost):
            await post(pool)


async def test_no_listener_is_unsent_and_a_silent_server_times_out() -> None:
    pool = Http11Pool(f"http://127.0.0.1:{free_port()}/mcp", {}, 1.0)
    with pytest.raises(Unsent):
        await post(pool)

    writers: list[asyncio.StreamWriter] = []

    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted(writers, writer)
        await reader.read()  # never answers; returns when the client goes away

    server = await asyncio.start_server(silent, "127.0.0.1", 0)
    pool = Http11Pool(f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/", {}, 1.0)
    try:
        with pytest.raises(TimeoutError):
            await pool.post(b"{}", [], 0.2)
    finally:
        await pool.aclose()
        await stop(server, writers)


def test_a_header_that_would_break_the_request_is_refused() -> None:
    with pytest.raises(ValueError):
        Http11Pool("http://127.0.0.1:1/mcp", {"X-Evil": "a\r\nb: c"}, 1.0)
    with pytest.raises(ValueError):
        Http11Pool("ftp://127.0.0.1/mcp", {}, 1.0)


# -- http11 against httpx2, the path that serves with the `http11` accelerator off ----------------
ANSWERS = [
    OK,
    b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n3;x=y\r\nabc\r\n2\r\nde\r\n0\r\nt: 1\r\n\r\n",
    b"HTTP/1.1 100 Continue\r\n\r\n" + OK,
    b"HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\n\r\n",
    b"HTTP/1.1 204 No Content\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nconnection: close\r\ncontent-length: 2\r\n\r\n{}",
    b"HTTP/1.0 200 OK\r\ncontent-length: 2\r\n\r\n{}",
    b"HTTP/1.1 500 Internal Server Error\r\ncontent-type: text/plain\r\ncontent-length: 5\r\n\r\noops!",
    b"HTTP/1.1 404 Not Found\r\nX-Two: a\r\nx-two: b\r\ncontent-length: 0\r\n\r\n",
    b'HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 11\r\n\r\n{"a":"\xc3\xa9"}',
    b"HTTP/1.1 200 OK\r\ncontent-length: 1048576\r\n\r\n" + b"x" * 1048576,
    b"HTTP/1.1 200 OK\r\n\r\nall of it",  # delimited by close
]
UNFRAMED = [
    b"HTTP/2 200 OK\r\n\r\n",
    b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\ncontent-length: 3\r\n\r\n{}",
    b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n",
    b"HTTP/1.1 200 OK\r\ncontent-length: 9\r\n\r\n{}",
    b"not http at all\r\n\r\n",
]


async def through(pool_kind: type[Http11Pool] | type[HttpxPool], raw: bytes) -> tuple[int, dict[str, str], bytes] | str:
    """The answer `pool_kind` reads for `raw` (the server closes after it), or its failure's name."""
    writers: list[asyncio.StreamWriter] = []

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted(writers, writer)
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            length = next(
                int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")
            )
            await reader.readexactly(length)
            writer.write(raw)
            await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    pool = pool_kind(f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/mcp", {"Authorization": "Bearer d"}, 2.0)
    try:
        answer = await pool.post(b'{"a":1}', [("content-type", "application/json")], 2.0)
    except (Lost, Unsent, TimeoutError) as exc:
        return type(exc).__name__
    finally:
        await pool.aclose()
        await stop(server, writers)
    return answer.status, answer.headers, answer.body


@pytest.mark.differential
@pytest.mark.parametrize("raw", ANSWERS + UNFRAMED, ids=[f"answer {n}" for n in range(len(ANSWERS + UNFRAMED))])
async def test_http11_reads_every_answer_as_httpx2_does(raw: bytes) -> None:
    assert await through(Http11Pool, raw) == await through(HttpxPool, raw)


@pytest.mark.differential
async def test_both_pools_fail_alike_without_a_listener_and_without_an_answer() -> None:
    for kind in (Http11Pool, HttpxPool):
        pool = kind(f"http://127.0.0.1:{free_port()}/mcp", {}, 1.0)
        with pytest.raises(Unsent):
            await post(pool)
        await pool.aclose()
    with pytest.raises(ValueError):
        HttpxPool("http://127.0.0.1:1/mcp", {"X-Evil": "a\r\nb: c"}, 1.0)
    with pytest.raises(ValueError):
        await HttpxPool("http://127.0.0.1:1/mcp", {}, 1.0).post(b"", [("x-evil", "a\nb")], 1.0)
