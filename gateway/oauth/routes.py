"""The authorization server's HTTP surface, built from the MCP SDK's handlers
(`mcp.server.auth.handlers`): RFC 8414 and RFC 9728 metadata, `/authorize`, `/token` (PKCE S256,
codes once, refresh rotation), `/register` (RFC 7591) and `/revoke` (RFC 7009).

The metadata is computed per request from the gateway's address (`oauth.public_url`, else the
request's own scheme and Host), so the issuer and the resource are what the client itself used.
Clients' secrets are checked against their hashes (`HashedSecrets`): the store never holds one.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from mcp.server.auth.handlers.authorize import AuthorizationHandler
from mcp.server.auth.handlers.register import RegistrationHandler
from mcp.server.auth.handlers.token import TokenHandler
from mcp.server.auth.json_response import PydanticJSONResponse
from mcp.server.auth.routes import build_metadata
from mcp.server.auth.settings import ClientRegistrationOptions, RevocationOptions
from mcp.server.transport_security import RequestBodyLimitMiddleware
from mcp.shared.auth import OAuthMetadata, ProtectedResourceMetadata
from pydantic import AnyHttpUrl
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route, request_response
from starlette.types import ASGIApp, Receive, Scope, Send

from gateway.oauth.client_auth import ClientIdFromBasic, HashedSecrets
from gateway.oauth.provider import BASE_URL, SCOPES, WarrantAuthorization, request_base, resource_of, same_resource
from gateway.oauth.revocation import Revocation

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
        built = build_metadata(AnyHttpUrl(base), None, registration, RevocationOptions(enabled=True))
        methods = ["none", "client_secret_post", "client_secret_basic"]
        # Validated from strings, so the issuer is exactly `base` (no trailing slash added): RFC 8414
        # and RFC 9207 compare it as a plain string with what the client was told.
        metadata = OAuthMetadata.model_validate(
            {
                **built.model_dump(mode="json", exclude_none=True),
                "issuer": base,
                "scopes_supported": list(SCOPES),
                "token_endpoint_auth_methods_supported": methods,
                "revocation_endpoint_auth_methods_supported": methods,
                "client_id_metadata_document_supported": provider.settings.metadata_documents,
                "authorization_response_iss_parameter_supported": True,  # RFC 9207: `iss` on every answer
            }
        )
        return PydanticJSONResponse(content=metadata, headers={"Cache-Control": "no-store"})

    async def resource_metadata(request: Request) -> Response:
        base = provider.base_url()
        metadata = ProtectedResourceMetadata.model_validate(
            {
                "resource": resource_of(base),
                "authorization_servers": [base],
                "scopes_supported": ["mcp"],
                "resource_name": "Warrant",
            }
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
