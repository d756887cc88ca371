"""The guarded fetcher against real loopback HTTP servers that record every request they receive.

One server's host:port is in artifact_hosts; the other's is not, and must never hear from the
fetcher: not when a URI names it, and not when the allowed server redirects there.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import anyio
import pytest

from gateway.domain import ArtifactRef, SourceRef, milestone_status
from gateway.tools import Fetcher, run_checks
from gateway.tools.evidence import recheck_source
from tests.harness import WAIT, answer_lifespan, uvicorn_serving

pytestmark = pytest.mark.anyio

MAX_BYTES = 64 * 1024
TIMEOUT = 0.5
INVENTORY = b'[{"vendor": "a"}, {"vendor": "b"}]'


@dataclass
class Recorder:
    """A raw ASGI app: records (method, path) of every request, answers by path."""

    redirect_to: str = ""
    etag: str = '"v1"'
    body: bytes = INVENTORY
    requests: list[tuple[str, str]] = field(default_factory=list)
    release: asyncio.Event = field(default_factory=asyncio.Event)  # lets /slow answer at teardown

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            await answer_lifespan(receive, send)
            return
        self.requests.append((scope["method"], scope["path"]))
        path = scope["path"]
        if path == "/inventory.json":
            await self._answer(send, 200, self.body, [(b"etag", self.etag.encode())])
        elif path == "/redirect":
            await self._answer(send, 302, b"", [(b"location", f"{self.redirect_to}/inventory.json".encode())])
        elif path == "/big":  # no content-length: the cap must hold while streaming
            await send({"type": "http.response.start", "status": 200, "headers": []})
            chunk = b"x" * 16384
            for _ in range(MAX_BYTES // len(chunk) + 2):
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await send({"type": "http.response.body", "body": b""})
        elif path == "/big-declared":
            await self._answer(send, 200, b"x" * (MAX_BYTES + 1), [])
        elif path == "/slow":
            await send({"type": "http.response.start", "status": 200, "headers": []})
            await send({"type": "http.response.body", "body": b"partial", "more_body": True})
            await self.release.wait()
            await send({"type": "http.response.body", "body": b""})
        else:
            await self._answer(send, 404, b"not here", [])

    @staticmethod
    async def _answer(send: Any, status: int, body: bytes, headers: list[tuple[bytes, bytes]]) -> None:
        headers = [*headers, (b"content-length", str(len(body)).encode())]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})


@dataclass
class Servers:
    allowed: Recorder
    allowed_url: str
    forbidden: Recorder
    forbidden_url: str
    fetcher: Fetcher


@pytest.fixture
async def servers() -> AsyncIterator[Servers]:
    allowed, forbidden = Recorder(), Recorder()
    async with uvicorn_serving(forbidden) as forbidden_url, uvicorn_serving(allowed) as allowed_url:
        allowed.redirect_to = forbidden_url
        host = allowed_url.removeprefix("http://")
        fetcher = Fetcher([], [host], max_bytes=MAX_BYTES, timeout=TIMEOUT)
        try:
            yield Servers(allowed, allowed_url, forbidden, forbidden_url, fetcher)
        finally:
            allowed.release.set()
            forbidden.release.set()
            await fetcher.aclose()


async def test_an_artifact_on_an_allowed_host_is_fetched_and_verified(servers: Servers) -> None:
    uri = f"{servers.allowed_url}/inventory.json"
    read = await servers.fetcher.read(uri)
    assert (read.ok, read.body, read.etag, read.status) == (True, INVENTORY, '"v1"', 200)

    ref = ArtifactRef("inventory", uri, hashlib.sha256(INVENTORY).hexdigest())
    checks = [
        {"artifact": "inventory", "schema": {"type": "array", "minItems": 2}},
        {"http": {"url": uri, "status": 200, "contains": "vendor"}},
    ]
    results = await run_checks(checks, {"inventory": ref}, None, servers.fetcher, {})
    assert milestone_status(results) == ("verified", [])
    assert servers.allowed.requests == [("GET", "/inventory.json")] * 3
    assert servers.forbidden.requests == []


async def test_a_host_port_not_in_artifact_hosts_is_never_requested(servers: Servers) -> None:
    uri = f"{servers.forbidden_url}/inventory.json"
    read = await servers.fetcher.read(uri)
    assert not read.ok and "artifact_hosts" in (read.reason or "")
    assert not (await servers.fetcher.request(uri)).ok

    ref = ArtifactRef("inventory", uri, hashlib.sha256(INVENTORY).hexdigest())
    results = await run_checks(
        [{"artifact": "inventory"}, {"http": {"url": uri}}], {"inventory": ref}, None, servers.fetcher, {}
    )
    assert [r.status for r in results] == ["unverified", "unverified"]
    # The same port under another name for loopback is another host: not listed either.
    assert not (await servers.fetcher.read(servers.allowed_url.replace("127.0.0.1", "localhost"))).ok
    assert servers.forbidden.requests == []
    assert servers.allowed.requests == []


async def test_a_redirect_to_the_forbidden_server_is_not_followed(servers: Servers) -> None:
    read = await servers.fetcher.read(f"{servers.allowed_url}/redirect")
    assert (read.ok, read.status) == (False, 302) and "redirect" in (read.reason or "")

    [result] = await run_checks([{"http": {"url": f"{servers.allowed_url}/redirect"}}], {}, None, servers.fetcher, {})
    assert result.status == "unverified"
    assert servers.allowed.requests == [("GET", "/redirect")] * 2
    assert servers.forbidden.requests == []


async def test_a_body_past_max_bytes_is_refused(servers: Servers) -> None:
    for path in ("/big", "/big-declared"):
        read = await servers.fetcher.read(f"{servers.allowed_url}{path}")
        assert not read.ok and read.body is None and "max_bytes" in (read.reason or "")


async def test_a_slow_response_is_cut_by_the_timeout(servers: Servers) -> None:
    with anyio.fail_after(WAIT):
        read = await servers.fetcher.read(f"{servers.allowed_url}/slow")
        request = await servers.fetcher.request(f"{servers.allowed_url}/slow")
    assert not read.ok and "longer than" in (read.reason or "")
    assert not request.ok and "longer than" in (request.reason or "")


async def test_a_refused_connection_is_unreadable_not_an_error(servers: Servers) -> None:
    from tests.harness import free_port

    port = free_port()
    fetcher = Fetcher([], [f"127.0.0.1:{port}"], timeout=TIMEOUT)
    try:
        read = await fetcher.read(f"http://127.0.0.1:{port}/inventory.json")
    finally:
        await fetcher.aclose()
    assert not read.ok and read.reason


async def test_a_source_is_rechecked_by_its_etag(servers: Servers) -> None:
    uri = f"{servers.allowed_url}/inventory.json"
    source = SourceRef(uri, etag='"v1"')
    assert await recheck_source(source, servers.fetcher) == ("same", None)

    servers.allowed.etag = '"v2"'
    servers.allowed.body = b"[]"
    verdict, reason = await recheck_source(source, servers.fetcher)
    assert verdict == "changed" and '"v2"' in (reason or "")
    assert servers.forbidden.requests == []
