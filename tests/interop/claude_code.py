"""Running the pinned Claude Code CLI from the tests, offline, with every connection it makes checked.

`@anthropic-ai/claude-code` (tests/interop/node/package.json) is a small wrapper whose postinstall
copies the native binary of the platform's optional package (`@anthropic-ai/claude-code-linux-x64`
and so on) over its `bin/claude.exe` placeholder. `make test` installs with `--ignore-scripts`, so
the tests run the platform package's binary directly, as the wrapper's `cli-wrapper.cjs` would.

Each run gets a HOME and TMPDIR of its own, a dummy API key, the model API at a loopback stand-in
(tests/interop/model_standin.py), and telemetry, error reports, updates and all non-essential
traffic switched off. It runs under `strace`, which records every `connect` and every datagram's
destination of the process and its threads and children: a run whose record names anything but
the loopback ports the test serves fails.
"""

from __future__ import annotations

import asyncio
import json
import os
import platform
import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.interop import nodejs
from tests.interop.nodejs import INSTALL, MODULES

VERSION = "2.1.332"  # the pin in tests/interop/node/package.json
STRACE = "/usr/bin/strace"


def claude_executable() -> Path:
    machine = {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64", "arm64": "arm64"}.get(platform.machine().lower())
    system = {"Linux": "linux", "Darwin": "darwin"}.get(platform.system())
    musl = system == "linux" and not platform.libc_ver()[0]
    name = f"@anthropic-ai/claude-code-{system}-{machine}{'-musl' if musl else ''}"
    binary = MODULES / name / "claude"
    if not binary.exists():
        pytest.fail(f"no Claude Code binary at {binary}: {INSTALL}", False)
    installed = json.loads((binary.parent / "package.json").read_text())["version"]
    if installed != VERSION:
        pytest.fail(f"Claude Code {installed} is installed, the tests pin {VERSION}: {INSTALL}", False)
    return binary


def strace() -> str:
    if not Path(STRACE).exists():
        pytest.fail(f"the Claude Code tests record its connections with {STRACE}: run `make test`", False)
    return STRACE


# One traced syscall's destination: AF_INET's port and address, or AF_INET6's port and address.
_INET = re.compile(r'sa_family=AF_INET, sin_port=htons\((\d+)\), sin_addr=inet_addr\("([^"]+)"\)')
_INET6 = re.compile(r'sa_family=AF_INET6, sin6_port=htons\((\d+)\),.*?inet_pton\(AF_INET6, "([^"]+)"')
LOOPBACK = {"127.0.0.1", "::1", "::ffff:127.0.0.1"}


def destinations(trace: str) -> list[tuple[str, int]]:
    """Every (address, port) the traced process connected or sent to, in order."""
    found = []
    for line in trace.splitlines():
        for pattern in (_INET, _INET6):
            for port, address in pattern.findall(line):
                found.append((address, int(port)))
    return found


@dataclass
class Ran(nodejs.Ran):
    reached: list[tuple[str, int]] = field(default_factory=list)  # every connection's and datagram's

    def __str__(self) -> str:
        return f"exit {self.returncode}\nstdout:\n{self.stdout}\nstderr:\n{self.stderr}"


@dataclass
class Claude:
    """A Claude Code of its own: HOME, TMPDIR and working directory under `root`, and `claude` on
    the PATH (`root/bin`), for commands a person would paste into a shell."""

    root: Path
    model_url: str  # the stand-in's base URL
    allowed_ports: set[int] = field(default_factory=set)

    def __post_init__(self) -> None:
        for sub in ("home", "tmp", "work", "bin"):
            (self.root / sub).mkdir(parents=True, exist_ok=True)
        link = self.root / "bin" / "claude"
        if not link.is_symlink():
            link.symlink_to(claude_executable())
        self.runs = 0

    @property
    def env(self) -> dict[str, str]:
        return {
            "PATH": f"{self.root / 'bin'}:{os.environ.get('PATH', '/usr/bin:/bin')}",
            "HOME": str(self.root / "home"),
            "TMPDIR": str(self.root / "tmp"),
            "LANG": "C.UTF-8",
            "NO_COLOR": "1",
            "ANTHROPIC_BASE_URL": self.model_url,
            "ANTHROPIC_API_KEY": "sk-ant-test-not-a-key",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_ERROR_REPORTING": "1",
            "DISABLE_AUTOUPDATER": "1",
            "DISABLE_NON_ESSENTIAL_MODEL_CALLS": "1",
            "CLAUDE_CODE_ENABLE_TELEMETRY": "0",
            # MCP tools in the model's tool list, with their schemas, as most clients show them
            # (not deferred behind Claude Code's ToolSearch).
            "ENABLE_TOOL_SEARCH": "false",
        }

    async def run(self, *args: str, time_limit: float = 60) -> Ran:
        """`claude args...`, stdin closed; fails the test if it reached anything but the allowed
        loopback ports (`allowed_ports`)."""
        return await self._traced([str(claude_executable()), *args], " ".join(args[:2]), time_limit)

    async def shell(self, command: str, env: dict[str, str], time_limit: float = 60) -> Ran:
        """`sh -c command`, as a person's shell would run it (with `env` set too), checked alike."""
        return await self._traced(["/bin/sh", "-c", command], command[:40], time_limit, env)

    async def _traced(self, argv: list[str], what: str, time_limit: float, env: dict[str, str] | None = None) -> Ran:
        self.runs += 1
        trace = self.root / f"connections-{self.runs}.strace"
        process = await asyncio.create_subprocess_exec(
            strace(),
            "-f",
            "-qq",
            "--seccomp-bpf",
            "-e",
            "trace=connect,sendto,sendmsg,sendmmsg",
            "-e",
            "signal=none",
            "-s",
            "256",  # enough of a datagram to name the host a DNS query asks for
            "-o",
            str(trace),
            *argv,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            cwd=self.root / "work",
            env={**self.env, **(env or {})},
        )
        try:
            stdout, stderr = await asyncio.wait_for(process.communicate(), time_limit)
        except TimeoutError:
            process.kill()
            stdout, stderr = await process.communicate()
            late = Ran(-1, stdout.decode(), stderr.decode(), [])
            raise AssertionError(f"{what} ran over {time_limit} s\n{late}") from None
        record = trace.read_text()
        reached = destinations(record)
        outside = sorted({(a, p) for a, p in reached if a not in LOOPBACK or p not in self.allowed_ports})
        ran = Ran(process.returncode or 0, stdout.decode(), stderr.decode(), reached)
        if outside:
            lines = "\n".join(
                line for line in record.splitlines() if destinations(line) and set(destinations(line)) & set(outside)
            )
            raise AssertionError(f"{what}: reached beyond the test's servers: {outside}\n{lines}\n{ran}")
        return ran
