"""The run's plan and its tasks in the store (docs/tasks.md): plan versions, moves, readiness and
the counts of the tool calls made for each task.

Every write is fenced like a checkpoint: the token's epoch must be the run's, the lease unexpired
and the revised contract read; a refusal is recorded as a `rejected` action in the same
transaction. Each decision is the pure core's (gateway/domain/tasks.py), over rows read inside it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from gateway.canonical import canonical_json, sha256_hex
from gateway.domain.checks import CheckResult
from gateway.domain.completion import Setback, decide, task_failure_is_final
from gateway.domain.contract import plan_rules
from gateway.domain.tasks import (
    NEW_ATTEMPT,
    Plan,
    TaskSpec,
    TaskStatus,
    decide_move,
    plan_diff,
    plan_invalid,
    plan_problems_for_size,
    readiness,
    replan_problems,
    revision_refusal,
)
from gateway.errors import Code, Refusal
from gateway.store.records import Refused
from gateway.store.sql.connection import Conn, Row
from gateway.store.sql.ending import EndingOps
from gateway.store.sql.outbox import task_progress
from gateway.store.sql.rows import run_from_row
from gateway.store.task_records import PlanState, PlanVersion, TaskCounts, TaskMoved, TaskRecord

MAX_RECORDED_ERROR = 512  # an agent's `error` as a chained entry carries it

_COUNTS = (
    "SELECT task_id, COUNT(*), "
    "SUM(CASE WHEN effect = 'write' THEN 1 ELSE 0 END), "
    "SUM(CASE WHEN effect = 'write' AND status IN ('succeeded', 'compensated') THEN 1 ELSE 0 END), "
    "SUM(CASE WHEN status = 'unknown' THEN 1 ELSE 0 END), "
    "COALESCE(SUM(actual_spend), 0) "
    "FROM actions WHERE run_id = ? AND task_id IS NOT NULL AND status != 'rejected' GROUP BY task_id"
)


def task_from_row(row: Row) -> TaskRecord:
    spec = TaskSpec(
        task_id=row["task_id"],
        title=row["title"],
        depends_on=tuple(json.loads(row["depends_on"])),
        completion=tuple(json.loads(row["completion"])),
        max_attempts=row["max_attempts"],
        blocked_expectation=row["blocked_expectation"],
    )
    return TaskRecord(
        spec=spec,
        status=TaskStatus(row["status"]),
        attempts=row["attempts"],
        position=row["position"],
        output_ref=json.loads(row["output_ref"]) if row["output_ref"] else None,
        error=row["error"],
        checks=json.loads(row["checks"]) if row["checks"] else None,
        plan_version=row["plan_version"],
        updated_at=row["updated_at"],
        started_at=row["started_at"],
        finished_at=row["finished_at"],
    )


def read_tasks(conn: Conn, run_id: str) -> list[TaskRecord]:
    rows = conn.execute("SELECT * FROM tasks WHERE run_id = ? ORDER BY position", (run_id,)).fetchall()
    return [task_from_row(r) for r in rows]


def plan_state(conn: Conn, run_id: str) -> PlanState:
    """The run's plan in the caller's read (the run exists: the caller read its row)."""
    run = conn.execute("SELECT plan_version, currency FROM runs WHERE run_id = ?", (run_id,)).fetchone()
    version = run["plan_version"]
    if not version:
        return PlanState(run_id, run["currency"], 0)
    counts = {
        r[0]: TaskCounts(int(r[1]), int(r[2]), int(r[3]), int(r[4]), int(r[5]))
        for r in conn.execute(_COUNTS, (run_id,)).fetchall()
    }
    row = conn.execute("SELECT * FROM plans WHERE run_id = ? AND version = ?", (run_id, version)).fetchone()
    latest = PlanVersion(
        row["version"], row["body_sha256"], json.loads(row["diff"]), row["epoch"], row["worker"], row["created_at"]
    )
    return PlanState(run_id, run["currency"], version, read_tasks(conn, run_id), counts, latest)


class TaskOps(EndingOps):
    # -- plan versions -------------------------------------------------------------------------
    async def save_plan(
        self, run_id: str, *, epoch: int, worker: str, expected_version: int, plan: Plan
    ) -> PlanState | Refused:
        def tx(conn: Conn) -> PlanState | Refused:
            now = self._clock.now()
            body = plan.to_wire()
            encoded = canonical_json(body)
            digest = sha256_hex(encoded)
            run, refusal = self._fence(conn, run_id, now, epoch, paused_ok=True)
            row = conn.execute("SELECT plan_version, contract FROM runs WHERE run_id = ?", (run_id,)).fetchone()
            current: int = row["plan_version"]
            rules = plan_rules(json.loads(row["contract"]))  # the contract as this transaction reads it
            states = read_tasks(conn, run_id)
            diff = plan_diff(Plan(tuple(s.spec for s in states)) if current else None, plan)
            if refusal is None and expected_version != current:
                refusal = Refusal(
                    Code.PLAN_CONFLICT,
                    f"not planned: the run's plan is version {current}, not {expected_version}; read it with "
                    "warrant_status and plan again",
                    current_version=current,
                    expected_version=expected_version,
                )
            if refusal is None:
                problems = plan_problems_for_size(plan, rules) + replan_problems(states, plan)
                refusal = plan_invalid(problems) if problems else None
            if refusal is None:
                refusal = revision_refusal(current, rules, diff, limits=run.limits, remaining=run.remaining(now))
            if refusal is not None:
                action_id = self._reject(
                    conn, run, now, tool="warrant_plan", payload_sha256=digest, refusal=refusal, epoch=epoch,
                    worker=worker,
                )  # fmt: skip
                return Refused(refusal, action_id)
            version = current + 1
            conn.execute(
                "INSERT INTO plans (run_id, version, body, body_sha256, diff, epoch, worker, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (run_id, version, encoded.decode(), digest, json.dumps(diff), epoch, worker, now),
            )
            for task_id in diff["removed"]:
                conn.execute("DELETE FROM tasks WHERE run_id = ? AND task_id = ?", (run_id, task_id))
            known = {s.task_id for s in states}
            for position, spec in enumerate(plan.tasks):
                definition = (
                    spec.title, json.dumps(list(spec.depends_on)), json.dumps(list(spec.completion)),
                    spec.max_attempts, spec.blocked_expectation, position, version,
                )  # fmt: skip
                if spec.task_id in known:
                    # updated_at is the task's status clock (how long it has been blocked, say): a new
                    # definition of a task leaves its status, so it leaves the clock too.
                    conn.execute(
                        "UPDATE tasks SET title = ?, depends_on = ?, completion = ?, max_attempts = ?, "
                        "blocked_expectation = ?, position = ?, plan_version = ? "
                        "WHERE run_id = ? AND task_id = ?",
                        (*definition, run_id, spec.task_id),
                    )
                else:
                    conn.execute(
                        "INSERT INTO tasks (title, depends_on, completion, max_attempts, blocked_expectation, "
                        "position, plan_version, updated_at, run_id, task_id, status) "
                        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'pending')",
                        (*definition, now, run_id, spec.task_id),
                    )
            conn.execute("UPDATE runs SET plan_version = ?, updated_at = ? WHERE run_id = ?", (version, now, run_id))
            self._event(
                conn, run_id, "plan_created" if current == 0 else "replanned", now, version=version,
                previous=current, body_sha256=digest, tasks=len(plan.tasks), diff=diff, epoch=epoch, worker=worker,
                progress=task_progress(conn, run_id),
            )  # fmt: skip
            self._settle_readiness(conn, run_id, now)
            return plan_state(conn, run_id)

        return await self._refusing(tx, durable=True)

    async def read_plan(self, tenant: str, run_id: str) -> PlanState:
        def read(conn: Conn) -> PlanState:
            self._run_row(conn, run_id, tenant)  # NotFound, also for another tenant's run
            return plan_state(conn, run_id)

        return await self._db.read(read)

    # -- moves ---------------------------------------------------------------------------------
    async def move_task(
        self,
        run_id: str,
        *,
        epoch: int,
        worker: str,
        task_id: str,
        status: TaskStatus,
        output_ref: dict[str, Any] | None = None,
        error: str | None = None,
        checks: Sequence[CheckResult] | None = None,
    ) -> TaskMoved | Refused:
        def tx(conn: Conn) -> TaskMoved | Refused:
            now = self._clock.now()
            asked = {"task_id": task_id, "status": status.value, "output_ref": output_ref, "error": error}
            digest = sha256_hex(canonical_json(asked))
            run, refusal = self._fence(conn, run_id, now, epoch, paused_ok=status is not TaskStatus.RUNNING)
            states = read_tasks(conn, run_id)
            task = next((s for s in states if s.task_id == task_id), None)
            if refusal is None and task is None:
                where = "the current plan has no such task" if states else "the run has no plan yet"
                refusal = Refusal(
                    Code.UNKNOWN_TASK, f"not moved: {where} ({task_id}); warrant_status shows it", task_id=task_id
                )
            moved: TaskMoved | None = None
            setback: Setback | None = None  # what the contract's rules decide on (gateway/domain/completion.py)
            if refusal is None and task is not None:
                move = decide_move(task, status, checks=checks)
                refusal = move.refusal
                if move.moved:
                    by = worker if refusal is None else "gateway"  # out of attempts: the gateway fails it
                    moved = self._write_move(
                        conn, run_id, task, move.status, move.attempts, now, epoch=epoch, worker=worker,
                        output_ref=output_ref, error=error, checks=move.checks, by=by,
                    )  # fmt: skip
                    if task_failure_is_final(move.status.value, move.attempts, task.spec.max_attempts):
                        setback = Setback.TASK_FAILED
                elif refusal is not None and refusal.code == Code.TASK_CHECK_FAILED:
                    self._write_checks(conn, run_id, task, move.checks, refusal, now, epoch=epoch, worker=worker)
                    if any(r.status == "failed" for r in move.checks):  # unread (unverified) is no failure
                        setback = Setback.VERIFICATION_FAILED
                elif refusal is None:
                    moved = TaskMoved(task, task.status)
            if setback is not None:
                verdict = decide(run_from_row(self._run_row(conn, run_id)).contract, setback)
                after = self._apply_verdict(conn, run_id, verdict, now, task_id=task_id)
                if refusal is not None and after is not run.status:  # the agent hears that the run ended or paused
                    refusal = Refusal(
                        Code(refusal.code), f"{refusal.message}; the run is now {after.value}: {verdict.reason}",
                        **{**refusal.details, "run_status": after.value},
                    )  # fmt: skip
            if refusal is not None:
                action_id = self._reject(
                    conn, run, now, tool="warrant_task", payload_sha256=digest, refusal=refusal, epoch=epoch,
                    worker=worker,
                )  # fmt: skip
                return Refused(refusal, action_id)
            assert moved is not None
            return moved

        return await self._refusing(tx, durable=True)

    def _write_move(
        self,
        conn: Conn,
        run_id: str,
        task: TaskRecord,
        status: TaskStatus,
        attempts: int,
        now: float,
        *,
        epoch: int,
        worker: str,
        output_ref: dict[str, Any] | None,
        error: str | None,
        checks: Sequence[CheckResult],
        by: str,
    ) -> TaskMoved:
        begins = (task.status, status) in NEW_ATTEMPT
        results = [_result_wire(r) for r in checks] if checks else None
        conn.execute(
            "UPDATE tasks SET status = ?, attempts = ?, output_ref = COALESCE(?, output_ref), error = ?, "
            "checks = COALESCE(?, checks), updated_at = ?, started_at = COALESCE(started_at, ?), finished_at = ? "
            "WHERE run_id = ? AND task_id = ?",
            (
                status.value,
                attempts,
                None if output_ref is None else json.dumps(output_ref),
                error,
                None if results is None else json.dumps(results),
                now,
                now if begins else None,
                now if status.done else None,
                run_id,
                task.task_id,
            ),
        )
        if status is TaskStatus.COMPLETED:  # a verified step is the run's progress (the watchdog's stall clock)
            conn.execute("UPDATE runs SET progress_at = ? WHERE run_id = ?", (now, run_id))
        extra: dict[str, Any] = {}
        if output_ref is not None:
            extra["output_ref"] = output_ref
        if error is not None:
            extra["error"] = error[:MAX_RECORDED_ERROR]
        if by == "gateway":
            extra["reason"] = f"all {task.spec.max_attempts} attempts used"
        self._event(
            conn, run_id, move_event(task.status, status), now, task_id=task.task_id, previous=task.status.value,
            status=status.value, attempts=attempts, max_attempts=task.spec.max_attempts, epoch=epoch, worker=worker,
            by=by, progress=task_progress(conn, run_id), **extra,
        )  # fmt: skip
        readied, unreadied = self._settle_readiness(conn, run_id, now)
        after = next(t for t in read_tasks(conn, run_id) if t.task_id == task.task_id)
        return TaskMoved(after, task.status, readied, unreadied)

    def _write_checks(
        self,
        conn: Conn,
        run_id: str,
        task: TaskRecord,
        checks: Sequence[CheckResult],
        refusal: Refusal,
        now: float,
        *,
        epoch: int,
        worker: str,
    ) -> None:
        """A completion claim whose checks failed: the task stays as it is, their results are kept."""
        conn.execute(
            "UPDATE tasks SET checks = ?, updated_at = ? WHERE run_id = ? AND task_id = ?",
            (json.dumps([_result_wire(r) for r in checks]), now, run_id, task.task_id),
        )
        self._event(
            conn, run_id, "task_check_failed", now, task_id=task.task_id, status=task.status.value,
            failed=refusal.details.get("failed", []), epoch=epoch, worker=worker,
        )  # fmt: skip

    def _settle_readiness(self, conn: Conn, run_id: str, now: float) -> tuple[list[str], list[str]]:
        """The gateway's own moves after a plan or a move: ready exactly when every dependency is completed."""
        readied: list[str] = []
        unreadied: list[str] = []
        progress: dict[str, int] | None = None  # readiness moves change neither count
        for task_id, status in readiness(read_tasks(conn, run_id)):
            previous = TaskStatus.PENDING if status is TaskStatus.READY else TaskStatus.READY
            conn.execute(
                "UPDATE tasks SET status = ?, updated_at = ? WHERE run_id = ? AND task_id = ? AND status = ?",
                (status.value, now, run_id, task_id, previous.value),
            )
            progress = progress or task_progress(conn, run_id)
            self._event(
                conn, run_id, move_event(previous, status), now, task_id=task_id, previous=previous.value,
                status=status.value, by="gateway", progress=progress,
            )  # fmt: skip
            (readied if status is TaskStatus.READY else unreadied).append(task_id)
        return readied, unreadied


