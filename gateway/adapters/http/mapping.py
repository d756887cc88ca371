"""Arguments to an HTTP request: path placeholders, query string, JSON body (http_config.py has the rules).

Everything here happens before anything is sent: a `MappingError` means the call is `not_sent`.
Its message names arguments, never their values.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from gateway.adapters.http.config import BODY_METHODS, KEY_PLACEHOLDER, PLACEHOLDER, HttpToolConfig, LookupConfig

Params = list[tuple[str, str]]


class MappingError(ValueError):
    """The arguments do not make a request (a path argument missing, a value no URL can carry)."""


@dataclass(frozen=True)
class Planned:
    """One request, ready for the adapter's client (relative to its `base_url`)."""

    method: str
    path: str
    params: Params
    json: dict[str, Any] | None
    headers: dict[str, str]


def plan_call(tool: HttpToolConfig, arguments: Mapping[str, Any], key: str | None) -> Planned:
    """The request for one call of `tool`. Raises: MappingError."""
    in_path = set(PLACEHOLDER.findall(tool.path))
    path = fill_path(tool.path, arguments, key)
    body_default = tool.method in BODY_METHODS
    query_names = set(tool.query or ())
    body_names = set(tool.body or ())
    params: Params = []
    body: dict[str, Any] = {}
    for name, value in arguments.items():
        if name in in_path:
            continue
        if name in query_names or (name not in body_names and not body_default):
            params.extend(query_pairs(name, value))
        else:
            body[name] = value
    headers = dict(tool.headers)
    if key is not None and tool.idempotency_header is not None:
        headers[tool.idempotency_header] = key
    wants_body = body_default or bool(tool.body)
    return Planned(tool.method, path, params, body if wants_body else None, headers)


def plan_lookup(tool: HttpToolConfig, lookup: LookupConfig, arguments: Mapping[str, Any], key: str) -> Planned:
    """The request asking whether the call with `key` happened. Raises: MappingError."""
    values = {**arguments, KEY_PLACEHOLDER: key}
    params: Params = []
    for name in lookup.query:
        if name in values:
            params.extend(query_pairs(name, values[name]))
    return Planned(lookup.method, fill_path(lookup.path, arguments, key), params, None, dict(tool.headers))


def fill_path(template: str, arguments: Mapping[str, Any], key: str | None) -> str:
    """`template` with each `{name}` replaced by its argument, escaped as one path segment."""

    def one(match: Any) -> str:
        name = match.group(1)
        if name == KEY_PLACEHOLDER:
            if key is None:
                raise MappingError("the path takes the idempotency key, and this call has none")
            return quote(key, safe="")
        if name not in arguments:
            raise MappingError(f"the path takes the argument {name!r}, and it is missing")
        text = _scalar(arguments[name])
        if text is None or text in ("", ".", ".."):
            raise MappingError(f"the argument {name!r} cannot name a path segment (empty, '.', '..' or not a scalar)")
        return quote(text, safe="")

    return PLACEHOLDER.sub(one, template)


def query_pairs(name: str, value: Any) -> Params:
    """A query argument: a scalar once, a list of scalars repeated, null left out."""
    if value is None:
        return []
    items = value if isinstance(value, list) else [value]
    pairs: Params = []
    for item in items:
        text = _scalar(item)
        if text is None:
            raise MappingError(f"the argument {name!r} cannot go in a query string (an object or a nested list)")
        pairs.append((name, text))
    return pairs


def _scalar(value: Any) -> str | None:
    """A JSON scalar as URL text (booleans as JSON writes them); None for anything else."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str | int | float):
        return str(value)
    return None
