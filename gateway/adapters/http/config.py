"""The `kind: http` adapter document: fronting a REST API is a YAML file in `adapters/`, not code.

    name: crm                          # the adapter's name: ^[a-z][a-z0-9]{0,15}$
    kind: http
    base_url: http://127.0.0.1:8801    # scheme://host[:port][/prefix]: no credentials, query or fragment
    headers:                           # sent with every request; the only credentials that leave
      Authorization: "Bearer ${CRM_TOKEN}"   # ${NAME}: the environment; ${file:PATH}: a file (relative
                                       # to this document, stripped). A missing one stops start-up.
    key_retention: 24h                 # how long the destination remembers idempotency keys (72h, 1h30m,
                                       # 90s); required when a tool has `lookup`
    timeout: 30                        # seconds per call, every retry included, for tools that set none
    trust_read_only_hint: false        # a tool's read_only may make a policy without `effect` a read
    max_connections: 100               # the adapter's connection pool (a fleet of agents shares it)
    tools:
      update_contact:                  # the adapter's own tool name; exposed as crm__update_contact
        description: Update a contact. # shown to the agent; part of the definition approvals bind to
        method: PATCH                  # GET, HEAD, POST, PUT, PATCH or DELETE
        path: /contacts/{contact_id}   # {name}: that argument, URL-escaped; {idempotency_key}: the key
        input_schema: {type: object, properties: {contact_id: {type: string}}}  # the gate validates
        timeout: 10                    # seconds; default: the adapter's `timeout`
        idempotency_header: Idempotency-Key  # the gateway's key for a write goes in this header
        receipt_id: id                 # response field naming the object; dotted for nesting: data.id
        receipt_status: {field: status, succeeded: [sent]}  # a 2xx whose field is missing or another
                                       # value contradicts itself: unknown (a write), upstream_failed (a read)
        lookup:                        # did a call with this key happen? (reconciliation of `unknown`)
          method: GET                  # GET (default) or POST
          path: /contacts/by-key/{idempotency_key}  # {idempotency_key} and/or argument placeholders
          query: [email]               # arguments (or idempotency_key) for its query string
        query: [dry_run]               # these arguments go to the query string ...
        body: [email, name]            # ... these to the JSON body (both optional, disjoint)
        headers: {X-Api-Version: "2"}  # this tool's own headers, over the adapter's; ${...} as above
        cost: {field: usage.cost}      # response field with the actual cost: a decimal in the policy currency
        read_only: false               # true sets annotations.readOnlyHint
        annotations: {title: Update}   # MCP tool annotations, shown to clients
        expose_as: crm_update          # an alias when `<adapter>__<tool>` is too long

Arguments: a path placeholder takes its argument (a missing, empty, `.`/`..` or non-scalar one
stops the call before anything is sent: `not_sent`, `invalid_arguments`). What the path does not
take goes to the JSON body for POST, PUT and PATCH (always an object, `{}` when empty) and to the
query string for GET, HEAD and DELETE, unless `query:` or `body:` names it. A lookup sends only
what its path and `query:` name. `idempotency_key` is reserved: no input schema may name it.

A document is validated before any `${...}` is resolved (gateway/config.py), so a validation
message never carries a secret; `base_url` is checked again after resolution, without its value.
"""

from __future__ import annotations

import re
from typing import Any, Literal, Self

import httpx
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from gateway.domain.units import parse_duration

KEY_PLACEHOLDER = "idempotency_key"
BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})
NO_BODY_METHODS = frozenset({"GET", "HEAD"})
PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
_HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
_DOTTED = re.compile(r"[^.\s]+(\.[^.\s]+)*")

Method = Literal["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"]


def placeholders(path: str) -> list[str]:
    """The `{name}`s of a path, in order."""
    return PLACEHOLDER.findall(path)


def _check_path(path: str) -> str:
    if not path.startswith("/"):
        raise ValueError("a path starts with /")
    if "?" in path or "#" in path:
        raise ValueError("a path has no query or fragment: name query arguments in `query`")
    if "{" in PLACEHOLDER.sub("", path) or "}" in PLACEHOLDER.sub("", path):
        raise ValueError("a path placeholder is written {name}, with a letter, digit or _ name")
    return path


def _check_headers(headers: dict[str, str]) -> dict[str, str]:
    for name, value in headers.items():
        if not _HEADER_NAME.fullmatch(name):
            raise ValueError(f"{name!r} is not a header name")
        if "\r" in value or "\n" in value:
            raise ValueError(f"the value of header {name} spans lines")
    return headers


def _check_dotted(field: str | None) -> str | None:
    if field is not None and not _DOTTED.fullmatch(field):
        raise ValueError("a response field is a name, or dotted names for nesting (data.id)")
    return field


def url_problem(url: str) -> str | None:
    """What is wrong with a `base_url` (never repeating it: it may hold a resolved secret)."""
    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, TypeError):
        return "base_url is not a URL"
    if parsed.scheme not in ("http", "https") or not parsed.host:
        return "base_url must be an http:// or https:// URL with a host"
    if parsed.userinfo:
        return "base_url must not carry credentials: put them in `headers`"
    if parsed.query or parsed.fragment:
        return "base_url must not have a query or fragment"
    return None


