"""The suite runs the drill: `warrant drill` as a newcomer runs it, every case once (the quick
profile, modes alternating), then each sabotage against the cases, where the drill must fail
exactly the cases that depend on the sabotaged safeguard. A drill that cannot fail proves nothing.

The full drill (every case in both modes) is `warrant drill`; docs/drill.md records its run.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from gateway.drill import cases  # noqa: F401  (registers every case)
from gateway.drill.case import REGISTRY
from gateway.failpoints import SAFEGUARDS

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
BOUND = 600  # seconds: a drill that takes longer has hung


def drill(tmp_path: Path, *args: str) -> tuple[int, dict[str, Any], str]:
    out = tmp_path / "drill.json"
    done = subprocess.run(
        [sys.executable, "-m", "gateway.cli", "drill", "--json", str(out), *args],
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
    skipped = {r["case"] for r in report["results"] if r["verdict"] == "skipped"}
    assert skipped == {c.name for c in REGISTRY.values() if c.replicas > 1}
    assert code == 0, output


@pytest.mark.parametrize("safeguard", SAFEGUARDS)
def test_sabotage_fails_exactly_the_cases_that_depend_on_it(tmp_path: Path, safeguard: str) -> None:
    dependent = sorted(c.name for c in REGISTRY.values() if safeguard in c.depends_on and c.replicas == 1)
    assert dependent, f"no case depends on {safeguard}: its sabotage would prove nothing"
    code, report, output = drill(tmp_path, "--profile", "quick", "--sabotage", safeguard)
    assert report, output
    sabotage = report["summary"]["sabotage"]
    assert sabotage["should_fail"] == dependent
    assert sabotage["failed"] == dependent, output
    assert sabotage["as_expected"] is True
    assert code == 1
