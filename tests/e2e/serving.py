"""`warrant serve` as a real process for end-to-end tests: started, waited for on /healthz, stopped."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import httpx2
from mcp import Client, types
from mcp.client.streamable_http import streamable_http_client

from tests.harness import eventually_sync

ROOT = Path(__file__).resolve().parents[2]
STOP_WAIT = 20.0  # seconds a stopping gateway gets before it is killed


def stop_serve(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)  # lets the gateway close its downstream child on the way out
        try:
            proc.wait(STOP_WAIT)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(STOP_WAIT)


def clean_environ() -> dict[str, str]:
    """This process's environment without WARRANT_* and OTEL_*: a test says what its children get."""
    return {k: v for k, v in os.environ.items() if not k.startswith(("WARRANT_", "OTEL_"))}


@contextlib.contextmanager
def warrant_serve(
    config: Path, url: str, env: dict[str, str], log: Path, wait: float
) -> Iterator[subprocess.Popen[bytes]]:
    """Run `warrant serve --config CONFIG` (its output in LOG) until the block ends; it answers at URL
    within `wait` seconds or the test fails with the log's tail. Yields the process."""
    with log.open("wb") as sink:
        proc = subprocess.Popen(
            [sys.executable, "-m", "gateway.cli", "serve", "--config", str(config), "--log-level", "warning"],
            env=env,
            cwd=ROOT,
            stdin=subprocess.DEVNULL,
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
    try:
        wait_healthy(proc, url, log, wait)
        yield proc
    finally:
        stop_serve(proc)


def wait_healthy(proc: subprocess.Popen[bytes], url: str, log: Path, wait: float) -> None:
    """Until the gateway at URL answers /healthz 200; the test fails with LOG's tail if the process
    exits first or `wait` seconds pass."""

    def healthy() -> bool:
        if proc.poll() is not None:  # not an AssertionError: `eventually_sync` would ask again
            raise RuntimeError(f"{proc.args!r} exited {proc.returncode}:\n{log.read_text()[-4000:]}")
        with contextlib.suppress(httpx.TransportError):
            return httpx.get(f"{url}/healthz", timeout=1).status_code == 200
        return False

    try:
        eventually_sync(healthy, wait=wait)
    except AssertionError as failure:
        raise AssertionError(f"{url} did not answer in time ({failure}):\n{log.read_text()[-4000:]}") from None


def code_of(result: types.CallToolResult) -> str | None:
    """The refusal or failure code of an MCP tool result (None: it succeeded). A waiting answer
    (approval_required, run_waiting) is not an error result; its `_meta` names its code."""
    if not result.is_error:
        waiting: str | None = (result.meta or {}).get("warrant/code")
        return waiting
    assert result.structured_content is not None, result
    code: str = result.structured_content["error"]["code"]
    return code


async def run_with_lease(api: httpx.AsyncClient, contract: dict[str, Any], worker: str = "agent") -> tuple[str, str]:
    """A new run made through `api` (an operator's client) and its first lease: (run_id, token)."""
    created = await api.post("/api/runs", json=contract)
    assert created.status_code == 201, created.text
    run_id: str = created.json()["run_id"]
    grant = await api.post(f"/api/runs/{run_id}/lease", json={"worker": worker})
    assert grant.status_code == 201, grant.text
    token: str = grant.json()["token"]
    return run_id, token


@contextlib.asynccontextmanager
async def mcp_agent(url: str, token: str, wait: float = 20.0) -> AsyncIterator[Client]:
    """The official MCP SDK client over streamable HTTP to the gateway at `url`, holding the lease token."""
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=wait) as http,
        Client(streamable_http_client(f"{url}/mcp", http_client=http), cache=None) as client,
    ):
        yield client
