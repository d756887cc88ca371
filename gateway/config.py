"""`warrant.yaml`: the gateway's configuration, read once at start-up.

The environment is read here and nowhere else: API keys (`key_env`), the ledger key
(`ledger_key_env`, default `WARRANT_LEDGER_KEY`), webhook secrets (`secret_env`) and the OpenID
Connect client's secret (`console_sign_in.oidc.client_secret_env`, docs/oidc.md).
Paths in the file are relative to the file.
A missing secret stops start-up naming the variable, never printing a value.
"""

from __future__ import annotations

import hashlib
import importlib
import os
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from gateway import accelerators
from gateway.adapters.base import Adapter
from gateway.domain.checks import Validator, parse_host_entry
from gateway.domain.contract import problems_of
from gateway.domain.events import subscription
from gateway.domain.keys import ApiKey
from gateway.domain.limits import RateLimits, parse_rate, parse_size
from gateway.domain.refusals import RefusalLimits
from gateway.domain.roles import Role
from gateway.domain.units import parse_duration
from gateway.errors import ConfigError
from gateway.gate.limits import LimitSettings
from gateway.oauth.settings import OAuthSettings
from gateway.oidc.settings import OidcSettings, OidcUser
from gateway.runtime.settings import RetentionSettings, WatchdogSettings, Webhook
from gateway.safeguards import Action, Point, Safeguard
from gateway.tools.evidence import ArtifactSettings
from gateway.yamlfile import read_yaml

DEFAULT_CONFIG = "warrant.yaml"
OIDC_CALLBACK = "/console/login/oidc/callback"
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")
_Model = TypeVar("_Model", bound=BaseModel)


class Listen(BaseModel):
    model_config = ConfigDict(extra="forbid")
    host: str = "127.0.0.1"
    port: int = Field(default=8700, ge=0, le=65535)
    # On loopback every route refuses another Host (gateway/api/host_guard.py); these may reach it too.
    allowed_hosts: list[str] = []


class KeyEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(min_length=1, max_length=128)
    tenant: str = Field(min_length=1, max_length=128)
    roles: list[Role] = Field(min_length=1)
    key_env: str = Field(min_length=1)
    # An admin for the whole gateway, not one tenant: only such a key accepts a changed downstream
    # tool definition, which every tenant's agents see (tool pins are gateway-wide).
    gateway_admin: bool = False


class WebhookEntry(BaseModel):
    """A webhook receiver (gateway/runtime/webhooks.py); `events` names what it takes: alert kinds,
    `heartbeat`, ledger types, aliases or `*` (docs/events.md, "Webhooks"); unset, every alert and heartbeat."""

    model_config = ConfigDict(extra="forbid")
    url: str = Field(pattern=r"^https?://")
    secret_env: str = Field(min_length=1)
    name: str | None = Field(default=None, min_length=1, max_length=128)  # default: the URL
    events: list[str] | None = None

    @field_validator("events")
    @classmethod
    def _kinds(cls, value: list[str] | None) -> list[str] | None:
        subscription(value)  # ValueError: too many, or a name that is none of them
        return value


class WatchdogEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")
    enabled: bool = True
    tick: str = "5s"
    heartbeat: str = "60s"
    approval_warning: str = "15m"  # warn at most this long before a pending approval expires ...
    approval_warning_share: float = Field(default=0.1, gt=0, le=1)  # ... and at most this share of decide_within
    delivery_attempts: int = Field(default=8, ge=1, le=100)
    delivery_timeout: str = "10s"
    reconcile_every: str = "1m"  # the first retry of an unknown action's lookup; doubles up to an hour

    _durations = field_validator(
        "tick", "heartbeat", "approval_warning", "delivery_timeout", "reconcile_every", mode="before"
    )(lambda v: f"{parse_duration(v)}s")


