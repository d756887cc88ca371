"""Where a run stands (gateway/domain/standing.py) as the agent, the operator API and the CLI read
it, end to end on a served gateway: the official MCP SDK client's `warrant_status`,
`GET /api/runs/{id}` and `warrant runs show` name the same current task and milestone, last
artifact, blocker and next decision at each step of a planned run."""

from __future__ import annotations

from typing import Any

import pytest

from tests.integration import test_progress as progress
from tests.integration.test_progress import World, call, worker
from tests.integration.test_tasks import TASKS, warrant

pytestmark = pytest.mark.anyio

world = progress.world


async def both(world: World, c: Any, run_id: str) -> dict[str, Any]:
    """The standing as warrant_status and the API give it; they agree."""
    err, status, text = await call(c, "warrant_status", {})
    assert not err, text
    async with world.client("op") as api:
        r = await api.get(f"/api/runs/{run_id}")
        assert r.status_code == 200, r.text
    assert r.json()["standing"] == status["standing"]
    found: dict[str, Any] = status["standing"]
    return found


async def test_each_step_of_a_planned_run_names_its_task_blocker_and_next_decision(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WARRANT_API_KEY", "key-op")
    run_id, token = await world.start()
    async with worker(world, token) as c:
        st = await both(world, c, run_id)
        assert st["next_decision"] == "continue" and st["task"] is None and st["blocker"] is None
        assert st["milestone"] == {"milestone_id": "inventory", "status": "pending"}
        assert st["last_artifact"] is None

        await call(c, "warrant_plan", {"expected_version": 0, "tasks": TASKS})
        st = await both(world, c, run_id)
        assert st["task"]["task_id"] == "inventory" and st["task"]["status"] == "ready"
        assert st["why"] == "go on with task inventory"

        await call(c, "warrant_task", {"task_id": "inventory", "status": "running"})
        err, _, text = await call(
            c, "warrant_task", {"task_id": "inventory", "status": "blocked", "error": "the vendor list\nis late"}
        )
        assert not err, text
        st = await both(world, c, run_id)
        assert st["next_decision"] == "wait_for_input" and st["rule"] == "task_blocked"
        assert st["blocker"] == {
            "kind": "task_blocked",
            "detail": "task inventory is blocked: the vendor list is late",
            "task_id": "inventory",
        }
        code, out = await warrant(world, "runs", "show", run_id)
        assert code == 0, out
        assert "wait_for_input: task inventory is blocked" in out and "task_blocked" in out

        # An operator's pause comes first; resumed, the blocked task is the blocker again.
        async with world.client("op") as api:
            assert (await api.post(f"/api/runs/{run_id}/pause", json={"reason": "budget review"})).status_code == 200
        st = await both(world, c, run_id)
        assert st["rule"] == "paused" and "budget review" in st["blocker"]["detail"]
        async with world.client("op") as api:
            assert (await api.post(f"/api/runs/{run_id}/resume", json={})).status_code == 200
        assert (await both(world, c, run_id))["rule"] == "task_blocked"

        await call(c, "warrant_task", {"task_id": "inventory", "status": "running"})
        inventory = world.artifact("inventory.json", b'["a", "b"]')
        err, _, text = await call(
            c, "warrant_task", {"task_id": "inventory", "status": "completed", "output_ref": inventory}
        )
        assert not err, text
        st = await both(world, c, run_id)
        assert st["next_decision"] == "continue" and st["task"]["task_id"] == "compare"
        assert st["last_artifact"]["artifact"] == inventory and st["last_artifact"]["task_id"] == "inventory"

        # Out of attempts, the task fails: the plan must change.
        await call(c, "warrant_task", {"task_id": "compare", "status": "running"})
        await call(c, "warrant_task", {"task_id": "compare", "status": "retrying", "error": "vendor b timed out"})
        await call(c, "warrant_task", {"task_id": "compare", "status": "running"})
        err, _, text = await call(
            c, "warrant_task", {"task_id": "compare", "status": "failed", "error": "vendor b is gone"}
        )
        assert not err, text
        st = await both(world, c, run_id)
        assert (st["next_decision"], st["rule"], st["blocker"]["task_id"]) == ("revise", "task_failed", "compare")

    async with world.client("op") as api:
        assert (await api.post(f"/api/runs/{run_id}/cancel", json={"reason": "vendor gone"})).status_code == 200
        st = (await api.get(f"/api/runs/{run_id}")).json()["standing"]
    assert (st["next_decision"], st["rule"]) == ("stop", "ended") and "vendor gone" in st["blocker"]["detail"]
