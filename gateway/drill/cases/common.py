"""Small steps the cases share."""

from __future__ import annotations

from typing import Any

from gateway.drill.world import World


async def actions_of(
    world: World, run_id: str, tool: str | None = None, status: str | None = None
) -> list[dict[str, Any]]:
    """The run's actions (oldest first), of this tool and in this status when given."""
    items = await world.actions(run_id)
    items = [a for a in items if (tool is None or a["tool"] == tool) and (status is None or a["status"] == status)]
    return sorted(items, key=lambda a: a["created_at"])


async def pause_and_resume(world: World, run_id: str) -> dict[str, Any]:
    """Pause the run (when it is running) and resume it: resume reconciles reality first.
    Returns what the resume answered (the run, with `reconciliation`)."""
    run = await world.run(run_id)
    if run["status"] == "running":
        await world.ok("POST", f"/api/runs/{run_id}/pause", json={"reason": "drill"})
    answer: dict[str, Any] = await world.ok("POST", f"/api/runs/{run_id}/resume", json={"reason": "drill"})
    return answer


def contacts(world: World, email: str) -> list[dict[str, Any]]:
    return world.crm.rows("contacts", "email = ?", (email,))


def messages(world: World, to: str) -> list[dict[str, Any]]:
    return world.mail.rows("messages", "to_address = ?", (to,))


async def settlements(
    world: World, run_id: str, action_id: str, history: list[dict[str, Any]] | None = None
) -> list[dict[str, Any]]:
    """The `action_settled` entries of one action in the run's history (`history` when the caller
    has read it already), oldest first: how it was recorded when its answer came, and each
    reconciliation after."""
    events = history if history is not None else await world.events(run_id)
    return [e["data"] for e in events if e["type"] == "action_settled" and e["data"].get("action_id") == action_id]
