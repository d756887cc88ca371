"""`warrant runs revise`, `successor` and `delegate` against a real server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.api.conftest import CONTRACT, Api
from tests.api.test_cli_keys import warrant
from tests.api.test_operator_api import create_run

pytestmark = pytest.mark.anyio


async def test_revise_narrows_from_inline_json_and_from_a_file(
    api: Api, capsys: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("WARRANT_API_KEY", "key-op")
    run_id = (await create_run(api))["run_id"]
    patch = json.dumps({"budgets": {"writes": 5}})
    code, out, err = await warrant(api, capsys, "runs", "revise", run_id, "--spec-version", "v2", "--patch", patch)
    assert code == 0, err
    assert out.splitlines() == [f"{run_id}: v2 (running)", "  budgets.writes  narrows: 10 -> 5"]

    file = tmp_path / "patch.yaml"
    file.write_text("budgets: {writes: 50}\n")
    code, _, err = await warrant(
        api, capsys, "runs", "revise", run_id, "--spec-version", "v3", "--patch", str(file), "--reason", "more"
    )
    assert code == 1 and err.startswith("warrant: [widening_requires_admin]")
    monkeypatch.setenv("WARRANT_API_KEY", "key-ops")
    code, out, _ = await warrant(
        api, capsys, "runs", "revise", run_id, "--spec-version", "v3", "--patch", str(file), "--json"
    )
    assert code == 0 and json.loads(out)["budgets"]["writes"]["limit"] == 50


async def test_successor_and_delegate_print_the_new_run_id(
    api: Api, capsys: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("WARRANT_API_KEY", "key-op")
    parent = (await create_run(api))["run_id"]
    child = tmp_path / "child.json"
    child.write_text(json.dumps({**CONTRACT, "budgets": {**CONTRACT["budgets"], "tool_calls": 5}}))
    code, out, err = await warrant(api, capsys, "runs", "delegate", parent, str(child))
    assert code == 0, err
    child_id = out.strip()
    assert (await api.gateway.store.get_run("acme", child_id)).parent_run_id == parent

    code, _, err = await warrant(api, capsys, "runs", "successor", parent, "--reason", "too early")
    assert code == 1 and err.startswith("warrant: [run_not_terminal]")
    code, _, err = await warrant(api, capsys, "runs", "cancel", parent)
    assert code == 0, err
    code, _, err = await warrant(api, capsys, "runs", "successor", parent, "--reason", "r", "--extend-by", "24h")
    assert code == 1 and err.startswith("warrant: [widening_requires_admin]")
    monkeypatch.setenv("WARRANT_API_KEY", "key-ops")
    code, out, err = await warrant(api, capsys, "runs", "successor", parent, "--reason", "go on", "--extend-by", "24h")
    assert code == 0, err
    successor = await api.gateway.store.get_run("acme", out.strip())
    assert successor.predecessor_run_id == parent
    assert successor.deadline == (await api.gateway.store.get_run("acme", parent)).deadline + 24 * 3600


async def test_successor_without_a_reason_is_refused_before_any_request(
    api: Api, capsys: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WARRANT_API_KEY", "key-op")
    parent = (await create_run(api))["run_id"]
    code, _, err = await warrant(api, capsys, "runs", "cancel", parent)
    assert code == 0, err
    with pytest.raises(SystemExit) as usage:
        await warrant(api, capsys, "runs", "successor", parent)
    assert usage.value.code == 2  # argparse: --reason is required
    code, _, err = await warrant(api, capsys, "runs", "successor", parent, "--reason", "   ")
    assert code == 1 and err.startswith("warrant: [invalid_request]")
    assert "successor_created" not in [e.type for e in await api.gateway.store.list_events("acme", parent)]
