"""The demo gateway exactly as `make run` starts it (`python -m gateway.cli.devrun`), as a real process
in a folder of its own: the repository's warrant.yaml, policies and adapters copied there (the demo
services' adapters pointed at free ports), examples/ linked, its state in that folder's .warrant/.
"""

from __future__ import annotations

import contextlib
import re
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tests.e2e.serving import ROOT, clean_environ, wait_healthy
from tests.harness import free_port
from tests.integration.test_http_services import adapter_copy

START_WAIT = 60.0  # seconds: the services, the downstream MCP server and the store all start first
STOP_WAIT = 30.0


def demo_folder(folder: Path) -> tuple[Path, int, int]:
    """The files `make run` reads, in `folder`; (folder, CRM port, mail port)."""
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(ROOT / "warrant.yaml", folder / "warrant.yaml")
    shutil.copytree(ROOT / "policies", folder / "policies")
    shutil.copytree(ROOT / "adapters", folder / "adapters")
    (folder / "examples").symlink_to(ROOT / "examples")
    crm, mail = free_port(), free_port()
    for name, port in (("crm", crm), ("email", mail)):
        adapter = folder / "adapters" / f"{name}.yaml"
        adapter_copy(adapter, adapter, f"http://127.0.0.1:{port}")
    return folder, crm, mail


@dataclass
class Demo:
    folder: Path
    url: str
    crm_port: int
    mail_port: int

    @property
    def env(self) -> dict[str, str]:
        """What a user's shell has: no WARRANT_* set, and this worktree's code first."""
        return clean_environ() | {"PYTHONPATH": str(ROOT)}

    @contextlib.contextmanager
    def make_run(self, log: str) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
        """`make run`'s command until the block ends (then Ctrl-C, as a user stops it); yields the
        process and what it printed before /healthz answered."""
        port = self.url.rsplit(":", 1)[1]
        command = [sys.executable, "-m", "gateway.cli.devrun", "--port", port, "--log-level", "warning"]
        command += ["--crm-port", str(self.crm_port), "--mail-port", str(self.mail_port)]
        path = self.folder / log
        with path.open("wb") as sink:
            proc = subprocess.Popen(
                command, cwd=self.folder, env=self.env, stdin=subprocess.DEVNULL, stdout=sink, stderr=subprocess.STDOUT
            )
        try:
            wait_healthy(proc, self.url, path, START_WAIT)
            yield proc, path.read_text()
        finally:
            ctrl_c(proc)

    def shell(self, command: str, wait: float) -> subprocess.CompletedProcess[str]:
        """`command` in bash after `source .warrant/dev.env`, with a PATH that has no `warrant` of its own."""
        env = self.env | {"PATH": "/usr/local/bin:/usr/bin:/bin"}
        return subprocess.run(
            ["bash", "-c", f"source .warrant/dev.env && {command}"],
            cwd=self.folder,
            env=env,
            capture_output=True,
            text=True,
            timeout=wait,
            check=False,
        )


def ctrl_c(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(STOP_WAIT)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(STOP_WAIT)


def printed_key(output: str, what: str) -> str:
    """A key as `make run` printed it (`  approver key:  wak_...`)."""
    found = re.search(rf"^\s*{what} key:\s+(\S+)", output, flags=re.M)
    assert found is not None, f"make run printed no {what} key:\n{output}"
    return found.group(1)
