"""Two gateway processes' watchdogs on one SQLite file (`_watch_worker.py`), ticking at the same
moments: one acts at a time, the other takes over when it dies, and a webhook receiver on
loopback gets every alert exactly once. The store, not process memory, decides."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from gateway.clock import ManualClock
from gateway.domain import parse_contract
from gateway.store.sqlite import SQLiteStore
from tests.harness import LEDGER_KEY, OPS, contract, uvicorn_serving
from tests.integration.test_gate_processes import Worker as GateWorker

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

WORKER = Path(__file__).with_name("_watch_worker.py")
PROCESS_WAIT = 60.0  # seconds: start-up of an interpreter on a small machine included


class Worker(GateWorker):
    async def tick(self, now: float) -> dict[str, Any]:
        assert self.process.stdin is not None
        self.process.stdin.write(f"tick {now}\n".encode())
        await self.process.stdin.drain()
        with anyio.fail_after(PROCESS_WAIT):
            return await self.read()


@pytest.fixture
async def workers(tmp_path: Path) -> AsyncIterator[list[Worker]]:
    started: list[Worker] = []
    yield started
    for worker in started:
        if worker.process.returncode is None:
            worker.process.kill()
        await worker.process.wait()


async def start(tmp_path: Path, workers: list[Worker], **config: Any) -> Worker:
    stderr = tmp_path / f"{config['name']}.stderr"
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
    workers.append(worker)
    with anyio.fail_after(PROCESS_WAIT):
        assert await worker.read() == {"ready": True}
    return worker


async def test_two_gateway_processes_on_one_store_send_each_alert_once(tmp_path: Path, workers: list[Worker]) -> None:
    bodies: list[dict[str, Any]] = []

    async def receive(request: Request) -> Response:
        bodies.append(json.loads(await request.body()))
        return Response(status_code=204)

    clock = ManualClock()
    db = tmp_path / "warrant.db"
    store = SQLiteStore(str(db), clock=clock, ledger_key=LEDGER_KEY)
    await store.open()
    try:
        for _ in range(3):  # each: its lease missed and stalled at +60 s
            run = await store.create_run(OPS, parse_contract(contract(lease_ttl="1m", progress_expectation="1m")))
            await store.acquire_lease(OPS, run.run_id, "worker-1", takeover=False)
    finally:
        await store.close()

    async with uvicorn_serving(Starlette(routes=[Route("/hook", receive, methods=["POST"])])) as url:
        common = {"db": str(db), "ledger_key": LEDGER_KEY.hex(), "url": f"{url}/hook"}
        a = await start(tmp_path, workers, name="gateway-a", **common)
        b = await start(tmp_path, workers, name="gateway-b", **common)
        start_at = clock.now()
        holders = []
        for i in range(15):  # both tick at the same moments for 70 s
            answers = await asyncio.gather(a.tick(start_at + 5 * i), b.tick(start_at + 5 * i))
            assert sum(answer["holding"] for answer in answers) == 1
            holders.append(a if answers[0]["holding"] else b)
        assert len(set(holders)) == 1  # the holder renews: no flapping
        holder, other = (a, b) if holders[0] is a else (b, a)
        holder.process.kill()  # the acting process dies
        await holder.process.wait()
        later = start_at + 5 * 14
        for i in range(1, 6):  # the survivor takes the lease over once it lapsed and sees the same conditions
            answer = await other.tick(later + 5 * i)
        assert answer["holding"] and answer["raised"] == []

    alerts = [body for body in bodies if body["kind"] != "heartbeat"]
    assert sorted(body["kind"] for body in alerts) == ["lease_missed"] * 3 + ["stalled"] * 3
    assert len({body["id"] for body in alerts}) == len(alerts) == 6
    assert [body["kind"] for body in bodies].count("heartbeat") == 1  # one per interval, whoever holds
