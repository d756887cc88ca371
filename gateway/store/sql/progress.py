"""Verified progress in the store: checkpoints, milestones, completion, acknowledgements,
re-checks and the recovery package's inputs (docs/progress.md).

Every write is fenced like a call: the token's epoch must be the run's, the lease unexpired and
the revised contract read; a refusal is recorded as a `rejected` action in the same transaction.
"""

from __future__ import annotations

import json
from typing import Any

from gateway.canonical import canonical_json, sha256_hex
from gateway.clock import isoformat
from gateway.domain.checks import CheckResult, milestone_status
from gateway.domain.completion import Outcome, Setback, decide
from gateway.domain.lifecycle import ActionStatus, RunEvent, RunStatus, status_refusal
from gateway.errors import Code, Conflict, Forbidden, Refusal
from gateway.ids import new_id
from gateway.store.progress_records import (
    CheckpointRecord,
    MilestoneRecord,
    MilestoneSubmission,
    Recheck,
    RecoveryInputs,
)
from gateway.store.records import ActionRecord, ApprovalRecord, ApprovalStatus, Principal, Refused, RunRecord
from gateway.store.sql.connection import Conn, Row
from gateway.store.sql.ending import EndingOps
from gateway.store.sql.rows import action_from_row, approval_from_row, put_blob, run_from_row
from gateway.store.sql.tasks import plan_state

REVIEW_TOOL_PREFIX = "milestone:"  # a review milestone's approval is for the "tool" milestone:<id>


def checkpoint_from_row(row: Row) -> CheckpointRecord:
    return CheckpointRecord(
        run_id=row["run_id"],
        version=row["version"],
        epoch=row["epoch"],
        worker=row["worker"],
        body=json.loads(row["body"]),
        body_sha256=row["body_sha256"],
        good=bool(row["good"]),
        bad_reason=row["bad_reason"],
        inherited_from=row["inherited_from"],
        created_at=row["created_at"],
    )


def milestone_from_row(row: Row) -> MilestoneRecord:
    return MilestoneRecord(
        run_id=row["run_id"],
        milestone_id=row["milestone_id"],
        status=row["status"],
        spec_version=row["spec_version"],
        checks=json.loads(row["checks"]),
        reasons=json.loads(row["reasons"]),
        depends=json.loads(row["depends"]),
        evidence_sha256=row["evidence_sha256"],
        review_approval_id=row["review_approval_id"],
        submitted_by=row["submitted_by"],
        epoch=row["epoch"],
        attempts=row["attempts"],
        inherited_from=row["inherited_from"],
        updated_at=row["updated_at"],
        verified_at=row["verified_at"],
    )


def required_milestones(run: RunRecord) -> list[str]:
    return [m["id"] for m in run.contract.get("milestones") or [] if m.get("required", True)]


