"""What `warrant` imports before it knows which command it runs: every command pays for it."""

from __future__ import annotations

import subprocess
import sys


def test_the_cli_does_not_load_the_stores_or_the_mcp_sdk_until_a_command_needs_them() -> None:
    # Measured: gateway.store.backup (the stores, psycopg) cost about 0.35 s of every `warrant` start.
    script = (
        "import sys, gateway.cli\n"
        "heavy = ('gateway.store.backup', 'gateway.store.sqlite', 'psycopg', 'mcp')\n"
        "print(sorted(m for m in heavy if m in sys.modules))"
    )
    loaded = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    assert loaded.strip() == "[]"
