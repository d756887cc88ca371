"""`warrant recovery` and `warrant actions`: what a run's next worker needs, and an operator's
word on actions whose outcome no lookup could establish (docs/progress.md).

    warrant recovery RUN                           the recovery package
    warrant actions acknowledge ACTION --note N    accept an unknown action as uncertain
    warrant actions compensate ACTION --reason R   undo a confirmed write with its policy's compensating call
    warrant actions resolve ACTION --status succeeded|failed --evidence E [--receipt-id ID] [--actual-spend X]
                                 [--duplicate]
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import Any

from gateway.cli import http as cli_http
from gateway.cli.http import api_path, print_json, reporting


def add_commands(sub: Any) -> None:
    recovery = sub.add_parser("recovery", help="a run's recovery package: verified, uncertain, allowed, next")
    recovery.add_argument("run_id")
    recovery.set_defaults(func=reporting(_recovery))
    actions = sub.add_parser("actions", help="settle or acknowledge actions whose outcome is unknown")
    actions_sub = actions.add_subparsers(dest="actions_command", required=True)
    ack = actions_sub.add_parser("acknowledge", help="accept an unknown action as uncertain, so its run may complete")
    ack.add_argument("action_id")
    ack.add_argument("--note", required=True, help="why it stays uncertain; recorded in the run's history")
    ack.set_defaults(func=reporting(_acknowledge))
    compensate = actions_sub.add_parser(
        "compensate", help="undo a confirmed write with the compensating call its policy names (docs/compensation.md)"
    )
    compensate.add_argument("action_id")
    compensate.add_argument("--reason", required=True, help="why; recorded with the compensating call")
    compensate.set_defaults(func=reporting(_compensate))
    resolve = actions_sub.add_parser("resolve", help="settle an unknown action with your evidence")
    resolve.add_argument("action_id")
    resolve.add_argument("--status", choices=["succeeded", "failed"], required=True)
    resolve.add_argument("--evidence", required=True, help="what shows it; recorded in the receipt")
    resolve.add_argument("--receipt-id", help="the destination's id for the object, when it happened")
    resolve.add_argument("--actual-spend", help='what it cost, a decimal in the run\'s currency like "0.05"')
    resolve.add_argument(
        "--duplicate", action="store_true", help="it happened more than once (with --status succeeded)"
    )
    resolve.set_defaults(func=reporting(_resolve))
    for command in (recovery, ack, compensate, resolve):
        cli_http.add_url(command)
        command.add_argument("--json", action="store_true", help="print the API's JSON")


def _recovery(args: argparse.Namespace) -> int:
    with cli_http.client(args) as http:
        package = cli_http.call(http, "GET", api_path("runs", args.run_id, "recovery"))
    if args.json:
        print_json(package)
    else:
        print(recovery_text(package))
    return 0


def _acknowledge(args: argparse.Namespace) -> int:
    with cli_http.client(args) as http:
        action = cli_http.call(http, "POST", api_path("actions", args.action_id, "acknowledge"), {"note": args.note})
    if args.json:
        print_json(action)
    else:
        print(f"{action['action_id']}: {action['status']}, acknowledged by {action['acknowledged']['by']}")
    return 0


def _compensate(args: argparse.Namespace) -> int:
    with cli_http.client(args) as http:
        answer = cli_http.call(http, "POST", api_path("actions", args.action_id, "compensate"), {"reason": args.reason})
    if args.json:
        print_json(answer)
        return 0
    made, original = answer["compensation"], answer["original"]
    again = " (the earlier compensation)" if answer["replayed"] else ""
    print(
        f"{made['action_id']}: {made['tool']} {made['status']}{again}; {original['action_id']} is {original['status']}"
    )
    if answer["code"] == "outcome_unknown":
        print(f"the compensation's outcome is unknown: reconcile it (POST /api/runs/{original['run_id']}/reconcile)")
    return 0


def _resolve(args: argparse.Namespace) -> int:
    body: dict[str, Any] = {"status": args.status, "evidence": args.evidence}
    if args.receipt_id:
        body["receipt_id"] = args.receipt_id
    if args.actual_spend:
        body["actual_spend"] = args.actual_spend
    if args.duplicate:
        body["duplicate"] = True
    with cli_http.client(args) as http:
        action = cli_http.call(http, "POST", api_path("actions", args.action_id, "resolve"), body)
    if args.json:
        print_json(action)
    else:
        print(f"{action['action_id']}: {action['status']}")
    return 0


def recovery_text(package: Mapping[str, Any]) -> str:
    """The recovery package for a person: where the run stands and what the next worker may do."""
    lines = [f"run {package['run_id']} ({package['status']}, contract {package['spec_version']})"]
    checkpoint = package.get("checkpoint")
    if checkpoint is None:
        lines.append("checkpoint: none")
    else:
        good = "good" if checkpoint["good"] else f"NOT GOOD: {checkpoint['bad_reason']}"
        lines.append(f"checkpoint: version {checkpoint['version']} ({good}); last good: {package['last_good_version']}")
    for artifact in package.get("artifacts") or []:
        lines.append(f"  artifact {artifact['id']}: {artifact['uri']} sha256 {artifact['sha256'][:12]}")
    for source in package.get("sources") or []:
        seen = f"etag {source['etag']}" if source.get("etag") else f"sha256 {str(source.get('sha256'))[:12]}"
        lines.append(f"  source {source['uri']} {seen}")
    lines.append("milestones:")
    for item in package["milestones"]["items"]:
        required = "" if item.get("required", True) else " (optional)"
        reasons = f": {'; '.join(item['reasons'])}" if item.get("reasons") and item["status"] != "verified" else ""
        lines.append(f"  {item['milestone_id']}{required}: {item['status']}{reasons}")
    effects = package["effects"]
    lines.append(f"effects: {len(effects['confirmed'])} confirmed, {len(effects['uncertain'])} uncertain")
    for action in effects["uncertain"]:
        ack = action.get("acknowledged")
        note = f" (acknowledged by {ack['by']})" if ack else ""
        lines.append(f"  uncertain {action['action_id']} {action['tool']}{note}")
    remaining = ", ".join(f"{dim} {value}" for dim, value in package["budget_remaining"].items())
    lines.append(f"remaining: {remaining}; deadline {package['deadline']}")
    for approval in package.get("pending_approvals") or []:
        lines.append(f"approval {approval['approval_id']} {approval['status']}: {approval['tool']}")
    if package.get("next_operation") is not None:
        lines.append(f"next: {package['next_operation']}")
    plan = package.get("plan")
    if plan and plan.get("version"):
        done = plan["progress"]
        lines.append(
            f"plan: version {plan['version']}, {done['done']} of {done['total']} tasks completed; "
            f"resume at {plan['resume_at'] or 'nothing (no task under way or ready)'}"
        )
        for task in plan["tasks"]:
            lines.append(
                f"  task {task['task_id']}: {task['status']} (attempt {task['attempts']}/{task['max_attempts']})"
            )
    return "\n".join(lines)
