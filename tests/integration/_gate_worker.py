"""One OS process acting as a gateway: its own SQLiteStore on a shared file, its own Gate, one write tool.

Run by `test_gate_processes.py` as `python _gate_worker.py '<json>'`, the JSON naming: db, ledger_key
(hex), now (the clock), token, effects (a file), name, calls, block. It speaks JSON lines on stdout:

    {"ready": true}                   the store is open; it then waits for one line on stdin
    {"dispatched": "<action id>"}     (block mode) the side effect happened; the tool now blocks forever
    {"results": [...]}                the code and remaining writes of every call, in order

The tool `t__write` appends one line per side effect to the effects file (O_APPEND, so lines from
several processes never interleave).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from typing import Any

from gateway.adapters import CallRequest, PythonAdapter
from gateway.catalog import Catalog
from gateway.clock import ManualClock
from gateway.gate import META_BUDGET, Gate
from gateway.policy import ToolPolicy
from gateway.store.sqlite import SQLiteStore


def say(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def append_line(path: str, line: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, (line + "\n").encode())
    finally:
        os.close(fd)


async def main(config: dict[str, Any]) -> None:
    adapter = PythonAdapter("t")

    @adapter.tool(input_schema={"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]})
    async def write(args: dict[str, Any], call: CallRequest) -> dict[str, Any]:
        append_line(config["effects"], json.dumps({"worker": config["name"], "args": args}))
        if config["block"]:
            say({"dispatched": call.action_id})
            await asyncio.Event().wait()  # until the parent kills this process
        return {"id": f"{config['name']}-{args['text']}"}

    clock = ManualClock(config["now"])
    store = SQLiteStore(config["db"], clock=clock, ledger_key=bytes.fromhex(config["ledger_key"]))
    await store.open()
    gate = Gate(store, Catalog([adapter], {"t__write": ToolPolicy(effect="write")}), clock)
    say({"ready": True})
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
    calls = [gate.call(config["token"], "t__write", {"text": f"{config['name']}-{i}"}) for i in range(config["calls"])]
    results = await asyncio.gather(*calls)
    say(
        {
            "results": [
                {"code": r.code if r.is_error else None, "writes_left": r.meta.get(META_BUDGET, {}).get("writes")}
                for r in results
            ]
        }
    )
    await store.close()


if __name__ == "__main__":
    asyncio.run(main(json.loads(sys.argv[1])))
