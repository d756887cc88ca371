"""`warrant keys`: the tenant's API keys, over the operator HTTP API (an admin key).

    warrant keys create --name N --role R [--role R2] [--expires-in 90d] [--tenant T]
    warrant keys list
    warrant keys revoke KEY_ID [--reason TEXT]
    warrant keys rotate KEY_ID --overlap 1h [--expires-in 90d]

A new key is printed alone on stdout, once (the rest goes to stderr), so
`KEY=$(warrant keys create ...)` keeps it; `--json` prints the API's answer instead. A key is
made in the tenant of WARRANT_API_KEY; `--tenant` may only name that tenant.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from gateway.cli import http as cli_http
from gateway.cli.http import add_url, reporting
from gateway.domain.roles import ROLES


def add_commands(sub: Any) -> None:
    keys = sub.add_parser("keys", help="the tenant's API keys: create, list, revoke, rotate (an admin key)")
    keys_sub = keys.add_subparsers(dest="keys_command", required=True)
    create = keys_sub.add_parser("create", help="a new key, shown once")
    create.add_argument("--name", required=True, help="who the key is: approvals and the record name it")
    create.add_argument(
        "--role", required=True, action="append", choices=sorted(ROLES), dest="roles", help="repeat for more roles"
    )
    create.add_argument("--expires-in", help="a lifetime like 90d (default: none)")
    create.add_argument("--tenant", help="must be your own key's tenant")
    create.set_defaults(func=reporting(_create))
    listing = keys_sub.add_parser("list", help="every key of the tenant, the configuration's too")
    listing.set_defaults(func=reporting(_list))
    revoke = keys_sub.add_parser("revoke", help="the key fails from its next request on")
    revoke.add_argument("key_id")
    revoke.add_argument("--reason", help="recorded with the revocation")
    revoke.set_defaults(func=reporting(_revoke))
    rotate = keys_sub.add_parser("rotate", help="a new key; the old one keeps working for the overlap")
    rotate.add_argument("key_id")
    rotate.add_argument("--overlap", required=True, help="how long the old key still works, like 1h (0s: not at all)")
    rotate.add_argument("--expires-in", help="the new key's lifetime (default: the old key's)")
    rotate.set_defaults(func=reporting(_rotate))
    for command in (create, listing, revoke, rotate):
        add_url(command)
        command.add_argument("--json", action="store_true", help="print the API's JSON answer")


def _describe(key: dict[str, Any]) -> str:
    expires = key["expires_at"] or "never"
    return f"{key['key_id']}  {key['name']}  {','.join(key['roles'])}  {key['status']}  expires {expires}"


def _new_key(args: argparse.Namespace, answer: dict[str, Any], what: str) -> int:
    if args.json:
        print(json.dumps(answer, indent=2))
        return 0
    print(f"{what} {_describe(answer)}", file=sys.stderr)
    print("the key is shown once: store it now", file=sys.stderr)
    print(answer["key"])
    return 0


def _create(args: argparse.Namespace) -> int:
    body: dict[str, Any] = {"name": args.name, "roles": args.roles}
    if args.expires_in is not None:
        body["expires_in"] = args.expires_in
    if args.tenant is not None:
        body["tenant"] = args.tenant
    with cli_http.client(args) as client:
        answer = cli_http.call(client, "POST", "/api/keys", body)
    return _new_key(args, answer, "created")


def _list(args: argparse.Namespace) -> int:
    items: list[dict[str, Any]] = []
    cursor: str | None = None
    with cli_http.client(args) as client:
        while True:
            page = cli_http.call(client, "GET", "/api/keys", params={"cursor": cursor} if cursor else None)
            items += page["items"]
            cursor = page["next_cursor"]
            if cursor is None:
                break
    if args.json:
        print(json.dumps({"items": items}, indent=2))
        return 0
    rows = [["KEY_ID", "NAME", "ROLES", "STATUS", "SOURCE", "EXPIRES"]]
    rows += [
        [k["key_id"], k["name"], ",".join(k["roles"]), k["status"], k["source"], k["expires_at"] or "-"] for k in items
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip())
    return 0


def _revoke(args: argparse.Namespace) -> int:
    body = {"reason": args.reason} if args.reason else {}
    with cli_http.client(args) as client:
        answer = cli_http.call(client, "POST", f"/api/keys/{args.key_id}/revoke", body)
    print(json.dumps(answer, indent=2) if args.json else f"revoked {_describe(answer)}")
    return 0


def _rotate(args: argparse.Namespace) -> int:
    body: dict[str, Any] = {"overlap": args.overlap}
    if args.expires_in is not None:
        body["expires_in"] = args.expires_in
    with cli_http.client(args) as client:
        answer = cli_http.call(client, "POST", f"/api/keys/{args.key_id}/rotate", body)
    if not args.json:
        old = answer["old_key"]
        print(f"{old['key_id']} keeps working until {old['expires_at']}", file=sys.stderr)
    return _new_key(args, answer, "rotated to")
