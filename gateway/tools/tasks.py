"""The plan and its tasks as gateway tools: `warrant_plan` and `warrant_task` (docs/tasks.md).

The agent proposes, the gateway decides: a plan is checked whole before it is recorded, a move
is decided by the core's table (gateway/domain/tasks.py), and `completed` needs the task's
completion checks to pass, run by the gateway itself as for milestones (gateway/tools/evidence.py)
over the newest checkpoint's artifacts and the `output_ref` the move names. Every write is fenced
again in its transaction (store/sql/tasks.py): a superseded worker is refused there too.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gateway.canonical import canonical_json, sha256_hex
from gateway.domain.admission import lease_refusal
from gateway.domain.checks import ArtifactRef, CheckResult
from gateway.domain.tasks import MAX_ERROR, TaskStatus, parse_plan, valid_task_id
from gateway.errors import Code, Refusal
from gateway.gate.pipeline import CallResult
from gateway.store.records import Refused, TokenInfo
from gateway.tools.evidence import run_checks, taken_on_trust
from gateway.tools.plan_view import plan_view, task_view
from gateway.tools.progress import Progress


@dataclass
class Planning:
    """`warrant_plan` and `warrant_task`, over the progress tools' gate, reader and validators."""

    progress: Progress

    async def _dead(self, info: TokenInfo, tool: str, digest: str, *, starting: bool = False) -> CallResult | None:
        """Refuse (and record) a dead lease or run before anything is read or checked; a paused
        run still takes a plan or a move, but no start (the store fences again)."""
        refusal = lease_refusal(info.run.snapshot(), info.epoch, self.progress.clock.now())
        if refusal is None or (refusal.code == Code.RUN_PAUSED and not starting):
            return None
        store = self.progress.store
        action_id = await store.record_rejection(
            info.run.run_id, tool=tool, payload_sha256=digest, refusal=refusal, epoch=info.epoch, worker=info.worker
        )
        return CallResult.refused(refusal, action_id)

    # -- warrant_plan ------------------------------------------------------------------------
    async def plan(self, token: str | None, arguments: Mapping[str, Any]) -> CallResult:
        gate = self.progress.gate
        info = await gate.authenticate(token)
        expected = arguments.get("expected_version")
        if not isinstance(expected, int) or isinstance(expected, bool) or expected < 0:
            return _bad("warrant_plan needs expected_version: the plan version you last read (0 before the first)")
        tasks = arguments.get("tasks")
        try:
            digest = sha256_hex(canonical_json({"expected_version": expected, "tasks": tasks}))
        except ValueError:
            return _bad("the plan is not representable as canonical JSON")
        dead = await self._dead(info, "warrant_plan", digest)
        if dead is not None:
            return dead
        try:
            plan = parse_plan(tasks, max_tasks=gate.terms_of(info.run).plan.max_tasks)
        except Refusal as refusal:
            return CallResult.refused(refusal)
        saved = await self.progress.store.save_plan(
            info.run.run_id, epoch=info.epoch, worker=info.worker, expected_version=expected, plan=plan
        )
        if isinstance(saved, Refused):
            return CallResult.refused(saved.refusal, saved.action_id)
        view = plan_view(saved)
        ready = [t["task_id"] for t in view["tasks"] if t["status"] == TaskStatus.READY]
        text = (
            f"plan version {saved.version} recorded: {len(saved.tasks)} task(s), ready now: "
            f"{', '.join(ready) or 'none'}; move a task with warrant_task, and pass expected_version="
            f"{saved.version} to revise the plan"
        )
        return CallResult([{"type": "text", "text": text}], {"plan": view})

    # -- warrant_task ------------------------------------------------------------------------
    async def task(self, token: str | None, arguments: Mapping[str, Any]) -> CallResult:
        gate, store = self.progress.gate, self.progress.store
        info = await gate.authenticate(token)
        task_id, status = arguments.get("task_id"), arguments.get("status")
        if not valid_task_id(task_id) or status not in {s.value for s in TaskStatus}:
            return _bad("warrant_task needs {task_id, status}: status one of " + ", ".join(s.value for s in TaskStatus))
        assert isinstance(task_id, str) and isinstance(status, str)
        target = TaskStatus(status)
        error = arguments.get("error")
        if error is not None and (not isinstance(error, str) or len(error) > MAX_ERROR):
            return _bad(f"error is a string of at most {MAX_ERROR} characters")
        output: ArtifactRef | None = None
        if arguments.get("output_ref") is not None:
            try:
                output = ArtifactRef.from_wire(arguments["output_ref"])
            except ValueError as exc:
                return _bad(f"output_ref is an artifact {{id, uri, sha256, version?}}: {exc}")
        output_ref = output.to_wire() if output is not None else None
        asked = {"task_id": task_id, "status": target.value, "output_ref": output_ref, "error": error}
        dead = await self._dead(
            info, "warrant_task", sha256_hex(canonical_json(asked)), starting=target is TaskStatus.RUNNING
        )
        if dead is not None:
            return dead
        checks = None
        if target is TaskStatus.COMPLETED:
            checks = await self._completion_checks(info, task_id, output)
        moved = await store.move_task(
            info.run.run_id,
            epoch=info.epoch,
            worker=info.worker,
            task_id=task_id,
            status=target,
            output_ref=output_ref,
            error=error,
            checks=checks,
        )
        if isinstance(moved, Refused):
            return CallResult.refused(moved.refusal, moved.action_id)
        state = await store.read_plan(info.run.tenant, info.run.run_id)
        current = next((t for t in state.tasks if t.task_id == task_id), moved.task)
        if moved.moved:
            text = f"task {task_id}: {moved.previous} -> {moved.task.status}"
            if moved.task.status is TaskStatus.RUNNING:
                text += f" (attempt {moved.task.attempts} of {moved.task.spec.max_attempts})"
        else:
            text = f"task {task_id} is {moved.task.status} already; nothing changed"
        if moved.readied:
            text += f"; ready now: {', '.join(moved.readied)}"
        if (
            moved.task.status is TaskStatus.FAILED
        ):  # the contract may fail the run with it (plan.fail_run_on_task_failure)
            run = await store.get_run(info.run.tenant, info.run.run_id)
            if run.status.terminal:
                text += f"; the run is {run.status.value}: {run.status_reason}"
        body = {
            "task": task_view(current, state),
            "previous": moved.previous.value,
            "moved": moved.moved,
            "readied": moved.readied,
            "unreadied": moved.unreadied,
        }
        return CallResult([{"type": "text", "text": text}], body)

    async def _completion_checks(
        self, info: TokenInfo, task_id: str, output: ArtifactRef | None
    ) -> list[CheckResult] | None:
        """The task's completion checks, run by the gateway, when it is running; None otherwise
        (the store refuses the move then, and nothing is read for it)."""
        store = self.progress.store
        state = await store.read_plan(info.run.tenant, info.run.run_id)
        task = next((t for t in state.tasks if t.task_id == task_id), None)
        if task is None or task.status is not TaskStatus.RUNNING:
            return None
        artifacts: dict[str, ArtifactRef] = {}
        checkpoint = await store.latest_checkpoint(info.run.run_id)
        if checkpoint is not None:
            for item in checkpoint.artifacts:
                ref = ArtifactRef.from_wire(item)
                artifacts[ref.id] = ref
        if output is not None:
            artifacts[output.id] = output
        evidence = {"task_id": task_id, "output_ref": output.to_wire() if output is not None else None}
        progress = self.progress
        if progress.gate.safeguards.sabotaged("checks"):  # the drill's negative control: the agent's word is taken
            return taken_on_trust(list(task.spec.completion))
        return await run_checks(list(task.spec.completion), artifacts, evidence, progress.fetcher, progress.validators)


def _bad(message: str) -> CallResult:
    return CallResult.refused(Refusal(Code.INVALID_ARGUMENTS, message))
