"""The `warrant` command.

    warrant serve [--config warrant.yaml] [--host H] [--port P]
    warrant stdio [--url http://127.0.0.1:8700] [--run RUN]   (WARRANT_TOKEN, or --run with WARRANT_API_KEY)
    warrant connect --client C (--run RUN | --contract FILE) [--write]   (a client's config: cli_connect.py)
    warrant migrate [--config warrant.yaml | --database URL] [--check]   (the store's schema)
    warrant ledger verify [--config warrant.yaml] [--anchor FILE]   (offline: opens the store read-only)
    warrant ledger anchor [--config warrant.yaml] [--out FILE]       (every run's head, MAC'd: keep it elsewhere)
    warrant backup OUT [--config F | --database URL] [--check] | restore [BACKUP] --database URL   (cli_backup.py)
    warrant ledger export --run R [--out FILE] | verify --file B [--key-file K]   (evidence bundles: cli_ledger.py)
    warrant ledger purge [--run R] [--action A] [--before T] [--reason TEXT]   (retention: cli_retention.py)
    warrant tools list | pending | accept NAME [--sha256 H]   (over the API: WARRANT_URL, WARRANT_API_KEY)
    warrant keys create --name N --role R [--expires-in D] | list | revoke ID | rotate ID --overlap D   (the same)
    warrant runs create FILE | list | show R | pause R | resume R | cancel R [--hard] | successor R | actions R
    warrant leases acquire R [--worker W] [--takeover] | renew        (the same; renew: WARRANT_TOKEN)
    warrant approvals list | show ID | approve ID | deny ID [--note T] [--sha256 H]   (the same)
    warrant events tail R [--from SEQ] [--no-follow]                    (the same)
    warrant recovery RUN | actions acknowledge|compensate|resolve ACTION
    warrant report run R | lineage L | runs [--tag T] [--since T] [--until T] [--status S] [--limit N]
    warrant adapters import-openapi SPEC --name N [--base-url URL] [--out FILE [--force]]
    warrant drill [--case C] [--mode M] [--sabotage S] [--json FILE] [--record]   (the failure drill: cli_drill.py)
    warrant drill history [--limit N]                                  (the drills recorded: over the API)
    warrant version

The operator commands (tools, keys, runs, leases, approvals, events, ledger export) talk to a
running gateway over its HTTP API (gateway/cli/http.py).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import sys
from pathlib import Path
from typing import Any

from gateway import __version__
from gateway.cli.adapters import add_commands as add_adapter_commands
from gateway.cli.approvals import add_commands as add_approval_commands
from gateway.cli.backup import add_commands as add_backup_commands
from gateway.cli.connect import add_commands as add_connect_commands
from gateway.cli.dead_letters import add_commands as add_dead_letter_commands
from gateway.cli.drill import add_commands as add_drill_commands
from gateway.cli.events import add_commands as add_event_commands
from gateway.cli.keys import add_commands as add_key_commands
from gateway.cli.ledger import add_commands as add_ledger_commands
from gateway.cli.progress import add_commands as add_progress_commands
from gateway.cli.reports import add_commands as add_report_commands
from gateway.cli.retention import add_commands as add_purge_commands
from gateway.cli.runs import add_commands as add_run_commands
from gateway.cli.tools import add_commands as add_tool_commands
from gateway.errors import ConfigError, StoreError


def _serve(args: argparse.Namespace) -> int:
    import uvicorn

    from gateway.app import create_app
    from gateway.config import find_config, load_settings
    from gateway.runtime.shutdown import CLOSE_WAIT_S, FORCED_EXIT, DrainingServer
    from gateway.store.factory import serving

    settings = load_settings(find_config(args.config))
    # The SDK's HTTP client logs every request (URL included) at INFO: one line per downstream call.
    logging.getLogger("httpx2").setLevel(logging.WARNING)
    app = create_app(settings)
    host = args.host or settings.host
    port = args.port if args.port is not None else settings.port
    with serving(settings.database):
        if not settings.migrate_on_start:
            from gateway.store.factory import migrate

            asyncio.run(migrate(settings.database, apply=False))  # due migrations: refused here, in one line
        print(f"warrant {__version__} serving on http://{host}:{port} (store: {settings.database})", flush=True)
        # SIGTERM and Ctrl-C drain first (gateway/runtime/shutdown.py); uvicorn's own handling would not.
        config = uvicorn.Config(
            app,
            host=host,
            port=port,
            log_level=args.log_level,
            access_log=False,
            timeout_graceful_shutdown=CLOSE_WAIT_S,
        )
        server = DrainingServer(config, app.state.drain, settings.shutdown_grace)
        server.run()
        if not server.started:
            return 3  # uvicorn's start-up failure (the port taken, the lifespan failed): logged above
    return FORCED_EXIT if server.forced else 0


def _verify(args: argparse.Namespace) -> int:
    """Every chain, and with `--anchor FILE` (from `warrant ledger anchor`) that no anchored run was
    deleted or rolled back since (gateway/store/anchor.py). Exit 0 ok, 1 not, 2 an unreadable anchor."""
    from gateway.clock import SystemClock
    from gateway.config import find_config, load_settings
    from gateway.store.factory import open_store

    settings = load_settings(find_config(args.config))
    anchor: dict[str, Any] | None = None
    if args.anchor:
        try:
            anchor = json.loads(Path(args.anchor).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            print(f"warrant: cannot read the anchor {args.anchor}: {exc}", file=sys.stderr)
            return 2
        if not isinstance(anchor, dict):
            print(f"warrant: {args.anchor} is not an anchor", file=sys.stderr)
            return 2

    async def run() -> dict[str, Any]:
        async with open_store(settings.database, clock=SystemClock(), ledger_key=settings.ledger_key) as store:
            report = (await store.verify_ledger()).as_dict()
            if anchor is not None:
                bad = await store.check_anchor(anchor, anchor.get("tenant"))
                report["anchor"] = {"ok": bad is None, "first_bad": bad.as_dict() | {"code": bad.code} if bad else None}
                report["ok"] = report["ok"] and bad is None
            return report

    report = asyncio.run(run())
    print(json.dumps(report, indent=2))
    return 0 if report["ok"] else 1


def _anchor(args: argparse.Namespace) -> int:
    """Write every run's head, MAC'd with the ledger key, to `--out` (default: stdout)."""
    from gateway.clock import SystemClock
    from gateway.config import find_config, load_settings
    from gateway.store.factory import open_store

    settings = load_settings(find_config(args.config))

    async def run() -> dict[str, Any]:
        async with open_store(settings.database, clock=SystemClock(), ledger_key=settings.ledger_key) as store:
            return await store.ledger_anchor()

    text = json.dumps(asyncio.run(run()), indent=2, sort_keys=True) + "\n"
    if args.out:
        partial = Path(args.out + ".partial")
        partial.write_text(text, encoding="utf-8")
        partial.replace(args.out)
    else:
        sys.stdout.write(text)
    return 0


def _migrate(args: argparse.Namespace) -> int:
    """Apply the store's due schema migrations (`--check`: only say whether any are due: exit 1)."""
    from gateway.config import database_of, find_config
    from gateway.store.factory import migrate, serving
    from gateway.store.postgres.db import redact
    from gateway.store.schema import MigrationsDue
    from gateway.store.sqlite.db import SCHEMA_VERSION

    url = args.database or database_of(find_config(args.config))
    where = redact(url)
    try:
        if args.check:
            asyncio.run(migrate(url, apply=False))
            print(f"{where}: schema version {SCHEMA_VERSION}, this gateway's: nothing to apply")
            return 0
        with serving(url):  # SQLite: not under a running gateway (ConfigError names it)
            applied = asyncio.run(migrate(url, apply=True))
    except MigrationsDue as due:
        print(f"{where}: schema version {due.current}; due: {', '.join(map(str, due.pending))}")
        return 1
    if applied:
        print(f"{where}: applied {', '.join(map(str, applied))}; schema version {SCHEMA_VERSION}")
    else:
        print(f"{where}: schema version {SCHEMA_VERSION}, this gateway's: nothing to apply")
    return 0


