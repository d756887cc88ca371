"""A planned run end to end, every part a real process: `warrant serve` with the example notebook
behind it (tests/e2e/test_mcp_end_to_end.py's gateway), and a scripted agent
(tests/e2e/planner_agent.py, the official MCP SDK client) that plans five tasks and runs them with
tool calls tagged by task. The agent is SIGKILLed in the middle of a task; a second agent process,
given a takeover lease, resumes from the recovery package at that task, its repeated write replays
instead of happening twice, and the run completes with one effect per task. Its pilot report shows
exactly one recovery episode, a takeover, ended by the task the new agent completed, with its
cost, and the replayed write as a duplicate prevented (docs/decisions/0026-reports.md). Its events
show every step with its message and progress, and a consumer given them twice and shuffled ends
where the in-order one does (docs/events.md)."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.e2e.test_mcp_end_to_end import ROOT, WAIT, Served, served
from tests.harness import eventually
from tests.integration.test_events import consume

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

__all__ = ["served"]  # the module's gateway, shared with test_mcp_end_to_end.py
AGENT = Path(__file__).with_name("planner_agent.py")
TASK_IDS = ["gather", "outline", "draft", "review", "publish"]
TITLES = ["Gather the notes", "Outline the summary", "Draft the summary", "Review the draft", "Publish it"]


def agent(url: str, token: str, **env: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(AGENT), url],
        env={**os.environ, "WARRANT_TOKEN": token, "PYTHONPATH": str(ROOT), **env},
        cwd=str(ROOT),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


async def all_events(api: Any, run_id: str) -> list[dict[str, Any]]:
    """The run's events, every page of GET /api/runs/{id}/events."""
    events: list[dict[str, Any]] = []
    cursor: str | None = None
    while True:
        params = {"limit": 200, **({"cursor": cursor} if cursor else {})}
        page = (await api.get(f"/api/runs/{run_id}/events", params=params)).json()
        events += page["items"]
        if (cursor := page["next_cursor"]) is None:
            return events


def lines_until(proc: subprocess.Popen[str], step: str) -> list[dict[str, Any]]:
    """The agent's JSON lines up to and including the first of this step (bounded by WAIT)."""
    assert proc.stdout is not None
    seen: list[dict[str, Any]] = []
    bound = threading.Timer(WAIT * 2, proc.kill)  # a read blocks: a stuck agent is killed, and this ends
    bound.start()
    try:
        for raw in proc.stdout:
            line = json.loads(raw)
            seen.append(line)
            if line["step"] == step:
                return seen
    finally:
        bound.cancel()
    _, err = proc.communicate(timeout=WAIT)
    raise AssertionError(f"the agent ended before {step}: {seen} {err[-2000:]}")


async def test_a_killed_agent_is_replaced_and_the_new_one_resumes_at_its_task_without_repeating_it(
    served: Served,
) -> None:
    run_id, token = await served.start(worker="agent-1")
    before = len(served.effects())

    first = agent(served.url, token, WARRANT_PARK_AT="draft")
    try:
        said = await anyio.to_thread.run_sync(lines_until, first, "PARKED")
    finally:
        first.send_signal(signal.SIGKILL)
        first.communicate(timeout=WAIT)  # reaped, its pipes closed
    assert [s["task"] for s in said if s["step"] == "completed"] == ["gather", "outline"]
    assert said[-1] == {"step": "PARKED", "task": "draft"}

    async with served.api("op") as api:
        plan = (await api.get(f"/api/runs/{run_id}/plan")).json()
        assert [(t["task_id"], t["status"]) for t in plan["tasks"]] == [
            ("gather", "completed"),
            ("outline", "completed"),
            ("draft", "running"),
            ("review", "pending"),
            ("publish", "pending"),
        ]
        grant = await api.post(f"/api/runs/{run_id}/lease", json={"worker": "agent-2", "takeover": True})
        assert grant.status_code == 201, grant.text
        token2 = grant.json()["token"]

    second = agent(served.url, token2)
    out, err = await anyio.to_thread.run_sync(lambda: second.communicate(timeout=WAIT * 3))
    assert second.returncode == 0, err[-3000:]
    steps = [json.loads(line) for line in out.splitlines()]
    assert steps[0] == {"step": "resume_at", "task": "draft", "status": "running", "attempts": 1}
    assert {"step": "wrote", "task": "draft", "replayed": True} in steps  # the killed agent's write, replayed
    assert [s["task"] for s in steps if s["step"] == "completed"] == ["draft", "review", "publish"]
    assert steps[-1] == {"step": "DONE"}

    # One effect per task: the write the first agent made before it was killed happened once.
    titles = [e["title"] for e in served.effects()[before:] if e["tool"] == "write_note"]
    assert titles == [f"{run_id}-{t}" for t in TASK_IDS]

    async with served.api("op") as api:
        run = (await api.get(f"/api/runs/{run_id}")).json()
        assert run["status"] == "completed" and run["standing"]["next_decision"] == "stop"
        actions = (await api.get(f"/api/runs/{run_id}/actions", params={"limit": 100})).json()["items"]
        report = (await api.get(f"/api/runs/{run_id}/report")).json()
    writes = [a for a in actions if a["tool"] == "files__write_note" and a["status"] == "succeeded"]
    assert sorted(a["task_id"] for a in writes) == sorted(TASK_IDS)

    recovery = report["recovery"]
    assert recovery["by_cause"] == {"takeover": 1, "restart": 0, "resume": 0}
    (episode,) = recovery["episodes"]
    assert (episode["cause"], episode["outcome"], episode["triggers"]) == ("takeover", "recovered", 1)
    assert (episode["detail"]["epoch"], episode["detail"]["worker"]) == (2, "agent-2")
    # Its cost: from the takeover to the completed draft, one read (the new agent checking what the
    # killed one left), costing nothing; the repeated write replayed, so nothing new was written.
    assert (episode["tool_calls"], episode["spend"], recovery["recovery_spend"]) == (1, "0.00", "0.00")
    assert 0 < episode["seconds"] == recovery["recovery_seconds"] < WAIT * 3
    assert (report["duplicates_prevented"], report["duplicate_effects"]) == (1, 0)
    assert (report["usable"], report["unusable_reasons"]) == (True, [])

    # The events: every entry in the envelope, its message a fixed template (never a payload: the
    # notes' bodies are the tasks' titles, and no message quotes them), progress from the plan.
    async with served.api("op") as api:
        events = await all_events(api, run_id)
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    for event in events:
        assert event["v"] == 1 and event["id"] == f"evt_{run_id}_{event['seq']}" and event["run_id"] == run_id
        assert isinstance(event["message"], str) and event["message"].strip(), event
        assert not any(title in event["message"] for title in TITLES), event
    by_type = [e["type"] for e in events]
    assert by_type[0] == "run_created" and by_type[-1] == "run_completed"
    assert by_type.count("plan_created") == 1
    completed = [e for e in events if e["type"] == "task_completed"]
    assert [e["task_id"] for e in completed] == TASK_IDS
    assert [e["progress"] for e in completed] == [{"done": n, "total": 5} for n in range(1, 6)]
    started = [e["task_id"] for e in events if e["type"] == "task_started"]
    assert started[:3] == ["gather", "outline", "draft"] and set(started) == set(TASK_IDS)
    assert all(e["task_id"] in e["message"] for e in completed)
    assert events[-1]["progress"] == {"done": 5, "total": 5}
    # A consumer that dedupes on id and applies by seq: twice and shuffled ends in the same state.
    in_order = consume(events)
    assert in_order["tasks"] == dict.fromkeys(TASK_IDS, "completed")
    doubled = events + events
    random.Random(23).shuffle(doubled)
    assert consume(doubled) == in_order


