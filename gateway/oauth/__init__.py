"""MCP authorization: Warrant as the OAuth 2.1 authorization server of its own /mcp, with the
console as the consent page, and every token bound to one run's lease (docs/authorization.md).

- `provider`: the MCP SDK provider protocol over the store (consent, codes, rotation, revocation)
- `routes`: metadata (RFC 8414, RFC 9728) and the SDK's endpoint handlers
- `resource`: /mcp as the resource server (401 naming the metadata; audience-checked tokens)
- `clients`: registration rules and Client ID Metadata Documents
- `credentials`, `sealed`, `settings`: tokens and keys, the sealed pending request, `oauth:`
"""

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gateway.oauth.clients import ClientRejected, MetadataDocuments
    from gateway.oauth.provider import Consent, WarrantAuthorization
    from gateway.oauth.resource import OAuthResource
    from gateway.oauth.routes import PATHS, oauth_routes
    from gateway.oauth.sealed import PendingRequest, unseal
    from gateway.oauth.settings import OAuthSettings
else:
    from gateway.faces import lazy as _lazy

    __getattr__, __dir__ = _lazy(__name__)

__all__ = [
    "PATHS",
    "ClientRejected",
    "Consent",
    "MetadataDocuments",
    "OAuthResource",
    "OAuthSettings",
    "PendingRequest",
    "WarrantAuthorization",
    "oauth_routes",
    "unseal",
]