class RetentionEntry(BaseModel):
    """`retention:` how long operation ids replay and bodies are kept (docs/retention.md).
    `null` keeps forever."""

    model_config = ConfigDict(extra="forbid")
    idempotency: str | None = "30d"
    payload_bodies: str | None = None
    purge_every: str = "1h"

    _durations = field_validator("idempotency", "payload_bodies", "purge_every", mode="before")(
        lambda v: None if v is None else f"{parse_duration(v)}s"
    )


class ArtifactLimits(BaseModel):
    """`artifact_limits:` the caps on every read of evidence (gateway/tools/evidence.py)."""

    model_config = ConfigDict(extra="forbid")
    max_bytes: int = Field(default=10 * 2**20, gt=0)
    timeout: str | float = "10s"  # a duration, or seconds (fractions allowed)

    @field_validator("timeout", mode="before")
    @classmethod
    def _timeout(cls, value: Any) -> str | float:
        return seconds_or_duration(value, "timeout")


def seconds_or_duration(value: Any, name: str) -> str | float:
    """A duration (`20s`, `1m`) or a number of seconds, fractions allowed. Raises: ValueError."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        if value <= 0:
            raise ValueError(f"{name} must be longer than zero")
        return float(value)
    parse_duration(value)
    return str(value)


def seconds_of(value: str | float) -> float:
    return value if isinstance(value, float) else float(parse_duration(value))


class RateEntry(BaseModel):
    """`limits.rate`: calls per tenant and per key (`6000/m`); null or absent: not limited."""

    model_config = ConfigDict(extra="forbid")
    per_tenant: str | None = None
    per_key: str | None = None

    _rates = field_validator("per_tenant", "per_key", mode="before")(lambda v: v if v is None else str(parse_rate(v)))


class RefusalsEntry(BaseModel):
    """`limits.refusals`: refusals recorded per lease token (a rate) and per run in all; null: off."""

    model_config = ConfigDict(extra="forbid")
    rate: str | None = "600/m"
    max_per_run: int | None = Field(default=10_000, ge=1)

    _rate = field_validator("rate", mode="before")(lambda v: v if v is None else str(parse_rate(v)))


class LimitsEntry(BaseModel):
    """`limits:` size caps, rates and the per-run concurrency cap (gateway/gate/limits.py, docs/limits.md)."""

    model_config = ConfigDict(extra="forbid")
    max_request_body: int | str = "1MiB"
    max_tool_result: int | str = "8MiB"
    run_concurrency: int | None = Field(default=16, ge=1, le=10_000)
    rate: RateEntry | None = None
    refusals: RefusalsEntry = Field(default_factory=RefusalsEntry)

    @field_validator("max_request_body", "max_tool_result", mode="before")
    @classmethod
    def _size(cls, value: Any) -> int:
        return parse_size(value)


class OAuthEntry(BaseModel):
    """`oauth:` MCP authorization (gateway/oauth/, docs/authorization.md)."""

    model_config = ConfigDict(extra="forbid")
    enabled: bool = True
    public_url: str | None = None
    access_token_ttl: str = "1h"
    refresh_token_ttl: str = "30d"
    code_ttl: str = "60s"
    consent_ttl: str = "10m"
    max_clients: int = Field(default=1000, ge=1, le=1_000_000)
    max_grants_per_run: int = Field(default=1000, ge=1, le=100_000)
    metadata_documents: bool = True
    metadata_documents_allow_loopback_http: bool = False
    # A directory of contract templates (*.json), or a list of files, relative to this file.
    contract_templates: str | list[str] | None = None

    _durations = field_validator("access_token_ttl", "refresh_token_ttl", "code_ttl", "consent_ttl", mode="before")(
        lambda v: f"{parse_duration(v)}s"
    )

    @field_validator("public_url")
    @classmethod
    def _public_url(cls, value: str | None) -> str | None:
        if value is None:
            return None
        if not re.fullmatch(r"https?://[^/?#\s]+", value.rstrip("/")):
            raise ValueError("public_url is scheme://host[:port], with no path, query or fragment")
        return value.rstrip("/")


class OidcUserEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")
    match: str = Field(min_length=1, max_length=512)  # the claim's value, exactly (an email: any case)
    name: str = Field(min_length=1, max_length=128)
    tenant: str = Field(min_length=1, max_length=128)
    roles: list[Role] = Field(min_length=1)


class OidcEntry(BaseModel):
    """`console_sign_in.oidc`: the console's sign-in through an OpenID Connect provider (docs/oidc.md)."""

    model_config = ConfigDict(extra="forbid")
    issuer: str
    client_id: str = Field(min_length=1, max_length=512)
    # The variable holding the client's secret; none: a public client (PKCE alone, `none` auth).
    client_secret_env: str | None = Field(default=None, min_length=1)
    display_name: str | None = Field(default=None, min_length=1, max_length=80)
    scopes: list[str] = ["openid", "email"]
    claim: str = Field(default="email", min_length=1, max_length=128)
    require_verified_email: bool = True
    redirect_uri: str | None = None
    users: list[OidcUserEntry] = Field(min_length=1)
    http_timeout: str | float = "10s"

    @field_validator("issuer")
    @classmethod
    def _issuer(cls, value: str) -> str:
        parts = urlsplit(value)
        if parts.scheme not in ("https", "http") or not parts.hostname or parts.query or parts.fragment:
            raise ValueError("the issuer is an https URL (a path is allowed), with no query or fragment")
        if parts.scheme == "http" and parts.hostname not in LOOPBACK_NAMES:
            raise ValueError("the issuer must be https (plain http only on loopback: localhost, 127.0.0.1, ::1)")
        return value.rstrip("/")

    @field_validator("redirect_uri")
    @classmethod
    def _redirect(cls, value: str | None) -> str | None:
        if value is None:
            return None
        parts = urlsplit(value)
        if parts.scheme not in ("https", "http") or not parts.hostname or parts.fragment:
            raise ValueError("redirect_uri is the absolute URL of /console/login/oidc/callback")
        if not parts.path.endswith(OIDC_CALLBACK):
            raise ValueError(f"redirect_uri must end with {OIDC_CALLBACK} (the gateway's callback)")
        return value

    @field_validator("scopes")
    @classmethod
    def _scopes(cls, value: list[str]) -> list[str]:
        if "openid" not in value:
            raise ValueError("scopes must include openid (without it the provider sends no ID token)")
        bad = [s for s in value if not re.fullmatch(r"[\x21\x23-\x5b\x5d-\x7e]+", s)]
        if bad:
            raise ValueError(f"not a scope: {', '.join(map(repr, bad))}")
        return list(dict.fromkeys(value))

    @field_validator("http_timeout", mode="before")
    @classmethod
    def _timeout(cls, value: Any) -> str | float:
        return seconds_or_duration(value, "http_timeout")


