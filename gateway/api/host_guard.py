"""Every route refuses a foreign `Host` while the gateway listens on loopback (DNS rebinding).

A page on another origin can make a browser on the operator's machine send requests to
127.0.0.1 under its own name (`Host: evil.example`); the SDK refuses those at `/mcp` only. This
middleware applies the same rule to the operator API, the console, `/healthz` and `/metrics`.
`listen.allowed_hosts` adds names or addresses (with or without a port) that may reach it too,
such as the IP a load balancer's health probe uses. Listening on any other interface, the
operator's TLS-terminating proxy decides the hosts (as the SDK does at `/mcp`): nothing is checked.
"""

from __future__ import annotations

from collections.abc import Iterable

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from gateway.errors import Code

LOOPBACK = ("127.0.0.1", "localhost", "::1")
_LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "[::1]"})


def guards(listen_host: str) -> bool:
    """Whether hosts are checked at all: only when listening on loopback."""
    return listen_host in LOOPBACK


def host_allowed(header: str | None, extra: frozenset[str]) -> bool:
    """Whether a `Host` header names the gateway: a loopback name on any port, or an `extra` entry
    (`name` on any port, `name:port` on that port only). Case-insensitive, as DNS names are."""
    if not header:
        return False
    host = header.strip().lower()
    if host in extra:
        return True
    name, sep, port = host.rpartition(":")
    if not sep or name.endswith(":") or (name.startswith("[") != name.endswith("]")):
        name, port = host, ""  # no port (an IPv6 literal's colons are inside its brackets)
    if port and not port.isdigit():
        return False
    return name in _LOOPBACK_NAMES or name in extra


class HostGuard:
    """ASGI middleware: a request whose `Host` is not the gateway's is answered 421."""

    def __init__(self, app: ASGIApp, allowed: Iterable[str] = ()) -> None:
        self.app = app
        self.allowed = frozenset(entry.strip().lower() for entry in allowed)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket"):
            header = next((v.decode("latin-1") for k, v in scope["headers"] if k == b"host"), None)
            if not host_allowed(header, self.allowed):
                body = {"error": {"code": Code.INVALID_HOST, "message": "the Host header does not name this gateway"}}
                await JSONResponse(body, status_code=421)(scope, receive, send)
                return
        await self.app(scope, receive, send)
