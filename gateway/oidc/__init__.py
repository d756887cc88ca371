"""Signing in to the console with an upstream OpenID Connect provider (docs/oidc.md).

The gateway is the relying party: authorization code flow with PKCE, `state` and `nonce`, the ID
token checked against the provider's published keys (gateway/oidc/client.py). Who may sign in, and
as which name, tenant and roles, is the gateway's configuration (`console_sign_in.oidc.users`,
gateway/oidc/settings.py), never the provider's say alone.
"""
