"""`warrant adapters`: adapter definitions.

    warrant adapters import-openapi SPEC --name crm [--base-url URL] [--out FILE [--force]]

Writes (`render`) a draft `kind: http` adapter from an OpenAPI 3.0/3.1 document for a person to review
(`gateway/adapters/http/openapi_import.py` says what it infers). SPEC is a JSON or YAML file, or an http(s) URL
fetched with a 10 s timeout. The YAML goes to `--out` (an existing file is refused unless
`--force`) or to stdout; the counts and the things to review go to stderr.

Exit status 0 when written; 1 when refused, with `warrant: [code] ...` on stderr: the codes of
`OpenApiError`, and `unreadable` (SPEC cannot be read, fetched or parsed), `exists` (`--out`
exists), `unwritable` (`--out` cannot be written).
"""

from __future__ import annotations

import argparse
import json
import logging
import re
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import yaml

from gateway.adapters.http.openapi_import import (
    GUESSED_RETENTION,
    KEY_RETENTION,
    ImportResult,
    OpenApiError,
    import_openapi,
)
from gateway.clock import SystemClock
from gateway.errors import ConfigError
from gateway.yamlfile import parse_yaml, read_text, read_yaml

FETCH_TIMEOUT = 10.0


def add_commands(sub: Any) -> None:
    adapters = sub.add_parser("adapters", help="adapter definitions")
    adapters_sub = adapters.add_subparsers(dest="adapters_command", required=True)
    command = adapters_sub.add_parser(
        "import-openapi", help="write a draft http adapter from an OpenAPI 3.0/3.1 document, for review"
    )
    command.add_argument("spec", metavar="SPEC", help="the OpenAPI document: a JSON or YAML file, or an http(s) URL")
    command.add_argument("--name", required=True, help="the adapter's name, e.g. crm: ^[a-z][a-z0-9]{0,15}$")
    command.add_argument("--base-url", help="the API's base URL (default: the document's servers[0].url)")
    command.add_argument("--out", help="the adapter file to write (default: stdout)")
    command.add_argument("--force", action="store_true", help="overwrite --out when it exists")
    command.set_defaults(func=_import_openapi)


def read_spec(source: str) -> tuple[Any, str | None]:
    """The parsed document, and the URL it came from (None for a file).

    Raises:
        OpenApiError: `unreadable`.
    """
    if re.match(r"https?://", source, re.IGNORECASE):
        logging.getLogger("httpx").setLevel(logging.WARNING)  # no request log line on stderr
        try:
            response = httpx.get(source, timeout=FETCH_TIMEOUT, follow_redirects=True)
        except httpx.HTTPError as exc:
            raise OpenApiError("unreadable", f"cannot fetch {source}: {type(exc).__name__}") from exc
        if not response.is_success:
            raise OpenApiError(
                "unreadable", f"{source} answered HTTP {response.status_code}", status=response.status_code
            )
        return _parse(response.text, source), str(response.url)
    path = Path(source)
    if path.suffix.lower() != ".json":
        try:
            return read_yaml(path), None  # YAML, or JSON under another name: YAML reads it too
        except ConfigError as exc:
            raise OpenApiError("unreadable", str(exc)) from exc
    try:
        text = read_text(path)  # at most MAX_BYTES, UTF-8
    except ConfigError as exc:
        raise OpenApiError("unreadable", str(exc)) from exc
    return _parse(text, source), None


def _parse(text: str, source: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):  # RecursionError: nested past the parser's depth
        pass
    try:
        return parse_yaml(text)  # the project's safe loader: no alias bomb, no duplicate key
    except yaml.YAMLError as exc:
        raise OpenApiError("unreadable", f"{source}: neither JSON nor YAML") from exc


def _write(path: Path, text: str, force: bool) -> None:
    try:
        with path.open("w" if force else "x", encoding="utf-8") as out:
            out.write(text)
    except FileExistsError:
        raise OpenApiError("exists", f"{path} exists: pass --force to overwrite it") from None
    except OSError as exc:
        raise OpenApiError("unwritable", f"{path}: cannot write: {exc.strerror}") from exc


def _import_openapi(args: argparse.Namespace) -> int:
    try:
        spec, spec_url = read_spec(args.spec)
        result = import_openapi(
            spec,
            name=args.name,
            source=args.spec,
            generated_at=_utc(SystemClock().now()),
            base_url=args.base_url,
            spec_url=spec_url,
        )
        text = render(result)
        if args.out:
            _write(Path(args.out), text, args.force)
        else:
            sys.stdout.write(text)
    except OpenApiError as exc:
        print(f"warrant: {exc}", file=sys.stderr)
        return 1
    for line in result.summary():
        print(line, file=sys.stderr)
    if args.out:
        print(f"wrote {args.out}", file=sys.stderr)
    return 0


def render(result: ImportResult) -> str:
    """The adapter document as YAML, with its comments."""
    out = [_comment(line) for line in result.header]
    head = {k: v for k, v in result.document.items() if k != "tools"}
    out.append(_dump(head).rstrip("\n"))
    out.append(_comment(f"headers: {{{result.auth_header}}}   # secrets as ${{ENV}} references, never inline"))
    if result.left_out:
        out.append(_comment(f"left out of the tools (set them in headers: if needed): {', '.join(result.left_out)}"))
    if "key_retention" in result.document:
        out.append(_comment(f"key_retention above is a guess: {KEY_RETENTION}"))
    elif any("idempotency_header" in t.definition for t in result.tools):
        out.append(_comment(f"key_retention: {GUESSED_RETENTION}   # {KEY_RETENTION}"))
    out.append("tools:")
    for tool in result.tools:
        out.extend("  " + _comment(note.text) for note in tool.notes)
        body = _dump({tool.name: tool.definition}).rstrip("\n")
        out.extend(f"  {line}" if line else "" for line in body.split("\n"))
    if result.skipped:
        out.append(_comment("Skipped (not imported):"))
        out.extend(_comment(f"  {s.method} {s.path}: {s.reason}") for s in result.skipped)
    return "\n".join(out) + "\n"


class _Dumper(yaml.SafeDumper):
    def ignore_aliases(self, data: Any) -> bool:
        return True  # every schema written out in full: a reviewer reads no &anchors


def _text(dumper: yaml.SafeDumper, data: str) -> yaml.ScalarNode:
    return dumper.represent_scalar("tag:yaml.org,2002:str", data, style="|" if "\n" in data else None)


_Dumper.add_representer(str, _text)


def _dump(data: Any) -> str:
    return yaml.dump(data, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=110, default_flow_style=False)


def _comment(text: str) -> str:
    # Names and paths come from the document: a line break in one must not end the comment.
    flat = re.sub(r"[\x00-\x1f\x7f\x85\u2028\u2029]", " ", text).rstrip()
    return f"# {flat}" if flat else "#"


def _utc(at: float) -> str:
    return datetime.fromtimestamp(at, tz=UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
