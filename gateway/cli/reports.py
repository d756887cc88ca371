"""`warrant report`: the pilot report of a run, of a lineage, or of the tenant's runs (over the API).

    warrant report run RUN                                  one run's measures (as `warrant runs report`)
    warrant report lineage LINEAGE                          every run of a lineage, summed
    warrant report runs [--tag T] [--since TIME] [--until TIME] [--status S,S] [--limit N]
                                                            the tenant's runs, newest first, summed

TIME is ISO 8601 with an offset (`2026-12-01T00:00:00Z`). A report over runs reads at most 200
runs; when it stopped early it says `truncated` (narrow the query). `--json` prints the API's answer.
"""

from __future__ import annotations

import argparse
from typing import Any

from gateway.cli import http as cli_http
from gateway.cli.format import report_text, sums_text
from gateway.cli.http import add_url, api_path, print_json, reporting
from gateway.store.reports import MAX_REPORT_RUNS


def add_commands(sub: Any) -> None:
    report = sub.add_parser("report", help="the pilot report: a run, a lineage, or runs by tag and time")
    report_sub = report.add_subparsers(dest="report_command", required=True)
    run = report_sub.add_parser("run", help="one run's pilot measures and cost by tag")
    run.add_argument("run_id")
    run.set_defaults(func=reporting(run_report))
    lineage = report_sub.add_parser("lineage", help="every run of a lineage, summed")
    lineage.add_argument("lineage_id")
    lineage.set_defaults(func=reporting(_lineage))
    runs = report_sub.add_parser("runs", help="the tenant's runs, newest first, filtered and summed")
    runs.add_argument("--tag", help="only runs whose contract has this tag")
    runs.add_argument("--since", help="runs created at or after this time (ISO 8601 with an offset)")
    runs.add_argument("--until", help="runs created before this time")
    runs.add_argument("--status", help="a comma-separated list of run statuses")
    runs.add_argument("--limit", type=int, help=f"at most this many runs, 1 to {MAX_REPORT_RUNS} (default 50)")
    runs.set_defaults(func=reporting(_runs))
    for command in (run, lineage, runs):
        add_url(command)
        command.add_argument("--json", action="store_true", help="print the API's JSON answer")


def _show(args: argparse.Namespace, answer: Any, text: Any) -> int:
    if args.json:
        print_json(answer)
    else:
        print(text(answer))
    return 0


def run_report(args: argparse.Namespace) -> int:
    """One run's pilot report: `warrant report run`, and `warrant runs report` (gateway/cli/runs.py) calls it."""
    with cli_http.client(args) as http:
        return _show(args, cli_http.call(http, "GET", api_path("runs", args.run_id, "report")), report_text)


def _lineage(args: argparse.Namespace) -> int:
    with cli_http.client(args) as http:
        return _show(args, cli_http.call(http, "GET", api_path("lineages", args.lineage_id, "report")), sums_text)


def _runs(args: argparse.Namespace) -> int:
    params = {
        name: str(value) for name in ("tag", "since", "until", "status", "limit") if (value := getattr(args, name))
    }
    with cli_http.client(args) as http:
        return _show(args, cli_http.call(http, "GET", "/api/reports", params=params), sums_text)
