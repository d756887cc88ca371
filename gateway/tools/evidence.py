"""Reading evidence: the guarded artifact fetcher and the milestone checks that use it.

I/O at the edge; the check models and how results combine are pure (gateway/domain/checks.py).
The gateway reads only what the configuration allows (docs/progress.md "What the gateway
fetches"): files under `artifact_roots` (the path resolved with its symlinks first) and
`http(s)://` URLs whose host is in `artifact_hosts`. Anything else is refused before anything is
opened or sent. No redirect is followed, bodies are capped at `max_bytes` and every read at
`timeout` seconds.

`Fetcher.read` and `Fetcher.request` never raise: a failure is a `ReadResult` with `ok=False` and
its reason, which a check reports as `unverified`.
"""

from __future__ import annotations

import asyncio
import hashlib
import inspect
import json
import os
import stat
from collections.abc import Awaitable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import unquote, urlsplit

import httpx
import jsonschema
from jsonschema.validators import validator_for

from gateway.domain.checks import (
    ArtifactCheck,
    ArtifactRef,
    Check,
    CheckResult,
    HttpCheck,
    ReviewCheck,
    SourceRef,
    Validator,
    ValidatorCheck,
    parse_check,
    parse_host_entry,
)

DEFAULT_MAX_BYTES = 10 * 2**20
DEFAULT_TIMEOUT = 10.0
_DEFAULT_PORTS = {"http": 80, "https": 443}
_SCHEMA_ERRORS = 3  # a failed schema check names this many errors


@dataclass(frozen=True)
class ArtifactSettings:
    """`artifact_roots`, `artifact_hosts` and `artifact_limits` in warrant.yaml: what evidence the
    gateway may read (`build_fetcher`). The default reads nothing."""

    roots: tuple[Path, ...] = ()
    hosts: tuple[str, ...] = ()
    max_bytes: int = DEFAULT_MAX_BYTES
    timeout: float = DEFAULT_TIMEOUT


@dataclass(frozen=True)
class ReadResult:
    ok: bool
    body: bytes | None = None
    sha256: str | None = None
    etag: str | None = None
    status: int | None = None
    reason: str | None = None


def _refused(reason: str, status: int | None = None) -> ReadResult:
    return ReadResult(ok=False, status=status, reason=reason)


class Reader(Protocol):
    """What the checks need of a fetcher (a `Fetcher`, or a fake in tests)."""

    async def read(self, uri: str) -> ReadResult: ...

    async def request(self, url: str, method: str = "GET") -> ReadResult: ...