def _stdio(args: argparse.Namespace) -> int:
    import getpass
    import os
    import socket

    from gateway.mcp.stdio_bridge import run_bridge
    from gateway.mcp.stdio_lease import BridgeLease

    url = (args.url or os.environ.get("WARRANT_URL") or "http://127.0.0.1:8700").rstrip("/")
    url = url.removesuffix("/mcp")
    if args.run:
        key = os.environ.get("WARRANT_API_KEY", "")
        if not key:
            print("warrant stdio: --run needs the worker's API key in WARRANT_API_KEY", file=sys.stderr)
            return 2
        worker = args.worker or f"{getpass.getuser()}@{socket.gethostname()}"
        lease = BridgeLease(url, run_id=args.run, api_key=key, worker=worker, renew_every=args.renew_every)
    else:
        token = os.environ.get("WARRANT_TOKEN", "")
        if not token:
            print(
                "warrant stdio: set WARRANT_TOKEN to the run's lease token, or give --run RUN with WARRANT_API_KEY",
                file=sys.stderr,
            )
            return 2
        lease = BridgeLease(url, token=token, renew_every=args.renew_every)
    # stdout carries MCP: logs go to stderr only.
    logging.getLogger().handlers[:] = [logging.StreamHandler(sys.stderr)]
    logging.getLogger("httpx2").setLevel(logging.WARNING)
    return asyncio.run(run_bridge(lease))


