"""A scripted agent for tests/e2e/test_planned_run.py, run as its own process: the official MCP SDK
client over streamable HTTP, its lease token in WARRANT_TOKEN, the gateway's URL as its argument.

It does what a durable agent does after any restart: read `warrant_status`, plan five tasks when
the run has no plan, then go on at the recovery package's `resume_at` until no task is left, each
task's one write tagged with its task (`_meta["warrant/task_id"]`) and an operation id of its own,
so a write repeated after a crash replays instead of happening twice; then claim completion.

WARRANT_PARK_AT=<task id>: after that task's write, print `PARKED` and wait to be killed.
WARRANT_SLOW_AT=<task id>: that task's write is `files__slow_write` (the notebook performs it, then
blocks until released): an agent killed while it waits is killed mid-call.
A task found `running` (an attempt a killed agent left) is read back first (`files__read_note`),
as an agent checks what it may already have done.
Every step is a JSON line on stdout.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from typing import Any

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

TASKS = [
    {"id": "gather", "title": "Gather the notes"},
    {"id": "outline", "title": "Outline the summary", "depends_on": ["gather"]},
    {"id": "draft", "title": "Draft the summary", "depends_on": ["outline"], "max_attempts": 3},
    {"id": "review", "title": "Review the draft", "depends_on": ["draft"]},
    {"id": "publish", "title": "Publish it", "depends_on": ["review"]},
]


def say(**line: Any) -> None:
    print(json.dumps(line), flush=True)


async def call(client: Client, tool: str, arguments: dict[str, Any], meta: dict[str, Any] | None = None) -> Any:
    result = await client.call_tool(tool, arguments, meta=meta)
    body = result.structured_content or {}
    if result.is_error:
        raise SystemExit(f"{tool} refused: {json.dumps(body)[:500]}")
    return body, result.meta or {}


async def main(url: str) -> None:
    token, park_at = os.environ["WARRANT_TOKEN"], os.environ.get("WARRANT_PARK_AT")
    slow_at = os.environ.get("WARRANT_SLOW_AT")
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=20) as http,
        Client(streamable_http_client(f"{url}/mcp", http_client=http), mode="auto", cache=None) as client,
    ):
        status, _ = await call(client, "warrant_status", {})
        run_id = status["run_id"]
        if (status["recovery"].get("plan") or {}).get("version", 0) == 0:
            await call(client, "warrant_plan", {"expected_version": 0, "tasks": TASKS})
            say(step="planned", tasks=len(TASKS))
        while True:
            status, _ = await call(client, "warrant_status", {})
            plan = status["recovery"]["plan"]
            task_id = plan["resume_at"]
            if task_id is None:
                break
            task = next(t for t in plan["tasks"] if t["task_id"] == task_id)
            say(step="resume_at", task=task_id, status=task["status"], attempts=task["attempts"])
            if task["status"] == "ready":
                await call(client, "warrant_task", {"task_id": task_id, "status": "running"})
            elif task["status"] == "running":
                checked = await client.call_tool(
                    "files__read_note", {"title": f"{run_id}-{task_id}"}, meta={"warrant/task_id": task_id}
                )
                say(step="checked", task=task_id, found=not checked.is_error)
            meta = {"warrant/task_id": task_id, "warrant/operation_id": f"{run_id}:{task_id}:write"}
            tool = "files__slow_write" if task_id == slow_at else "files__write_note"
            say(step="writing", task=task_id, tool=tool)
            _, answer = await call(client, tool, {"title": f"{run_id}-{task_id}", "body": task["title"]}, meta)
            say(step="wrote", task=task_id, replayed=bool(answer.get("warrant/replayed")))
            if task_id == park_at:
                say(step="PARKED", task=task_id)
                await asyncio.Event().wait()  # until the test kills this process
            await call(client, "warrant_task", {"task_id": task_id, "status": "completed"})
            say(step="completed", task=task_id)
        await call(client, "warrant_complete", {"summary": "the summary is published"})
        say(step="DONE")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
