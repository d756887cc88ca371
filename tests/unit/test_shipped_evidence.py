"""The bundled configuration's evidence settings: its validator is found from any working directory,
and the shipped demo artifact verifies the research demo contract's `inventory` milestone."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from gateway.config import load_settings
from gateway.domain import ArtifactRef, milestone_status, parse_check
from gateway.tools import build_fetcher, run_checks

ROOT = Path(__file__).resolve().parents[2]
ENV = {"WARRANT_ADMIN_KEY": "k", "WARRANT_LEDGER_KEY": "l", "CRM_TOKEN": "c", "EMAIL_TOKEN": "e"}


def test_the_bundled_validator_is_found_whatever_the_working_directory(tmp_path: Path) -> None:
    code = (
        "import sys; from pathlib import Path; from gateway.config import load_settings; "
        f"s = load_settings(Path({str(ROOT / 'warrant.yaml')!r}), {ENV!r}); print(sorted(s.validators))"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "['nonempty_list']"


@pytest.mark.anyio
async def test_the_demo_artifact_verifies_the_research_demo_inventory_milestone() -> None:
    settings = load_settings(ROOT / "warrant.yaml", ENV)
    contract = json.loads((ROOT / "examples/contracts/research-demo.json").read_text())
    milestone = next(m for m in contract["milestones"] if m["id"] == "inventory")
    path = ROOT / "examples/artifacts/inventory.json"
    ref = ArtifactRef("inventory", path.as_uri(), hashlib.sha256(path.read_bytes()).hexdigest())
    fetcher = build_fetcher(settings.artifacts)
    try:
        checks = [parse_check(c) for c in milestone["checks"]]
        results = await run_checks(checks, {"inventory": ref}, {}, fetcher, settings.validators)
    finally:
        await fetcher.aclose()
    assert milestone_status(results) == ("verified", [])
