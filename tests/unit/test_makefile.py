"""The Makefile's installs, read with `make -n` (what it would run) in a copy of the repository's
Makefile and pyproject.toml: `make run` installs only what serving needs, `make test` the dev extras,
and neither stamp stands in for the other the wrong way."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DEV_INSTALL = "install --progress-bar on -e '.[dev]'"
RUN_INSTALL = "install --progress-bar on -e ."

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="needs make")


def project(folder: Path, *stamps: str) -> Path:
    """A copy with a .venv holding `stamps`, each newer than pyproject.toml."""
    shutil.copy(ROOT / "Makefile", folder / "Makefile")
    shutil.copy(ROOT / "pyproject.toml", folder / "pyproject.toml")
    os.utime(folder / "pyproject.toml", (1_000_000, 1_000_000))
    node = folder / "tests" / "interop" / "node"
    (node / "node_modules").mkdir(parents=True)
    (node / "package-lock.json").write_text("{}")
    os.utime(node / "package-lock.json", (1_000_000, 1_000_000))
    (node / "node_modules" / ".package-lock.json").write_text("{}")
    if stamps:
        (folder / ".venv" / "bin").mkdir(parents=True)
        (folder / ".venv" / "bin" / "python").touch()
        for stamp in stamps:
            (folder / ".venv" / stamp).touch()
    return folder


def planned(folder: Path, target: str) -> str:
    """What `make -n TARGET` would run (the browser install left out)."""
    done = subprocess.run(
        ["make", "-n", target],
        cwd=folder,
        env={**os.environ, "WARRANT_SKIP_BROWSER": "1"},
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


def test_make_run_on_a_fresh_clone_installs_only_what_serving_needs(tmp_path: Path) -> None:
    plan = planned(project(tmp_path), "run")
    assert "-m venv .venv" in plan
    assert RUN_INSTALL in plan
    assert "[dev]" not in plan and "--quiet -e" not in plan
    assert "gateway.cli.devrun" in plan


def test_make_test_after_make_run_still_installs_the_dev_extras(tmp_path: Path) -> None:
    folder = project(tmp_path, ".installed-run")
    assert DEV_INSTALL in planned(folder, "test")
    assert "pip" not in planned(folder, "run")


def test_a_dev_install_counts_as_the_run_install(tmp_path: Path) -> None:
    folder = project(tmp_path, ".installed-run", ".installed-dev")
    assert "pip" not in planned(folder, "run")
    assert "pip" not in planned(folder, "test")


def test_a_changed_pyproject_installs_again(tmp_path: Path) -> None:
    folder = project(tmp_path, ".installed-run", ".installed-dev")
    os.utime(folder / ".venv" / ".installed-run", (500_000, 500_000))
    os.utime(folder / ".venv" / ".installed-dev", (500_000, 500_000))
    assert RUN_INSTALL in planned(folder, "run") and "[dev]" not in planned(folder, "run")
    assert DEV_INSTALL in planned(folder, "test")


def test_make_test_newest_sdk_upgrades_mcp_in_a_venv_of_its_own_and_runs_the_differential_tests(
    tmp_path: Path,
) -> None:
    plan = planned(project(tmp_path), "test-newest-sdk")
    assert "-m venv .venv-newest-sdk" in plan
    assert "install --quiet -e '.[otel]'" in plan
    assert ".venv-newest-sdk/bin/python -m pip --disable-pip-version-check install --quiet --upgrade mcp" in plan
    assert "-m differential tests/" in plan and ".venv/" not in plan.replace(".venv-newest-sdk/", "")


def test_ci_runs_the_newest_sdk_job_after_the_suite() -> None:
    lines = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()]
    assert lines.index("make test") < lines.index("make test-newest-sdk")
    assert "set -euo pipefail" in lines  # its failure fails the run


def test_make_test_prints_coverage_unless_switched_off(tmp_path: Path) -> None:
    folder = project(tmp_path, ".installed-run", ".installed-dev")
    test_line = [line for line in planned(folder, "test").splitlines() if "/pytest " in line]
    assert test_line == [".venv/bin/pytest -q -n 2 --cov --cov-report=term:skip-covered"]
    done = subprocess.run(
        ["make", "-n", "test", "COVERAGE="],
        cwd=folder,
        env={**os.environ, "WARRANT_SKIP_BROWSER": "1"},
        capture_output=True,
        text=True,
        check=True,
    )
    assert [line.strip() for line in done.stdout.splitlines() if "/pytest " in line] == [".venv/bin/pytest -q -n 2"]


def test_make_bench_smoke_runs_the_bench_folder_by_its_marker(tmp_path: Path) -> None:
    plan = planned(project(tmp_path, ".installed-run", ".installed-dev"), "bench-smoke")
    assert "-m bench --durations=0 tests/bench" in plan
