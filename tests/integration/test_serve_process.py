"""`warrant serve` as a real process: it starts, answers, and holds its SQLite file alone."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.harness import eventually_sync, free_port

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def config(tmp_path: Path) -> tuple[Path, int, dict[str, str]]:
    port = free_port()
    path = tmp_path / "warrant.yaml"
    path.write_text(
        f"database: sqlite:///{tmp_path}/w.db\n"
        f"listen: {{host: 127.0.0.1, port: {port}}}\n"
        "api_keys:\n  - {name: ops, tenant: acme, roles: [admin], key_env: T_ADMIN_KEY}\n"
        f"adapters: [{ROOT}/adapters/notes.yaml]\npolicies: [{ROOT}/policies/default.yaml]\n"
    )
    env = {**os.environ, "T_ADMIN_KEY": "admin-key", "WARRANT_LEDGER_KEY": "ledger"}
    return path, port, env


def _serve(config: Path, env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "gateway.cli", "serve", "--config", str(config), "--log-level", "warning"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _wait_healthy(port: int, proc: subprocess.Popen[str], timeout: float = 20) -> dict[str, object]:
    def healthy() -> dict[str, object] | None:
        if proc.poll() is not None:  # not an AssertionError: `eventually_sync` would ask again
            raise RuntimeError(f"serve exited {proc.returncode}: {proc.stderr.read() if proc.stderr else ''}")
        try:
            r = httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1)
        except httpx.TransportError:
            return None
        if r.status_code != 200:
            return None
        body: dict[str, object] = r.json()
        return body

    return eventually_sync(healthy, wait=timeout)


@pytest.fixture
def procs() -> Iterator[list[subprocess.Popen[str]]]:
    started: list[subprocess.Popen[str]] = []
    yield started
    for proc in started:
        if proc.poll() is None:
            proc.kill()
        proc.wait(10)
        for stream in (proc.stdout, proc.stderr):
            if stream:
                stream.close()


def test_a_second_serve_on_the_same_sqlite_file_is_refused_at_start_up(
    config: tuple[Path, int, dict[str, str]], procs: list[subprocess.Popen[str]]
) -> None:
    path, port, env = config
    first = _serve(path, env)
    procs.append(first)
    assert _wait_healthy(port, first)["status"] == "ok"
    other = path.with_name("other.yaml")
    other.write_text(path.read_text().replace(f"port: {port}", f"port: {free_port()}"))
    second = _serve(other, env)
    procs.append(second)
    assert second.wait(20) == 2
    assert second.stderr is not None
    assert "already serves" in second.stderr.read()
    assert httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2).status_code == 200


def test_serve_restarts_on_its_store_after_sigkill_and_the_ledger_still_verifies(
    config: tuple[Path, int, dict[str, str]], procs: list[subprocess.Popen[str]]
) -> None:
    path, port, env = config
    first = _serve(path, env)
    procs.append(first)
    _wait_healthy(port, first)
    headers = {"Authorization": "Bearer admin-key"}
    contract = (ROOT / "examples/contracts/notes-demo.json").read_text()
    created = httpx.post(f"http://127.0.0.1:{port}/api/runs", content=contract, headers=headers, timeout=5)
    assert created.status_code == 201
    first.send_signal(signal.SIGKILL)
    first.wait(10)
    again = _serve(path, env)
    procs.append(again)
    _wait_healthy(port, again)
    run = httpx.get(f"http://127.0.0.1:{port}/api/runs/{created.json()['run_id']}", headers=headers, timeout=5)
    assert run.json()["status"] == "running"
    verify = httpx.get(f"http://127.0.0.1:{port}/api/ledger/verify", headers=headers, timeout=5).json()
    assert verify["ok"] is True


def test_serve_refuses_to_start_without_its_secrets(config: tuple[Path, int, dict[str, str]]) -> None:
    path, _, env = config
    env = {k: v for k, v in env.items() if k != "WARRANT_LEDGER_KEY"}
    proc = subprocess.run(
        [sys.executable, "-m", "gateway.cli", "serve", "--config", str(path)],
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert proc.returncode == 2
    assert "WARRANT_LEDGER_KEY" in proc.stderr
    assert "admin-key" not in proc.stderr
