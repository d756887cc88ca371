"""The accelerators: code that does by hand, for speed, what a dependency already does; fenced.

    name          code                                   mirrors      declared range   when off, served by
    mcp_front     gateway/mcp/accelerators/fastpath.py   mcp          >=2.3,<2.4       the SDK's streamable-HTTP app
    mcp_client    gateway/adapters/mcp/lean_client.py    mcp          >=2.3,<2.4       the SDK client (`mcp.Client`)
    http11        gateway/adapters/http/http11.py        no library   (none)           httpx2 (http/httpx_pool.py)
    quick_schema  gateway/domain/quick_schema.py         jsonschema   >=4.20,<5        `jsonschema` alone

An accelerator is on when all three hold: its switch in warrant.yaml (`accelerators:`, each on by
default), the installed version of what it mirrors within its declared range (the versions it
was written against and tested with), and every private name it reaches for present. `settle`
decides once at start-up (gateway/app.py) and logs one warning for each accelerator the range
or a missing private name switched off, naming it, the installed version and the range; the
slow path then serves, with the same answers (the differential tests: `pytest -m differential`;
`make test-newest-sdk` runs them against the newest `mcp` release the registry offers).

The ranges: `mcp` moves fast (the SDK files the front and the lean client mirror change many
times a year, in minor releases), so the range is the minor series tested, 2.3. http11 mirrors
no library: it frames HTTP/1.1 itself (RFC 9112) and takes only httpx2's public
`create_ssl_context`; it has a switch and no range. quick_schema mirrors what `jsonschema`
decides for a handful of keywords whose meaning the JSON Schema drafts fix; the range is the
gateway's own floor up to the next major release.

Private names (`Reach`) are checked here too, each with what serves when it is missing: the
fast path's `mcp.server._otel` (the front's fast path is then off), tracing's
`opentelemetry.trace._TRACER_PROVIDER` (tracing asks the public API instead) and the SDK client
session's `_dispatcher._closed` (found on a live session by the MCP adapter, which then treats a
connection as open until a call or a listing fails; logged once by `missing`).

This module sits at the package root beside the other small shared helpers (errors, clock): the
front (gateway/mcp/), the adapters (gateway/adapters/) and the catalog (gateway/catalog/) read
it, and the adapters may not import from gateway/mcp/. It imports only the standard library,
and it reads what is installed: the pure core (gateway/domain/) does not depend on it.
"""

from __future__ import annotations

import functools
import importlib
import importlib.metadata
import logging
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

log = logging.getLogger("warrant.accelerators")

MCP_FRONT = "mcp_front"
MCP_CLIENT = "mcp_client"
HTTP11 = "http11"
QUICK_SCHEMA = "quick_schema"


@dataclass(frozen=True)
class Accelerator:
    name: str  # its switch in warrant.yaml's `accelerators:`
    what: str
    package: str | None  # the distribution it mirrors (its version is checked), or None
    minimum: str | None = None  # the lowest version within the range
    below: str | None = None  # the first version beyond it
    otherwise: str = ""  # what serves when it is off

    @property
    def range(self) -> str:
        bounds = (f">={self.minimum}" if self.minimum else "", f"<{self.below}" if self.below else "")
        return ",".join(bound for bound in bounds if bound)


@dataclass(frozen=True)
class Reach:
    """A private name of a dependency that gateway code reads: `module` then `attribute` (dotted)."""

    module: str
    attribute: str
    used_by: str  # an accelerator's name, or what else reads it
    otherwise: str  # what serves when it is missing
    on_instance: bool = False  # an instance attribute: checked where it is read (`missing`), not here

    @property
    def name(self) -> str:
        return f"{self.module}.{self.attribute}"


ACCELERATORS: tuple[Accelerator, ...] = (
    Accelerator(
        MCP_FRONT,
        "the MCP front's tools/call fast path",
        "mcp",
        "2.3",
        "2.4",
        "the SDK's streamable-HTTP app answers every request",
    ),
    Accelerator(
        MCP_CLIENT,
        "the MCP adapter's lean tools/call",
        "mcp",
        "2.3",
        "2.4",
        "the SDK client sends every call",
    ),
    Accelerator(
        HTTP11,
        "the lean MCP path's HTTP/1.1 connections",
        None,
        otherwise="the lean MCP path posts through httpx2",
    ),
    Accelerator(
        QUICK_SCHEMA,
        "the compiled argument check",
        "jsonschema",
        "4.20",
        "5",
        "jsonschema checks every call's arguments",
    ),
)
NAMES: tuple[str, ...] = tuple(a.name for a in ACCELERATORS)
_BY_NAME = {a.name: a for a in ACCELERATORS}

OTEL_MIDDLEWARE = Reach(
    "mcp.server._otel",
    "OpenTelemetryMiddleware",
    MCP_FRONT,
    "the front's fast path is off (it tells a server with only the SDK's tracing middleware by it)",
)
TRACER_PROVIDER = Reach(
    "opentelemetry.trace",
    "_TRACER_PROVIDER",
    "tracing's no-provider shortcut (gateway/observe/tracing.py)",
    "tracing asks opentelemetry.trace.get_tracer_provider() on every call",
)
DISPATCHER_CLOSED = Reach(
    "mcp.client.session",
    "ClientSession._dispatcher._closed",
    "the MCP adapter's closed-connection check (gateway/adapters/mcp/adapter.py)",
    "a connection counts as open until a call or a listing on it fails",
    on_instance=True,
)
REACHES: tuple[Reach, ...] = (OTEL_MIDDLEWARE, TRACER_PROVIDER, DISPATCHER_CLOSED)


