"""`oauth:` in warrant.yaml: Warrant as the OAuth 2.1 authorization server of its own /mcp."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class OAuthSettings:
    enabled: bool = True
    # The gateway's address as clients reach it (scheme://host[:port], no path): the issuer and
    # the resource its tokens are for. None: taken from each request's Host (fine on loopback and
    # behind `listen.allowed_hosts`; set it behind a proxy).
    public_url: str | None = None
    access_token_ttl: float = 3600.0
    refresh_token_ttl: float = 30 * 86_400.0
    code_ttl: float = 60.0
    consent_ttl: float = 600.0  # how long an authorization request may wait on the consent page
    max_clients: int = 1000  # registered clients kept; unused registrations older than a day go first
    max_grants_per_run: int = 1000  # sign-ins a run may have had, all kept
    # Client ID Metadata Documents: a client_id that is an https URL is fetched (bounded). Plain
    # http only for loopback addresses, and only when this is on (tests and local development).
    metadata_documents: bool = True
    metadata_documents_allow_loopback_http: bool = False
    # Contract templates a person may start a new run from on the consent page (*.json).
    contract_templates: tuple[Path, ...] = ()
