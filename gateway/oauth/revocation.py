"""RFC 7009 revocation for public clients too (the SDK's handler with one field made optional)."""

from __future__ import annotations

from typing import Any

from mcp.server.auth.errors import stringify_pydantic_error
from mcp.server.auth.handlers.revoke import RevocationErrorResponse, RevocationHandler, RevocationRequest
from mcp.server.auth.json_response import PydanticJSONResponse
from mcp.server.auth.middleware.client_auth import AuthenticationError
from pydantic import ValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse, Response


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
            # RFC 7009 2.2.1 -> RFC 6749 5.2: a client that failed to authenticate is `invalid_client`
            # (the SDK's answer, `unauthorized_client`, is for a client not allowed a grant type).
            body = {"error": "invalid_client", "error_description": exc.message}
            return JSONResponse(
                body, status_code=401, headers={"Cache-Control": "no-store", "WWW-Authenticate": "Basic"}
            )
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
