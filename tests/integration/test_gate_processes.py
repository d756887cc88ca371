"""OS processes sharing one SQLite file: the database, not process memory, holds the invariants.

Each worker process opens its own SQLiteStore on the file and runs its own Gate (`_gate_worker.py`).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from gateway.clock import ManualClock
from gateway.domain import ActionStatus, parse_contract
from gateway.gate import Gate
from gateway.store.records import LeaseGrant, RunRecord
from gateway.store.sqlite import SQLiteStore
from tests.harness import LEDGER_KEY, OPS, TENANT, Tools, code_of, contract

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

WORKER = Path(__file__).with_name("_gate_worker.py")
PROCESS_WAIT = 60.0  # seconds: start-up of several interpreters on a small machine included


class Worker:
    def __init__(self, process: asyncio.subprocess.Process, stderr: Path) -> None:
        self.process = process
        self.stderr = stderr

    async def read(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        line = await self.process.stdout.readline()
        if not line:
            await self.process.wait()
            raise AssertionError(f"worker ended ({self.process.returncode}): {self.stderr.read_text()[-2000:]}")
        message: dict[str, Any] = json.loads(line)
        return message

    async def go(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(b"go\n")
        await self.process.stdin.drain()


class Workers:
    """Starts worker processes and makes sure none outlives the test."""

    def __init__(self, tmp_path: Path) -> None:
        self.tmp_path = tmp_path
        self.started: list[Worker] = []

    async def start(self, **config: Any) -> Worker:
        stderr = self.tmp_path / f"{config['name']}.stderr"
        with stderr.open("wb") as err:
            process = await asyncio.create_subprocess_exec(
                sys.executable,
                str(WORKER),
                json.dumps(config),
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=err,
            )
        worker = Worker(process, stderr)
        self.started.append(worker)
        return worker

    async def close(self) -> None:
        for worker in self.started:
            if worker.process.returncode is None:
                worker.process.kill()
            with anyio.fail_after(PROCESS_WAIT):
                await worker.process.wait()


@pytest.fixture
async def workers(tmp_path: Path) -> AsyncIterator[Workers]:
    started = Workers(tmp_path)
    try:
        yield started
    finally:
        await started.close()


async def _new_run(db: Path, clock: ManualClock, **changes: Any) -> tuple[RunRecord, LeaseGrant]:
    store = SQLiteStore(str(db), clock=clock, ledger_key=LEDGER_KEY, process_id="setup")
    await store.open()
    try:
        run = await store.create_run(OPS, parse_contract(contract(**changes)))
        grant = await store.acquire_lease(OPS, run.run_id, "worker", takeover=False)
        return run, grant
    finally:
        await store.close()


def _config(db: Path, clock: ManualClock, grant: LeaseGrant, effects: Path, **more: Any) -> dict[str, Any]:
    return {
        "db": str(db),
        "ledger_key": LEDGER_KEY.hex(),
        "now": clock.now(),
        "token": grant.token,
        "effects": str(effects),
        "block": False,
        **more,
    }


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


async def test_four_processes_sending_25_concurrent_writes_each_never_spend_past_a_budget_of_10(
    tmp_path: Path, workers: Workers
) -> None:
    db, effects, clock = tmp_path / "warrant.db", tmp_path / "effects.log", ManualClock()
    run, grant = await _new_run(db, clock, budgets={"writes": 10})

    with anyio.fail_after(PROCESS_WAIT):
        started = [await workers.start(**_config(db, clock, grant, effects, name=f"w{i}", calls=25)) for i in range(4)]
        for worker in started:
            assert await worker.read() == {"ready": True}
        for worker in started:
            await worker.go()
        reports = [await worker.read() for worker in started]
        for worker in started:
            assert await worker.process.wait() == 0

    results = [result for report in reports for result in report["results"]]
    assert Counter(result["code"] for result in results) == {None: 10, "budget_exhausted": 90}
    assert all(result["writes_left"] >= 0 for result in results if result["code"] is None)
    assert len(_lines(effects)) == 10

    store = SQLiteStore(str(db), clock=clock, ledger_key=LEDGER_KEY, process_id="check")
    await store.open()
    try:
        after = await store.get_run(TENANT, run.run_id)
        assert (after.spent["writes"], after.reserved["writes"]) == (10, 0)
        actions = (await store.list_actions(TENANT, run.run_id, limit=500)).items
        assert Counter(a.status for a in actions) == {ActionStatus.SUCCEEDED: 10, ActionStatus.REJECTED: 90}
        assert {a.code for a in actions if a.status is ActionStatus.REJECTED} == {"budget_exhausted"}
        assert (await store.verify_ledger()).ok
    finally:
        await store.close()


async def test_a_process_killed_inside_dispatch_leaves_an_unknown_action_that_keeps_its_reservation(
    tmp_path: Path, workers: Workers
) -> None:
    db, effects, clock = tmp_path / "warrant.db", tmp_path / "effects.log", ManualClock()
    run, grant = await _new_run(db, clock)

    with anyio.fail_after(PROCESS_WAIT):
        worker = await workers.start(**_config(db, clock, grant, effects, name="doomed", calls=1, block=True))
        assert await worker.read() == {"ready": True}
        await worker.go()
        action_id = (await worker.read())["dispatched"]
        assert len(_lines(effects)) == 1
        os.kill(worker.process.pid, signal.SIGKILL)
        assert await worker.process.wait() == -signal.SIGKILL

    # The gateway restarts on the same file.
    store = SQLiteStore(str(db), clock=clock, ledger_key=LEDGER_KEY, process_id="restarted")
    await store.open()
    try:
        assert await store.mark_orphans_unknown() == [action_id]
        action = await store.get_action(TENANT, action_id)
        assert action.status is ActionStatus.UNKNOWN
        assert action.reserved["writes"] == 1
        after = await store.get_run(TENANT, run.run_id)
        assert (after.reserved["writes"], after.reserved["tool_calls"]) == (1, 1)
        assert (after.spent["writes"], after.spent["tool_calls"]) == (0, 0)

        tools = Tools()
        gate = Gate(store, tools.catalog(), clock)
        with anyio.fail_after(10):
            retry = await gate.call(grant.token, "t__write", {"text": "doomed-0"})
        assert code_of(retry) == "outcome_unknown"
        assert retry.structured is not None and retry.structured["error"]["action_id"] == action_id
        assert tools.calls == []
        assert len(_lines(effects)) == 1
        assert (await store.get_action(TENANT, action_id)).status is ActionStatus.UNKNOWN
        assert (await store.verify_ledger()).ok
    finally:
        await store.close()