class ProgressOps(EndingOps):
    # -- checkpoints -----------------------------------------------------------------------
    async def save_checkpoint(
        self, run_id: str, *, epoch: int, worker: str, expected_version: int, body: dict[str, Any]
    ) -> CheckpointRecord | Refused:
        """Compare-and-set: the new checkpoint is `expected_version + 1` when `expected_version` is
        the run's newest. Refused (and recorded) with `checkpoint_conflict` otherwise, or with the
        lease's or the run's refusal."""

        def tx(conn: Conn) -> CheckpointRecord | Refused:
            now = self._clock.now()
            encoded = canonical_json(body)
            digest = sha256_hex(encoded)
            run, refusal = self._fence(conn, run_id, now, epoch, paused_ok=True)
            current = conn.execute("SELECT checkpoint_version FROM runs WHERE run_id = ?", (run_id,)).fetchone()[0]
            if refusal is None and expected_version != current:
                refusal = Refusal(
                    Code.CHECKPOINT_CONFLICT,
                    f"the run's newest checkpoint is version {current}, not {expected_version}; "
                    "read it with warrant_status and checkpoint again",
                    current_version=current,
                    expected_version=expected_version,
                )
            if refusal is not None:
                action_id = self._reject(
                    conn, run, now, tool="warrant_checkpoint", payload_sha256=digest, refusal=refusal,
                    epoch=epoch, worker=worker,
                )  # fmt: skip
                return Refused(refusal, action_id)
            version = current + 1
            conn.execute(
                "INSERT INTO checkpoints (run_id, version, epoch, worker, body, body_sha256, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                (run_id, version, epoch, worker, encoded.decode(), digest, now),
            )
            put_blob(conn, body, now)
            conn.execute(
                "UPDATE runs SET checkpoint_version = ?, last_checkpoint_at = ?, updated_at = ? WHERE run_id = ?",
                (version, now, now, run_id),
            )
            self._event(
                conn, run_id, "checkpoint_saved", now, version=version, body_sha256=digest, epoch=epoch, worker=worker
            )
            row = conn.execute("SELECT * FROM checkpoints WHERE run_id = ? AND version = ?", (run_id, version))
            return checkpoint_from_row(row.fetchone())

        return await self._refusing(tx, durable=True)

    @staticmethod
    def _latest_checkpoint(conn: Conn, run_id: str) -> CheckpointRecord | None:
        row = conn.execute(
            "SELECT c.* FROM checkpoints c JOIN runs r ON r.run_id = c.run_id "
            "WHERE c.run_id = ? AND c.version = r.checkpoint_version",
            (run_id,),
        ).fetchone()
        return checkpoint_from_row(row) if row is not None else None

    async def latest_checkpoint(self, run_id: str) -> CheckpointRecord | None:
        return await self._db.read(lambda conn: self._latest_checkpoint(conn, run_id))

    async def list_milestones(self, run_id: str) -> list[MilestoneRecord]:
        def read(conn: Conn) -> list[MilestoneRecord]:
            rows = conn.execute("SELECT * FROM milestones WHERE run_id = ? ORDER BY milestone_id", (run_id,))
            return [milestone_from_row(r) for r in rows.fetchall()]

        return await self._db.read(read)

    # -- milestones ------------------------------------------------------------------------
    async def record_milestone(
        self, run_id: str, *, epoch: int, worker: str, granted_by: str, submission: MilestoneSubmission
    ) -> MilestoneRecord | Refused:
        """Record a checked submission, fenced again: a lease lost while the checks ran refuses it.
        A review check creates its approval (only the named reviewer decides it; the run does not
        wait for it). A verified milestone is the run's progress (`runs.progress_at`)."""

        def tx(conn: Conn) -> MilestoneRecord | Refused:
            now = self._clock.now()
            evidence_sha = put_blob(conn, submission.evidence, now)
            run, refusal = self._fence(conn, run_id, now, epoch, paused_ok=True)
            if refusal is not None:
                action_id = self._reject(
                    conn, run, now, tool="warrant_milestone", payload_sha256=evidence_sha, refusal=refusal,
                    epoch=epoch, worker=worker,
                )  # fmt: skip
                return Refused(refusal, action_id)
            mid = submission.milestone_id
            previous = conn.execute(
                "SELECT * FROM milestones WHERE run_id = ? AND milestone_id = ?", (run_id, mid)
            ).fetchone()
            if previous is not None and previous["review_approval_id"]:
                # A new submission replaces the one under review: its approval no longer applies.
                self._supersede_review(conn, run_id, previous["review_approval_id"], now)
            review_id = None
            review = submission.review
            if review is not None and submission.status == "pending_review":
                review_id = new_id("apr")
                put_blob(conn, review.payload, now)
                conn.execute(
                    "INSERT INTO approvals (approval_id, run_id, tenant, tool, payload_sha256, spec_version, "
                    "tool_def_sha256, status, role, on_expiry, valid_for, requested_by, evidence, rationale, "
                    "created_at, decide_by, reviewer, milestone_id) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, 'pending', 'approver', 'resume', 0, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        review_id,
                        run_id,
                        run.tenant,
                        REVIEW_TOOL_PREFIX + mid,
                        review.payload_sha256,
                        run.spec_version,
                        review.definition_sha256,
                        granted_by,
                        json.dumps(submission.evidence),
                        f"review of milestone {mid}",
                        now,
                        run.deadline,
                        review.reviewer,
                        mid,
                    ),
                )
                self._event(
                    conn, run_id, "approval_requested", now, approval_id=review_id, tool=REVIEW_TOOL_PREFIX + mid,
                    payload_sha256=review.payload_sha256, spec_version=run.spec_version, reviewer=review.reviewer,
                    requested_by=granted_by, decide_by=isoformat(run.deadline),
                )  # fmt: skip
            verified = submission.status == "verified"
            conn.execute(
                "INSERT INTO milestones (run_id, milestone_id, status, spec_version, checks, reasons, depends, "
                "evidence_sha256, review_approval_id, submitted_by, epoch, attempts, updated_at, verified_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1, ?, ?) "
                "ON CONFLICT (run_id, milestone_id) DO UPDATE SET status = excluded.status, "
                "spec_version = excluded.spec_version, checks = excluded.checks, reasons = excluded.reasons, "
                "depends = excluded.depends, evidence_sha256 = excluded.evidence_sha256, "
                "review_approval_id = excluded.review_approval_id, submitted_by = excluded.submitted_by, "
                "epoch = excluded.epoch, attempts = milestones.attempts + 1, inherited_from = NULL, "
                "updated_at = excluded.updated_at, verified_at = excluded.verified_at",
                (
                    run_id,
                    mid,
                    submission.status,
                    run.spec_version,
                    json.dumps(submission.checks),
                    json.dumps(submission.reasons),
                    json.dumps(submission.depends),
                    evidence_sha,
                    review_id,
                    worker,
                    epoch,
                    now,
                    now if verified else None,
                ),
            )
            if verified:
                conn.execute("UPDATE runs SET progress_at = ? WHERE run_id = ?", (now, run_id))
            self._event(
                conn, run_id, f"milestone_{submission.status}", now, milestone_id=mid, evidence_sha256=evidence_sha,
                reasons=submission.reasons, review_approval_id=review_id, epoch=epoch, worker=worker,
            )  # fmt: skip
            if submission.status == "failed":  # the contract's rule decides what a failed verification does
                contract = run_from_row(self._run_row(conn, run_id)).contract
                verdict = decide(contract, Setback.VERIFICATION_FAILED)
                self._apply_verdict(conn, run_id, verdict, now, milestone_id=mid)
            row = conn.execute("SELECT * FROM milestones WHERE run_id = ? AND milestone_id = ?", (run_id, mid))
            return milestone_from_row(row.fetchone())

        return await self._refusing(tx, durable=True)

    def _supersede_review(self, conn: Conn, run_id: str, approval_id: str, now: float) -> None:
        changed = conn.execute(
            "UPDATE approvals SET status = 'superseded', decided_at = ?, note = ? "
            "WHERE approval_id = ? AND status = 'pending'",
            (now, "the milestone was submitted again", approval_id),
        ).rowcount
        if changed:
            self._event(
                conn, run_id, "approval_superseded", now, approval_id=approval_id,
                reason="the milestone was submitted again",
            )  # fmt: skip

    # -- completion ------------------------------------------------------------------------
    async def complete_run(self, run_id: str, *, epoch: int, worker: str, summary: str) -> RunRecord | Refused:
        """The gateway decides: every required milestone verified, every unknown action reconciled or
        acknowledged, no live child. Otherwise `completion_refused` naming what is missing."""

        def tx(conn: Conn) -> RunRecord | Refused:
            now = self._clock.now()
            digest = sha256_hex(canonical_json({"summary": summary}))
            snapshot, refusal = self._fence(conn, run_id, now, epoch, paused_ok=False)
            if refusal is None and snapshot.status is not RunStatus.RUNNING:
                refusal = status_refusal(snapshot.status)
            run = run_from_row(self._run_row(conn, run_id))
            missing: dict[str, Any] = {}
            verdict, refusals = None, 0
            if refusal is None:
                missing = self._missing_for_completion(conn, run)
                if missing:
                    parts = []
                    if missing["milestones"]:
                        parts.append(
                            "milestones not verified: "
                            + ", ".join(f"{m['milestone_id']} ({m['status']})" for m in missing["milestones"])
                        )
                    if missing["unknown_actions"]:
                        parts.append("unknown actions not reconciled: " + ", ".join(missing["unknown_actions"]))
                    if missing["live_children"]:
                        parts.append("child runs still live: " + ", ".join(missing["live_children"]))
                    # Every claim the gateway refuses counts (completion.max_completion_attempts).
                    (refusals,) = conn.execute(
                        "UPDATE runs SET completion_refusals = completion_refusals + 1 WHERE run_id = ? "
                        "RETURNING completion_refusals",
                        (run_id,),
                    ).fetchone()
                    verdict = decide(run.contract, Setback.COMPLETION_REFUSED, refusals=refusals)
                    if verdict.outcome is Outcome.FAIL:
                        parts.append(f"the run failed: {verdict.reason}")
                    refusal = Refusal(
                        Code.COMPLETION_REFUSED, "the run cannot complete; " + "; ".join(parts), **missing,
                        completion_refusals=refusals, status=RunStatus.FAILED.value
                        if verdict.outcome is Outcome.FAIL else snapshot.status.value,
                    )  # fmt: skip
            if refusal is not None:
                action_id = self._reject(
                    conn, snapshot, now, tool="warrant_complete", payload_sha256=digest, refusal=refusal,
                    epoch=epoch, worker=worker,
                )  # fmt: skip
                if verdict is not None:
                    self._apply_verdict(conn, run_id, verdict, now, action_id=action_id, refusals=refusals)
                return Refused(refusal, action_id)
            verified = [
                r["milestone_id"]
                for r in conn.execute(
                    "SELECT milestone_id FROM milestones WHERE run_id = ? AND status = 'verified' "
                    "ORDER BY milestone_id",
                    (run_id,),
                )
            ]
            uncertain = [
                {"action_id": r["action_id"], "tool": r["tool"], "acknowledged": json.loads(r["acknowledged"])}
                for r in conn.execute(
                    "SELECT action_id, tool, acknowledged FROM actions WHERE run_id = ? AND status = 'unknown' "
                    "ORDER BY seq",
                    (run_id,),
                )
            ]
            completion = {"summary": summary, "milestones": verified, "uncertain": uncertain, "by": worker}
            self._close_approvals(conn, run_id, now, ApprovalStatus.SUPERSEDED, "the run completed")
            conn.execute("UPDATE runs SET completion = ? WHERE run_id = ?", (json.dumps(completion), run_id))
            self._set_status(
                conn, run_from_row(self._run_row(conn, run_id)), RunEvent.COMPLETE, now, by=worker,
                reason="every required milestone is verified", summary=summary, milestones=verified,
                uncertain=[u["action_id"] for u in uncertain], epoch=epoch,
            )  # fmt: skip
            return run_from_row(self._run_row(conn, run_id))

        return await self._refusing(tx, durable=True)

    def _missing_for_completion(self, conn: Conn, run: RunRecord) -> dict[str, Any]:
        states = {
            r["milestone_id"]: (r["status"], json.loads(r["reasons"]))
            for r in conn.execute(
                "SELECT milestone_id, status, reasons FROM milestones WHERE run_id = ?", (run.run_id,)
            )
        }
        milestones = []
        for mid in required_milestones(run):
            status, reasons = states.get(mid, ("pending", ["not submitted"]))
            if status != "verified":
                milestones.append({"milestone_id": mid, "status": status, "reasons": reasons})
        unknown = [
            r["action_id"]
            for r in conn.execute(
                "SELECT action_id FROM actions WHERE run_id = ? AND status = 'unknown' AND acknowledged IS NULL "
                "ORDER BY seq",
                (run.run_id,),
            )
        ]
        children = [
            r["run_id"]
            for r in conn.execute(
                "SELECT run_id FROM runs WHERE parent_run_id = ? AND status IN ('running', 'waiting', 'paused') "
                "ORDER BY seq",
                (run.run_id,),
            )
        ]
        if not (milestones or unknown or children):
            return {}
        return {"milestones": milestones, "unknown_actions": unknown, "live_children": children}

    # -- acknowledgements ------------------------------------------------------------------
    async def acknowledge_action(
        self, principal: Principal, action_id: str, note: str
    ) -> tuple[ActionRecord, dict[str, Any]]:
        """An operator accepts an `unknown` action as uncertain: completion may go on, and the
        completed run names it. The action stays `unknown` (a later lookup may still settle it).

        Raises: NotFound (another tenant's too); Conflict `invalid_transition` when not unknown.
        """

        def tx(conn: Conn) -> tuple[ActionRecord, dict[str, Any]]:
            now = self._clock.now()
            action = self._action(conn, action_id, principal.tenant)
            if action.status is not ActionStatus.UNKNOWN:
                raise Conflict(
                    f"action {action_id} is {action.status.value}; only an unknown action is acknowledged",
                    code=Code.INVALID_TRANSITION,
                    status=action.status.value,
                )
            ack = {"by": principal.name, "at": isoformat(now), "note": note}
            conn.execute("UPDATE actions SET acknowledged = ? WHERE action_id = ?", (json.dumps(ack), action_id))
            self._event(
                conn, action.run_id, "action_acknowledged", now, action_id=action_id, by=principal.name, note=note
            )
            return action, ack

        return await self._db.transaction(tx, durable=True)

    # -- re-checks -------------------------------------------------------------------------
    async def apply_recheck(self, run_id: str, recheck: Recheck, *, by: str) -> None:
        """Record what a re-read found: milestones invalidated, the checkpoint no longer good."""
        if not recheck.invalidated and recheck.checkpoint_bad is None:
            return

        def tx(conn: Conn) -> None:
            now = self._clock.now()
            for item in recheck.invalidated:
                changed = conn.execute(
                    "UPDATE milestones SET status = 'invalidated', reasons = ?, updated_at = ?, verified_at = NULL "
                    "WHERE run_id = ? AND milestone_id = ? AND status IN ('verified', 'pending_review')",
                    (json.dumps([item.reason]), now, run_id, item.milestone_id),
                ).rowcount
                if changed:
                    row = conn.execute(
                        "SELECT review_approval_id FROM milestones WHERE run_id = ? AND milestone_id = ?",
                        (run_id, item.milestone_id),
                    ).fetchone()
                    if row["review_approval_id"]:
                        self._supersede_review(conn, run_id, row["review_approval_id"], now)
                    self._event(
                        conn, run_id, "milestone_invalidated", now, milestone_id=item.milestone_id,
                        reason=item.reason, by=by,
                    )  # fmt: skip
            if recheck.checkpoint_bad is not None and recheck.checkpoint_version is not None:
                changed = conn.execute(
                    "UPDATE checkpoints SET good = 0, bad_reason = ? WHERE run_id = ? AND version = ? AND good = 1",
                    (recheck.checkpoint_bad, run_id, recheck.checkpoint_version),
                ).rowcount
                if changed:
                    self._event(
                        conn, run_id, "checkpoint_invalidated", now, version=recheck.checkpoint_version,
                        reason=recheck.checkpoint_bad, by=by,
                    )  # fmt: skip

        await self._db.transaction(tx, durable=True)

    # -- the recovery package --------------------------------------------------------------
    async def recovery_inputs(self, tenant: str, run_id: str) -> RecoveryInputs:
        """Everything the recovery package reads, in one read. Raises: NotFound."""

        def read(conn: Conn) -> RecoveryInputs:
            run = run_from_row(self._run_row(conn, run_id, tenant))
            good = conn.execute(
                "SELECT MAX(version) FROM checkpoints WHERE run_id = ? AND good = 1", (run_id,)
            ).fetchone()[0]
            milestones = [
                milestone_from_row(r)
                for r in conn.execute("SELECT * FROM milestones WHERE run_id = ? ORDER BY milestone_id", (run_id,))
            ]
            confirmed = [
                action_from_row(r)
                for r in conn.execute(
                    "SELECT * FROM actions WHERE run_id = ? AND effect = 'write' AND status IN "
                    "('succeeded', 'compensated') ORDER BY seq",
                    (run_id,),
                )
            ]
            uncertain = [
                (action_from_row(r), json.loads(r["acknowledged"]) if r["acknowledged"] else None)
                for r in conn.execute(
                    "SELECT * FROM actions WHERE run_id = ? AND status = 'unknown' ORDER BY seq", (run_id,)
                )
            ]
            pending = [
                approval_from_row(r)
                for r in conn.execute(
                    "SELECT * FROM approvals WHERE run_id = ? AND status IN ('pending', 'approved') ORDER BY seq",
                    (run_id,),
                )
            ]
            children = [
                run_from_row(r)
                for r in conn.execute("SELECT * FROM runs WHERE parent_run_id = ? ORDER BY seq", (run_id,))
            ]
            return RecoveryInputs(
                run=run,
                checkpoint=self._latest_checkpoint(conn, run_id),
                last_good_version=good,
                milestones=milestones,
                confirmed=confirmed,
                uncertain=uncertain,
                pending_approvals=pending,
                children=children,
                plan=plan_state(conn, run_id),
            )

        return await self._db.read(read)