class ConsoleSignInEntry(BaseModel):
    """`console_sign_in:` how people sign in to the console besides an API key (always offered)."""

    model_config = ConfigDict(extra="forbid")
    oidc: OidcEntry | None = None


class FailpointEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")
    action: Action = "kill"
    tool: str | None = Field(default=None, min_length=1)
    skip: int = Field(default=0, ge=0)


class DrillEntry(BaseModel):
    """`drill:` the failure drill's own switches (gateway/safeguards.py); never in a deployment."""

    model_config = ConfigDict(extra="forbid")
    failpoints: dict[Point, FailpointEntry] = {}
    sabotage: list[Safeguard] = []
    # Seconds this process's clock is wrong by (a replica whose clock is ahead: positive).
    clock_offset_s: float = Field(default=0.0, ge=-86_400, le=86_400)


class AcceleratorsEntry(BaseModel):
    """`accelerators:` a switch for each fast path that mirrors a dependency (gateway/accelerators.py,
    docs/operations.md "Accelerators"); each on by default, and off by itself outside the versions
    it was tested with. Off, the slow path (the SDK's, the library's) serves, with the same answers."""

    model_config = ConfigDict(extra="forbid")
    mcp_front: bool = True  # the front's tools/call fast path
    mcp_client: bool = True  # the MCP adapter's lean tools/call
    http11: bool = True  # the lean path's own HTTP/1.1 connections (off: httpx2)
    quick_schema: bool = True  # the compiled argument check (off: jsonschema alone)