class _Request(BaseModel):
    """A method and a path, as tools and lookups write them."""

    model_config = ConfigDict(extra="forbid")
    path: str

    @field_validator("method", mode="before", check_fields=False)
    @classmethod
    def _upper(cls, value: Any) -> Any:
        return value.upper() if isinstance(value, str) else value

    @field_validator("path")
    @classmethod
    def _path(cls, value: str) -> str:
        return _check_path(value)


class LookupConfig(_Request):
    method: Literal["GET", "POST"] = "GET"
    query: list[str] = Field(default_factory=list)


class CostConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    field: str

    @field_validator("field")
    @classmethod
    def _field(cls, value: str) -> str:
        _check_dotted(value)
        return value


class ReceiptStatusConfig(BaseModel):
    """The response field that says how the destination's own work ended, and its values that mean
    it succeeded: a 2xx saying anything else is contradictory, never a success."""

    model_config = ConfigDict(extra="forbid")
    field: str
    succeeded: list[str | int] = Field(min_length=1)

    @field_validator("field")
    @classmethod
    def _field(cls, value: str) -> str:
        _check_dotted(value)
        return value


class HttpToolConfig(_Request):
    description: str = Field(min_length=1)
    method: Method
    input_schema: dict[str, Any] = Field(default_factory=lambda: {"type": "object"})
    timeout: float | None = Field(None, gt=0, le=3600)
    idempotency_header: str | None = None
    receipt_id: str | None = None
    receipt_status: ReceiptStatusConfig | None = None
    lookup: LookupConfig | None = None
    query: list[str] | None = None
    body: list[str] | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    cost: CostConfig | None = None
    read_only: bool = False
    annotations: dict[str, Any] | None = None
    expose_as: str | None = None

    @field_validator("headers")
    @classmethod
    def _headers(cls, value: dict[str, str]) -> dict[str, str]:
        return _check_headers(value)

    @field_validator("receipt_id")
    @classmethod
    def _receipt_id(cls, value: str | None) -> str | None:
        return _check_dotted(value)

    @field_validator("idempotency_header")
    @classmethod
    def _header_name(cls, value: str | None) -> str | None:
        if value is not None and not _HEADER_NAME.fullmatch(value):
            raise ValueError(f"{value!r} is not a header name")
        return value

    @model_validator(mode="after")
    def _mapping(self) -> Self:
        in_path = set(placeholders(self.path)) - {KEY_PLACEHOLDER}
        query, body = set(self.query or ()), set(self.body or ())
        if query & body:
            raise ValueError(f"an argument goes to the query or the body, not both: {sorted(query & body)}")
        if (query | body) & in_path:
            raise ValueError(f"the path already takes {sorted((query | body) & in_path)}")
        if self.body and self.method in NO_BODY_METHODS:
            raise ValueError(f"a {self.method} request has no body")
        properties = self.input_schema.get("properties")
        if isinstance(properties, dict):
            if KEY_PLACEHOLDER in properties:
                raise ValueError(f"{KEY_PLACEHOLDER!r} is reserved for the gateway's key")
            lookup_names = set(placeholders(self.lookup.path)) | set(self.lookup.query) if self.lookup else set()
            unknown = (in_path | query | body | lookup_names) - set(properties) - {KEY_PLACEHOLDER}
            if unknown:
                raise ValueError(f"not in input_schema.properties: {sorted(unknown)}")
        if self.lookup is not None:
            if self.receipt_id is None:
                raise ValueError("a lookup needs receipt_id: its answer proves a call only by naming the object")
            uses_key = KEY_PLACEHOLDER in placeholders(self.lookup.path) or KEY_PLACEHOLDER in self.lookup.query
            if uses_key and self.idempotency_header is None:
                raise ValueError("a lookup by idempotency_key needs idempotency_header: else the key is never sent")
        return self


class HttpAdapterConfig(BaseModel):
    """An adapter document of kind `http` (the module docstring lists every field)."""

    model_config = ConfigDict(extra="forbid")
    name: str
    kind: Literal["http"] = "http"
    base_url: str
    headers: dict[str, str] = Field(default_factory=dict)
    key_retention: int | None = None  # seconds
    timeout: float = Field(30.0, gt=0, le=3600)
    trust_read_only_hint: bool = False
    max_connections: int = Field(100, ge=1, le=10_000)
    tools: dict[str, HttpToolConfig] = Field(min_length=1)

    @field_validator("headers")
    @classmethod
    def _headers(cls, value: dict[str, str]) -> dict[str, str]:
        return _check_headers(value)

    @field_validator("key_retention", mode="before")
    @classmethod
    def _duration(cls, value: Any) -> Any:
        return None if value is None else parse_duration(value)

    @field_validator("base_url")
    @classmethod
    def _url(cls, value: str) -> str:
        if "${" not in value:  # a reference is checked once resolved
            problem = url_problem(value)
            if problem is not None:
                raise ValueError(problem)
        return value

    @model_validator(mode="after")
    def _retention(self) -> Self:
        for name, tool in self.tools.items():
            if tool.lookup is None:
                continue
            if self.key_retention is None:
                raise ValueError(f"tool {name} has a lookup: key_retention must say how long keys are remembered")
            if self.key_retention < self.timeout_of(tool):
                raise ValueError(f"key_retention is shorter than the timeout of tool {name}")
        return self

    def timeout_of(self, tool: HttpToolConfig) -> float:
        return tool.timeout if tool.timeout is not None else self.timeout
