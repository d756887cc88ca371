"""The authorization server's HTTP surface, built from the MCP SDK's handlers
(`mcp.server.auth.handlers`): RFC 8414 and RFC 9728 metadata, `/authorize`, `/token` (PKCE S256,
codes once, refresh rotation), `/register` (RFC 7591) and `/revoke` (RFC 7009).

The metadata is computed per request from the gateway's address (`oauth.public_url`, else the
request's own scheme and Host), so the issuer and the resource are what the client itself used.
Clients' secrets are checked against their hashes (`HashedSecrets`): the store never holds one.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import parse_qsl, unquote, urlencode

from mcp.server.auth.errors import stringify_pydantic_error
from mcp.server.auth.handlers.authorize import AuthorizationHandler
from mcp.server.auth.handlers.register import RegistrationHandler
from mcp.server.auth.handlers.revoke import RevocationErrorResponse, RevocationHandler, RevocationRequest
from mcp.server.auth.handlers.token import TokenHandler
from mcp.server.auth.json_response import PydanticJSONResponse
from mcp.server.auth.middleware.client_auth import AuthenticationError, ClientAuthenticator
from mcp.server.auth.routes import build_metadata
from mcp.server.auth.settings import ClientRegistrationOptions, RevocationOptions
from mcp.server.transport_security import RequestBodyLimitMiddleware
from mcp.shared.auth import OAuthClientInformationFull, ProtectedResourceMetadata
from pydantic import AnyHttpUrl, ValidationError
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route, request_response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from gateway.oauth.credentials import secrets_equal
from gateway.oauth.provider import BASE_URL, SCOPES, WarrantAuthorization, resource_of, same_resource

MAX_BODY = 64 * 1024
RESOURCE_METADATA = "/.well-known/oauth-protected-resource"
# The authorization surface: OAuth's own endpoints and metadata, outside the operator API (no API
# key, no OpenAPI document; the metadata documents it).
PATHS = frozenset(
    {
        "/.well-known/oauth-authorization-server",
        RESOURCE_METADATA,
        RESOURCE_METADATA + "/mcp",
        "/authorize",
        "/token",
        "/register",
        "/revoke",
    }
)


def request_base(scope: Scope) -> str:
    """scheme://host[:port] as the client addressed this gateway."""
    headers = dict(scope.get("headers") or [])
    host = headers.get(b"host", b"").decode("latin-1")
    if not host:
        server = scope.get("server") or ("127.0.0.1", 80)
        host = f"{server[0]}:{server[1]}"
    return f"{scope.get('scheme', 'http')}://{host}"


class WithBase:
    """Sets the request's base URL for the provider (a context variable), then calls `app`."""

    def __init__(self, app: ASGIApp, public_url: str | None) -> None:
        self.app = app
        self.public_url = public_url

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        token = BASE_URL.set(self.public_url or request_base(scope))
        try:
            await self.app(scope, receive, send)
        finally:
            BASE_URL.reset(token)


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


class PublicRevocationRequest(RevocationRequest):
    client_secret: str | None = None


class Revocation(RevocationHandler):
    """The SDK's RFC 7009 handler, but for public clients too. The SDK's `RevocationRequest`
    declares `client_secret: str | None` with no default, so a public client's revocation (the
    token and its client_id, as RFC 7009 section 2.1 has it) is answered 400 `invalid_request`
    "client_secret: Field required", though the metadata offers `none`. The rest is the SDK's
    handle(): authenticate the client, find the token (access, then refresh), revoke it only when
    it is that client's, and answer 200 whatever was found."""

    async def handle(self, request: Request) -> Response:
        try:
            client = await self.client_authenticator.authenticate_request(request)
        except AuthenticationError as exc:
            error = RevocationErrorResponse(error="unauthorized_client", error_description=exc.message)
            return PydanticJSONResponse(status_code=401, content=error)
        try:
            asked = PublicRevocationRequest.model_validate(dict(await request.form()))
        except ValidationError as exc:
            error = RevocationErrorResponse(error="invalid_request", error_description=stringify_pydantic_error(exc))
            return PydanticJSONResponse(status_code=400, content=error)
        provider = self.provider
        found: Any = None
        if asked.token_type_hint == "refresh_token":
            found = await provider.load_refresh_token(client, asked.token) or await provider.load_access_token(
                asked.token
            )
        else:
            found = await provider.load_access_token(asked.token) or await provider.load_refresh_token(
                client, asked.token
            )
        if found is not None and found.client_id == client.client_id:
            await provider.revoke_token(found)
        return Response(status_code=200, headers={"Cache-Control": "no-store", "Pragma": "no-cache"})


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


