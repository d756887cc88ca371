"""Which clients may ask: registered ones (RFC 7591) and Client ID Metadata Documents, each held
to the same redirect-URI rules, and the bounds on what an unauthenticated registrant can store.

Redirect URIs (OAuth 2.1 section 2.3.1, RFC 8252): `https`, plain `http` only on a loopback host
(a native client's local listener), or a private-use scheme of a desktop app (`cursor://`,
`vscode://`); never a fragment, never `javascript:`/`data:`/`file:`. Matched exactly at
`/authorize` (the SDK's check).

A metadata document's client_id is an https URL the gateway fetches (no redirects, 5 s, 16 KiB):
the document must name that same URL as its client_id; hosts that resolve to private, loopback or
link-local addresses are refused (a gateway asked to fetch its own network is an SSRF), except
loopback when `metadata_documents_allow_loopback_http` is on for local development and tests.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import socket
import unicodedata
from urllib.parse import urlsplit

import httpx
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata
from pydantic import ValidationError

from gateway.bounded import MONOTONIC, BoundedDict
from gateway.clock import Clock

MAX_METADATA_BYTES = 16 * 1024
MAX_REDIRECT_URIS = 10
MAX_NAME = 200
FAILED_SECONDS = 60.0  # a document that could not be had is not fetched again for this long
FETCHES_AT_ONCE = 4  # an outsider naming URLs makes at most this many fetches at a time
FETCH_TIMEOUT_S = 5.0
CACHE_SECONDS = 300.0
CACHE_MAX = 256
LOOPBACK_HOSTS = {"127.0.0.1", "localhost", "[::1]", "::1"}
FORBIDDEN_SCHEMES = {"javascript", "data", "file", "vbscript", "about", "blob"}


class ClientRejected(Exception):
    """A registration or metadata document that is refused; the message says why."""


def check_redirect_uri(uri: str) -> None:
    """Raises: ClientRejected naming what is wrong with `uri`."""
    parts = urlsplit(uri)
    scheme = parts.scheme.lower()
    if not scheme:
        raise ClientRejected(f"redirect URI {uri!r} has no scheme")
    if parts.fragment or "#" in uri:
        raise ClientRejected(f"redirect URI {uri!r} must not have a fragment")
    if scheme in FORBIDDEN_SCHEMES:
        raise ClientRejected(f"redirect URI {uri!r}: the {scheme}: scheme is not allowed")
    if scheme == "http" and (parts.hostname or "") not in LOOPBACK_HOSTS:
        raise ClientRejected(f"redirect URI {uri!r}: plain http only for a loopback host (127.0.0.1, localhost, [::1])")
    if scheme in {"http", "https"} and not parts.hostname:
        raise ClientRejected(f"redirect URI {uri!r} names no host")


def check_client(info: OAuthClientMetadata | OAuthClientInformationFull) -> None:
    """The rules every client is held to, registered or fetched. Raises: ClientRejected."""
    uris = [str(u) for u in info.redirect_uris or []]
    if not uris:
        raise ClientRejected("a client needs at least one redirect URI")
    if len(uris) > MAX_REDIRECT_URIS:
        raise ClientRejected(f"at most {MAX_REDIRECT_URIS} redirect URIs")
    for uri in uris:
        check_redirect_uri(uri)
    extra = set(info.grant_types) - {"authorization_code", "refresh_token"}
    if extra:
        raise ClientRejected(f"grant types not served here: {', '.join(sorted(extra))}")
    if len(info.model_dump_json()) > MAX_METADATA_BYTES:
        raise ClientRejected(f"client metadata over {MAX_METADATA_BYTES} bytes")
    # The name is what the consent page, the console and the CLI show the person: plain text only.
    name = info.client_name or ""
    if len(name) > MAX_NAME:
        raise ClientRejected(f"client_name over {MAX_NAME} characters")
    if any(unicodedata.category(c) in {"Cc", "Cf", "Zl", "Zp"} for c in name):
        raise ClientRejected("client_name holds control or format characters")


def is_metadata_url(client_id: str) -> bool:
    return client_id.startswith(("https://", "http://"))


class MetadataDocuments:
    """Fetches and caches Client ID Metadata Documents (bounded cache, per process)."""

    def __init__(self, *, allow_loopback_http: bool, scopes: str, clock: Clock = MONOTONIC) -> None:
        self.allow_loopback_http = allow_loopback_http
        self.scopes = scopes
        self._cache: BoundedDict[str, OAuthClientInformationFull | None] = BoundedDict(
            CACHE_MAX, ttl=CACHE_SECONDS, clock=clock
        )
        self._fetching = asyncio.Semaphore(FETCHES_AT_ONCE)

    async def client(self, client_id: str) -> OAuthClientInformationFull | None:
        """The client the document at `client_id` describes, or None when it cannot be had or is
        refused. Answers (a failure too, for a shorter while) are kept, so naming the same URL
        again does not make the gateway fetch it again."""
        if client_id in self._cache:
            return self._cache[client_id]
        info: OAuthClientInformationFull | None
        async with self._fetching:
            try:
                info = await self._fetch(client_id)
            except (ClientRejected, httpx.HTTPError, OSError, ValueError):
                info = None
        self._cache.put(client_id, info, ttl=None if info is not None else FAILED_SECONDS)
        return info

    async def _fetch(self, client_id: str) -> OAuthClientInformationFull:
        parts = urlsplit(client_id)
        host = parts.hostname or ""
        if parts.fragment or parts.username or parts.password or not parts.path.strip("/"):
            raise ClientRejected("a client ID metadata URL has a path and no fragment or credentials")
        loopback = await _resolves_to_loopback_only(host, parts.port or (443 if parts.scheme == "https" else 80))
        if parts.scheme == "http" and not (self.allow_loopback_http and loopback):
            raise ClientRejected("a client ID metadata URL must be https")
        if loopback is None or (loopback and not self.allow_loopback_http):
            raise ClientRejected(f"{host} resolves to an address this gateway does not fetch from")
        async with (
            httpx.AsyncClient(timeout=FETCH_TIMEOUT_S, follow_redirects=False) as http,
            http.stream("GET", client_id, headers={"accept": "application/json"}) as response,
        ):
            if response.status_code != 200:
                raise ClientRejected(f"the metadata document answered HTTP {response.status_code}")
            body = b""
            async for chunk in response.aiter_bytes():
                body += chunk
                if len(body) > MAX_METADATA_BYTES:
                    raise ClientRejected(f"the metadata document is over {MAX_METADATA_BYTES} bytes")
        try:
            data = json.loads(body)
            if not isinstance(data, dict) or data.get("client_id") != client_id:
                raise ClientRejected("the metadata document must name its own URL as client_id")
            if data.get("token_endpoint_auth_method", "none") != "none" or "client_secret" in data:
                raise ClientRejected("a metadata-document client is public: token_endpoint_auth_method none")
            data.setdefault("token_endpoint_auth_method", "none")
            data.setdefault("scope", self.scopes)
            info = OAuthClientInformationFull.model_validate(data)
        except ValidationError as exc:
            raise ClientRejected(f"invalid client metadata: {exc.error_count()} problem(s)") from None
        check_client(info)
        return info


async def _resolves_to_loopback_only(host: str, port: int) -> bool | None:
    """True: every address is loopback; False: every one is public; None: some private, link-local,
    reserved or mixed (refused), or the name does not resolve."""
    try:
        infos = await asyncio.get_running_loop().getaddrinfo(host.strip("[]"), port, type=socket.SOCK_STREAM)
    except OSError:
        return None
    kinds = set()
    for info in infos:
        address = ipaddress.ip_address(info[4][0])
        if address.is_loopback:
            kinds.add("loopback")
        elif address.is_global:
            kinds.add("public")
        else:
            kinds.add("other")
    if kinds == {"loopback"}:
        return True
    if kinds == {"public"}:
        return False
    return None