@dataclass(frozen=True)
class Accelerators:
    """What `settle` decided: the accelerators that are off, each with why."""

    off: Mapping[str, str]

    def on(self, name: str) -> bool:
        if name not in _BY_NAME:
            raise KeyError(name)
        return name not in self.off


def installed_version(package: str) -> str | None:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


def resolve(reach: Reach) -> object | None:
    """The object a (module-level) private name refers to, or None when it is missing."""
    try:
        value: object = importlib.import_module(reach.module)
        for part in reach.attribute.split("."):
            value = getattr(value, part)
    except (ImportError, AttributeError):
        return None
    return value


def present(reach: Reach) -> bool:
    try:
        value: object = importlib.import_module(reach.module)
        for part in reach.attribute.split("."):
            if not hasattr(value, part):
                return False
            value = getattr(value, part)
    except ImportError:
        return False
    return True


def within(version: str, minimum: str | None, below: str | None) -> bool:
    """Whether `version` is a final (or post) release in [minimum, below). A pre-release, a dev
    release or a version this cannot read is outside every range: the slow path serves it."""
    release = _release(version)
    if release is None:
        return False
    low = _release(minimum) if minimum else None
    high = _release(below) if below else None
    return (low is None or _compare(release, low) >= 0) and (high is None or _compare(release, high) < 0)


_VERSION = re.compile(r"v?(\d+(?:\.\d+)*)((?:[.-]?post\d*)?(?:\+[a-z0-9.]+)?)", re.IGNORECASE)


def _release(version: str) -> tuple[int, ...] | None:
    match = _VERSION.fullmatch(version.strip())
    if match is None:
        return None
    return tuple(int(part) for part in match.group(1).split("."))


def _compare(a: tuple[int, ...], b: tuple[int, ...]) -> int:
    width = max(len(a), len(b))
    left, right = a + (0,) * (width - len(a)), b + (0,) * (width - len(b))
    return (left > right) - (left < right)


def settle(
    switches: Mapping[str, bool] | None = None,
    *,
    version_of: Callable[[str], str | None] | None = None,
    reachable: Callable[[Reach], bool] | None = None,
) -> Accelerators:
    """Which accelerators serve: each one's switch (default on), version range and private names.

    Logs one warning per accelerator the range or a missing name turned off (and one per missing
    private name of anything else); a switch turned off is logged as information. `version_of`
    and `reachable` (tests): default `installed_version` and `present`."""
    switches = switches or {}
    version_of = version_of or installed_version
    reachable = reachable or present
    unknown = sorted(set(switches) - set(NAMES))
    if unknown:
        raise ValueError(f"no accelerator named {', '.join(unknown)}; the accelerators are {', '.join(NAMES)}")
    off: dict[str, str] = {}
    for accelerator in ACCELERATORS:
        name = accelerator.name
        if not switches.get(name, True):
            off[name] = "switched off in warrant.yaml"
            log.info("accelerator %s (%s) is switched off: %s", name, accelerator.what, accelerator.otherwise)
            continue
        if accelerator.package is not None:
            version = version_of(accelerator.package)
            if version is None or not within(version, accelerator.minimum, accelerator.below):
                installed = f"{accelerator.package} {version}" if version else f"{accelerator.package} (not installed)"
                off[name] = f"{installed} is outside {accelerator.package}{accelerator.range}"
                log.warning(
                    "accelerator %s (%s) is off: %s is installed, outside the range it was written and tested "
                    "for (%s%s); %s",
                    name,
                    accelerator.what,
                    installed,
                    accelerator.package,
                    accelerator.range,
                    accelerator.otherwise,
                )
                continue
        for reach in REACHES:
            if reach.used_by == name and not reach.on_instance and not reachable(reach):
                off[name] = f"{reach.name} is missing"
                log.warning(
                    "accelerator %s (%s) is off: the private name %s is missing; %s",
                    name,
                    accelerator.what,
                    reach.name,
                    accelerator.otherwise,
                )
                break
    for reach in REACHES:
        if reach.used_by not in _BY_NAME and not reach.on_instance and not reachable(reach):
            log.warning("the private name %s is missing: %s", reach.name, reach.otherwise)
    return Accelerators(off)


@functools.cache
def default() -> Accelerators:
    """What serves where no configuration says otherwise (every switch on): settled once."""
    return settle()


_missing: set[str] = set()


def missing(reach: Reach) -> None:
    """A private name found missing where it is read: logged once per process."""
    if reach.name not in _missing:
        _missing.add(reach.name)
        log.warning("the private name %s is missing: %s", reach.name, reach.otherwise)


def gone(name: str, error: ImportError) -> None:
    """An accelerator's own module failed to import (a name it takes from the SDK moved): off."""
    key = f"import:{name}"
    if key not in _missing:
        _missing.add(key)
        accelerator = _BY_NAME[name]
        log.warning("accelerator %s (%s) is off: %s; %s", name, accelerator.what, error, accelerator.otherwise)
