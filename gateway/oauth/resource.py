"""`/mcp` as an OAuth 2.1 resource server (MCP authorization; RFC 6750, RFC 9728).

Every 401 of /mcp names the protected resource metadata (`WWW-Authenticate: Bearer
resource_metadata="..."`), which is how a spec client discovers where to sign in. An access token
(`wat_...`) is looked up by its hash on every request (one store read: a revocation holds at
once on every replica) and accepted only for this resource (RFC 8707 audience: the resource it
was issued for must be the /mcp the request reached); the request then goes on to the lease-token
front carrying the token of the lease its grant holds, so the gate decides as for any worker.
The access token itself goes no further than this class: downstream servers never see it.

Lease tokens and worker keys (`/mcp/runs/{id}`) keep working as before, for headless harnesses.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from gateway.oauth import credentials
from gateway.oauth.provider import WarrantAuthorization, request_base, resource_of, same_resource
from gateway.oauth.routes import RESOURCE_METADATA
from gateway.service import Gateway


class OAuthResource:
    def __init__(self, app: ASGIApp, provider: WarrantAuthorization, gateway_of: Callable[[], Gateway]) -> None:
        self.app = app
        self.provider = provider
        self.gateway_of = gateway_of

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        base = self.provider.settings.public_url or request_base(scope)
        metadata = f'resource_metadata="{base}{RESOURCE_METADATA}/mcp"'.encode()
        headers = list(scope.get("headers") or [])
        raw = dict(headers).get(b"authorization", b"").decode("latin-1")
        scheme, _, token = raw.partition(" ")
        token = token.strip()
        if scheme.lower() == "bearer" and token.startswith(credentials.ACCESS_PREFIX):
            lease_token, problem = await self._lease_token(token, resource_of(base))
            if lease_token is None:
                await _unauthorized(send, problem, metadata)
                return
            headers = [(k, v) for k, v in headers if k != b"authorization"]
            headers.append((b"authorization", f"Bearer {lease_token}".encode("latin-1")))
            scope = {**scope, "headers": headers}

        async def naming_metadata(message: Message) -> None:
            if message["type"] == "http.response.start" and message["status"] == 401:
                out = []
                for key, value in message.get("headers", []):
                    if key.lower() == b"www-authenticate" and b"resource_metadata" not in value:
                        value = value + b", " + metadata
                    out.append((key, value))
                message = {**message, "headers": out}
            await send(message)

        await self.app(scope, receive, naming_metadata)

    async def _lease_token(self, token: str, resource: str) -> tuple[str | None, str]:
        if not credentials.looks_like(credentials.ACCESS_PREFIX, token):
            return None, "unknown access token"
        gateway = self.gateway_of()
        row = await gateway.store.oauth_token(credentials.digest(token))
        if row is None or row.kind != "access":
            return None, "unknown or revoked access token: sign in again"
        grant = row.grant
        if grant.revoked_at is not None:
            return None, f"this sign-in was revoked ({grant.revoked_reason}): sign in again"
        if row.expires_at <= gateway.clock.now():
            return None, "the access token has expired: refresh it"
        if not same_resource(grant.resource, resource):
            return None, f"the access token was issued for {grant.resource}, not {resource}"
        return credentials.grant_lease_token(self.provider.lease_key, grant.grant_id, grant.salt), ""


async def _unauthorized(send: Send, message: str, metadata: bytes) -> None:
    body = json.dumps(
        {"jsonrpc": "2.0", "id": None, "error": {"code": -32001, "message": f"[unauthenticated] {message}"}}
    ).encode()
    challenge = b'Bearer realm="warrant", error="invalid_token", ' + metadata
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"www-authenticate", challenge),
    ]
    await send({"type": "http.response.start", "status": 401, "headers": headers})
    await send({"type": "http.response.body", "body": body})