def check_reviewer(approval: ApprovalRecord, principal: Principal, reviewer: str | None) -> None:
    """A review milestone's approval is decided by its named reviewer only."""
    if reviewer is not None and principal.name != reviewer:
        raise Forbidden(f"only the named reviewer {reviewer} decides the review of {approval.tool}")


def review_decided(
    store: EndingOps, conn: Conn, approval: ApprovalRecord, *, approve: bool, by: str, note: str | None, now: float
) -> None:
    """The review's decision settles its milestone, in the decision's transaction."""
    row = conn.execute(
        "SELECT * FROM milestones WHERE run_id = ? AND review_approval_id = ?",
        (approval.run_id, approval.approval_id),
    ).fetchone()
    if row is None or row["status"] != "pending_review":
        return
    milestone = milestone_from_row(row)
    checks = []
    for check in milestone.checks:
        if check.get("kind") == "review" and check.get("status") == "pending_review":
            check = {
                **check,
                "status": "verified" if approve else "failed",
                "reason": None if approve else f"review denied by {by}" + (f": {note}" if note else ""),
                "detail": {**(check.get("detail") or {}), "decided_by": by, "approval_id": approval.approval_id},
            }
        checks.append(check)
    status, reasons = milestone_status(
        [CheckResult(c["kind"], c["status"], c.get("reason"), c.get("detail") or {}) for c in checks]
    )
    conn.execute(
        "UPDATE milestones SET status = ?, checks = ?, reasons = ?, updated_at = ?, verified_at = ? "
        "WHERE run_id = ? AND milestone_id = ?",
        (
            status,
            json.dumps(checks),
            json.dumps(reasons),
            now,
            now if status == "verified" else None,
            approval.run_id,
            milestone.milestone_id,
        ),
    )
    if status == "verified":
        conn.execute("UPDATE runs SET progress_at = ? WHERE run_id = ?", (now, approval.run_id))
    store._event(
        conn, approval.run_id, f"milestone_{status}", now, milestone_id=milestone.milestone_id,
        reasons=reasons, review_approval_id=approval.approval_id, by=by,
    )  # fmt: skip
    if status == "failed":  # a review denied is a failed verification too
        contract = run_from_row(store._run_row(conn, approval.run_id)).contract
        verdict = decide(contract, Setback.VERIFICATION_FAILED)
        store._apply_verdict(conn, approval.run_id, verdict, now, milestone_id=milestone.milestone_id)