class ConfigFile(BaseModel):
    model_config = ConfigDict(extra="forbid")
    database: str = "sqlite:///warrant.db"
    # Apply due schema migrations when the gateway starts; off, it refuses to start until
    # `warrant migrate` has applied them (a deployment that migrates in a step of its own).
    migrate_on_start: bool = True
    listen: Listen = Listen()
    api_keys: list[KeyEntry] = []
    adapters: list[str] = []
    policies: list[str] = []
    ledger_key_env: str = "WARRANT_LEDGER_KEY"
    webhooks: list[WebhookEntry] = []
    watchdog: WatchdogEntry = WatchdogEntry()
    retention: RetentionEntry = RetentionEntry()
    # Evidence the gateway may read for milestone checks (docs/progress.md "What the gateway fetches").
    artifact_roots: list[str] = []
    artifact_hosts: list[str] = []
    artifact_limits: ArtifactLimits = ArtifactLimits()
    validators: dict[str, str] = {}
    drill: DrillEntry = DrillEntry()
    limits: LimitsEntry = LimitsEntry()
    oauth: OAuthEntry = OAuthEntry()
    console_sign_in: ConsoleSignInEntry = ConsoleSignInEntry()
    accelerators: AcceleratorsEntry = AcceleratorsEntry()
    # How long calls in flight get to settle after SIGTERM before they are aborted (docs/operations.md).
    shutdown_grace: str | float = "20s"

    @field_validator("shutdown_grace", mode="before")
    @classmethod
    def _grace(cls, value: Any) -> str | float:
        return seconds_or_duration(value, "shutdown_grace")

    @field_validator("artifact_hosts")
    @classmethod
    def _hosts(cls, value: list[str]) -> list[str]:
        for entry in value:
            parse_host_entry(entry)
        return value

    @field_validator("validators")
    @classmethod
    def _validator_names(cls, value: dict[str, str]) -> dict[str, str]:
        bad = sorted(name for name, target in value.items() if not re.fullmatch(r"[\w.]+:[\w.]+", target))
        if bad:
            raise ValueError(f"validators {', '.join(bad)}: each names its function as 'package.module:function'")
        return value


class AdapterFile(BaseModel):
    model_config = ConfigDict(extra="allow")
    name: str
    kind: Literal["python", "http", "mcp"]
    factory: str | None = None  # kind: python — "package.module:function" returning an Adapter


@dataclass(frozen=True)
class Settings:
    path: Path
    database: str
    host: str
    port: int
    api_keys: tuple[ApiKey, ...]
    adapter_files: tuple[Path, ...]
    policy_files: tuple[Path, ...]
    ledger_key: bytes
    webhooks: tuple[Webhook, ...] = ()
    allowed_hosts: tuple[str, ...] = ()  # `listen.allowed_hosts` (gateway/api/host_guard.py)
    watchdog: WatchdogSettings = field(default_factory=WatchdogSettings)
    artifacts: ArtifactSettings = field(default_factory=ArtifactSettings)
    # Milestone validators by name (`validators:` in warrant.yaml), imported at start-up.
    validators: Mapping[str, Validator] = field(default_factory=dict)
    # The failure drill's failpoints and sabotaged safeguards (gateway/safeguards.py); empty: off.
    failpoints: Mapping[str, FailpointEntry] = field(default_factory=dict)
    sabotage: tuple[str, ...] = ()
    clock_offset_s: float = 0.0  # the drill's wrong clock; 0: off
    migrate_on_start: bool = True
    limits: LimitSettings = field(default_factory=LimitSettings)
    shutdown_grace: float = 20.0  # seconds calls in flight get to settle after SIGTERM
    retention: RetentionSettings = field(default_factory=RetentionSettings)
    oauth: OAuthSettings = field(default_factory=OAuthSettings)
    oidc: OidcSettings | None = None  # `console_sign_in.oidc` (gateway/oidc/)
    # `accelerators:` each fast path's switch (gateway/accelerators.py); every one on by default.
    accelerators: Mapping[str, bool] = field(default_factory=lambda: dict.fromkeys(accelerators.NAMES, True))


