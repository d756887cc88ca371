"""`warrant drill`: the failure drill of DRILL.md against real processes (gateway/drill/).

    warrant drill [--case NAME]... [--mode active|restart|both] [--profile full|quick]
                  [--sabotage fencing|budget|idempotency|approval] [--json FILE] [--jobs N] [--keep]
                  [--postgres URL]
    warrant drill --list

Starts its own gateway, demo services and store for every case (nothing to set up), prints the
report table, writes the same as JSON with --json, and exits 1 when any case failed. A failed
case's folder (its databases and logs) is kept and named; with --keep every folder is.

The cases with two gateway replicas run on a PostgreSQL server: `--postgres URL`, else
`WARRANT_DRILL_POSTGRES`, else the local one (postgresql://postgres@127.0.0.1:5432). Each makes a
database of its own there and drops it. When no server answers they are reported skipped, with
the reason, and a skip alone does not fail the drill.
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
    drill.set_defaults(func=_drill)


def _drill(args: argparse.Namespace) -> int:
    logging.getLogger().setLevel(logging.WARNING)  # the drill's own HTTP traffic is not news
    from gateway.drill import cases  # noqa: F401  (registers every case)
    from gateway.drill.case import MODES, REGISTRY, Case, Mode
    from gateway.drill.postgres import DEFAULT_SERVER, redact
    from gateway.drill.report import summary, summary_lines, table
    from gateway.drill.runner import run_all
    from gateway.drill.world import ROOT

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
    started = time.monotonic()
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
    if not args.keep:
        for result in results:
            if result.verdict != "fail":
                shutil.rmtree(result.folder, ignore_errors=True)
        if not any(base.iterdir()):
            base.rmdir()
    return 1 if info["failed"] else 0
