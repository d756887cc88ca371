"""The example downstream MCP server (examples/mcp_files_server.py) as a real subprocess, over
stdio or streamable HTTP, and an `McpAdapter` in front of it."""

from __future__ import annotations

import json
import os
import signal
import sys
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest
from anyio.abc import Process

from gateway.adapters.mcp import McpAdapter, McpAdapterConfig
from tests.harness import eventually, free_port

ROOT = Path(__file__).resolve().parents[2]
SERVER = ROOT / "examples" / "mcp_files_server.py"
WAIT = 15.0  # seconds: the bound on every wait here (a Python child that imports the SDK takes ~1.5 s)


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    # Module scope: a module may share one downstream child between its tests (starting one takes ~1.5 s).
    return "asyncio"


@dataclass
class Notebook:
    """The example server's files: its effects (one JSON line per side effect) and its test hooks."""

    folder: Path

    @property
    def effects(self) -> Path:
        return self.folder / "effects.log"

    def effect_lines(self) -> list[dict[str, Any]]:
        if not self.effects.exists():
            return []
        return [json.loads(line) for line in self.effects.read_text().splitlines() if line.strip()]

    def args(self) -> list[str]:
        f = self.folder
        return [
            str(SERVER),
            "--effects",
            str(self.effects),
            "--test-tools",
            "--release",
            str(f / "release"),
            "--describe-version",
            str(f / "version"),
            "--extra-tools",
            str(f / "extra"),
            "--pid-file",
            str(f / "pid"),
        ]

    def kill(self) -> int:
        pid = int((self.folder / "pid").read_text())
        os.kill(pid, signal.SIGKILL)
        return pid

    def pid(self) -> int:
        return int((self.folder / "pid").read_text())


@pytest.fixture
def notebook(tmp_path: Path) -> Notebook:
    folder = tmp_path / "notebook"
    folder.mkdir()
    return Notebook(folder)


@pytest.fixture(scope="module")
def shared_notebook(tmp_path_factory: pytest.TempPathFactory) -> Notebook:
    return Notebook(tmp_path_factory.mktemp("notebook"))


@pytest.fixture(scope="module")
async def shared_adapter(shared_notebook: Notebook) -> AsyncIterator[McpAdapter]:
    """One adapter and child for the tests of a module that neither kill nor reconfigure it."""
    adapter = McpAdapter(stdio_config(shared_notebook, start_wait=WAIT))
    await adapter.start()
    try:
        yield adapter
    finally:
        await adapter.close()


def stdio_config(notebook: Notebook, **changes: Any) -> McpAdapterConfig:
    fields: dict[str, Any] = {"name": "files", "command": [sys.executable, *notebook.args()], "timeout": 5.0}
    return McpAdapterConfig.model_validate(fields | changes)


@pytest.fixture
async def stdio_adapter(notebook: Notebook) -> AsyncIterator[McpAdapter]:
    adapter = McpAdapter(stdio_config(notebook, start_wait=WAIT))
    await adapter.start()
    try:
        yield adapter
    finally:
        await adapter.close()


class HttpServer:
    """The example server with `--http PORT`; `stop()` kills it, `start()` runs it (again) on the same port."""

    def __init__(self, notebook: Notebook) -> None:
        self.notebook = notebook
        self.port = free_port()
        self.process: Process | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    async def start(self) -> None:
        self.process = await anyio.open_process([sys.executable, *self.notebook.args(), "--http", str(self.port)])
        try:
            with anyio.fail_after(WAIT):
                while True:
                    try:
                        stream = await anyio.connect_tcp("127.0.0.1", self.port)
                    except OSError:
                        await anyio.sleep(0.05)  # bounded above: the child is importing the SDK
                        continue
                    await stream.aclose()
                    return
        except BaseException:
            await self.stop()
            raise

    async def stop(self) -> None:
        if self.process is not None:
            self.process.kill()
            with anyio.fail_after(WAIT):
                await self.process.wait()
            await self.process.aclose()
            self.process = None


async def wait_until(predicate: Callable[[], bool]) -> None:
    """Until `predicate()` holds, bounded by WAIT. For state another process writes to a file."""
    await eventually(predicate, wait=WAIT, every=0.02)


@pytest.fixture
async def http_server(notebook: Notebook) -> AsyncIterator[HttpServer]:
    server = HttpServer(notebook)
    await server.start()
    try:
        yield server
    finally:
        await server.stop()
