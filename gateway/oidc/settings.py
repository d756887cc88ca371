"""`console_sign_in: {oidc: ...}` in warrant.yaml, as the gateway uses it (parsed in gateway/config.py)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from urllib.parse import urlsplit

# The prefix of a console session's digest that names an OIDC identity (gateway/console/session.py);
# an API key's session names the key's bare SHA-256 (64 hex digits, never this prefix).
SESSION_PREFIX = "oidc:"


@dataclass(frozen=True)
class OidcUser:
    """One identity the gateway lets in: the claim's value, and who it is here."""

    match: str
    name: str
    tenant: str
    roles: frozenset[str]


@dataclass(frozen=True)
class OidcSettings:
    issuer: str  # exactly as the provider's discovery document and ID tokens name it
    client_id: str
    client_secret: str | None = field(default=None, repr=False)  # None: a public client (PKCE alone)
    display_name: str = ""  # "Sign in with <display_name>"; default: the issuer's host
    scopes: tuple[str, ...] = ("openid", "email")
    claim: str = "email"  # the claim whose value `users[].match` names
    # With `claim: email`, an address the provider has not verified is refused (`email_verified`).
    require_verified_email: bool = True
    # The callback as registered with the provider; None: this gateway's address as the browser
    # reached it (`oauth.public_url` when set), + /console/login/oidc/callback.
    redirect_uri: str | None = None
    users: tuple[OidcUser, ...] = ()
    http_timeout: float = 10.0
    _by_digest: dict[str, OidcUser] = field(default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        for user in self.users:
            self._by_digest[self.digest(user.match)] = user

    @property
    def label(self) -> str:
        return self.display_name or urlsplit(self.issuer).netloc or self.issuer

    def normalized(self, value: str) -> str:
        """Email addresses are matched without regard to case (providers differ in how they
        spell them); any other claim exactly."""
        return value.strip().casefold() if self.claim == "email" else value

    def digest(self, value: str) -> str:
        """What a session carries for the identity: the issuer, the claim and its value, hashed, so
        the cookie holds no address and a change of provider or claim ends every session."""
        text = "\n".join((self.issuer, self.claim, self.normalized(value)))
        return SESSION_PREFIX + hashlib.sha256(text.encode()).hexdigest()

    def user_for_digest(self, digest: str) -> OidcUser | None:
        return self._by_digest.get(digest)

    def user_for(self, value: str) -> OidcUser | None:
        return self.user_for_digest(self.digest(value))