def parser() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser(prog="warrant", description="A tool gateway for long-running AI agents.")
    sub = root.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="run the gateway")
    serve.add_argument("--config", help="configuration file (default: ./warrant.yaml)")
    serve.add_argument("--host")
    serve.add_argument("--port", type=int)
    serve.add_argument("--log-level", default="info", choices=["critical", "error", "warning", "info", "debug"])
    serve.set_defaults(func=_serve)
    migrate = sub.add_parser("migrate", help="apply the store's due schema migrations")
    source = migrate.add_mutually_exclusive_group()
    source.add_argument("--config", help="configuration file whose database: to migrate (default: ./warrant.yaml)")
    source.add_argument("--database", help="the store's URL: sqlite:///PATH or postgresql://...")
    migrate.add_argument("--check", action="store_true", help="apply nothing; exit 1 when migrations are due")
    migrate.set_defaults(func=_migrate)
    stdio = sub.add_parser(
        "stdio", help="MCP on stdio, forwarded to a running gateway (WARRANT_TOKEN, or --run with WARRANT_API_KEY)"
    )
    stdio.add_argument("--url", help="the gateway (default: WARRANT_URL, else http://127.0.0.1:8700)")
    stdio.add_argument("--run", help="hold this run's lease with the worker key in WARRANT_API_KEY")
    stdio.add_argument("--worker", help="the worker's name on the lease, with --run (default: user@host)")
    stdio.add_argument(
        "--renew-every", type=float, help="seconds between renewals (default: a third of the lease's time left)"
    )
    stdio.set_defaults(func=_stdio)
    ledger = sub.add_parser("ledger", help="the tamper-evident ledger")
    ledger_sub = ledger.add_subparsers(dest="ledger_command", required=True)
    verify = ledger_sub.add_parser("verify", help="recompute every run's chain and check its MAC'd head")
    verify.add_argument("--config")
    verify.add_argument("--anchor", help="also check that no run this anchor names was deleted or rolled back")
    verify.set_defaults(func=_verify)
    anchor = ledger_sub.add_parser("anchor", help="every run's head, MAC'd, to keep apart")
    anchor.add_argument("--config")
    anchor.add_argument("--out", help="the anchor file (default: stdout)")
    anchor.set_defaults(func=_anchor)
    add_ledger_commands(ledger_sub, verify)
    add_purge_commands(ledger_sub)
    add_tool_commands(sub)
    add_key_commands(sub)
    add_run_commands(sub)
    add_progress_commands(sub)
    add_report_commands(sub)
    add_approval_commands(sub)
    add_dead_letter_commands(sub)
    add_event_commands(sub)
    add_adapter_commands(sub)
    add_drill_commands(sub)
    add_backup_commands(sub)
    add_connect_commands(sub)
    version = sub.add_parser("version", help="print the version")
    version.set_defaults(func=lambda _args: print(__version__) or 0)
    return root


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    args = parser().parse_args(argv)
    try:
        code: int = args.func(args)
        return code
    except (ConfigError, StoreError) as exc:
        print(f"warrant: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        # The reader went away (`warrant runs list | head`): stop quietly, as other Unix tools do.
        # Python would otherwise report the broken pipe again when it flushes stdout at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(main())
