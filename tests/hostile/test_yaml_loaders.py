"""Malformed files to every YAML loader: a clear error naming the file, never another exception,
never code execution, in bounded time.

Loaders: `read_yaml` (gateway/yamlfile.py, under all of them), the configuration
(`load_settings`), an adapter (`load_adapter`), policies (`load_policies`), a contract given to the
CLI (`read_contract`, then `parse_contract`) and an OpenAPI document (`read_spec`, then
`import_openapi`). Files: random bytes (non-UTF-8 included), YAML made of hostile fragments (tags
like !!python/object, anchors and aliases, merge keys, duplicate keys, lone surrogates, huge
numbers, bad timestamps), and well-formed documents of every loader's own keys with values of
the wrong types; then fixed bombs (billion laughs, a self-referencing anchor, 100k-deep nesting,
a file over the size cap).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gateway.adapters.http import OpenApiError, import_openapi
from gateway.cli.adapters import read_spec
from gateway.cli.http import ApiFailed
from gateway.cli.runs import read_contract
from gateway.config import load_adapter, load_settings
from gateway.domain import parse_contract
from gateway.errors import ConfigError, InvalidRequest
from gateway.policy import load_policies
from gateway.yamlfile import MAX_BYTES, read_yaml

EXAMPLES = 150
BOUND_S = 5.0  # CPU seconds one file may cost to be loaded or refused (a bomb would take far longer)
FUZZ = settings(
    max_examples=EXAMPLES,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
ENV = {"WARRANT_LEDGER_KEY": "k", "KEY": "k"}
# Where code would run if a loader executed a tag: a file the payload would create.
PWNED = Path("/tmp/warrant-hostile-yaml-pwned")


def _openapi(path: Path) -> Any:
    spec, _ = read_spec(str(path))
    return import_openapi(spec, name="fuzz", source=str(path), generated_at="2026-01-01T00:00:00Z")


def _contract(path: Path) -> Any:
    return parse_contract(read_contract(str(path)))


# Each loader, the errors it may raise, and whether its message must name the file.
LOADERS: dict[str, tuple[Callable[[Path], Any], tuple[type[Exception], ...], bool]] = {
    "read_yaml": (read_yaml, (ConfigError,), True),
    "settings": (lambda p: load_settings(p, ENV), (ConfigError,), True),
    "adapter": (lambda p: load_adapter(p, ENV), (ConfigError,), True),
    "policies": (lambda p: load_policies([p]), (ConfigError,), True),
    "contract": (_contract, (ApiFailed, InvalidRequest), False),
    "openapi": (_openapi, (OpenApiError,), False),
}

FRAGMENTS = [
    "a: ",
    "b:",
    " ",
    "  ",
    "\n",
    "\n  ",
    "- ",
    "[",
    "]",
    "{",
    "}",
    ", ",
    "? ",
    "&x ",
    "*x",
    "&y ",
    "*y",
    "<<: ",
    "!!python/object/apply:os.system ['touch " + str(PWNED) + "']",
    "!!python/name:os.system",
    "!!binary ",
    "!!float ",
    "!!int ",
    "!!set ",
    "!!timestamp ",
    "!!omap ",
    "!<tag:yaml.org,2002:str> ",
    "!local ",
    "2020-99-99",
    "'",
    '"',
    '"\\ud800"',
    '"\\x00"',
    "\\",
    "9" * 5000,
    "0x" + "f" * 5000,
    "1e999",
    "\t",
    "---\n",
    "...\n",
    "%YAML 1.1\n",
    "%TAG ! tag:x,2000:\n",
    "#",
    "|\n",
    ">\n",
    "~",
    "null",
    "yes",
    "0o17",
    ".nan",
    "=",
    "\u202e",
    "\ufeff",
    "\x85",
    "tools",
    "name",
    "kind",
    "http",
    "mcp",
    "api_keys",
    "budgets",
]
hostile_yaml = st.lists(st.sampled_from(FRAGMENTS), max_size=30).map("".join).map(str.encode)

scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=12)
values = st.recursive(scalars, lambda v: st.lists(v, max_size=3) | st.dictionaries(st.text(max_size=8), v, max_size=3))
# The loaders' own keys with values of any type: past the YAML, into each model's validation.
KEYS = [
    "database", "listen", "api_keys", "adapters", "policies", "webhooks", "watchdog", "artifact_roots", "drill",
    "name", "kind", "base_url", "url", "command", "headers", "tools", "key_retention", "currency",
    "goal", "spec_version", "owner", "expires_in", "budgets", "authority", "approvals", "milestones",
    "openapi", "info", "paths", "servers", "components",
]  # fmt: skip
wrong_types = st.dictionaries(st.sampled_from(KEYS), values, max_size=6).map(
    lambda d: yaml.safe_dump(d, allow_unicode=True).encode()
)
files = st.binary(max_size=200) | hostile_yaml | wrong_types

BILLION_LAUGHS = 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n' + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join([f'*{chr(97 + i)}'] * 9)}]\n" for i in range(9)
)
BOMBS = {
    "billion laughs": BILLION_LAUGHS.encode(),
    "a self-referencing anchor": b"tools: &t\n  x: *t\n",
    "10k-deep flow nesting": b"a: " + b"[" * 10_000 + b"]" * 10_000,
    "10k-deep block nesting": "".join("  " * i + f"k{i}:\n" for i in range(10_000)).encode(),
    "a file over the size cap": b"# " + b"x" * MAX_BYTES + b"\n",
    "a python tag": f"tools: !!python/object/apply:os.system ['touch {PWNED}']\n".encode(),
    "non-UTF-8 bytes": b"name: caf\xe9\n",
    "a duplicate key": b"name: a\nname: b\n",
}


def load(name: str, path: Path) -> Exception | None:
    """Load `path` with the loader `name`: success (None), or one of its own errors naming the file."""
    loader, allowed, names_file = LOADERS[name]
    # This process's CPU time, not the wall clock: the bound is on what a file makes the loader
    # compute, which other processes on a busy machine do not change (coverage's tracing does:
    # about 3x, still well inside it).
    start = time.process_time()
    refused: Exception | None = None
    try:
        loader(path)
    except allowed as exc:
        assert not names_file or str(path) in str(exc), str(exc)
        refused = exc
    finally:
        assert time.process_time() - start < BOUND_S, f"{name} took {time.process_time() - start:.1f} s of CPU"
    assert not PWNED.exists(), "a YAML tag ran code"
    return refused


@pytest.mark.parametrize("name", list(LOADERS))
@given(data=files)
@FUZZ
def test_a_malformed_file_is_refused_with_the_loaders_own_error(name: str, data: bytes, tmp_path: Path) -> None:
    path = tmp_path / ("file.json" if name == "openapi" and data[:1] in (b"{", b"[") else "file.yaml")
    path.write_bytes(data)
    load(name, path)


@pytest.mark.parametrize("bomb", list(BOMBS))
@pytest.mark.parametrize("name", list(LOADERS))
def test_bombs_are_refused_in_bounded_time(name: str, bomb: str, tmp_path: Path) -> None:
    path = tmp_path / "bomb.yaml"
    path.write_bytes(BOMBS[bomb])
    assert load(name, path) is not None


def test_yaml_errors_name_the_line(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_bytes(b"database: x\nlisten: [\n")
    with pytest.raises(ConfigError, match=r"line \d+"):
        read_yaml(path)
    path.write_bytes(b"a: 1\nb: \xff\n")
    with pytest.raises(ConfigError, match="line 2"):
        read_yaml(path)
