"""Every `tools/call` an agent makes, by name: the gateway's own `warrant_*` tools here, every
other tool through the gate (gateway/gate/pipeline.py).

Above the gate and the progress tools, so that neither needs the other: the gate decides one
call, the progress tools (gateway/tools/progress.py) use the gate to authenticate; this module
routes between them. The MCP front (gateway/mcp/server.py) turns the `CallResult` into MCP.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from gateway.errors import Code, Refusal
from gateway.gate.compensations import Compensations
from gateway.gate.pipeline import CallResult, Gate
from gateway.tools.progress import Progress
from gateway.tools.tasks import Planning
from gateway.tools.waits import Waiting


class ToolCalls:
    def __init__(
        self,
        gate: Gate,
        progress: Progress | None = None,
        planning: Planning | None = None,
        waiting: Waiting | None = None,
    ) -> None:
        """`progress`: the checkpoint, milestone and completion tools; `planning`: the plan and task
        tools (docs/tasks.md); `waiting`: warrant_wait and the signals (docs/decisions/0027-waits.md).
        None: not served here."""
        self.gate = gate
        self.progress = progress
        self.planning = planning
        self.waiting = waiting

    async def call(
        self, token: str | None, name: str, arguments: dict[str, Any], meta: Mapping[str, Any] | None = None
    ) -> CallResult:
        """One tools/call. Refusals and failures come back as error results, never as exceptions.

        Raises: Unauthenticated for a missing or unknown token (as `Gate.call`).
        """
        gate = self.gate
        if name.startswith("warrant_"):
            # A dead token gets its refusal and nothing of the run, from every gateway tool.
            dead = await gate.refuse_dead(token, name)
            if dead is not None:
                return dead
        if name == "warrant_status":
            status = await gate.status(token)
            if self.progress is not None:
                recovery = await self.progress.recovery_of(token)
                status["recovery"] = recovery
                # The four things a useful update names: current task and milestone, last artifact,
                # blocker, next decision.
                status["standing"] = await self.progress.standing_of(token)
                if recovery.get("plan") is not None:  # where the plan stands, at the top (its tasks: in recovery)
                    status["plan"] = {k: v for k, v in recovery["plan"].items() if k != "tasks"}
            if self.waiting is not None:  # the open wait, and the signals received (name, payload, at)
                status.update(await self.waiting.status_of(token))
            dead = await gate.refuse_dead(token, name)  # a takeover or cancel while it was being read
            if dead is not None:
                return dead
            return CallResult([{"type": "text", "text": json.dumps(status, ensure_ascii=False)}], status)
        if name == "warrant_propose":
            if not isinstance(arguments.get("tool"), str) or not isinstance(arguments.get("arguments"), dict):
                return CallResult.refused(Refusal(Code.INVALID_ARGUMENTS, "warrant_propose needs {tool, arguments}"))
            rationale = arguments.get("rationale")
            return await gate.propose(
                token,
                arguments["tool"],
                arguments["arguments"],
                arguments.get("evidence"),
                rationale if isinstance(rationale, str) else None,
            )
        if name == "warrant_repeat":
            action_id, reason = arguments.get("action_id"), arguments.get("reason")
            if not isinstance(action_id, str) or not isinstance(reason, str):
                return CallResult.refused(Refusal(Code.INVALID_ARGUMENTS, "warrant_repeat needs {action_id, reason}"))
            return await gate.repeat(token, action_id, reason)
        if name == "warrant_compensate":
            action_id, reason = arguments.get("action_id"), arguments.get("reason")
            if not isinstance(action_id, str) or not isinstance(reason, str):
                return CallResult.refused(
                    Refusal(Code.INVALID_ARGUMENTS, "warrant_compensate needs {action_id, reason}")
                )
            return await Compensations(gate).for_agent(token, action_id, reason)
        if name in ("warrant_checkpoint", "warrant_milestone", "warrant_complete"):
            if self.progress is None:
                return CallResult.refused(Refusal(Code.TOOL_NOT_FOUND, f"{name} is not served here", tool=name))
            if name == "warrant_checkpoint":
                return await self.progress.checkpoint(token, arguments)
            if name == "warrant_milestone":
                return await self.progress.milestone(token, arguments)
            return await self.progress.complete(token, arguments)
        if name in ("warrant_plan", "warrant_task"):
            if self.planning is None:
                return CallResult.refused(Refusal(Code.TOOL_NOT_FOUND, f"{name} is not served here", tool=name))
            if name == "warrant_plan":
                return await self.planning.plan(token, arguments)
            return await self.planning.task(token, arguments)
        if name == "warrant_wait":
            if self.waiting is None:
                return CallResult.refused(Refusal(Code.TOOL_NOT_FOUND, f"{name} is not served here", tool=name))
            return await self.waiting.wait(token, arguments)
        if name.startswith("warrant_"):
            return CallResult.refused(Refusal(Code.TOOL_NOT_FOUND, f"no gateway tool named {name!r}", tool=name))
        return await gate.call(token, name, arguments, meta)
