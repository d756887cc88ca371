"""`warrant approvals`: list, review and decide approvals, over the operator HTTP API (an approver key).

    warrant approvals list [--status pending|approved|...|all] [--run R]
    warrant approvals show ID
    warrant approvals approve ID [--note TEXT] [--sha256 H] [--arguments FILE|-]
    warrant approvals deny ID [--note TEXT] [--sha256 H]

`show` prints the exact payload as pretty JSON with its sha256, the evidence and rationale the
agent gave, and a unified diff against the previous approval of the same tool in the same run
(computed here from the run's approvals). `approve` and `deny` fetch the approval, show it, check
that the payload shown hashes to the sha256 the gateway states, and decide with that hash as
`expected_sha256`: the gateway refuses (`payload_mismatch`) if the payload is not the one shown.
`--sha256` pins the hash a person reviewed earlier instead. A payload the gateway no longer shows
(purged) is decided only with `--sha256`.

`approve --arguments FILE` (`-`: standard input) approves an edited payload instead, a JSON object:
the CLI prints its diff against the proposal, and the gateway checks it as the run's own call (422
`edit_outside_authority`) and binds the approval to its hash. A denial's `--note` is the message the
model reads (docs/decisions/0032-approve-edited.md).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from gateway.canonical import payload_sha256
from gateway.cli import http as cli_http
from gateway.cli.format import cell, compact_json, payload_diff, pretty_json, short_hash, short_time, table
from gateway.cli.http import ApiFailed, add_url, api_path, every_item, print_json, reporting
from gateway.errors import Code


def add_commands(sub: Any) -> None:
    approvals = sub.add_parser("approvals", help="review and decide approvals (WARRANT_API_KEY: approver)")
    approvals_sub = approvals.add_subparsers(dest="approvals_command", required=True)
    listing = approvals_sub.add_parser("list", help="approvals, oldest first (default: pending)")
    listing.add_argument("--status", default="pending", help="pending (default), approved, denied, ... or all")
    listing.add_argument("--run", help="only this run's")
    listing.set_defaults(func=reporting(_list))
    show = approvals_sub.add_parser("show", help="the exact payload, its sha256, evidence and a diff")
    show.add_argument("approval_id")
    show.set_defaults(func=reporting(_show))
    commands = [listing, show]
    for name, approve in (("approve", True), ("deny", False)):
        decide = approvals_sub.add_parser(name, help=f"{name} the payload shown (bound by its sha256)")
        decide.add_argument("approval_id")
        decide.add_argument("--note", help="recorded with the decision")
        decide.add_argument("--sha256", help="the payload hash you reviewed (default: the one shown now)")
        if approve:
            decide.add_argument(
                "--arguments", metavar="FILE|-", help="approve this edited payload (a JSON object) instead"
            )
        decide.set_defaults(func=reporting(_decide), approve=approve)
        commands.append(decide)
    for command in commands:
        add_url(command)
        command.add_argument("--json", action="store_true", help="print the API's JSON answer")


def hash_matches(approval: dict[str, Any]) -> bool | None:
    """Whether the payload shown hashes (RFC 8785, sha256) to the hash stated; None: no payload shown."""
    payload = approval.get("payload")
    if payload is None:
        return None
    try:
        return bool(payload_sha256(payload) == approval["payload_sha256"])
    except ValueError:
        return False


def previous_of(approval: dict[str, Any], run_approvals: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The last approval of the same tool listed before `approval` (lists are oldest first)."""
    previous = None
    for other in run_approvals:
        if other["approval_id"] == approval["approval_id"]:
            return previous
        if other["tool"] == approval["tool"]:
            previous = other
    return None


def _indented(text: str) -> list[str]:
    return [f"  {line}" for line in text.splitlines()]


_MARK_WORDS = {
    "bidi_control": "direction-override characters (the text may display reordered)",
    "invisible": "invisible characters",
    "mixed_scripts": "letters from more than one script (a look-alike name?)",
    "punycode": "a punycode name (shown by clients as another name)",
}


def _marks_lines(marks: Any) -> list[str]:
    """The gateway's deception marks (the view's `marks`), as the console's approval page words them."""
    if not marks:
        return []
    lines = ["LOOK CLOSELY: this payload contains text that may not read as what it is"]
    for m in marks:
        text = f": {m['text']!r}" if m.get("text") else ""
        points = f"  [{' '.join(m.get('code_points', []))}]" if m.get("code_points") else ""
        lines.append(f"  ! {m['path']}  {_MARK_WORDS.get(m['kind'], m['kind'])}{text}{points}")
    return lines


