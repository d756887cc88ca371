"""`warrant drill`: the failure drill of DRILL.md against real processes (gateway/drill/).

    warrant drill [--case NAME]... [--mode active|restart|both] [--profile full|quick]
                  [--sabotage fencing|budget|idempotency|approval] [--json FILE] [--jobs N] [--keep]
                  [--postgres URL] [--record --tenant T [--config warrant.yaml]]
    warrant drill --list
    warrant drill history [--limit N] [--json]     (the drills recorded, over the API: WARRANT_API_KEY)

Starts its own gateway, demo services and store for every case (nothing to set up), prints the
report table, writes the same as JSON with --json, and exits 1 when any case failed. A failed
case's folder (its databases and logs) is kept and named; with --keep every folder is.

The cases with two gateway replicas run on a PostgreSQL server: `--postgres URL`, else
`WARRANT_DRILL_POSTGRES`, else the local one (postgresql://postgres@127.0.0.1:5432). Each makes a
database of its own there and drops it. When no server answers they are reported skipped, with
the reason, and a skip alone does not fail the drill.

With --record the results are also kept in the store of the configuration (its `database:` and
ledger key), for the tenant `--tenant`: `warrant drill history` and `GET /api/drills` list them,
newest first; the store keeps the newest 500 per tenant.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from gateway.cli.http import add_url, reporting
from gateway.safeguards import SAFEGUARDS


def add_commands(sub: Any) -> None:
    drill = sub.add_parser("drill", help="break a gateway on purpose and judge the evidence (DRILL.md)")
    drill.add_argument("--case", action="append", default=[], help="run this case (repeatable; default: all)")
    drill.add_argument("--mode", choices=["active", "restart", "both"], default="both")
    drill.add_argument(
        "--profile",
        choices=["full", "quick"],
        default="full",
        help="full: every case in every mode; quick: every case once, the modes alternating",
    )
    drill.add_argument("--sabotage", choices=SAFEGUARDS, help="turn this safeguard off: its cases must fail")
    drill.add_argument("--json", dest="json_path", help="write the results as JSON here")
    drill.add_argument("--jobs", type=int, default=3, help="cases at once (default 3)")
    drill.add_argument("--keep", action="store_true", help="keep every case's folder, not only failed ones")
    drill.add_argument(
        "--postgres",
        metavar="URL",
        help="the PostgreSQL server of the two-replica cases (default: $WARRANT_DRILL_POSTGRES, else "
        "postgresql://postgres@127.0.0.1:5432); each case makes a database of its own there and drops it",
    )
    drill.add_argument("--list", action="store_true", help="list the cases and exit")
    drill.add_argument(
        "--record", action="store_true", help="also keep the results in the configuration's store (drill history)"
    )
    drill.add_argument("--tenant", help="the tenant the recorded results belong to (with --record)")
    drill.add_argument("--config", help="configuration file whose store records them (default: ./warrant.yaml)")
    drill.set_defaults(func=_drill)
    drill_sub = drill.add_subparsers(dest="drill_command", required=False)
    history = drill_sub.add_parser("history", help="the drill runs recorded against the gateway's store")
    history.add_argument("--limit", type=int, default=20, help="drill runs to show, 1 to 100 (default 20)")
    add_url(history)
    history.add_argument("--json", action="store_true", help="print the API's JSON answer")
    history.set_defaults(func=reporting(_history))


def _history(args: argparse.Namespace) -> int:
    from gateway.cli import http as cli_http
    from gateway.cli.format import table
    from gateway.cli.http import print_json

    with cli_http.client(args) as http:
        page = cli_http.call(http, "GET", "/api/drills", params={"limit": str(args.limit)})
    if args.json:
        print_json(page)
        return 0
    rows = [
        (
            d["drill_id"],
            d["started_at"],
            d["profile"],
            d["modes"],
            d["sabotage"] or "-",
            d["passed"],
            d["failed"],
            d["skipped"],
            "yes" if d["ok"] else "NO",
            ", ".join(d["summary"].get("failed_cases", [])) or "-",
        )
        for d in page["items"]
    ]
    print(
        table(
            ["drill", "started", "profile", "modes", "sabotage", "passed", "failed", "skipped", "ok", "failed cases"],
            rows,
        )
    )
    return 0


def _drill(args: argparse.Namespace) -> int:
    logging.getLogger().setLevel(logging.WARNING)  # the drill's own HTTP traffic is not news
    from gateway.drill import cases  # noqa: F401  (registers every case)
    from gateway.drill.case import MODES, REGISTRY, Case, Mode
    from gateway.drill.postgres import DEFAULT_SERVER, redact
    from gateway.drill.report import summary, summary_lines, table
    from gateway.drill.runner import run_all
    from gateway.drill.world import ROOT

    if args.record and not args.tenant:
        print("warrant drill: --record needs --tenant (whose drill history it goes to)", file=sys.stderr)
        return 2
    store = _recording_store(args) if args.record and not args.list else None  # a bad config fails first
    if args.list:
        for case in REGISTRY.values():
            needs = f" ({case.replicas} replicas: PostgreSQL)" if case.replicas > 1 else ""
            depends = f" [depends on {', '.join(sorted(case.depends_on))}]" if case.depends_on else ""
            print(f"{case.name:32} {case.category}{needs}{depends}\n{'':32} {case.expected}")
        return 0
    if not (ROOT / "examples" / "services" / "crm.py").is_file():
        print("warrant drill: needs a checkout of the repository (examples/services/)", file=sys.stderr)
        return 2
    unknown = [name for name in args.case if name not in REGISTRY]
    if unknown:
        print(f"warrant drill: no case {', '.join(unknown)} (warrant drill --list)", file=sys.stderr)
        return 2
    chosen = [REGISTRY[name] for name in args.case] if args.case else list(REGISTRY.values())
    modes: tuple[Mode, ...] = MODES if args.mode == "both" else (args.mode,)
    plan: list[tuple[Case, Mode]] = []
    for i, case in enumerate(chosen):
        usable = [m for m in modes if m in case.modes]
        if args.profile == "quick" and usable:
            usable = [usable[i % len(usable)]]
        plan += [(case, mode) for mode in usable]
    sabotage = (args.sabotage,) if args.sabotage else ()
    postgres = args.postgres or os.environ.get("WARRANT_DRILL_POSTGRES") or DEFAULT_SERVER
    base = Path(tempfile.mkdtemp(prefix="warrant-drill-"))
    started, started_at = time.monotonic(), time.time()
    print(f"warrant drill: {len(plan)} case runs, {args.jobs} at a time, in {base}", flush=True)
    if any(case.replicas > 1 for case, _ in plan):
        print(f"warrant drill: two-replica cases on PostgreSQL at {redact(postgres)}", flush=True)
    results = asyncio.run(run_all(plan, base, sabotage, jobs=max(1, args.jobs), postgres=postgres))
    seconds = round(time.monotonic() - started, 1)
    print(table(results))
    info = summary(results, sabotage)
    print()
    for line in summary_lines(info):
        print(line)
    print(f"in {seconds} s")
    if args.json_path:
        document = {"seconds": seconds, "summary": info, "results": [r.as_dict() for r in results]}
        Path(args.json_path).write_text(json.dumps(document, indent=2) + "\n")
    if store is not None:
        _record(args, store, results, info, started_at, seconds)
    if not args.keep:
        for result in results:
            if result.verdict != "fail":
                shutil.rmtree(result.folder, ignore_errors=True)
        if not any(base.iterdir()):
            base.rmdir()
    return 1 if info["failed"] else 0


def _recording_store(args: argparse.Namespace) -> tuple[str, bytes]:
    """The store that --record writes to (its URL and ledger key), read before the drill runs.
    Raises: ConfigError (exit 2)."""
    from gateway.config import find_config, load_settings

    settings = load_settings(find_config(args.config))
    return settings.database, settings.ledger_key


def _record(
    args: argparse.Namespace,
    store: tuple[str, bytes],
    results: Any,
    info: dict[str, Any],
    started_at: float,
    seconds: float,
) -> None:
    """Keep the results in the configuration's store. Raises: StoreError (exit 2)."""
    import getpass

    from gateway.drill.history import drill_run, record

    run = drill_run(
        results,
        info,
        started_at=started_at,
        seconds=seconds,
        profile=args.profile,
        modes=args.mode,
        sabotage=args.sabotage,
        by=getpass.getuser(),
    )
    kept = asyncio.run(record(store[0], store[1], args.tenant, run))
    print(f"recorded as {kept.drill_id} (warrant drill history)")
