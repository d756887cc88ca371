"""The CRM as a real process: die_after_commit ends it without an answer, and after a restart on
the same file the contact exists once and its key answers it."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import httpx
import pytest
from anyio.abc import Process

from examples.services.service import DIE_EXIT_CODE
from tests.harness import free_port
from tests.services.conftest import AUTH, TOKEN, WAIT

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
ANA = {"email": "ana@acme.example", "name": "Ana"}
KEY = {"Idempotency-Key": "gw-op-1"}


@pytest.fixture
async def processes() -> AsyncIterator[list[Process]]:
    started: list[Process] = []
    yield started
    for proc in started:
        if proc.returncode is None:
            proc.kill()
        with anyio.fail_after(WAIT):
            await proc.aclose()


async def start_crm(db: Path, port: int, log: Path, processes: list[Process]) -> str:
    """Start the CRM and wait for its `listening on` line; the base URL."""
    command = [sys.executable, "-m", "examples.services.crm", "--port", str(port), "--db", str(db)]
    with log.open("ab") as stderr:
        proc = await anyio.open_process(
            [*command, "--token-env", "T_CRM_TOKEN"],
            cwd=ROOT,
            env={**os.environ, "T_CRM_TOKEN": TOKEN},
            stdin=subprocess.DEVNULL,
            stderr=stderr,
        )
    processes.append(proc)
    assert proc.stdout is not None
    output = b""
    with anyio.fail_after(WAIT):
        while not output.endswith(b"\n"):
            try:
                output += await proc.stdout.receive()
            except anyio.EndOfStream:
                raise AssertionError(f"the CRM exited: {await anyio.Path(log).read_text()}") from None
    url = f"http://127.0.0.1:{port}"
    assert output.decode() == f"listening on {url}\n"
    return url


async def test_a_death_after_commit_leaves_the_contact_and_its_key_for_the_restarted_crm(
    tmp_path: Path, processes: list[Process]
) -> None:
    db, port, log = tmp_path / "crm.db", free_port(), tmp_path / "crm.log"
    url = await start_crm(db, port, log, processes)
    async with httpx.AsyncClient(base_url=url, headers=AUTH, timeout=WAIT) as client:
        fault = {"method": "POST", "path": "/contacts", "mode": "die_after_commit"}
        assert (await client.post("/_admin/faults", json=fault)).status_code == 201
        with pytest.raises(httpx.TransportError):  # the connection drops: no answer at all
            await client.post("/contacts", json=ANA, headers=KEY)
    with anyio.fail_after(WAIT):
        assert await processes[0].wait() == DIE_EXIT_CODE

    url = await start_crm(db, port, log, processes)
    async with httpx.AsyncClient(base_url=url, headers=AUTH, timeout=WAIT) as client:
        found = await client.get(f"/by-key/{KEY['Idempotency-Key']}")
        assert found.status_code == 200
        contacts = (await client.get("/contacts", params={"email": ANA["email"]})).json()["items"]
        assert [c["id"] for c in contacts] == [found.json()["id"]]
        retried = await client.post("/contacts", json=ANA, headers=KEY)
        assert retried.status_code == 201
        assert retried.headers["Idempotent-Replayed"] == "true"
        assert retried.json() == found.json()
        assert (await client.get("/_admin/faults")).json() == {"items": []}  # faults do not survive
    with anyio.fail_after(WAIT):
        processes[1].kill()
        await processes[1].wait()
    assert await anyio.to_thread.run_sync(count_contacts, db) == 1


def count_contacts(db: Path) -> int:
    with sqlite3.connect(db) as conn:
        (n,) = conn.execute("SELECT COUNT(*) FROM contacts").fetchone()
    conn.close()
    return int(n)
