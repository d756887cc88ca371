"""`warrant tools`: the downstream tool pins, over the operator HTTP API.

    warrant tools list                          every exposed tool and its pin state
    warrant tools pending                       definitions waiting for an operator, as diffs
    warrant tools accept NAME [--sha256 H]      pin the definition pending for NAME

The gateway is `--url`, else WARRANT_URL, else http://127.0.0.1:8700; the API key comes from
WARRANT_API_KEY (accepting needs an admin key). Without `--sha256`, `accept` shows the diff it
accepts and binds to that exact definition, so a definition that changes meanwhile is refused.
"""

from __future__ import annotations

import argparse
from typing import Any

from gateway.cli import http as cli_http
from gateway.cli.http import ApiFailed, add_url, reporting
from gateway.errors import Code


def add_commands(sub: Any) -> None:
    tools = sub.add_parser("tools", help="downstream tool definitions and their pins (WARRANT_API_KEY)")
    tools_sub = tools.add_subparsers(dest="tools_command", required=True)
    listing = tools_sub.add_parser("list", help="every exposed tool and its pin state")
    listing.set_defaults(func=reporting(_list))
    pending = tools_sub.add_parser("pending", help="definitions waiting for an operator, as diffs")
    pending.set_defaults(func=reporting(_pending))
    accept = tools_sub.add_parser("accept", help="pin the definition pending for a tool (admin key)")
    accept.add_argument("name", help="the exposed tool name, e.g. files__write_note")
    accept.add_argument("--sha256", help="the definition hash to accept (default: the one pending now)")
    accept.set_defaults(func=reporting(_accept))
    for command in (listing, pending, accept):
        add_url(command)


def _short(sha: str | None) -> str:
    return sha[:12] if sha else "-"


def _print_pending(item: dict[str, Any]) -> None:
    pin = item["pin"]
    was = f"pinned {_short(pin['pinned_sha256'])}" if pin["pinned_sha256"] else "never pinned"
    print(f"{item['tool']}  {pin['state']}  ({was}; listed now {_short(pin['definition_sha256'])})")
    print(f"  accept with: warrant tools accept {item['tool']} --sha256 {pin['definition_sha256']}")
    for line in item["diff"].splitlines():
        print(f"  {line}")


def _list(args: argparse.Namespace) -> int:
    with cli_http.client(args) as client:
        items = cli_http.call(client, "GET", "/api/tools")["items"]
    for item in items:
        pin = item["pin"]
        policy = "" if item["has_policy"] else "  (no policy: refused)"
        print(f"{item['tool']}  {item['effect']}  {pin['state']}  {_short(pin['definition_sha256'])}{policy}")
    return 0


def _pending(args: argparse.Namespace) -> int:
    with cli_http.client(args) as client:
        items = cli_http.call(client, "GET", "/api/tools/pending")["items"]
    if not items:
        print("no tool definition is pending")
        return 0
    for item in items:
        _print_pending(item)
    return 0


def _accept(args: argparse.Namespace) -> int:
    with cli_http.client(args) as client:
        sha = args.sha256
        if sha is None:
            items = cli_http.call(client, "GET", "/api/tools/pending")["items"]
            found = [item for item in items if item["tool"] == args.name]
            if not found:
                raise ApiFailed(Code.NOT_FOUND, f"no definition of {args.name} is pending")
            _print_pending(found[0])
            sha = found[0]["pin"]["definition_sha256"]
        tool = cli_http.call(client, "POST", f"/api/tools/{args.name}/accept", {"definition_sha256": sha})
    print(f"{tool['tool']}: {tool['pin']['state']} {tool['pin']['definition_sha256']}")
    return 0
