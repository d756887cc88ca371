"""`make run`: the gateway for development, with its keys made once, and the demo services.

An admin, an approver and a worker key, made on the first run and kept across restarts in
`.warrant/dev.env` (mode 0600, git-ignored; `source` it), the stored ones hashed in the store as
any key (gateway/cli/devkeys.py); printed at every start. The ledger key is made once and kept in
`.warrant/ledger.key` so that the development store still verifies after a restart; production
sets WARRANT_LEDGER_KEY from its secret store instead.

The demo CRM (port 8801) and mail service (port 8802) of `examples/services/` run as child
processes with their data in `.warrant/`, each with a fresh bearer token that only they and the
gateway's adapters (`adapters/crm.yaml`, `adapters/email.yaml`) know. They stop with the gateway.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import secrets
import shutil
import subprocess
import sys
import time
from pathlib import Path

import httpx

from gateway.cli import devkeys, main
from gateway.config import Settings, find_config, load_settings
from gateway.errors import ConfigError, StoreError


def _ledger_key(folder: Path) -> str:
    path = folder / "ledger.key"
    if not path.exists():
        folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(secrets.token_urlsafe(32))
    return path.read_text().strip()


# (module, port, the variable holding its token, its data file)
SERVICES = (
    ("crm", 8801, "CRM_TOKEN", "crm.db"),
    ("mail", 8802, "EMAIL_TOKEN", "mail.db"),
)


def start_services(folder: Path, ports: dict[str, int]) -> list[subprocess.Popen[bytes]]:
    """Start each demo service on its port (by module) and wait (at most 15 s) until it answers /healthz."""
    children = []
    services = [(module, ports.get(module, port), token_env, db) for module, port, token_env, db in SERVICES]
    for module, port, token_env, db in services:
        os.environ.setdefault(token_env, f"demo-{module}-" + secrets.token_urlsafe(16))
        command = [sys.executable, "-m", f"examples.services.{module}", "--port", str(port)]
        command += ["--db", str(folder / db), "--token-env", token_env]
        # A session of their own: Ctrl-C drains the gateway first (gateway/runtime/shutdown.py), and calls
        # in flight to these services settle before `stop` ends them.
        children.append(subprocess.Popen(command, stdout=subprocess.DEVNULL, start_new_session=True))
    deadline = time.monotonic() + 15
    for (module, port, _, _), child in zip(services, children, strict=True):
        while True:
            if child.poll() is not None:
                stop(children)
                raise SystemExit(f"the demo service {module} exited at start (is port {port} taken?)")
            try:
                if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                stop(children)
                raise SystemExit(f"the demo service {module} did not answer on port {port} within 15 s")
            time.sleep(0.1)
    return children


def stop(children: list[subprocess.Popen[bytes]]) -> None:
    for child in children:
        if child.poll() is None:
            child.terminate()
    for child in children:
        try:
            child.wait(timeout=5)
        except subprocess.TimeoutExpired:
            child.kill()


def _options(argv: list[str]) -> tuple[argparse.Namespace, list[str]]:
    """devrun's own options, and the arguments for `warrant serve` (--config, --host and --port are
    read here too, for the URL and the store, and passed on)."""
    parser = argparse.ArgumentParser(
        prog="python -m gateway.cli.devrun", description="make run: the development gateway"
    )
    parser.add_argument("--crm-port", type=int, default=8801, help="the demo CRM's port (its adapter must match)")
    parser.add_argument("--mail-port", type=int, default=8802, help="the demo mail service's port (the same)")
    own, rest = parser.parse_known_args(argv)
    peek = argparse.ArgumentParser(add_help=False)
    for flag in ("--config", "--host", "--port"):
        peek.add_argument(flag)
    seen, _ = peek.parse_known_args(rest)
    own.config, own.host, own.port = seen.config, seen.host, seen.port
    return own, rest


def _keys(settings: Settings, folder: Path, url: str) -> tuple[dict[str, str], bool]:
    """The development keys (gateway/cli/devkeys.py), written back to their file; whether any is new."""
    env_file = folder / devkeys.ENV_FILE
    kept = devkeys.read_env_file(env_file)
    admin = os.environ[devkeys.ADMIN]
    keys = asyncio.run(devkeys.prepare(settings, admin, kept))
    devkeys.write_env_file(env_file, keys, url, Path(sys.executable).parent.absolute())
    return keys, any(kept.get(name) != value for name, value in keys.items())


def _path_hint(bin_dir: Path) -> str:
    found = shutil.which("warrant")
    if found is not None and Path(found).parent.absolute() == bin_dir:
        return f"warrant is on your PATH ({found})"
    return f'warrant is not on your PATH: export PATH="{bin_dir}:$PATH"   (or source the file above)'


def run(argv: list[str] | None = None) -> int:
    own, serve_args = _options(sys.argv[1:] if argv is None else argv)
    folder = Path(".warrant")
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    env_file = folder / devkeys.ENV_FILE
    if not os.environ.get("WARRANT_LEDGER_KEY"):
        os.environ["WARRANT_LEDGER_KEY"] = _ledger_key(folder)
    os.environ[devkeys.ADMIN] = devkeys.admin_key(os.environ, devkeys.read_env_file(env_file))
    children = start_services(folder, {"crm": own.crm_port, "mail": own.mail_port})
    try:
        settings = load_settings(find_config(own.config))
        url = f"http://{own.host or settings.host}:{own.port or settings.port}"
        keys, new = _keys(settings, folder, url)
    except (ConfigError, StoreError) as exc:
        stop(children)
        raise SystemExit(f"warrant: {exc}") from None
    bin_dir = Path(sys.executable).parent.absolute()
    lines = [
        "Warrant development gateway",
        f"  URL:           {url}   (console at /, operator API under /api, health at /healthz)",
        f"  admin key:     {keys[devkeys.ADMIN]}   (WARRANT_ADMIN_KEY: everything in tenant acme)",
        f"  approver key:  {keys['APPROVER_KEY']}   (APPROVER_KEY: decides approvals, in the console too)",
        f"  worker key:    {keys['WORKER_KEY']}   (WORKER_KEY: warrant connect, warrant stdio --run)",
        f"  {'new keys' if new else 'the same keys as the last run'}, kept in {env_file}"
        " (mode 0600: only you can read it) for the next make run",
        f"  ledger key:    kept in {folder / 'ledger.key'} (development only)",
        f"  demo CRM:      http://127.0.0.1:{own.crm_port}   demo mail: http://127.0.0.1:{own.mail_port}"
        f"   (data in {folder}/)",
        "",
        f"  {_path_hint(bin_dir)}",
        "  then, in another terminal in this folder (README: Day one with Claude Code):",
        f"    source {env_file}        # the keys, WARRANT_URL, WARRANT_API_KEY=$WORKER_KEY and warrant on PATH",
        "    warrant connect --client claude-code --contract examples/contracts/crm-demo.json",
        "",
    ]
    print("\n".join(lines), flush=True)
    try:
        return main(["serve", *serve_args])
    finally:
        stop(children)


if __name__ == "__main__":
    sys.exit(run())
