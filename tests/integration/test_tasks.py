"""The plan and its tasks end to end (docs/tasks.md): a served gateway (uvicorn on loopback), the
official MCP SDK client as the agent, the operator API and the CLI over HTTP, artifacts as real
files the gateway reads itself to decide a task's completion."""

from __future__ import annotations

import contextlib
import io
from typing import Any

import anyio
import httpx
import pytest

from gateway.cli import main
from tests.integration import test_progress as progress
from tests.integration.test_progress import World, call, worker

pytestmark = pytest.mark.anyio

world = progress.world  # the served gateway of test_progress.py: shop__charge, artifact roots, keys

TASKS: list[dict[str, Any]] = [
    {"id": "inventory", "title": "List the vendors", "completion": [{"artifact": "inventory"}]},
    {
        "id": "compare",
        "title": "Compare their prices",
        "depends_on": ["inventory"],
        "completion": [{"artifact": "comparison", "schema": {"type": "array", "minItems": 2}}],
        "max_attempts": 2,
    },
    {"id": "order", "title": "Order from the cheaper one", "depends_on": ["compare"]},
]


def task_of(body: dict[str, Any], task_id: str) -> dict[str, Any]:
    return next(t for t in body["tasks"] if t["task_id"] == task_id)


async def warrant(world: World, *argv: str) -> tuple[int, str]:
    """The CLI against the served gateway, on a thread (its client is synchronous)."""
    out = io.StringIO()

    def run() -> int:
        with contextlib.redirect_stdout(out):
            return main([*argv, "--url", world.url])

    code = await anyio.to_thread.run_sync(run)
    return code, out.getvalue()