def _cors(app: ASGIApp, methods: list[str], *, client_auth: bool = False) -> ASGIApp:
    """The metadata and token endpoints are called from browser-based clients (the Inspector).
    `/token` and `/revoke` (`client_auth`) also let a page send `Authorization`: the TypeScript
    SDK's client_secret_basic puts the client's credentials there, and a preflight refusing it
    would stop such a client in a browser. No origin gets cookies (no allow_credentials): the
    header carries only what the page itself holds."""
    headers = ["mcp-protocol-version", *(["authorization"] if client_auth else [])]
    return CORSMiddleware(app, allow_origins="*", allow_methods=methods, allow_headers=headers)


def _endpoint(handler: Callable[[Request], Awaitable[Response]], *, client_auth: bool = False) -> ASGIApp:
    app = request_response(handler)
    return RequestBodyLimitMiddleware(ClientIdFromBasic(app) if client_auth else app, MAX_BODY)


def oauth_routes(provider: WarrantAuthorization) -> list[Route]:
    """The routes, each behind `WithBase`. Raises nothing: nothing is read until a request comes."""
    public_url = provider.settings.public_url
    authenticator = HashedSecrets(provider)
    registration = ClientRegistrationOptions(enabled=True, valid_scopes=list(SCOPES), default_scopes=list(SCOPES))
    sdk: Any = provider  # the SDK's handlers take its provider protocol, which this class implements

    async def authorization_metadata(request: Request) -> Response:
        base = provider.base_url()
        metadata = build_metadata(AnyHttpUrl(base), None, registration, RevocationOptions(enabled=True))
        metadata.scopes_supported = list(SCOPES)
        metadata.token_endpoint_auth_methods_supported = ["none", "client_secret_post", "client_secret_basic"]
        metadata.revocation_endpoint_auth_methods_supported = ["none", "client_secret_post", "client_secret_basic"]
        metadata.client_id_metadata_document_supported = provider.settings.metadata_documents
        return PydanticJSONResponse(content=metadata, headers={"Cache-Control": "no-store"})

    async def resource_metadata(request: Request) -> Response:
        base = provider.base_url()
        metadata = ProtectedResourceMetadata(
            resource=AnyHttpUrl(resource_of(base)),
            authorization_servers=[AnyHttpUrl(base)],
            scopes_supported=["mcp"],
            resource_name="Warrant",
        )
        return PydanticJSONResponse(content=metadata, headers={"Cache-Control": "no-store"})

    def route(path: str, app: ASGIApp, methods: list[str]) -> Route:
        return Route(path, WithBase(app, public_url), methods=methods)

    token = TokenHandler(sdk, authenticator)

    async def token_endpoint(request: Request) -> Response:
        """The SDK's token handler, once the request's resource indicators (RFC 8707 2.2) name
        this gateway's /mcp: the SDK parses `resource` at /token and then ignores it, so a
        client asking a token for another resource was issued one (for this /mcp) without a word."""
        form = await request.form()  # cached on the request: the handler reads the same form
        ours = resource_of(provider.base_url())
        for value in form.getlist("resource"):
            if not isinstance(value, str) or not same_resource(value, ours):
                body = {"error": "invalid_target", "error_description": f"this server issues tokens for {ours} only"}
                return JSONResponse(body, status_code=400, headers={"Cache-Control": "no-store", "Pragma": "no-cache"})
        answer: Response = await token.handle(request)
        return answer

    return [
        route(
            "/.well-known/oauth-authorization-server",
            _cors(request_response(authorization_metadata), ["GET"]),
            ["GET", "OPTIONS"],
        ),
        route(RESOURCE_METADATA, _cors(request_response(resource_metadata), ["GET"]), ["GET", "OPTIONS"]),
        route(RESOURCE_METADATA + "/mcp", _cors(request_response(resource_metadata), ["GET"]), ["GET", "OPTIONS"]),
        route("/authorize", _endpoint(AuthorizationHandler(sdk).handle), ["GET", "POST"]),
        route(
            "/token",
            _cors(_endpoint(token_endpoint, client_auth=True), ["POST"], client_auth=True),
            ["POST", "OPTIONS"],
        ),
        route(
            "/register", _cors(_endpoint(RegistrationHandler(sdk, registration).handle), ["POST"]), ["POST", "OPTIONS"]
        ),
        route(
            "/revoke",
            _cors(_endpoint(Revocation(sdk, authenticator).handle, client_auth=True), ["POST"], client_auth=True),
            ["POST", "OPTIONS"],
        ),
    ]