def describe_approval(approval: dict[str, Any], previous: dict[str, Any] | None) -> str:
    """`approvals show` for a person."""
    a = approval
    lines = [f"{a['approval_id']}  {a['status']}  {a['tool']}  (run {a['run_id']})"]
    facts = [
        ("requested", f"{short_time(a.get('created_at'))} by {cell(a.get('requested_by'))}"),
        ("decide_by", short_time(a.get("decide_by"))),
        ("valid_until", short_time(a.get("valid_until"))),
        ("role", a.get("role")),
        ("spec_version", a.get("spec_version")),
        ("tool_def", short_hash(a.get("tool_def_sha256"))),
    ]
    if a.get("decided_by"):
        note = f" ({a['note']})" if a.get("note") else ""
        facts.append(("decided", f"{short_time(a.get('decided_at'))} by {a['decided_by']}{note}"))
    lines += [f"  {name.ljust(12)}  {cell(value)}" for name, value in facts]
    check = {
        True: "the payload below hashes to it",
        False: "THE PAYLOAD BELOW DOES NOT HASH TO IT",
        None: "the gateway shows no payload (purged)",
    }[hash_matches(a)]
    lines += ["", f"payload sha256 {a['payload_sha256']}  ({check})"]
    lines += _marks_lines(a.get("marks"))
    if a.get("payload") is not None:
        lines += _indented(pretty_json(a["payload"]))
    if a.get("rationale"):
        lines += ["", "rationale", *_indented(str(a["rationale"]))]
    if a.get("evidence") is not None:
        evidence = a["evidence"]
        lines += ["", "evidence", *_indented(evidence if isinstance(evidence, str) else pretty_json(evidence))]
    lines.append("")
    if previous is None:
        lines.append(f"no earlier approval of {a['tool']} in this run")
    else:
        since = f"{previous['approval_id']} ({previous['status']}, {short_time(previous.get('created_at'))})"
        if previous.get("payload") is None or a.get("payload") is None:
            lines.append(f"against {since}: no diff, a payload is not shown")
        else:
            diff = payload_diff(previous["payload"], a["payload"], previous["approval_id"], a["approval_id"])
            lines += [f"diff against {since}", *_indented(diff)] if diff else [f"the same payload as {since}"]
    return "\n".join(lines)


def _fetch(args: argparse.Namespace, http: Any) -> tuple[dict[str, Any], dict[str, Any] | None]:
    approval: dict[str, Any] = cli_http.call(http, "GET", api_path("approvals", args.approval_id))
    siblings = every_item(http, "/api/approvals", {"run_id": approval["run_id"], "limit": "500"})
    return approval, previous_of(approval, siblings)


def _list(args: argparse.Namespace) -> int:
    params = {"limit": "500"}
    if args.status != "all":
        params["status"] = args.status
    if args.run:
        params["run_id"] = args.run
    with cli_http.client(args) as http:
        items = every_item(http, "/api/approvals", params)
    if args.json:
        print_json({"items": items, "next_cursor": None})
        return 0
    if not items:
        print(f"no {'' if args.status == 'all' else args.status + ' '}approvals")
        return 0
    rows = [
        [
            a["approval_id"],
            a["run_id"],
            a["tool"],
            a["status"],
            short_hash(a["payload_sha256"]),
            a.get("requested_by"),
            short_time(a.get("decide_by")),
            compact_json(a.get("payload"), 48),
        ]
        for a in items
    ]
    print(table(["APPROVAL_ID", "RUN_ID", "TOOL", "STATUS", "SHA256", "REQUESTED_BY", "DECIDE_BY", "PAYLOAD"], rows))
    return 0


def _show(args: argparse.Namespace) -> int:
    with cli_http.client(args) as http:
        approval, previous = _fetch(args, http)
    if args.json:
        print_json(approval)
    else:
        print(describe_approval(approval, previous))
    return 0


def _decide(args: argparse.Namespace) -> int:
    verb = "approve" if args.approve else "deny"
    with cli_http.client(args) as http:
        approval, previous = _fetch(args, http)
        if not args.json:
            print(describe_approval(approval, previous))
            print()
        if args.sha256:
            expected = args.sha256.lower()
        else:
            match = hash_matches(approval)
            if match is None:
                raise ApiFailed(
                    Code.PAYLOAD_UNAVAILABLE,
                    f"the gateway shows no payload for {approval['approval_id']}: "
                    "decide only with --sha256 of a payload you reviewed",
                )
            if not match:
                raise ApiFailed(
                    Code.PAYLOAD_MISMATCH, "the payload shown does not hash to the sha256 the gateway states"
                )
            expected = approval["payload_sha256"]
        body: dict[str, Any] = {"expected_sha256": expected} | ({"note": args.note} if args.note else {})
        edited = edited_arguments(getattr(args, "arguments", None))
        if edited is not None:
            body["arguments"] = edited
            if not args.json:
                diff = payload_diff(approval.get("payload"), edited, "proposed", "edited")
                print("the edit you approve", *_indented(diff or "(the same payload)"), "", sep="\n")
        decided = cli_http.call(http, "POST", api_path("approvals", approval["approval_id"], verb), body)
    if args.json:
        print_json(decided)
    elif decided.get("proposed_sha256"):
        print(
            f"{decided['approval_id']}: {decided['status']}, edited (sha256 {decided['payload_sha256']}, "
            f"proposed {decided['proposed_sha256']})"
        )
    else:
        print(f"{decided['approval_id']}: {decided['status']} (sha256 {decided['payload_sha256']})")
    return 0


def edited_arguments(source: str | None) -> dict[str, Any] | None:
    """The edited payload of `--arguments` (a file, `-`: standard input); None when not given.

    Raises: ApiFailed `invalid_json` (not JSON, not an object, unreadable)."""
    if source is None:
        return None
    try:
        text = sys.stdin.read() if source == "-" else Path(source).read_text(encoding="utf-8")
        value = json.loads(text)
    except (OSError, ValueError) as error:
        raise ApiFailed(Code.INVALID_JSON, f"--arguments {source}: {error}") from None
    if not isinstance(value, dict):
        raise ApiFailed(Code.INVALID_JSON, f"--arguments {source}: the edited payload must be a JSON object")
    return value
