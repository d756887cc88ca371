"""`warrant dead-letters`: decide a run's dead letters, over the operator HTTP API (an operator key).

    warrant dead-letters retry ID --reason TEXT     its call again through the gate, fresh operation id
    warrant dead-letters resolve ID --reason TEXT   dealt with otherwise
    warrant dead-letters drop ID --reason TEXT      given up

`warrant runs dead-letters RUN` lists them (docs/retries.md).
"""

from __future__ import annotations

import argparse
from typing import Any

from gateway.cli import http as cli_http
from gateway.cli.http import add_url, api_path, print_json, reporting


def add_commands(sub: Any) -> None:
    letters = sub.add_parser("dead-letters", help="retry, resolve or drop a dead letter (WARRANT_API_KEY: operator)")
    letters_sub = letters.add_subparsers(dest="dead_letters_command", required=True)
    helps = {
        "retry": "send its call again through the gate under a fresh operation id",
        "resolve": "mark it dealt with otherwise",
        "drop": "give it up",
    }
    for name, text in helps.items():
        command = letters_sub.add_parser(name, help=text)
        command.add_argument("dead_letter_id")
        command.add_argument("--reason", required=True, help="why, recorded in the run's history (required)")
        command.set_defaults(func=reporting(_decide), decision=name)
        add_url(command)
        command.add_argument("--json", action="store_true", help="print the API's JSON answer")


def _decide(args: argparse.Namespace) -> int:
    with cli_http.client(args) as http:
        answer = cli_http.call(
            http, "POST", api_path("dead-letters", args.dead_letter_id, args.decision), {"reason": args.reason}
        )
    if args.json:
        print_json(answer)
        return 0
    letter = answer.get("dead_letter", answer)
    line = f"{letter['dead_letter_id']}: {letter['status']}"
    result = answer.get("result")
    if result is not None:
        outcome = f"failed [{result['code']}]" if result["is_error"] else "succeeded"
        line += f"; the retry {result['action_id']} {outcome}"
    print(line)
    return 0
