"""A milestone's checks: what a contract asks the gateway to verify, and how the results combine.

Pure: no I/O. `gateway/tools/evidence.py` reads artifacts and runs the checks (docs/progress.md
"Milestones and checks"). Every check has exactly one kind key:

    {"artifact": id, "sha256"?: hex, "schema"?: {...}}      ArtifactCheck
    {"http": {"url", "method": "GET", "status"?, "contains"?}} HttpCheck
    {"validator": name, "artifact"?: id}                      ValidatorCheck
    {"review": {"reviewer": name}}                            ReviewCheck

Each check ends `verified`, `failed` (the evidence is wrong), `unverified` (the gateway could not
read it) or `pending_review` (a person has to look). `milestone_status` combines them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import urlsplit

import jsonschema
from jsonschema.validators import validator_for

KINDS: tuple[str, ...] = ("artifact", "http", "validator", "review")
STATUSES: tuple[str, ...] = ("verified", "failed", "unverified", "pending_review")
MAX_URI = 2048
MAX_ID = 128

Status = Literal["verified", "failed", "unverified", "pending_review"]
# A configured validator: (the artifact's bytes or None, the evidence) -> True | False | (bool, reason),
# or an awaitable of that.
Validator = Callable[[bytes | None, Any], Any]

_SHA256 = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True)
class ArtifactCheck:
    artifact: str
    sha256: str | None = None
    schema: dict[str, Any] | None = None
    kind: Literal["artifact"] = "artifact"


@dataclass(frozen=True)
class HttpCheck:
    url: str
    method: str = "GET"
    status: int | None = None  # None: any 2xx
    contains: str | None = None
    kind: Literal["http"] = "http"


@dataclass(frozen=True)
class ValidatorCheck:
    name: str
    artifact: str | None = None
    kind: Literal["validator"] = "validator"


@dataclass(frozen=True)
class ReviewCheck:
    reviewer: str
    kind: Literal["review"] = "review"


Check = ArtifactCheck | HttpCheck | ValidatorCheck | ReviewCheck


@dataclass(frozen=True)
class CheckResult:
    """One check's outcome. `detail` holds what was read (artifact id, uri, sha256, http status)."""

    kind: str
    status: Status
    reason: str | None = None
    detail: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ArtifactRef:
    """An artifact as a worker declares it in a checkpoint or a milestone's evidence."""

    id: str
    uri: str
    sha256: str
    version: str | None = None

    @classmethod
    def from_wire(cls, data: Any) -> ArtifactRef:
        """Raises: ValueError naming what is wrong."""
        body = _object(data, "an artifact", required={"id", "uri", "sha256"}, optional={"version"})
        version = body.get("version")
        if version is not None and (not isinstance(version, str) or len(version) > MAX_ID):
            raise ValueError(f"an artifact's version is a string of at most {MAX_ID} characters")
        return cls(_name(body["id"], "an artifact's id"), _uri(body["uri"]), _sha256(body["sha256"]), version)

    def to_wire(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "uri": self.uri, "sha256": self.sha256}
        if self.version is not None:
            out["version"] = self.version
        return out


@dataclass(frozen=True)
class SourceRef:
    """An outside source a worker relied on: its uri and the etag or sha256 it saw."""

    uri: str
    etag: str | None = None
    sha256: str | None = None

    @classmethod
    def from_wire(cls, data: Any) -> SourceRef:
        """Raises: ValueError naming what is wrong (a source needs an etag or a sha256)."""
        body = _object(data, "a source", required={"uri"}, optional={"etag", "sha256"})
        etag = body.get("etag")
        if etag is not None and (not isinstance(etag, str) or not etag or len(etag) > 1024):
            raise ValueError("a source's etag is a non-empty string of at most 1024 characters")
        sha256 = None if body.get("sha256") is None else _sha256(body["sha256"])
        if etag is None and sha256 is None:
            raise ValueError("a source needs an etag or a sha256")
        return cls(_uri(body["uri"]), etag, sha256)

    def to_wire(self) -> dict[str, Any]:
        out: dict[str, Any] = {"uri": self.uri}
        if self.etag is not None:
            out["etag"] = self.etag
        if self.sha256 is not None:
            out["sha256"] = self.sha256
        return out