async def test_an_agent_killed_mid_call_is_taken_over_and_the_report_shows_one_takeover_with_its_cost(
    served: Served,
) -> None:
    run_id, token = await served.start(worker="agent-1")
    release = served.notebook.folder / "release"
    release.unlink(missing_ok=True)
    before = len(served.effects())
    first = agent(served.url, token, WARRANT_SLOW_AT="outline")
    try:
        said = await anyio.to_thread.run_sync(lines_until, first, "writing")
        while said[-1] != {"step": "writing", "task": "outline", "tool": "files__slow_write"}:
            said += await anyio.to_thread.run_sync(lines_until, first, "writing")
        # The notebook performed the write and holds its answer: the agent is killed inside the call.
        await eventually(lambda: len(served.effects()) == before + 2)
        first.send_signal(signal.SIGKILL)
        first.communicate(timeout=WAIT)
    finally:
        first.kill()
    async with served.api("op") as api:
        grant = await api.post(f"/api/runs/{run_id}/lease", json={"worker": "agent-2", "takeover": True})
        assert grant.status_code == 201, grant.text
        release.write_text("go")  # the call the dead agent made ends at the gateway with its real outcome

        async def settled() -> bool:
            items = (await api.get(f"/api/runs/{run_id}/actions", params={"limit": 100})).json()["items"]
            return [a["status"] for a in items if a["tool"] == "files__slow_write"] == ["succeeded"]

        await eventually(settled)
    try:
        second = agent(served.url, grant.json()["token"], WARRANT_SLOW_AT="outline")
        out, err = await anyio.to_thread.run_sync(lambda: second.communicate(timeout=WAIT * 3))
    finally:
        release.unlink(missing_ok=True)
    assert second.returncode == 0, err[-3000:]
    steps = [json.loads(line) for line in out.splitlines()]
    assert {"step": "wrote", "task": "outline", "replayed": True} in steps
    assert steps[-1] == {"step": "DONE"}
    titles = [e["title"] for e in served.effects()[before:]]
    assert titles == [f"{run_id}-{t}" for t in TASK_IDS]  # the write cut off mid-call happened once

    async with served.api("op") as api:
        report = (await api.get(f"/api/runs/{run_id}/report")).json()
    recovery = report["recovery"]
    assert recovery["by_cause"] == {"takeover": 1, "restart": 0, "resume": 0}
    (episode,) = recovery["episodes"]
    assert (episode["cause"], episode["outcome"], episode["detail"]["worker"]) == ("takeover", "recovered", "agent-2")
    assert (episode["tool_calls"], episode["spend"]) == (1, "0.00")  # the read back; the write replayed
    assert 0 < episode["seconds"] < WAIT * 4
    assert (report["duplicates_prevented"], report["duplicate_effects"], report["usable"]) == (1, 0, True)
