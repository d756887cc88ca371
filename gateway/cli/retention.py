"""`warrant ledger purge`: purge settled actions' bodies now, over the API (docs/retention.md).

    warrant ledger purge [--run R] [--action A] [--before T] [--reason TEXT] [--json] [--url URL]

WARRANT_API_KEY must be an admin's (`ledger.purge`). At least one of --run, --action, --before;
`--before` is an ISO 8601 time with an offset (2026-01-31T00:00:00Z). The gateway answers after
at most a few thousand actions with `more`; this command asks again until nothing is left.
Prints what was purged; exit 0, or 1 with the API's `[code] message`.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from gateway.cli import http as cli_http
from gateway.cli.http import add_url, reporting

MAX_REQUESTS = 1000  # a bound on the loop, far beyond any store's backlog per command


def add_commands(ledger_sub: Any) -> None:
    purge = ledger_sub.add_parser("purge", help="purge settled actions' bodies now (admin); chains still verify")
    purge.add_argument("--run", help="only this run's actions")
    purge.add_argument("--action", help="only this action")
    purge.add_argument("--before", help="only actions settled before this time (ISO 8601 with an offset)")
    purge.add_argument("--reason", help="recorded with the purge in each run's history")
    purge.add_argument("--json", action="store_true", help="the totals as JSON")
    add_url(purge)
    purge.set_defaults(func=reporting(_purge))


def _purge(args: argparse.Namespace) -> int:
    body = {
        key: value
        for key, value in (
            ("run_id", args.run),
            ("action_id", args.action),
            ("before", args.before),
            ("reason", args.reason),
        )
        if value is not None
    }
    total: dict[str, Any] = {"actions": 0, "purged": 0, "kept": 0, "signals": 0, "runs": []}
    with cli_http.client(args) as http:
        for _ in range(MAX_REQUESTS):
            done = cli_http.call(http, "POST", "/api/ledger/purge", body)
            for key in ("actions", "purged", "kept", "signals"):
                total[key] += done.get(key, 0)  # `signals`: a gateway from before version 33 says none
            total["runs"] += [run for run in done["runs"] if run not in total["runs"]]
            if not done["more"]:
                break
    if args.json:
        print(json.dumps(total))
    else:
        print(
            f"purged {total['purged']} bodies of {total['actions']} settled actions "
            f"({total['kept']} kept: other records still name them), and the payloads of {total['signals']} "
            f"signals of ended runs; recorded in {len(total['runs'])} run(s)"
        )
    return 0