class Fetcher:
    """Reads files under `roots` and URLs on `hosts`, nothing else.

    `hosts` entries are `host` or `host:port`; a bare host allows its scheme's default port (80
    for http, 443 for https). Roots are resolved (symlinks included) once, here.
    """

    def __init__(
        self,
        roots: Sequence[Path],
        hosts: Sequence[str],
        *,
        max_bytes: int = DEFAULT_MAX_BYTES,
        timeout: float = DEFAULT_TIMEOUT,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        """Raises: ValueError for a host entry that is not `host` or `host:port`, or a bad limit."""
        if max_bytes <= 0 or timeout <= 0:
            raise ValueError("max_bytes and timeout must be positive")
        self._roots = tuple(Path(os.path.realpath(root)) for root in roots)
        self._hosts = frozenset(parse_host_entry(entry) for entry in hosts)
        self.max_bytes = max_bytes
        self.timeout = timeout
        self._client = httpx.AsyncClient(follow_redirects=False, trust_env=False, timeout=timeout, transport=transport)

    async def aclose(self) -> None:
        await self._client.aclose()

    async def read(self, uri: str) -> ReadResult:
        """The bytes at `uri` (a `file://` URI, an absolute path, or an http(s) URL). Never raises."""
        try:
            if not isinstance(uri, str) or not uri:
                return _refused("the uri is empty")
            scheme = urlsplit(uri).scheme.lower() if ":" in uri and not uri.startswith("/") else ""
            if scheme in ("http", "https"):
                return await self._http(uri, "GET", any_status=False)
            if scheme == "file" or uri.startswith("/"):
                return await self._file(uri)
            if scheme:
                return _refused(f"{scheme}: URIs are not read (only file://, absolute paths, http:// and https://)")
            return _refused("a relative path is not read: give file:///absolute/path or /absolute/path")
        except Exception as exc:  # the contract of read(): a reason, never an exception
            return _refused(f"could not read: {type(exc).__name__}: {exc}")

    async def request(self, url: str, method: str = "GET") -> ReadResult:
        """An HTTP check's request: any status arrives as `status` with ok=True. Never raises."""
        try:
            if method not in ("GET", "HEAD"):
                return _refused(f"{method} is not sent (a check must not change anything)")
            scheme = urlsplit(url).scheme.lower() if isinstance(url, str) else ""
            if scheme not in ("http", "https"):
                return _refused("an http check needs an http:// or https:// URL")
            return await self._http(url, method, any_status=True)
        except Exception as exc:
            return _refused(f"could not request: {type(exc).__name__}: {exc}")

    # -- files --------------------------------------------------------------------------------

    def _path_of(self, uri: str) -> tuple[str | None, str | None]:
        """(path, None) or (None, reason)."""
        if uri.startswith("/"):
            return uri, None
        parts = urlsplit(uri)
        if parts.netloc not in ("", "localhost"):
            return None, f"a file URI on another host ({parts.netloc}) is not read"
        if parts.query or parts.fragment:
            return None, "a file URI with a query or fragment is not read"
        path = unquote(parts.path)
        if not path.startswith("/"):
            return None, "a file URI needs an absolute path (file:///absolute/path)"
        return path, None

    def _under_roots(self, real: str) -> bool:
        # Path.is_relative_to compares whole components: /data/root2 is not under /data/root.
        return any(Path(real).is_relative_to(root) for root in self._roots)

    async def _file(self, uri: str) -> ReadResult:
        path, reason = self._path_of(uri)
        if path is None:
            return _refused(reason or "not a file URI")
        if "\x00" in path:
            return _refused("the path holds a NUL byte")
        if not self._roots:
            return _refused("no artifact_roots are configured: no file is read")
        try:
            async with asyncio.timeout(self.timeout):
                result = await asyncio.to_thread(self._read_file, path)
        except TimeoutError:
            return _refused(f"reading took longer than {self.timeout:g}s")
        return result

    def _read_file(self, path: str) -> ReadResult:
        real = os.path.realpath(path)  # symlinks and `..` resolved before the check
        if not self._under_roots(real):
            return _refused("the path is outside the artifact roots (symlinks resolved)")
        # O_NOFOLLOW: the last component cannot have become a symlink since the check;
        # O_NONBLOCK: a FIFO does not hang the read (and is refused below as not a regular file).
        flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
        try:
            fd = os.open(real, flags)
        except FileNotFoundError:
            return _refused("no file at that path")
        except PermissionError:
            return _refused("the gateway may not read that file")
        except OSError as exc:
            return _refused(f"cannot open the file: {exc.strerror}")
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return _refused("not a regular file")
            if not self._opened_under_roots(fd):
                return _refused("the path moved outside the artifact roots while it was opened")
            chunks: list[bytes] = []
            size = 0
            while size <= self.max_bytes:
                chunk = os.read(fd, min(1 << 20, self.max_bytes + 1 - size))
                if not chunk:
                    break
                chunks.append(chunk)
                size += len(chunk)
        except OSError as exc:
            return _refused(f"cannot read the file: {exc.strerror}")
        finally:
            os.close(fd)
        if size > self.max_bytes:
            return _refused(f"larger than max_bytes ({self.max_bytes})")
        body = b"".join(chunks)
        return ReadResult(ok=True, body=body, sha256=hashlib.sha256(body).hexdigest())

    def _opened_under_roots(self, fd: int) -> bool:
        # A directory of the path swapped for a symlink between the check and the open: where the
        # descriptor really points (Linux /proc; elsewhere the check before the open stands).
        try:
            where = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            return True
        return self._under_roots(where)

    # -- http ---------------------------------------------------------------------------------

    def _host_allowed(self, url: httpx.URL) -> bool:
        host = url.host.lower()
        default = _DEFAULT_PORTS[url.scheme]
        port = url.port or default
        return (host, port) in self._hosts or (port == default and (host, None) in self._hosts)

    async def _http(self, uri: str, method: str, *, any_status: bool) -> ReadResult:
        try:
            url = httpx.URL(uri)
        except (httpx.InvalidURL, TypeError, ValueError):
            return _refused("not a URL")
        if url.scheme not in _DEFAULT_PORTS or not url.host:
            return _refused("an http(s) URL needs a host")
        if url.userinfo:
            return _refused("a URL carrying credentials is not requested")
        if not self._host_allowed(url):
            return _refused(f"the host {url.netloc.decode('ascii', 'replace')} is not in artifact_hosts")
        try:
            async with asyncio.timeout(self.timeout):
                return await self._stream(url, method, any_status)
        except TimeoutError:
            return _refused(f"the response took longer than {self.timeout:g}s")
        except httpx.TimeoutException:
            return _refused(f"the response took longer than {self.timeout:g}s")
        except httpx.ConnectError as exc:
            return _refused(f"could not connect: {exc}")
        except httpx.HTTPError as exc:
            return _refused(f"the request failed: {type(exc).__name__}: {exc}")

    async def _stream(self, url: httpx.URL, method: str, any_status: bool) -> ReadResult:
        # identity: the body's bytes are what is hashed and capped, not a compressed form.
        async with self._client.stream(method, url, headers={"Accept-Encoding": "identity"}) as response:
            status, etag = response.status_code, response.headers.get("etag")
            if not any_status and 300 <= status < 400:
                return _refused(f"status {status}: redirects are not followed", status)
            if not any_status and not 200 <= status < 300:
                return _refused(f"status {status}", status)
            declared = response.headers.get("content-length", "")
            if declared.isdigit() and int(declared) > self.max_bytes:
                return _refused(f"larger than max_bytes ({self.max_bytes})", status)
            body = bytearray()
            async for chunk in response.aiter_bytes():
                body += chunk
                if len(body) > self.max_bytes:
                    return _refused(f"larger than max_bytes ({self.max_bytes})", status)
        data = bytes(body)
        return ReadResult(ok=True, body=data, sha256=hashlib.sha256(data).hexdigest(), etag=etag, status=status)


def build_fetcher(a: ArtifactSettings, transport: httpx.AsyncBaseTransport | None = None) -> Fetcher:
    """The fetcher the configuration allows (`artifact_roots`, `artifact_hosts`, `artifact_limits`)."""
    return Fetcher(a.roots, a.hosts, max_bytes=a.max_bytes, timeout=a.timeout, transport=transport)


# -- checks ---------------------------------------------------------------------------------------


def taken_on_trust(checks: Sequence[Check | Mapping[str, Any]]) -> list[CheckResult]:
    """The drill's sabotage of `checks` (gateway/safeguards.py): every check counted verified
    without being run, as a gateway that took the agent's word would."""
    results = []
    for check in checks:
        kind: str
        try:
            kind = parse_check(check).kind if isinstance(check, Mapping) else check.kind
        except ValueError:
            kind = "invalid"
        results.append(CheckResult(kind, "verified", None, {"sabotaged": "checks"}))
    return results


async def run_checks(
    checks: Sequence[Check | Mapping[str, Any]],
    artifacts: Mapping[str, ArtifactRef],
    evidence: Any,
    fetcher: Reader,
    validators: Mapping[str, Validator],
    *,
    validator_timeout: float | None = None,
) -> list[CheckResult]:
    """Every check's result, in the checks' order. Checks run concurrently; each distinct artifact
    uri is read once. `validator_timeout` bounds a validator's call (default: the fetcher's timeout).
    Never raises for a bad check or a bad read: those are results."""
    limit = validator_timeout if validator_timeout is not None else float(getattr(fetcher, "timeout", DEFAULT_TIMEOUT))
    run = _Run(artifacts, evidence, fetcher, validators, limit)
    try:
        return list(await asyncio.gather(*(run.one(check) for check in checks)))
    finally:
        run.close()


class _Run:
    def __init__(
        self,
        artifacts: Mapping[str, ArtifactRef],
        evidence: Any,
        fetcher: Reader,
        validators: Mapping[str, Validator],
        timeout: float,
    ) -> None:
        self.artifacts, self.evidence, self.fetcher = artifacts, evidence, fetcher
        self.validators, self.timeout = validators, timeout
        self._reads: dict[str, asyncio.Future[ReadResult]] = {}

    def close(self) -> None:
        for read in self._reads.values():
            read.cancel()

    def _read(self, uri: str) -> Awaitable[ReadResult]:
        read = self._reads.get(uri)
        if read is None:
            read = self._reads[uri] = asyncio.ensure_future(self.fetcher.read(uri))
        return read

    async def one(self, check: Check | Mapping[str, Any]) -> CheckResult:
        if isinstance(check, Mapping):
            try:
                check = parse_check(check)
            except ValueError as exc:
                return CheckResult("invalid", "failed", f"invalid check: {exc}")
        if isinstance(check, ArtifactCheck):
            return await self._artifact(check)
        if isinstance(check, HttpCheck):
            return await self._http(check)
        if isinstance(check, ValidatorCheck):
            return await self._validator(check)
        assert isinstance(check, ReviewCheck)
        return CheckResult(
            "review", "pending_review", f"awaiting review by {check.reviewer}", {"reviewer": check.reviewer}
        )

    async def _bytes(
        self, kind: str, artifact: str, expected: str | None
    ) -> CheckResult | tuple[bytes, dict[str, Any]]:
        """The artifact's bytes once they match the worker's sha256 (and the contract's), or the result."""
        ref = self.artifacts.get(artifact)
        if ref is None:
            return CheckResult(kind, "failed", f"artifact {artifact} was not given", {"artifact": artifact})
        detail: dict[str, Any] = {"artifact": artifact, "uri": ref.uri, "declared_sha256": ref.sha256}
        if ref.version is not None:
            detail["version"] = ref.version
        read = await self._read(ref.uri)
        if not read.ok or read.body is None:
            return CheckResult(kind, "unverified", f"artifact {artifact}: {read.reason}", detail)
        detail["sha256"] = read.sha256
        if read.sha256 != ref.sha256:
            reason = f"artifact {artifact}: its bytes hash to {read.sha256}, the worker declared {ref.sha256}"
            return CheckResult(kind, "failed", reason, detail)
        if expected is not None and read.sha256 != expected:
            reason = f"artifact {artifact}: its bytes hash to {read.sha256}, the contract names {expected}"
            return CheckResult(kind, "failed", reason, detail)
        return read.body, detail

    async def _artifact(self, check: ArtifactCheck) -> CheckResult:
        got = await self._bytes("artifact", check.artifact, check.sha256)
        if isinstance(got, CheckResult):
            return got
        body, detail = got
        if check.schema is not None:
            try:
                async with asyncio.timeout(self.timeout):
                    problem = await asyncio.to_thread(_schema_problem, body, check.schema)
            except TimeoutError:
                reason = f"artifact {check.artifact}: the schema check took longer than {self.timeout:g}s"
                return CheckResult("artifact", "unverified", reason, detail)
            if problem is not None:
                return CheckResult("artifact", "failed", f"artifact {check.artifact}: {problem}", detail)
        return CheckResult("artifact", "verified", None, detail)

    async def _http(self, check: HttpCheck) -> CheckResult:
        response = await self.fetcher.request(check.url, check.method)
        detail: dict[str, Any] = {"url": check.url, "status": response.status}
        if not response.ok:
            return CheckResult("http", "unverified", f"{check.url}: {response.reason}", detail)
        detail["sha256"] = response.sha256
        status = response.status or 0
        if check.status is None and 300 <= status < 400:
            return CheckResult(
                "http", "unverified", f"{check.url}: status {status}: redirects are not followed", detail
            )
        if check.status is not None and status != check.status:
            return CheckResult("http", "failed", f"{check.url}: status {status}, expected {check.status}", detail)
        if check.status is None and not 200 <= status < 300:
            return CheckResult("http", "failed", f"{check.url}: status {status}, expected 2xx", detail)
        if check.contains is not None and check.contains.encode() not in (response.body or b""):
            return CheckResult("http", "failed", f"{check.url}: the body does not contain {check.contains!r}", detail)
        return CheckResult("http", "verified", None, detail)

    async def _validator(self, check: ValidatorCheck) -> CheckResult:
        detail: dict[str, Any] = {"validator": check.name}
        function = self.validators.get(check.name)
        if function is None:
            return CheckResult("validator", "failed", f"no validator named {check.name}", detail)
        body: bytes | None = None
        if check.artifact is not None:
            got = await self._bytes("validator", check.artifact, None)
            if isinstance(got, CheckResult):
                return CheckResult("validator", got.status, got.reason, {**detail, **got.detail})
            body, more = got
            detail.update(more)
        try:
            async with asyncio.timeout(self.timeout):
                if inspect.iscoroutinefunction(function):
                    answer = await function(body, self.evidence)
                else:
                    answer = await asyncio.to_thread(function, body, self.evidence)
                if inspect.isawaitable(answer):
                    answer = await answer
        except TimeoutError:
            return CheckResult(
                "validator", "unverified", f"validator {check.name} took longer than {self.timeout:g}s", detail
            )
        except Exception as exc:
            return CheckResult(
                "validator", "failed", f"validator {check.name} raised {type(exc).__name__}: {exc}", detail
            )
        return _verdict(check.name, answer, detail)


def _verdict(name: str, answer: Any, detail: dict[str, Any]) -> CheckResult:
    """True / False / (bool, reason); anything else fails closed."""
    reason: Any = None
    if isinstance(answer, tuple) and len(answer) == 2:
        answer, reason = answer
    if answer is True:
        return CheckResult("validator", "verified", None if reason is None else str(reason), detail)
    if answer is False:
        return CheckResult(
            "validator", "failed", f"validator {name} said no" + (f": {reason}" if reason else ""), detail
        )
    return CheckResult("validator", "failed", f"validator {name} returned {answer!r}, not true or false", detail)


def _schema_problem(body: bytes, schema: dict[str, Any]) -> str | None:
    try:
        document = json.loads(body)
    except (ValueError, RecursionError):
        return "its content is not JSON"
    try:
        validator = validator_for(schema, default=jsonschema.Draft202012Validator)(schema)
        errors = sorted(validator.iter_errors(document), key=lambda e: list(map(str, e.absolute_path)))
    except Exception as exc:  # an unresolvable $ref, a recursion: the schema could not be applied
        return f"the schema could not be applied: {type(exc).__name__}: {exc}"
    if not errors:
        return None
    shown = [f"{'/'.join(map(str, e.absolute_path)) or '(root)'}: {e.message[:200]}" for e in errors[:_SCHEMA_ERRORS]]
    more = f" (and {len(errors) - _SCHEMA_ERRORS} more)" if len(errors) > _SCHEMA_ERRORS else ""
    return "not valid against the schema: " + "; ".join(shown) + more


# -- re-checks on resume --------------------------------------------------------------------------


async def recheck_artifact(ref: ArtifactRef, fetcher: Reader) -> tuple[str, str | None]:
    """("same" | "changed" | "unreadable", reason): the artifact's bytes against its recorded sha256."""
    read = await fetcher.read(ref.uri)
    if not read.ok:
        return "unreadable", read.reason
    if read.sha256 == ref.sha256:
        return "same", None
    return "changed", f"artifact {ref.id}: sha256 was {ref.sha256}, now {read.sha256}"


async def recheck_source(ref: SourceRef, fetcher: Reader) -> tuple[str, str | None]:
    """("same" | "changed" | "unreadable", reason): by etag when the ref has one (weak comparison),
    by sha256 when the response has no ETag or the ref has no etag."""
    read = await fetcher.read(ref.uri)
    if not read.ok:
        return "unreadable", read.reason
    if ref.etag is not None and read.etag is not None:
        if _weak(ref.etag) == _weak(read.etag):
            return "same", None
        return "changed", f"source {ref.uri}: etag was {ref.etag}, now {read.etag}"
    if ref.sha256 is None:
        return "unreadable", f"source {ref.uri}: the response has no ETag, so the etag cannot be confirmed"
    if read.sha256 == ref.sha256:
        return "same", None
    return "changed", f"source {ref.uri}: sha256 was {ref.sha256}, now {read.sha256}"


def _weak(etag: str) -> str:
    return etag.removeprefix("W/")