# A successor's copy of its predecessor's plan: an attempt under way ended with the predecessor
# (its worker, its approvals), so the task is ready again and the successor's worker starts a new
# attempt; attempts carry over, so `max_attempts` holds across the lineage.
RESTARTED = (TaskStatus.RUNNING, TaskStatus.BLOCKED, TaskStatus.WAITING_FOR_APPROVAL, TaskStatus.RETRYING)
_RESTARTED_SQL = ", ".join(f"'{s.value}'" for s in RESTARTED)


def inherit_plan(conn: Conn, predecessor: str, successor: str, now: float) -> dict[str, Any] | None:
    """Copy the predecessor's current plan version and its tasks to the successor (in the
    successor's transaction); what its `plan_inherited` entry says, or None without a plan."""
    row = conn.execute(
        "SELECT version FROM plans WHERE run_id = ? ORDER BY version DESC LIMIT 1", (predecessor,)
    ).fetchone()
    if row is None:
        return None
    version: int = row["version"]
    restarted = [
        r["task_id"]
        for r in conn.execute(
            f"SELECT task_id FROM tasks WHERE run_id = ? AND status IN ({_RESTARTED_SQL}) ORDER BY position",
            (predecessor,),
        )
    ]
    conn.execute(
        "INSERT INTO plans (run_id, version, body, body_sha256, diff, epoch, worker, created_at) "
        "SELECT ?, version, body, body_sha256, diff, epoch, worker, created_at FROM plans "
        "WHERE run_id = ? AND version = ?",
        (successor, predecessor, version),
    )
    conn.execute(
        "INSERT INTO tasks (run_id, task_id, position, title, depends_on, completion, max_attempts, "
        "blocked_expectation, status, attempts, output_ref, error, checks, plan_version, updated_at, started_at, "
        "finished_at) "
        "SELECT ?, task_id, position, title, depends_on, completion, max_attempts, blocked_expectation, "
        f"CASE WHEN status IN ({_RESTARTED_SQL}) THEN 'ready' ELSE status END, attempts, output_ref, error, checks, "
        "plan_version, ?, started_at, finished_at FROM tasks WHERE run_id = ?",
        (successor, now, predecessor),
    )
    conn.execute("UPDATE runs SET plan_version = ? WHERE run_id = ?", (version, successor))
    tasks = conn.execute("SELECT COUNT(*) AS n FROM tasks WHERE run_id = ?", (successor,)).fetchone()["n"]
    return {
        "from_run_id": predecessor,
        "version": version,
        "tasks": tasks,
        "restarted": restarted,
        "progress": task_progress(conn, successor),
    }


def move_event(previous: TaskStatus, status: TaskStatus) -> str:
    """A move's entry type: `task_started` for an attempt begun, `task_resumed` for one going on,
    else `task_<status>` (docs/events.md)."""
    if status is TaskStatus.RUNNING:
        return "task_started" if (previous, status) in NEW_ATTEMPT else "task_resumed"
    return f"task_{status.value}"


def _result_wire(result: CheckResult) -> dict[str, Any]:
    return {"kind": result.kind, "status": result.status, "reason": result.reason, "detail": result.detail}
