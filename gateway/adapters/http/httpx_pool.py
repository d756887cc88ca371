"""The lean MCP path's POSTs over httpx2: what serves when the `http11` accelerator is off.

The same interface as `Http11Pool` (gateway/adapters/http/http11.py), the same failures for the
same events, through the HTTP library the SDK client uses (httpx2 over httpcore2, its own
connection pool and TLS set-up, no proxies from the environment, as the MCP adapter's SDK
client). Slower (about 1.4 ms of CPU per request against 0.25 ms on the benchmark's machine),
and the reference the differential tests compare http11 with (tests/adapters/test_mcp_http11.py).

    Unsent       no connection could be opened in time: nothing was written
    TimeoutError no complete answer within the call's bound
    Lost         the connection failed, or the answer was not valid HTTP, after writing began
"""

from __future__ import annotations

import asyncio
from urllib.parse import urlsplit

import httpx2

from gateway.adapters.http.http11 import MAX_BODY, Answer, Lost, Unsent, header_lines


class HttpxPool:
    """POSTs to one URL through an httpx2 client."""

    def __init__(self, url: str, headers: dict[str, str], connect_timeout: float) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError("an http:// or https:// URL is required")
        fixed = [(name.lower(), value) for name, value in headers.items() if name.lower() != "host"]
        header_lines(fixed)  # a header Http11Pool would refuse is refused here too
        self._url = url
        self._connect_timeout = connect_timeout
        self._client = httpx2.AsyncClient(
            headers=dict(fixed), transport=httpx2.AsyncHTTPTransport(), follow_redirects=False
        )

    async def post(self, body: bytes, headers: list[tuple[str, str]], within: float) -> Answer:
        """One POST and its whole answer. Raises: as `Http11Pool.post`."""
        header_lines(headers)  # ValueError: nothing sent
        timeout = httpx2.Timeout(None, connect=max(0.0, min(self._connect_timeout, within)))
        try:
            async with asyncio.timeout(within):
                async with self._client.stream(
                    "POST", self._url, content=body, headers=headers, timeout=timeout
                ) as response:
                    chunks: list[bytes] = []
                    size = 0
                    async for chunk in response.aiter_bytes():
                        size += len(chunk)
                        if size > MAX_BODY:
                            raise Lost("too large")
                        chunks.append(chunk)
        except (httpx2.ConnectError, httpx2.ConnectTimeout) as exc:
            raise Unsent(type(exc).__name__) from exc
        except httpx2.TimeoutException as exc:
            raise TimeoutError(type(exc).__name__) from exc
        except httpx2.TransportError as exc:
            raise Lost(type(exc).__name__) from exc
        return Answer(response.status_code, dict(response.headers.items()), b"".join(chunks))

    async def aclose(self) -> None:
        await self._client.aclose()
