"""Signing in to the console with an upstream OpenID Connect provider (docs/oidc.md).

The gateway is the relying party: authorization code flow with PKCE, `state` and `nonce`, the ID
token checked against the provider's published keys (gateway/oidc/client.py). Who may sign in, and
as which name, tenant and roles, is the gateway's configuration (`console_sign_in.oidc.users`,
gateway/oidc/settings.py), never the provider's say alone.
"""

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gateway.oidc.client import OidcClient
    from gateway.oidc.settings import SESSION_PREFIX, OidcSettings, OidcUser
else:
    from gateway.faces import lazy as _lazy

    __getattr__, __dir__ = _lazy(__name__)

__all__ = [
    "SESSION_PREFIX",
    "OidcClient",
    "OidcSettings",
    "OidcUser",
]
