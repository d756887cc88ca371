"""The suite runs the drill: `warrant drill` as a newcomer runs it, every case once (the quick
profile, modes alternating), then each sabotage against the cases that depend on the sabotaged
safeguard and one that does not: the drill must fail exactly the dependent ones. A drill that
cannot fail proves nothing. (Every sabotage against every case is `warrant drill --sabotage S`;
docs/drill.md records those runs. The suite keeps to the dependent cases for time: the four
sabotages against all 19 cases took about 7 of CI's 20 minutes.)

The full drill (every case in both modes) is `warrant drill`; docs/drill.md records its run.
The two-replica cases run on the suite's PostgreSQL server (`WARRANT_TEST_POSTGRES`, as the store
tests), each in a database of its own that the drill drops.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import psycopg
import pytest

from gateway.drill import (
    REGISTRY,
    cases,  # noqa: F401  (registers every case)
)
from gateway.safeguards import SAFEGUARDS

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
BOUND = 600  # seconds: a drill that takes longer has hung
CONTROL = "upstream-401"  # a case no sabotage touches, with no short timer: it must pass under each of them
POSTGRES = os.environ.get("WARRANT_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432")


def drill(tmp_path: Path, *args: str) -> tuple[int, dict[str, Any], str]:
    out = tmp_path / "drill.json"
    done = subprocess.run(
        [sys.executable, "-m", "gateway.cli", "drill", "--json", str(out), "--postgres", POSTGRES, *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=BOUND,
    )
    report: dict[str, Any] = json.loads(out.read_text()) if out.exists() else {}
    return done.returncode, report, done.stdout + done.stderr


def test_every_case_passes_once(tmp_path: Path) -> None:
    code, report, output = drill(tmp_path, "--profile", "quick")
    assert report, output
    ran = {r["case"] for r in report["results"]}
    assert ran == set(REGISTRY), output
    failed = [r for r in report["results"] if r["verdict"] == "fail"]
    assert not failed, output
    assert report["summary"]["skipped"] == 0, output  # the two-replica cases ran, on PostgreSQL
    assert {c.name for c in REGISTRY.values() if c.replicas > 1} <= ran
    assert code == 0, output


def test_two_replica_cases_are_skipped_with_the_reason_when_no_postgresql_answers(tmp_path: Path) -> None:
    two = sorted(c.name for c in REGISTRY.values() if c.replicas > 1)
    chosen = [arg for name in two for arg in ("--case", name)]
    # A port nobody listens on: the drill's --postgres, given after the suite's, wins.
    code, report, output = drill(tmp_path, *chosen, "--postgres", "postgresql://postgres@127.0.0.1:1")
    assert report, output
    assert {r["case"] for r in report["results"]} == set(two)
    assert {r["verdict"] for r in report["results"]} == {"skipped"}
    assert all("no PostgreSQL server answers" in r["observed"] for r in report["results"]), output
    assert code == 0, output


@pytest.mark.parametrize("safeguard", SAFEGUARDS)
def test_sabotage_fails_exactly_the_cases_that_depend_on_it(tmp_path: Path, safeguard: str) -> None:
    dependent = sorted(c.name for c in REGISTRY.values() if safeguard in c.depends_on)
    assert dependent, f"no case depends on {safeguard}: its sabotage would prove nothing"
    assert CONTROL not in dependent
    chosen = [arg for name in [*dependent, CONTROL] for arg in ("--case", name)]
    code, report, output = drill(tmp_path, "--profile", "quick", "--sabotage", safeguard, *chosen)
    assert report, output
    assert {r["case"] for r in report["results"]} == {*dependent, CONTROL}, output
    sabotage = report["summary"]["sabotage"]
    assert sabotage["should_fail"] == dependent
    assert sabotage["failed"] == dependent, output
    assert sabotage["as_expected"] is True
    assert code == 1
    # A failed two-replica case keeps its store as evidence (a dump), and its database is dropped.
    for result in report["results"]:
        if result["verdict"] == "fail" and REGISTRY[result["case"]].replicas > 1:
            folder = Path(result["folder"])
            assert (folder / "store.sql").stat().st_size > 0
            name = (folder / "database.txt").read_text().strip().rsplit("/", 1)[-1]
            with psycopg.connect(f"{POSTGRES}/postgres") as conn:
                assert conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone() is None
