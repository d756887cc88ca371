"""`make run`: the gateway for development, with keys made on the spot, and the demo services.

A fresh admin key each time (printed once). The ledger key is made once and kept in
`.warrant/ledger.key` (git-ignored) so that the development store still verifies after a
restart; production sets WARRANT_LEDGER_KEY from its secret store instead.

The demo CRM (port 8801) and mail service (port 8802) of `examples/services/` run as child
processes with their data in `.warrant/`, each with a fresh bearer token that only they and the
gateway's adapters (`adapters/crm.yaml`, `adapters/email.yaml`) know. They stop with the gateway.
"""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
import time
from pathlib import Path

import httpx

from gateway.cli import main


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


def start_services(folder: Path) -> list[subprocess.Popen[bytes]]:
    """Start each demo service and wait (at most 15 s) until it answers /healthz."""
    children = []
    for module, port, token_env, db in SERVICES:
        os.environ.setdefault(token_env, f"demo-{module}-" + secrets.token_urlsafe(16))
        command = [sys.executable, "-m", f"examples.services.{module}", "--port", str(port)]
        command += ["--db", str(folder / db), "--token-env", token_env]
        # A session of their own: Ctrl-C drains the gateway first (gateway/shutdown.py), and calls
        # in flight to these services settle before `stop` ends them.
        children.append(subprocess.Popen(command, stdout=subprocess.DEVNULL, start_new_session=True))
    deadline = time.monotonic() + 15
    for (module, port, _, _), child in zip(SERVICES, children, strict=True):
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


def run() -> int:
    folder = Path(".warrant")
    made = []
    if not os.environ.get("WARRANT_LEDGER_KEY"):
        os.environ["WARRANT_LEDGER_KEY"] = _ledger_key(folder)
        made.append(f"ledger key: kept in {folder / 'ledger.key'} (development only)")
    if not os.environ.get("WARRANT_ADMIN_KEY"):
        os.environ["WARRANT_ADMIN_KEY"] = "wk-admin-" + secrets.token_urlsafe(24)
        made.append(f"admin key (tenant acme, shown once): {os.environ['WARRANT_ADMIN_KEY']}")
    folder.mkdir(parents=True, exist_ok=True)
    children = start_services(folder)
    print("Warrant development gateway", flush=True)
    print("  URL:       http://127.0.0.1:8700   (operator API under /api, health at /healthz)", flush=True)
    for line in made:
        print(f"  {line}", flush=True)
    print("  demo CRM:  http://127.0.0.1:8801   demo mail: http://127.0.0.1:8802   (data in .warrant/)", flush=True)
    print("", flush=True)
    print("  create a run and take its lease (README: Running it):", flush=True)
    print("    KEY=<the admin key above>", flush=True)
    print(
        '    curl -s -H "Authorization: Bearer $KEY" -H "Content-Type: application/json" '
        "-d @examples/contracts/crm-demo.json http://127.0.0.1:8700/api/runs",
        flush=True,
    )
    print(
        '    curl -s -H "Authorization: Bearer $KEY" -H "Content-Type: application/json" '
        '-d \'{"worker": "agent-1"}\' http://127.0.0.1:8700/api/runs/RUN_ID/lease',
        flush=True,
    )
    print("  connect a client with the lease token (README: Connecting an agent):", flush=True)
    print(
        '    claude mcp add --transport http warrant http://127.0.0.1:8700/mcp --header "Authorization: Bearer wl_..."',
        flush=True,
    )
    try:
        return main(["serve", *sys.argv[1:]])
    finally:
        stop(children)


if __name__ == "__main__":
    sys.exit(run())