async def test_an_agent_plans_runs_tagged_calls_and_completes_tasks_the_gateway_checks(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_id, token = await world.start(plan={"max_plan_revisions": 1, "required_before_writes": True})
    async with worker(world, token) as c:
        err, body, text = await call(c, "shop__charge", {"card": "visa"})
        assert err and body["error"]["code"] == "plan_required", text
        assert world.effects == []

        err, body, text = await call(c, "warrant_plan", {"expected_version": 0, "tasks": TASKS})
        assert not err, text
        plan = body["plan"]
        assert plan["version"] == 1 and plan["resume_at"] == "inventory"
        assert [(t["task_id"], t["status"]) for t in plan["tasks"]] == [
            ("inventory", "ready"),
            ("compare", "pending"),
            ("order", "pending"),
        ]
        stale = await call(c, "warrant_plan", {"expected_version": 0, "tasks": TASKS})
        assert stale[0] and stale[1]["error"]["code"] == "plan_conflict"

        # A call for a task that has not started is refused; once it runs, the call counts for it.
        tagged = await c.call_tool("shop__charge", {"card": "visa"}, meta={"warrant/task_id": "inventory"})
        assert tagged.is_error and tagged.structured_content["error"]["code"] == "task_not_running"  # type: ignore[index]
        err, body, text = await call(c, "warrant_task", {"task_id": "inventory", "status": "running"})
        assert not err and body["task"]["attempts"] == 1, text
        for card in ("visa", "amex"):
            paid = await c.call_tool("shop__charge", {"card": card}, meta={"warrant/task_id": "inventory"})
            assert not paid.is_error, paid
        inventory = world.artifact("inventory.json", b'["a", "b"]')
        err, body, text = await call(
            c, "warrant_task", {"task_id": "inventory", "status": "completed", "output_ref": inventory}
        )
        assert not err, text
        assert body["readied"] == ["compare"] and body["task"]["calls"]["tool_calls"] == 2

        # A false completion claim: the comparison has one vendor, its schema wants two.
        await call(c, "warrant_task", {"task_id": "compare", "status": "running"})
        thin = world.artifact("comparison.json", b'[{"vendor": "a"}]')
        err, body, text = await call(
            c, "warrant_task", {"task_id": "compare", "status": "completed", "output_ref": thin}
        )
        assert err and body["error"]["code"] == "task_check_failed", text
        assert text.startswith("[task_check_failed]") and "completion[0] artifact failed" in text
        assert body["error"]["failed"][0]["index"] == 0 and body["error"]["status"] == "running"

        err, status, _ = await call(c, "warrant_status", {})
        assert not err
        assert status["plan"]["current"]["task_id"] == "compare"
        assert status["plan"]["progress"] == {"done": 1, "total": 3}
        compare = task_of(status["recovery"]["plan"], "compare")
        assert compare["status"] == "running" and compare["checks"][0]["status"] == "failed"

        # The true one passes, and the next task is ready with its preconditions.
        full = world.artifact("comparison.json", b'[{"vendor": "a"}, {"vendor": "b"}]')
        err, body, text = await call(
            c, "warrant_task", {"task_id": "compare", "status": "completed", "output_ref": full}
        )
        assert not err, text
        err, status, _ = await call(c, "warrant_status", {})
        upcoming = status["plan"]["next"]
        assert upcoming["task_id"] == "order" and status["plan"]["current"] is None
        assert upcoming["preconditions"]["depends_on"] == [
            {"task_id": "compare", "status": "completed", "output_ref": full}
        ]

        # One revision is allowed, the second is refused.
        revised = [*TASKS, {"id": "notify", "title": "Tell the team", "depends_on": ["order"]}]
        err, body, text = await call(c, "warrant_plan", {"expected_version": 1, "tasks": revised})
        assert not err and body["plan"]["diff"] == {"added": ["notify"], "removed": [], "changed": []}, text
        err, body, text = await call(c, "warrant_plan", {"expected_version": 2, "tasks": TASKS})
        assert err and body["error"]["code"] == "plan_revision_limit", text

    async with world.client("op") as op:
        plan = (await op.get(f"/api/runs/{run_id}/plan")).json()
        actions = (await op.get(f"/api/runs/{run_id}/actions", params={"limit": 500})).json()["items"]
        events = [
            e["type"] for e in (await op.get(f"/api/runs/{run_id}/events", params={"limit": 1000})).json()["items"]
        ]
        other = await op.get("/api/runs/run_nope/plan")
    assert other.status_code == 404
    assert plan["version"] == 2 and plan["revisions"] == 1
    assert task_of(plan, "inventory")["calls"] == {
        "tool_calls": 2,
        "writes": 2,
        "effects": 2,
        "uncertain": 0,
        "spend": "0.40",
    }
    assert task_of(plan, "compare")["calls"]["tool_calls"] == 0
    assert [a["task_id"] for a in actions if a["tool"] == "shop__charge" and a["status"] == "succeeded"] == [
        "inventory",
        "inventory",
    ]
    for kind in ("plan_created", "task_started", "task_check_failed", "task_completed", "replanned"):
        assert kind in events, kind

    monkeypatch.setenv("WARRANT_API_KEY", "key-op")
    code, out = await warrant(world, "runs", "plan", run_id)
    assert code == 0
    assert "plan version 2 (1 revision): 2 of 4 tasks completed" in out
    assert "next: order (ready, attempt 0, 3 left) after compare (completed)" in out
    assert any(line.split()[:4] == ["inventory", "completed", "1/3", "2"] for line in out.splitlines()), out
    code, out = await warrant(world, "recovery", run_id)
    assert code == 0
    assert "plan: version 2, 2 of 4 tasks completed; resume at order" in out
    assert "  task compare: completed (attempt 1/2)" in out


async def test_a_superseded_workers_task_moves_are_refused_and_the_new_worker_resumes_at_the_task(
    world: World,
) -> None:
    run_id, token = await world.start()
    async with worker(world, token) as c:
        await call(c, "warrant_plan", {"expected_version": 0, "tasks": TASKS})
        await call(c, "warrant_task", {"task_id": "inventory", "status": "running"})
        async with world.client("op") as op:
            grant = await op.post(f"/api/runs/{run_id}/lease", json={"worker": "agent-2", "takeover": True})
            assert grant.status_code == 201, grant.text
        inventory = world.artifact("inventory.json", b'["a"]')
        err, body, text = await call(
            c, "warrant_task", {"task_id": "inventory", "status": "completed", "output_ref": inventory}
        )
        assert err and body["error"]["code"] == "lease_superseded", text
        err, body, _ = await call(c, "warrant_plan", {"expected_version": 1, "tasks": TASKS[:1]})
        assert err and body["error"]["code"] == "lease_superseded"
    async with worker(world, grant.json()["token"]) as c:
        err, status, _ = await call(c, "warrant_status", {})
        assert status["plan"]["resume_at"] == "inventory"
        assert status["recovery"]["plan"]["current"]["status"] == "running"
        err, body, text = await call(
            c, "warrant_task", {"task_id": "inventory", "status": "completed", "output_ref": inventory}
        )
        assert not err, text
    async with httpx.AsyncClient(base_url=world.url, headers={"Authorization": "Bearer key-op"}) as op:
        items = (await op.get(f"/api/runs/{run_id}/actions", params={"limit": 500})).json()["items"]
    refused = [(a["tool"], a["code"]) for a in items if a["status"] == "rejected"]
    assert refused == [("warrant_task", "lease_superseded"), ("warrant_plan", "lease_superseded")]


@pytest.mark.parametrize(
    ("tool", "arguments", "code"),
    [
        ("warrant_plan", {"tasks": TASKS}, "invalid_arguments"),
        ("warrant_plan", {"expected_version": True, "tasks": TASKS}, "invalid_arguments"),
        ("warrant_plan", {"expected_version": 0, "tasks": {"id": "a"}}, "plan_invalid"),
        ("warrant_plan", {"expected_version": 0, "tasks": [[[[[]]]]]}, "plan_invalid"),
        ("warrant_plan", {"expected_version": 0, "tasks": [{"id": "a", "title": "x" * 300_000}]}, "plan_invalid"),
        (
            "warrant_plan",
            {"expected_version": 0, "tasks": [{"id": f"t{i}", "title": "T"} for i in range(101)]},
            "plan_invalid",
        ),
        ("warrant_task", {"task_id": "inventory"}, "invalid_arguments"),
        ("warrant_task", {"task_id": ["inventory"], "status": "running"}, "invalid_arguments"),
        ("warrant_task", {"task_id": "compare", "status": "ready"}, "invalid_task_transition"),
        ("warrant_task", {"task_id": "inventory", "status": "done"}, "invalid_arguments"),
        ("warrant_task", {"task_id": "nope", "status": "running"}, "unknown_task"),
        ("warrant_task", {"task_id": "inventory", "status": "running", "error": "e" * 2001}, "invalid_arguments"),
        ("warrant_task", {"task_id": "inventory", "status": "running", "output_ref": {"id": "x"}}, "invalid_arguments"),
    ],
)
async def test_malformed_plans_and_moves_are_refused_with_their_code_and_change_nothing(
    world: World, tool: str, arguments: dict[str, Any], code: str
) -> None:
    run_id, token = await world.start()
    async with worker(world, token) as c:
        await call(c, "warrant_plan", {"expected_version": 0, "tasks": TASKS})
        err, body, text = await call(c, tool, arguments)
        assert err and body["error"]["code"] == code, text
        tagged = await c.call_tool("shop__charge", {"card": "visa"}, meta={"warrant/task_id": 7})
        assert tagged.is_error and tagged.structured_content["error"]["code"] == "invalid_arguments"  # type: ignore[index]
    async with world.client("op") as op:
        plan = (await op.get(f"/api/runs/{run_id}/plan")).json()
    assert plan["version"] == 1
    assert [t["status"] for t in plan["tasks"]] == ["ready", "pending", "pending"]