def find_config(explicit: str | None) -> Path:
    """`--config`, else ./warrant.yaml. Raises ConfigError when neither exists."""
    path = Path(explicit or DEFAULT_CONFIG)
    if not path.is_file():
        raise ConfigError(f"no configuration at {path}: pass --config PATH (the repository ships warrant.yaml)")
    return path.resolve()


def _config_file(path: Path) -> ConfigFile:
    try:
        return ConfigFile.model_validate(read_yaml(path) or {})
    except ValidationError as exc:
        lines = [f"  {p['field']}: {p['problem']}" for p in problems_of(exc)]
        raise ConfigError(f"{path}: invalid configuration:\n" + "\n".join(lines)) from None


def _database_url(path: Path, database: str) -> str:
    """A relative SQLite path is relative to the configuration file."""
    if database.startswith("sqlite:///") and not database.startswith("sqlite:////"):
        return "sqlite:///" + str((path.parent / database[len("sqlite:///") :]).resolve())
    return database


def database_of(path: Path) -> str:
    """The configuration's store URL alone (`warrant migrate`: no secrets needed).

    Raises: ConfigError for an invalid configuration file."""
    return _database_url(path, _config_file(path).database)


def ledger_key_env_of(path: Path) -> str:
    """The variable holding the configuration's ledger key (`warrant backup`: no other secret needed).

    Raises: ConfigError for an invalid configuration file."""
    return _config_file(path).ledger_key_env


def load_settings(path: Path, environ: Mapping[str, str] | None = None) -> Settings:
    """Raises: ConfigError listing what is wrong (never a secret's value)."""
    env = os.environ if environ is None else environ
    raw = _config_file(path)
    missing = [k.key_env for k in raw.api_keys if not env.get(k.key_env)]
    if not env.get(raw.ledger_key_env):
        missing.append(raw.ledger_key_env)
    missing += [w.secret_env for w in raw.webhooks if not env.get(w.secret_env)]
    oidc = raw.console_sign_in.oidc
    if oidc is not None and oidc.client_secret_env and not env.get(oidc.client_secret_env):
        missing.append(oidc.client_secret_env)
    if missing:
        raise ConfigError(f"{path}: these environment variables must be set: {', '.join(sorted(set(missing)))}")
    names = [k.name for k in raw.api_keys]
    if len(names) != len(set(names)):
        raise ConfigError(f"{path}: api key names must be unique")
    webhooks = tuple(
        Webhook(w.name or w.url, w.url, env[w.secret_env].encode(), subscription(w.events) if w.events else None)
        for w in raw.webhooks
    )
    if len({w.name for w in webhooks}) != len(webhooks):
        raise ConfigError(f"{path}: webhook names (default: their url) must be unique")
    wd = raw.watchdog
    watchdog = WatchdogSettings(
        enabled=wd.enabled,
        tick=parse_duration(wd.tick),
        heartbeat=parse_duration(wd.heartbeat),
        approval_warning=parse_duration(wd.approval_warning),
        approval_warning_share=wd.approval_warning_share,
        delivery_attempts=wd.delivery_attempts,
        delivery_timeout=parse_duration(wd.delivery_timeout),
        reconcile_every=parse_duration(wd.reconcile_every),
    )
    keys = tuple(
        ApiKey(
            k.name, k.tenant, frozenset(k.roles), hashlib.sha256(env[k.key_env].encode()).hexdigest(), k.gateway_admin
        )
        for k in raw.api_keys
    )
    base = path.parent
    artifacts = _artifact_settings(path, raw)
    validators = _validators(path, raw.validators)
    database = _database_url(path, raw.database)
    return Settings(
        path=path,
        database=database,
        host=raw.listen.host,
        allowed_hosts=tuple(raw.listen.allowed_hosts),
        port=raw.listen.port,
        api_keys=keys,
        adapter_files=tuple((base / p).resolve() for p in raw.adapters),
        policy_files=tuple((base / p).resolve() for p in raw.policies),
        ledger_key=env[raw.ledger_key_env].encode(),
        webhooks=webhooks,
        watchdog=watchdog,
        artifacts=artifacts,
        validators=validators,
        failpoints={str(name): entry for name, entry in raw.drill.failpoints.items()},
        sabotage=tuple(raw.drill.sabotage),
        clock_offset_s=raw.drill.clock_offset_s,
        migrate_on_start=raw.migrate_on_start,
        limits=limit_settings(raw.limits),
        shutdown_grace=seconds_of(raw.shutdown_grace),
        retention=_retention_settings(raw.retention),
        oauth=_oauth_settings(path, raw.oauth),
        oidc=_oidc_settings(path, oidc, names, env) if oidc is not None else None,
        accelerators=raw.accelerators.model_dump(),
    )


