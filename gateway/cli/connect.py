"""`warrant connect`: the exact configuration an MCP client needs for one run, printed or written.

    warrant connect --client {claude-code,claude-desktop,cursor,vscode} (--run RUN | --contract FILE)
                    [--name warrant] [--url URL] [--write] [--file PATH] [--admin-key-env VAR]

The client connects with the worker key in WARRANT_API_KEY, naming its run: over HTTP to
`/mcp/runs/{run_id}` (Claude Code, Cursor, VS Code), or through `warrant stdio --run RUN`
(Claude Desktop, which launches a subprocess). The gateway holds the lease for that key
(gateway/gate/held_leases.py), so nothing is pasted per run but the run id. `--contract FILE` first
creates the run with an operator or admin key (WARRANT_ADMIN_KEY, or the variable named by
`--admin-key-env`): the worker key may not create runs.

Without `--write` the configuration goes to stdout (what to paste or run), a note to stderr.
`--write` merges the one entry into the client's file, creating it, keeping every other entry,
written with mode 0600 (it holds the key); for Claude Code it runs the `claude mcp add` command.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx

from gateway.cli import http as cli_http
from gateway.cli.http import ApiFailed, reporting
from gateway.cli.runs import create_run, read_contract
from gateway.errors import Code

CLIENTS = ("claude-code", "claude-desktop", "cursor", "vscode")


def add_commands(sub: Any) -> None:
    connect = sub.add_parser("connect", help="print or write an MCP client's configuration for a run")
    connect.add_argument("--client", required=True, choices=CLIENTS)
    which = connect.add_mutually_exclusive_group(required=True)
    which.add_argument("--run", help="the run's id")
    which.add_argument("--contract", help="create the run from this contract (YAML or JSON) first")
    connect.add_argument("--name", default="warrant", help="the server's name in the client (default: warrant)")
    cli_http.add_url(connect)
    connect.add_argument("--write", action="store_true", help="merge the entry into the client's file")
    connect.add_argument("--file", help="the client's configuration file (default: where the client reads it)")
    connect.add_argument(
        "--admin-key-env",
        default="WARRANT_ADMIN_KEY",
        help="with --contract: the variable holding an operator or admin key (default: WARRANT_ADMIN_KEY)",
    )
    connect.set_defaults(func=reporting(_connect))


def _connect(args: argparse.Namespace) -> int:
    key = os.environ.get("WARRANT_API_KEY", "")
    if not key:
        raise ApiFailed(
            Code.UNAUTHENTICATED, "set WARRANT_API_KEY to the worker's API key (warrant keys create --role worker)"
        )
    url = (args.url or os.environ.get("WARRANT_URL") or cli_http.DEFAULT_URL).rstrip("/").removesuffix("/mcp")
    run_id = args.run or _create_run(args, url)
    if args.client == "claude-code":
        return _claude_code(args, url, run_id, key)
    top, entry = config_entry(args.client, url, run_id, key)
    block = {top: {args.name: entry}}
    path = Path(args.file) if args.file else default_file(args.client)
    if not args.write:
        print(json.dumps(block, indent=2))
        print(f"paste into {path} under {top!r} (or run again with --write)", file=sys.stderr)
        return 0
    merge_into(path, top, args.name, entry)
    print(f"wrote {args.name!r} for run {run_id} into {path}; restart or reload the client", file=sys.stderr)
    return 0


def mcp_url(url: str, run_id: str) -> str:
    return f"{url}/mcp/runs/{run_id}"


def claude_code_command(name: str, url: str, run_id: str, key: str) -> list[str]:
    """`claude mcp add` for the run, as an argument list (shlex.join gives the line to paste)."""
    return [
        "claude",
        "mcp",
        "add",
        "--transport",
        "http",
        name,
        mcp_url(url, run_id),
        "--header",
        f"Authorization: Bearer {key}",
    ]


def config_entry(client: str, url: str, run_id: str, key: str) -> tuple[str, dict[str, Any]]:
    """The top-level key of the client's file and the server's entry under it."""
    headers = {"Authorization": f"Bearer {key}"}
    if client == "cursor":
        return "mcpServers", {"url": mcp_url(url, run_id), "headers": headers}
    if client == "vscode":
        return "servers", {"type": "http", "url": mcp_url(url, run_id), "headers": headers}
    # Claude Desktop launches a subprocess and does not read the shell's PATH: an absolute command.
    command, prefix = warrant_command()
    return "mcpServers", {
        "command": command,
        "args": [*prefix, "stdio", "--run", run_id, "--url", url],
        "env": {"WARRANT_API_KEY": key, "WARRANT_URL": url},
    }


def warrant_command() -> tuple[str, list[str]]:
    """The `warrant` executable by its absolute path, else this Python running the CLI module."""
    found = shutil.which("warrant")
    if found:
        return str(Path(found).resolve()), []
    return sys.executable, ["-m", "gateway.cli"]


def default_file(client: str) -> Path:
    if client == "cursor":
        return Path(".cursor") / "mcp.json"
    if client == "vscode":
        return Path(".vscode") / "mcp.json"
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Application Support" / "Claude" / "claude_desktop_config.json"
    if sys.platform == "win32":
        return Path(os.environ.get("APPDATA", Path.home())) / "Claude" / "claude_desktop_config.json"
    return Path.home() / ".config" / "Claude" / "claude_desktop_config.json"


def merge_into(path: Path, top: str, name: str, entry: dict[str, Any]) -> None:
    """Set `top.name` in the JSON file at `path`, keeping everything else. Raises: ApiFailed
    `unreadable` for a file that is not a JSON object (left as it is)."""
    data: dict[str, Any] = {}
    if path.exists():
        try:
            loaded = json.loads(path.read_text(encoding="utf-8") or "{}")
        except (OSError, ValueError) as exc:
            raise ApiFailed(
                Code.UNREADABLE, f"{path} is not JSON ({exc}); fix or move it, nothing was written"
            ) from exc
        if not isinstance(loaded, dict) or not isinstance(loaded.get(top, {}), dict):
            raise ApiFailed(Code.UNREADABLE, f"{path}: expected a JSON object with an object under {top!r}")
        data = loaded
    data.setdefault(top, {})[name] = entry
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.warrant-tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(json.dumps(data, indent=2) + "\n")
    os.replace(temporary, path)


def _claude_code(args: argparse.Namespace, url: str, run_id: str, key: str) -> int:
    command = claude_code_command(args.name, url, run_id, key)
    if not args.write:
        print(command_line(command))
        print("run this to add the server to Claude Code (or run again with --write)", file=sys.stderr)
        return 0
    claude = shutil.which("claude")
    if claude is None:
        raise ApiFailed(Code.UNAVAILABLE, "the claude command is not on PATH; run without --write and paste the line")
    done = subprocess.run([claude, *command[1:]], check=False)
    return done.returncode


def command_line(command: list[str]) -> str:
    """The command as one shell line: the header in double quotes, as Claude Code's docs write it,
    unless it holds a character a shell treats specially inside them."""
    *head, header = command
    if any(c in header for c in '"$`\\!'):
        return shlex.join(command)
    return f'{shlex.join(head)} "{header}"'


def _create_run(args: argparse.Namespace, url: str) -> str:
    admin = os.environ.get(args.admin_key_env, "")
    if not admin:
        raise ApiFailed(
            Code.UNAUTHENTICATED, f"--contract creates the run: set {args.admin_key_env} to an operator or admin key"
        )
    contract = read_contract(args.contract)
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {admin}"}, timeout=30) as http:
        run = create_run(http, contract)
    run_id = str(run["run_id"])
    print(f"created {run_id} ({run.get('status')}): {run.get('goal')}", file=sys.stderr)
    return run_id
