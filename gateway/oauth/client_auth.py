"""Client authentication at `/token` and `/revoke`: the SDK's `ClientAuthenticator`, against the
hash of the client's secret (`HashedSecrets`), and the client_id of a client that sends it only in
its HTTP Basic header (`ClientIdFromBasic`)."""

from __future__ import annotations

import base64
import binascii
from urllib.parse import parse_qsl, unquote, urlencode

from mcp.server.auth.middleware.client_auth import AuthenticationError, ClientAuthenticator
from mcp.shared.auth import OAuthClientInformationFull
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from gateway.oauth.credentials import secrets_equal
from gateway.oauth.provider import WarrantAuthorization


class HashedSecrets(ClientAuthenticator):
    """The SDK's client authentication for `/token` and `/revoke`, against the secret's SHA-256
    (what `register_client` kept) rather than the secret itself. Public clients (`none`) pass on
    their client_id alone, as the SDK's does: PKCE is what binds their code to them."""

    def __init__(self, provider: WarrantAuthorization) -> None:
        super().__init__(provider)
        self.warrant = provider

    async def authenticate_request(self, request: Request) -> OAuthClientInformationFull:
        form = await request.form()
        client_id = form.get("client_id")
        if not isinstance(client_id, str) or not client_id:
            raise AuthenticationError("Missing client_id")
        client = await self.warrant.get_client(client_id)
        if client is None:
            raise AuthenticationError("Invalid client_id")
        method = client.token_endpoint_auth_method
        if method == "none":
            return client
        presented: str | None = None
        if method == "client_secret_basic":
            header = request.headers.get("authorization", "")
            if not header.startswith("Basic "):
                raise AuthenticationError("Missing or invalid Basic authentication in Authorization header")
            try:
                decoded = base64.b64decode(header[6:], validate=True).decode("utf-8")
            except (ValueError, UnicodeDecodeError, binascii.Error):
                raise AuthenticationError("Invalid Basic authentication header") from None
            basic_id, sep, secret = decoded.partition(":")
            if not sep or unquote(basic_id) != client_id:
                raise AuthenticationError("Client ID mismatch in Basic auth")
            presented = unquote(secret)
        elif method == "client_secret_post":
            value = form.get("client_secret")
            presented = value if isinstance(value, str) else None
        else:
            raise AuthenticationError(f"Unsupported auth method: {method}")
        expected = await self.warrant.client_secret_digest(client_id)
        if not expected or not presented or not secrets_equal(expected, presented):
            raise AuthenticationError("Invalid client_secret")
        return client


class ClientIdFromBasic:
    """`/token` and `/revoke`: a client authenticating with HTTP Basic need not repeat its
    client_id in the form (RFC 6749 sections 2.3.1 and 4.1.3: the body's `client_id` is required
    only of a client that does not authenticate), and the TypeScript SDK does not. The SDK's
    handlers read the client_id from the form alone and refused such a request
    (`invalid_request: client_id: Field required`), so it is copied into the form from the
    header when the form lacks one. A form that names one is left as it is (HashedSecrets then
    holds it to the header's). Inside RequestBodyLimitMiddleware: the body is bounded already."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = dict(scope.get("headers") or []) if scope["type"] == "http" else {}
        media = headers.get(b"content-type", b"").split(b";")[0].strip().lower()
        basic = _basic_client_id(headers.get(b"authorization", b""))
        if basic is None or media != b"application/x-www-form-urlencoded":
            await self.app(scope, receive, send)
            return
        body = b""
        while True:
            message = await receive()
            if message["type"] != "http.request":
                await self.app(scope, receive, send)  # a disconnect: nothing to rewrite
                return
            body += message.get("body", b"")
            if not message.get("more_body", False):
                break
        if not any(name == "client_id" for name, _ in parse_qsl(body.decode("latin-1"), keep_blank_values=True)):
            body = (body + b"&" if body else b"") + urlencode({"client_id": basic}).encode()
        rewritten = [(k, v) for k, v in scope["headers"] if k.lower() != b"content-length"]
        rewritten.append((b"content-length", str(len(body)).encode()))
        sent = False

        async def replay() -> Message:
            nonlocal sent
            if sent:
                return await receive()
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self.app({**scope, "headers": rewritten}, replay, send)


def _basic_client_id(header: bytes) -> str | None:
    """The client_id of an `Authorization: Basic` header (form-urlencoded, RFC 6749 section
    2.3.1); None without one, or for one that does not decode (HashedSecrets refuses it)."""
    if not header.startswith(b"Basic "):
        return None
    try:
        decoded = base64.b64decode(header[6:], validate=True).decode("utf-8")
    except (ValueError, UnicodeDecodeError, binascii.Error):
        return None
    client_id, sep, _ = decoded.partition(":")
    return unquote(client_id) if sep and client_id else None
