"""Running Python agent frameworks from the tests: each in a venv of its own, in a subprocess.

The frameworks cannot share the gateway's environment: langchain-mcp-adapters 0.3.2 requires
`mcp<2` while the gateway requires `mcp>=2.3`. So `make test` makes one venv per lock file of
tests/interop/python/ (`agents.txt`: pydantic-ai, the OpenAI Agents SDK and fastmcp, on mcp 2.x;
`langchain.txt`: langchain-mcp-adapters and LangChain, on mcp 1.x) under `.venv-interop/`,
installed once and again when the lock file changes. The test serves a real gateway from the
main venv and runs `tests/interop/python/run_<framework>.py URL` in the framework's venv, speaking
the line protocol of tests/interop/python/scenario.py. Missing venvs fail the tests, loudly.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).parents[2]
PYTHON_DIR = Path(__file__).parent / "python"
VENVS = ROOT / ".venv-interop"
STAMP = ".installed"  # what the Makefile touches once a venv is installed


@dataclass(frozen=True)
class Framework:
    name: str
    venv: str  # the lock file tests/interop/python/<venv>.txt, the venv .venv-interop/<venv>

    @property
    def runner(self) -> Path:
        return PYTHON_DIR / f"run_{self.name}.py"


def python_of(venv: str) -> Path:
    """The interpreter of `.venv-interop/<venv>`, failing the test when it is missing or stale."""
    install = f"make {VENVS.name}/{venv}/{STAMP} (or `make test`, which does it)"
    stamp = VENVS / venv / STAMP
    if not stamp.exists():
        pytest.fail(f"the Python agent frameworks' venv {venv} is not installed: {install}", pytrace=False)
    if (PYTHON_DIR / f"{venv}.txt").stat().st_mtime > stamp.stat().st_mtime:
        pytest.fail(f"tests/interop/python/{venv}.txt changed since the venv was installed: {install}", pytrace=False)
    return VENVS / venv / "bin" / "python"


# Only what a Python process needs: no proxy settings, no PYTHONPATH into the gateway's tree, no
# provider keys; and the frameworks' telemetry off (nothing may leave the machine).
ENV_KEPT = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "SYSTEMROOT")
ENV_SET = {
    "OPENAI_AGENTS_DISABLE_TRACING": "1",
    "LANGSMITH_TRACING": "false",
    "LANGCHAIN_TRACING_V2": "false",
    "FASTMCP_SHOW_SERVER_BANNER": "false",
    "PYTHONUNBUFFERED": "1",
    "PYTHONDONTWRITEBYTECODE": "1",
}


async def run_agent(
    framework: Framework,
    url: str,
    token: str,
    on_waiting: Callable[[], Awaitable[None]],
    *,
    time_limit: float = 120,
) -> dict[str, Any]:
    """Runs the framework's scripted agent against `url` with `token`; awaits `on_waiting()` each time
    the agent waits on a person, then lets it go on. Returns its transcript (the `done` message)."""
    env = {k: v for k, v in os.environ.items() if k in ENV_KEPT} | ENV_SET | {"WARRANT_TOKEN": token}
    process = await asyncio.create_subprocess_exec(
        str(python_of(framework.venv)),
        str(framework.runner),
        url,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        cwd=PYTHON_DIR,
        env=env,
    )
    assert process.stdin is not None and process.stdout is not None and process.stderr is not None
    stderr = asyncio.create_task(process.stderr.read())
    seen: list[str] = []
    done: dict[str, Any] | None = None
    try:
        async with asyncio.timeout(time_limit):
            while done is None:
                line = (await process.stdout.readline()).decode()
                if not line:
                    break
                seen.append(line)
                message = _message(line)
                if message is None:
                    continue  # a framework's own chatter on stdout
                if message["event"] == "waiting":
                    await on_waiting()
                    process.stdin.write(b"go\n")
                    await process.stdin.drain()
                elif message["event"] == "done":
                    done = message
            process.stdin.close()
            await process.wait()
    except TimeoutError:
        errors = await _end(process, stderr)
        raise AssertionError(
            f"{framework.name} ran over {time_limit} s\nstdout:\n{''.join(seen)}\nstderr:\n{errors}"
        ) from None
    finally:
        # Whatever failed here (the test's own steps while the agent waits, too), no agent outlives the test.
        await _end(process, stderr)
    errors = (await stderr).decode()
    if done is None or process.returncode != 0:
        raise AssertionError(
            f"{framework.name} exited {process.returncode} without a transcript\n"
            f"stdout:\n{''.join(seen)}\nstderr:\n{errors}"
        )
    done["stderr"] = errors
    return done


async def _end(process: asyncio.subprocess.Process, stderr: asyncio.Task[bytes]) -> str:
    """Kills `process` if it still runs and reaps it; what it wrote on stderr."""
    if process.returncode is None:
        process.kill()
        await process.wait()
    return (await stderr).decode()


def _message(line: str) -> dict[str, Any] | None:
    try:
        message = json.loads(line)
    except json.JSONDecodeError:
        return None
    return message if isinstance(message, dict) and "event" in message else None