def limit_settings(raw: LimitsEntry) -> LimitSettings:
    rate = raw.rate or RateEntry()
    return LimitSettings(
        max_request_body=parse_size(raw.max_request_body),
        max_tool_result=parse_size(raw.max_tool_result),
        run_concurrency=raw.run_concurrency,
        rate=RateLimits(
            per_tenant=parse_rate(rate.per_tenant) if rate.per_tenant else None,
            per_key=parse_rate(rate.per_key) if rate.per_key else None,
        ),
        refusals=RefusalLimits(
            rate=parse_rate(raw.refusals.rate) if raw.refusals.rate else None,
            max_per_run=raw.refusals.max_per_run,
        ),
    )


def _oauth_settings(path: Path, raw: OAuthEntry) -> OAuthSettings:
    """Raises: ConfigError for contract templates that are not there."""
    templates: list[Path] = []
    entries = [raw.contract_templates] if isinstance(raw.contract_templates, str) else raw.contract_templates or []
    for entry in entries:
        where = (path.parent / entry).resolve()
        if where.is_dir():
            templates += sorted(where.glob("*.json"))
        elif where.is_file():
            templates.append(where)
        else:
            raise ConfigError(f"{path}: oauth.contract_templates: {entry} is neither a directory nor a file")
    return OAuthSettings(
        enabled=raw.enabled,
        public_url=raw.public_url,
        access_token_ttl=float(parse_duration(raw.access_token_ttl)),
        refresh_token_ttl=float(parse_duration(raw.refresh_token_ttl)),
        code_ttl=float(parse_duration(raw.code_ttl)),
        consent_ttl=float(parse_duration(raw.consent_ttl)),
        max_clients=raw.max_clients,
        max_grants_per_run=raw.max_grants_per_run,
        metadata_documents=raw.metadata_documents,
        metadata_documents_allow_loopback_http=raw.metadata_documents_allow_loopback_http,
        contract_templates=tuple(templates),
    )


def _oidc_settings(path: Path, raw: OidcEntry, key_names: list[str], env: Mapping[str, str]) -> OidcSettings:
    """Raises: ConfigError for two entries of one identity, or a name a configured key has."""
    where = f"{path}: console_sign_in.oidc.users"
    users = tuple(OidcUser(u.match, u.name, u.tenant, frozenset(u.roles)) for u in raw.users)
    settings = OidcSettings(
        issuer=raw.issuer,
        client_id=raw.client_id,
        client_secret=env[raw.client_secret_env] if raw.client_secret_env else None,
        display_name=raw.display_name or "",
        scopes=tuple(raw.scopes),
        claim=raw.claim,
        require_verified_email=raw.require_verified_email,
        redirect_uri=raw.redirect_uri,
        users=users,
        http_timeout=seconds_of(raw.http_timeout),
    )
    seen: dict[str, str] = {}
    for user in users:
        digest = settings.digest(user.match)
        if digest in seen:
            raise ConfigError(f"{where}: {user.match!r} and {seen[digest]!r} name the same identity")
        seen[digest] = user.match
    # A person and a key of one name would be one principal in the records (approvals, leases,
    # a contract's `workers`): refused rather than guessed at.
    clash = sorted({u.name for u in users} & set(key_names))
    if clash:
        raise ConfigError(f"{where}: these names are api_keys' names too: {', '.join(clash)}")
    names = [u.name for u in users]
    if len(names) != len(set(names)):
        raise ConfigError(f"{where}: names must be unique (one person, one name)")
    return settings


