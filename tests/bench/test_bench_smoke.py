"""Every bench/ script still runs: each as a real process with `--smoke` (tiny counts, the same code).

A benchmark is run by hand, rarely, and rots in between (a renamed store method, a changed answer);
these runs catch that the day it happens. Each must exit 0 and print its figures; the figures
themselves are a machine's, and are not checked. Times (docs/testing.md, "Bench smoke tests"):
the folder takes about 40 s on an idle 2-core machine. `-m 'not bench'` leaves them out.
replicas.py needs the local PostgreSQL, as tests/store does (`WARRANT_TEST_POSTGRES`).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
POSTGRES = os.environ.get("WARRANT_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432")
WAIT = 240.0  # s: a bound on one script (about 20 s for the longest on an idle machine), so a hang fails

pytestmark = [pytest.mark.bench, pytest.mark.slow]

# script, its extra arguments, lines its output must contain (its figures were printed)
SCRIPTS = [
    ("gate.py", [], ["SQL statements per read (sequential)", "durable commits per write"]),
    ("verify_stall.py", [], ["filled ", "during verify"]),
    # with valgrind (on every machine of the project's kind), the count itself on a loop too
    (
        "instructions.py",
        [],
        ["measured program, natively", *(["instructions per iteration"] if shutil.which("valgrind") else [])],
    ),
    ("oauth_flow.py", [], ["ms per flow", "tools/list"]),
    ("mcp_proxy.py", [], ["goals (issue 3)", "warrant-oauth"]),
    ("replicas.py", ["--postgres", POSTGRES], ["replicas  write", "two replicas / one on PostgreSQL"]),
]


@pytest.mark.parametrize(("script", "extra", "figures"), SCRIPTS, ids=[s for s, _, _ in SCRIPTS])
def test_the_bench_script_runs_with_smoke_and_prints_its_figures(
    script: str, extra: list[str], figures: list[str]
) -> None:
    environ = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / script), "--smoke", *extra],
        cwd=ROOT,
        env=environ,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=WAIT,
    )
    assert done.returncode == 0, f"exit {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    missing = [line for line in figures if line not in done.stdout]
    assert missing == [], done.stdout
