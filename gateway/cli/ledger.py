"""`warrant ledger export` and `warrant ledger verify --file`: evidence bundles (gateway/store/bundle.py).

    warrant ledger export --run R [--out FILE] [--json] [--url URL]     over the API (WARRANT_API_KEY:
                                                                       auditor or admin)
    warrant ledger verify --file B [--key-file K] [--json]             offline: no server, no database

`export` streams the bundle to FILE (written as FILE.partial, renamed once its end line arrived)
or to stdout, counting what arrives on stderr. `--json` prints a summary as JSON: on stdout with
`--out`, on stderr when the bundle itself goes to stdout.

`verify --file` takes the ledger key from `--key-file` (the file's bytes, a trailing newline
dropped) or WARRANT_LEDGER_KEY (as `warrant serve` does). Exit 0: the bundle verifies; 1: it does
not, with the code and the first bad item; 2: no key, or the file cannot be read. Without
`--file`, `verify` checks the store's own chains as before (gateway/cli/main.py).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any
from urllib.parse import quote

import httpx

from gateway.cli import http as cli_http
from gateway.cli.http import ApiFailed, add_url, reporting
from gateway.errors import Code
from gateway.store.bundle import BundleReport, line_kind, verify_bundle

PROGRESS_EVERY = 1.0  # seconds between progress lines on stderr


def add_commands(ledger_sub: Any, verify: argparse.ArgumentParser) -> None:
    """Add `export`, and `--file` to the existing `verify` (which keeps its own behaviour without it)."""
    export = ledger_sub.add_parser("export", help="a run's evidence bundle, for offline verification")
    export.add_argument("--run", required=True, help="the run id")
    export.add_argument("--out", help="the bundle file (default: stdout)")
    export.add_argument("--json", action="store_true", help="a summary as JSON")
    add_url(export)
    export.set_defaults(func=reporting(_export))
    verify.add_argument("--file", help="check this evidence bundle offline instead of the store")
    verify.add_argument("--key-file", help="the ledger key (default: WARRANT_LEDGER_KEY)")
    verify.add_argument("--json", action="store_true", help="the report as JSON (with --file)")
    on_store: Callable[[argparse.Namespace], int] = verify.get_default("func")
    verify.set_defaults(func=lambda args: verify_file(args) if args.file else on_store(args))


# -- export ----------------------------------------------------------------------------------
class _Counts:
    def __init__(self, run_id: str, stream: IO[str]) -> None:
        self.run_id = run_id
        self.items = {"event": 0, "action": 0, "blob": 0}
        self.purged = 0
        self.bytes = 0
        self.complete = False
        self._stream = stream
        self._shown = time.monotonic()

    def add(self, line: str) -> None:
        kind = line_kind(line)
        if kind in self.items:
            self.items[kind] += 1
            if kind == "blob" and '"purged":true' in line:
                self.purged += 1
        self.complete = kind == "end"
        if time.monotonic() - self._shown >= PROGRESS_EVERY:
            self._shown = time.monotonic()
            self.show()

    def show(self) -> None:
        print(f"exporting {self.run_id}: {self.summary()}", file=self._stream, flush=True)

    def summary(self) -> str:
        i = self.items
        return f"{i['event']} events, {i['action']} actions, {i['blob']} bodies ({self.purged} purged)"

    def as_dict(self, out: str | None) -> dict[str, Any]:
        i = self.items
        return {
            "run_id": self.run_id,
            "file": out,
            "events": i["event"],
            "actions": i["action"],
            "blobs": i["blob"],
            "purged": self.purged,
            "bytes": self.bytes,
        }


def _export(args: argparse.Namespace) -> int:
    counts = _Counts(args.run, sys.stderr)
    with cli_http.client(args) as http, _sink(args.out) as sink:
        for line in _bundle_lines(http, args.run):
            data = (line + "\n").encode("utf-8")
            sink.write(data)
            counts.bytes += len(data)
            counts.add(line)
        if not counts.complete:
            raise ApiFailed(Code.EXPORT_INCOMPLETE, "the gateway ended the bundle before its end line")
    if args.json:
        print(json.dumps(counts.as_dict(args.out)), file=sys.stdout if args.out else sys.stderr)
    else:
        where = f" to {args.out}" if args.out else ""
        print(f"exported {args.run}{where}: {counts.summary()}", file=sys.stderr)
    return 0


def _bundle_lines(http: httpx.Client, run_id: str) -> Iterator[str]:
    """Raises: ApiFailed with the API's code (`unreachable`, `export_incomplete` for a cut stream)."""
    path = f"/api/runs/{quote(run_id, safe='')}/export"
    try:
        with http.stream("GET", path, timeout=httpx.Timeout(30, read=300)) as response:
            if response.status_code >= 400:
                response.read()
                try:
                    error = response.json().get("error", {})
                except (ValueError, AttributeError):
                    error = {}
                raise ApiFailed(str(error.get("code", response.status_code)), str(error.get("message", "")))
            yield from response.iter_lines()
    except httpx.TransportError as exc:
        code = (
            Code.EXPORT_INCOMPLETE if isinstance(exc, httpx.ReadError | httpx.RemoteProtocolError) else Code.UNREACHABLE
        )
        raise ApiFailed(code, f"the export from {http.base_url} failed: {type(exc).__name__}") from exc


@contextlib.contextmanager
def _sink(out: str | None) -> Iterator[IO[bytes]]:
    """stdout, or FILE.partial renamed to FILE only when the export completes (removed otherwise)."""
    if out is None:
        yield sys.stdout.buffer
        sys.stdout.flush()
        return
    target = Path(out)
    partial = target.with_name(target.name + ".partial")
    try:
        with partial.open("wb") as sink:
            yield sink
        partial.replace(target)
    finally:
        partial.unlink(missing_ok=True)


# -- verify --file ---------------------------------------------------------------------------
def ledger_key(args: argparse.Namespace) -> bytes | None:
    if args.key_file:
        return Path(args.key_file).read_bytes().rstrip(b"\r\n") or None
    return os.environ.get("WARRANT_LEDGER_KEY", "").encode() or None


def verify_file(args: argparse.Namespace) -> int:
    try:
        key = ledger_key(args)
        if key is None:
            print("warrant: set WARRANT_LEDGER_KEY (or --key-file) to the ledger key", file=sys.stderr)
            return 2
        with open(args.file, "rb") as bundle:
            report = verify_bundle(bundle, key)
    except OSError as exc:
        print(f"warrant: cannot read {exc.filename}: {exc.strerror}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(report.as_dict(), indent=2))
    else:
        print(_describe(report))
    return 0 if report.ok else 1


def _describe(report: BundleReport) -> str:
    bad = report.first_bad
    if bad is None:
        return (
            f"ok: {report.run_id}: {report.events} entries up to the MAC'd head {report.head_seq}, "
            f"{report.actions} actions, {report.blobs} bodies ({report.purged} purged) verify"
        )
    where = f"{bad.item} {bad.ref}" if bad.ref is not None else bad.item
    field = f" ({bad.field})" if bad.field else ""
    line = f" at line {bad.line}" if bad.line else ""
    return f"does not verify: [{bad.code}] {where}{field}{line}: {bad.problem}"
