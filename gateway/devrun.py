"""`make run`: the gateway for development, with keys made on the spot.

A fresh admin key each time (printed once). The ledger key is made once and kept in
`.warrant/ledger.key` (git-ignored) so that the development store still verifies after a
restart; production sets WARRANT_LEDGER_KEY from its secret store instead.
"""

from __future__ import annotations

import os
import secrets
import sys
from pathlib import Path

from gateway.cli import main


def _ledger_key(folder: Path) -> str:
    path = folder / "ledger.key"
    if not path.exists():
        folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(secrets.token_urlsafe(32))
    return path.read_text().strip()


def run() -> int:
    folder = Path(".warrant")
    made = []
    if not os.environ.get("WARRANT_LEDGER_KEY"):
        os.environ["WARRANT_LEDGER_KEY"] = _ledger_key(folder)
        made.append(f"ledger key: kept in {folder / 'ledger.key'} (development only)")
    if not os.environ.get("WARRANT_ADMIN_KEY"):
        os.environ["WARRANT_ADMIN_KEY"] = "wk-admin-" + secrets.token_urlsafe(24)
        made.append(f"admin key (tenant acme, shown once): {os.environ['WARRANT_ADMIN_KEY']}")
    print("Warrant development gateway", flush=True)
    print("  URL:       http://127.0.0.1:8700   (operator API under /api, health at /healthz)", flush=True)
    for line in made:
        print(f"  {line}", flush=True)
    print('  try:      curl -H "Authorization: Bearer $KEY" http://127.0.0.1:8700/api/runs', flush=True)
    return main(["serve", *sys.argv[1:]])


if __name__ == "__main__":
    sys.exit(run())