def _retention_settings(raw: RetentionEntry) -> RetentionSettings:
    def seconds(value: str | None) -> float | None:
        return None if value is None else float(parse_duration(value))

    every = seconds(raw.purge_every)
    assert every is not None
    return RetentionSettings(seconds(raw.idempotency), seconds(raw.payload_bodies), every)


def _artifact_settings(path: Path, raw: ConfigFile) -> ArtifactSettings:
    """Raises: ConfigError naming a root that is not an existing directory."""
    roots = tuple((path.parent / root).resolve() for root in raw.artifact_roots)
    bad = [str(root) for root in roots if not root.is_dir()]
    if bad:
        raise ConfigError(f"{path}: artifact_roots must be existing directories: {', '.join(bad)}")
    limits = raw.artifact_limits
    timeout = seconds_of(limits.timeout)
    return ArtifactSettings(roots, tuple(raw.artifact_hosts), limits.max_bytes, timeout)


def _validators(path: Path, targets: Mapping[str, str]) -> dict[str, Validator]:
    """Raises: ConfigError naming a validator whose module or function is missing or not callable.

    A module is looked up on the import path, then in the configuration file's directory (so the
    bundled `examples.validators` is found whatever directory `warrant serve` starts in).
    """
    out: dict[str, Validator] = {}
    for name, target in targets.items():
        module_name, _, attr = target.partition(":")
        try:
            try:
                module = importlib.import_module(module_name)
            except ModuleNotFoundError:
                base = str(path.parent.resolve())
                if base in sys.path:
                    raise
                sys.path.append(base)
                module = importlib.import_module(module_name)
            function = getattr(module, attr)
        except Exception as exc:  # a missing module or attribute, or a module that fails to import
            raise ConfigError(f"{path}: validator {name}: cannot import {target}: {exc}") from exc
        if not callable(function):
            raise ConfigError(f"{path}: validator {name}: {target} is not callable")
        out[name] = function
    return out


def load_adapter(
    path: Path, environ: Mapping[str, str] | None = None, *, fence: accelerators.Accelerators | None = None
) -> Adapter:
    """Raises: ConfigError for an invalid document or a kind not served by this version.

    `fence`: which accelerators serve an MCP adapter's calls (gateway/accelerators.py `settle`)."""
    data: Any = read_yaml(path)
    doc = _validated(AdapterFile, path, data)
    if doc.kind == "mcp":
        return _mcp_adapter(path, data, os.environ if environ is None else environ, fence)
    if doc.kind == "http":
        return _http_adapter(path, data, os.environ if environ is None else environ)
    if doc.kind != "python":
        raise ConfigError(f"{path}: adapters of kind {doc.kind!r} are not served by this version yet")
    if not doc.factory or ":" not in doc.factory:
        raise ConfigError(f"{path}: a python adapter names its factory as 'package.module:function'")
    module_name, _, attr = doc.factory.partition(":")
    try:
        factory = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(f"{path}: cannot import {doc.factory}: {exc}") from exc
    adapter = factory(doc.name)
    if not isinstance(adapter, Adapter):
        raise ConfigError(f"{path}: {doc.factory} did not return an Adapter")
    return adapter


