"""Also drilled: a false completion claim — the agent says a task is done whose completion check
fails: `warrant_task` refuses `task_check_failed` naming the check, the task stays running, and the
next task does not start; the true claim completes it (docs/tasks.md)."""

from __future__ import annotations

import json
from typing import Any

from gateway.drill.case import Findings, Mode, case
from gateway.drill.cases.completion import artifact
from gateway.drill.world import Agent, World

TASKS = [
    {
        "id": "research",
        "title": "Find three leads",
        "completion": [{"artifact": "leads", "schema": {"type": "array", "minItems": 3}}],
        "max_attempts": 3,
    },
    {"id": "outreach", "title": "Write to them", "depends_on": ["research"]},
]


async def plan_of(agent: Agent) -> dict[str, dict[str, Any]]:
    """The run's tasks by id, as `warrant_status`'s recovery package gives them."""
    reply = await agent.call("warrant_status", {})
    plan = ((reply.structured or {}).get("recovery") or {}).get("plan") or {}
    return {t["task_id"]: t for t in plan.get("tasks") or []}


@case(
    "false-task-claim",
    "Also drilled: a false completion claim (a task claimed done whose check fails)",
    "warrant_task completed with an artifact that fails the task's check is refused task_check_failed naming "
    "completion[0], the task stays running and the next one pending, no task_completed entry; across a SIGKILL "
    "too; the same claim on the true artifact completes it and readies the next task",
    depends_on=("checks",),
)
async def false_task_claim(world: World, mode: Mode, f: Findings) -> None:
    await world.start_gateway()
    run_id, agent = await world.start_run()
    planned = await agent.call("warrant_plan", {"expected_version": 0, "tasks": TASKS})
    f.equal(planned.code, None, "the plan")
    started = await agent.call("warrant_task", {"task_id": "research", "status": "running"})
    f.equal(started.code, None, "starting the task")

    # The claim: two leads where the check wants three.
    thin = artifact(world, "leads", f"leads-{mode}.json", json.dumps(["a", "b"]).encode())
    claim = await agent.call("warrant_task", {"task_id": "research", "status": "completed", "output_ref": thin})
    failed = claim.error.get("failed") or []
    f.saw(f"false claim: {claim.code}, failing {[c.get('index') for c in failed]}")
    f.equal(claim.code, "task_check_failed", "a completion claim whose check fails")
    f.equal([c.get("index") for c in failed], [0], "the checks the refusal names")
    f.expect("completion[0]" in claim.text, f"the refusal's text does not name the check: {claim.text[:200]!r}")

    if mode == "restart":
        await world.kill_gateway()
        await world.start_gateway()
        f.saw("SIGKILL after the false claim; restarted")
        again = await agent.call("warrant_task", {"task_id": "research", "status": "completed", "output_ref": thin})
        f.equal(again.code, "task_check_failed", "the same false claim after the restart")

    tasks = await plan_of(agent)
    research, outreach = tasks.get("research") or {}, tasks.get("outreach") or {}
    f.equal(research.get("status"), "running", "the falsely claimed task's status")
    f.equal([c.get("status") for c in research.get("checks") or []], ["failed"], "its last checks")
    f.equal(outreach.get("status"), "pending", "the task that depends on it")
    history = [e["type"] for e in await world.events(run_id)]
    f.expect("task_completed" not in history, "a task_completed entry was written for the false claim")
    f.expect("task_check_failed" in history, "no task_check_failed entry in the run's history")

    # The true artifact: the same claim completes the task, and the next one is ready.
    full = artifact(world, "leads", f"leads-{mode}.json", json.dumps(["a", "b", "c"]).encode())
    done = await agent.call("warrant_task", {"task_id": "research", "status": "completed", "output_ref": full})
    f.equal(done.code, None, "the claim on the true artifact")
    f.equal((done.structured or {}).get("readied"), ["outreach"], "the tasks the true claim readied")
    f.saw(f"true claim: {done.code or 'completed'}, readied {(done.structured or {}).get('readied')}")