def parse_check(data: Any) -> Check:
    """One check of a contract's milestone.

    Raises:
        ValueError: not an object, no kind key or two, an unknown key, a bad sha256, schema or URL.
    """
    if not isinstance(data, Mapping):
        raise ValueError("a check is an object with one kind key: " + ", ".join(KINDS))
    kinds = [k for k in KINDS if k in data]
    if "validator" in kinds and "artifact" in kinds:
        kinds.remove("artifact")  # a validator's `artifact` names its input, not a second kind
    if not kinds:
        raise ValueError(
            f"a check needs one kind key of {', '.join(KINDS)} (got {', '.join(map(str, data)) or 'none'})"
        )
    if len(kinds) > 1:
        raise ValueError(f"a check has exactly one kind key (got {' and '.join(kinds)})")
    kind = kinds[0]
    if kind == "artifact":
        body = _object(data, "an artifact check", required={"artifact"}, optional={"sha256", "schema"})
        schema = body.get("schema")
        if schema is not None:
            _check_schema(schema)
        sha256 = None if body.get("sha256") is None else _sha256(body["sha256"])
        return ArtifactCheck(_name(body["artifact"], "artifact"), sha256, schema)
    if kind == "http":
        _object(data, "an http check", required={"http"}, optional=set())
        spec = _object(data["http"], "http", required={"url"}, optional={"method", "status", "contains"})
        url = _http_url(spec["url"])
        method = spec.get("method", "GET")
        if method != "GET":
            raise ValueError("http.method: only GET is checked (a check must not change anything)")
        status = spec.get("status")
        if status is not None and (type(status) is not int or not 100 <= status <= 599):
            raise ValueError("http.status is an HTTP status code (100-599)")
        contains = spec.get("contains")
        if contains is not None and (not isinstance(contains, str) or not contains):
            raise ValueError("http.contains is a non-empty string")
        return HttpCheck(url, method, status, contains)
    if kind == "validator":
        body = _object(data, "a validator check", required={"validator"}, optional={"artifact"})
        artifact = body.get("artifact")
        return ValidatorCheck(
            _name(body["validator"], "validator"), None if artifact is None else _name(artifact, "artifact")
        )
    _object(data, "a review check", required={"review"}, optional=set())
    spec = _object(data["review"], "review", required={"reviewer"}, optional=set())
    return ReviewCheck(_name(spec["reviewer"], "review.reviewer"))


def check_problems(checks: Sequence[Any]) -> list[str]:
    """Every bad check of a list, each with its index ("checks[2]: ...")."""
    problems = []
    for index, data in enumerate(checks):
        try:
            parse_check(data)
        except ValueError as exc:
            problems.append(f"checks[{index}]: {exc}")
    return problems


def milestone_status(results: Sequence[CheckResult]) -> tuple[Status, list[str]]:
    """The milestone's status and the reasons of every check that is not verified.

    failed when any check failed; else unverified when one could not be read; else pending_review
    when reviews remain; else verified (a milestone without checks too: nothing is left to verify).
    """
    statuses = {r.status for r in results}
    reasons = [r.reason or r.status for r in results if r.status != "verified"]
    for status in ("failed", "unverified", "pending_review"):
        if status in statuses:
            return status, reasons
    return "verified", reasons


def parse_host_entry(entry: Any) -> tuple[str, int | None]:
    """An `artifact_hosts` entry, `host` or `host:port` (IPv6 in brackets), as (lowercase host, port).

    Raises: ValueError when it is not a bare host with an optional port.
    """
    if not isinstance(entry, str) or not entry or any(c in entry for c in "/?#@ \t\r\n"):
        raise ValueError(f"{entry!r} is not a host or host:port")
    try:
        parts = urlsplit("//" + entry)
        host, port = parts.hostname, parts.port
    except ValueError:
        raise ValueError(f"{entry!r} is not a host or host:port") from None
    if not host:
        raise ValueError(f"{entry!r} is not a host or host:port")
    return host.lower(), port


def _object(data: Any, what: str, *, required: set[str], optional: set[str]) -> Mapping[str, Any]:
    if not isinstance(data, Mapping):
        raise ValueError(f"{what} is an object")
    missing = sorted(required - set(data))
    if missing:
        raise ValueError(f"{what} needs {', '.join(missing)}")
    unknown = sorted(str(k) for k in set(data) - required - optional)
    if unknown:
        raise ValueError(f"{what} has unknown keys {', '.join(unknown)}")
    return data


def _name(value: Any, what: str) -> str:
    if not isinstance(value, str) or not value or len(value) > MAX_ID:
        raise ValueError(f"{what} is a non-empty string of at most {MAX_ID} characters")
    return value


def _sha256(value: Any) -> str:
    if not isinstance(value, str) or not _SHA256.fullmatch(value):
        raise ValueError("sha256 is 64 lowercase hex digits")
    return value


def _uri(value: Any) -> str:
    if not isinstance(value, str) or not value or len(value) > MAX_URI:
        raise ValueError(f"uri is a non-empty string of at most {MAX_URI} characters")
    return value


def _http_url(value: Any) -> str:
    url = _uri(value)
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 -- raises ValueError on a bad port
    except ValueError:
        raise ValueError("http.url is not a URL") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError("http.url must be an http:// or https:// URL with a host")
    if parts.username is not None or parts.password is not None:
        raise ValueError("http.url must not carry credentials")
    return url


def _check_schema(schema: Any) -> None:
    if not isinstance(schema, dict):
        raise ValueError("schema is a JSON Schema object")
    try:
        validator_for(schema, default=jsonschema.Draft202012Validator).check_schema(schema)
    except jsonschema.SchemaError as exc:
        where = "/".join(str(p) for p in exc.path)
        raise ValueError(f"schema is not a valid JSON Schema{f' at {where}' if where else ''}: {exc.message}") from None