_REFERENCE = re.compile(r"\$\{([^}]*)\}")
_VARIABLE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def interpolate(text: str, env: Mapping[str, str], base: Path, missing: list[str]) -> str:
    """`${NAME}` from the environment, `${file:PATH}` from a file (relative to `base`, stripped).

    What cannot be resolved is named in `missing` (never a value).
    """

    def resolve(match: re.Match[str]) -> str:
        reference = match.group(1)
        if reference.startswith("file:"):
            try:
                return (base / reference[len("file:") :]).read_text(encoding="utf-8").strip()
            except OSError:
                missing.append(f"the file {reference[len('file:') :]}")
                return ""
        if not _VARIABLE.fullmatch(reference) or reference not in env:
            missing.append(reference)
            return ""
        return env[reference]

    return _REFERENCE.sub(resolve, text)


def _validated(model: type[_Model], path: Path, data: Any) -> _Model:
    """Raises: ConfigError listing every problem of the (unresolved) document."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        lines = [f"  {p['field']}: {p['problem']}" for p in problems_of(exc)]
        raise ConfigError(f"{path}: invalid adapter:\n" + "\n".join(lines)) from None


def _mcp_adapter(path: Path, data: Any, env: Mapping[str, str], fence: accelerators.Accelerators | None) -> Adapter:
    """A downstream MCP server. Its document is validated before any `${...}` is resolved, so an
    error message never carries a secret. A command's first word `python` is this gateway's own
    interpreter; `cwd` (default: the adapter file's folder) is relative to the adapter file."""
    from gateway.adapters.mcp.adapter import McpAdapter, McpAdapterConfig

    config = _validated(McpAdapterConfig, path, data)
    base = path.parent
    missing: list[str] = []
    changes: dict[str, Any] = {
        "env": {k: interpolate(v, env, base, missing) for k, v in config.env.items()},
        "headers": {k: interpolate(v, env, base, missing) for k, v in config.headers.items()},
    }
    if config.url is not None:
        changes["url"] = interpolate(config.url, env, base, missing)
    if config.command is not None:
        command = [interpolate(word, env, base, missing) for word in config.command]
        if command[0] == "python":
            command[0] = sys.executable
        changes["command"] = command
        changes["cwd"] = str((base / config.cwd).resolve()) if config.cwd else str(base)
    if missing:
        raise ConfigError(f"{path}: these must be set: {', '.join(sorted(set(missing)))}")
    return McpAdapter(config.model_copy(update=changes), accelerators=fence)


def _http_adapter(path: Path, data: Any, env: Mapping[str, str]) -> Adapter:
    """An HTTP API. Its document is validated before any `${...}` is resolved, so an error
    message never carries a secret; the resolved values are handed to the adapter as secrets
    to keep out of everything it records."""
    from gateway.adapters.http.adapter import HttpAdapter
    from gateway.adapters.http.config import HttpAdapterConfig, url_problem

    config = _validated(HttpAdapterConfig, path, data)
    base = path.parent
    missing: list[str] = []
    secrets: list[str] = []

    def resolve(headers: dict[str, str]) -> dict[str, str]:
        for value in headers.values():
            secrets.extend(interpolate(m.group(0), env, base, []) for m in _REFERENCE.finditer(value))
        return {k: interpolate(v, env, base, missing) for k, v in headers.items()}

    tools = {name: tool.model_copy(update={"headers": resolve(tool.headers)}) for name, tool in config.tools.items()}
    changes: dict[str, Any] = {
        "base_url": interpolate(config.base_url, env, base, missing),
        "headers": resolve(config.headers),
        "tools": tools,
    }
    if missing:
        raise ConfigError(f"{path}: these must be set: {', '.join(sorted(set(missing)))}")
    problem = url_problem(changes["base_url"])
    if problem is not None:
        raise ConfigError(f"{path}: {problem}")
    every = [changes["headers"], *(t.headers for t in tools.values())]
    unsafe = [name for headers in every for name, value in headers.items() if "\n" in value or "\r" in value]
    if unsafe:
        raise ConfigError(f"{path}: these headers resolve to more than one line: {', '.join(sorted(set(unsafe)))}")
    return HttpAdapter(config.model_copy(update=changes), secrets=secrets)
