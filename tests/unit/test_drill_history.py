"""What a drill keeps in the store (gateway/drill/history.py), and `--record`'s one requirement."""

from __future__ import annotations

from pathlib import Path

import pytest

from gateway.cli import main
from gateway.drill.history import MAX_PROBLEMS, drill_run
from gateway.drill.runner import Result


def result(verdict: str, problems: int = 0) -> Result:
    return Result(
        "crash", "integrity", "active", "e", "o", 0, [], verdict, [f"p{i}" for i in range(problems)], folder="/x"
    )


def test_a_kept_drill_drops_local_folders_and_bounds_each_cases_problems() -> None:
    info = {"passed": 0, "failed": 1, "skipped": 0, "failed_cases": ["crash"]}
    kept = drill_run(
        [result("fail", 50)], info, started_at=1, seconds=2, profile="full", modes="both", sabotage=None, by="me"
    )
    assert kept.ok is False and "folder" not in kept.results[0]
    assert len(kept.results[0]["problems"]) == MAX_PROBLEMS


def test_a_sabotaged_drill_is_ok_when_exactly_the_dependent_cases_failed() -> None:
    info = {"passed": 0, "failed": 1, "skipped": 0, "failed_cases": ["crash"], "sabotage": {"as_expected": True}}
    kept = drill_run(
        [result("fail")], info, started_at=1, seconds=2, profile="quick", modes="active", sabotage="fencing", by="me"
    )
    assert (kept.ok, kept.sabotage) == (True, "fencing")


def test_record_without_a_tenant_is_refused_before_anything_runs(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["drill", "--record", "--list"]) == 2
    assert "--tenant" in capsys.readouterr().err


def test_record_with_a_configuration_it_cannot_read_fails_before_the_drill_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "warrant.yaml"
    config.write_text(
        "database: sqlite:///w.db\napi_keys:\n  - {name: ops, tenant: t, roles: [admin], key_env: UNSET_KEY_X}\n"
    )
    argv = ["drill", "--record", "--tenant", "t", "--config", str(config), "--case", "expired-lease"]
    assert main(argv) == 2
    assert "UNSET_KEY_X" in capsys.readouterr().err
