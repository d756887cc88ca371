"""The store's revisions, successors and delegated sub-runs (docs/progress.md).

Each is ONE transaction that reads what it decides on: a revision re-checks the spec_version it
was classified against and classifies again; a successor reads its terminal predecessor's
remaining budget; a child's carve is taken from its parent's remaining as read in the same
transaction. The carve's return when a child ends is in `SqlBase._set_status`.
"""

from __future__ import annotations

import json
from typing import Any

from gateway.canonical import canonical_json
from gateway.clock import isoformat
from gateway.domain import lifecycle
from gateway.domain.contract import Contract
from gateway.domain.lifecycle import RunStatus
from gateway.domain.revision import child_refusal, classify, invalidated_milestones, narrow_child, require_narrowing
from gateway.domain.units import format_money, parse_duration
from gateway.errors import Code, Conflict, InvalidRequest, Refusal
from gateway.ids import new_id
from gateway.store.records import ApprovalStatus, Principal, RunRecord
from gateway.store.sql.base import SqlBase, wire_reservation
from gateway.store.sql.connection import Conn
from gateway.store.sql.rows import put_blob, run_from_row
from gateway.store.sql.tasks import inherit_plan

# A successor's copy of its predecessor's milestones (migration 0007's columns). A milestone
# waiting for its review is unverified in the successor: the review was the predecessor's.
_INHERIT_MILESTONES = (
    "INSERT INTO milestones (run_id, milestone_id, status, spec_version, checks, reasons, depends, evidence_sha256, "
    "review_approval_id, submitted_by, epoch, attempts, inherited_from, updated_at, verified_at) "
    "SELECT ?, milestone_id, CASE status WHEN 'pending_review' THEN 'unverified' ELSE status END, spec_version, "
    "checks, reasons, depends, evidence_sha256, NULL, submitted_by, epoch, attempts, ?, ?, verified_at "
    "FROM milestones WHERE run_id = ?"
)


def require_reason(reason: str | None) -> str:
    """A successor's reason, the authorization both histories record.

    Raises: InvalidRequest `invalid_request` when missing, empty or blank.
    """
    if reason is None or not reason.strip():
        raise InvalidRequest(
            "a successor needs a reason", problems=[{"field": "reason", "problem": "required, not blank"}]
        )
    return reason


def successor_exists(run_id: str, successor_run_id: str) -> Conflict:
    return Conflict(
        f"run {run_id} already has its successor {successor_run_id}",
        code=Code.SUCCESSOR_EXISTS,
        successor_run_id=successor_run_id,
    )


class LineageOps(SqlBase):
    # -- the one insert of a run (create_run, successors, children) -----------------------------
    def _insert_run(
        self,
        conn: Conn,
        principal: Principal,
        contract: Contract,
        now: float,
        *,
        lineage_id: str | None = None,
        deadline: float | None = None,
        parent_run_id: str | None = None,
        predecessor_run_id: str | None = None,
        carved: dict[str, int] | None = None,
        checkpoint_version: int = 0,
        **created: Any,
    ) -> RunRecord:
        """Insert a running run under `contract` and chain its `run_created` (with `created` added, and
        the parent, predecessor and carve when there is one)."""
        terms = contract.terms()
        body = contract.model_dump(mode="json")
        run_id, lineage_id = new_id("run"), lineage_id or new_id("lin")
        deadline = now + terms.expires_in if deadline is None else deadline
        limits = terms.limits
        conn.execute(
            "INSERT INTO runs (run_id, tenant, lineage_id, status, spec_version, contract, currency, owner, "
            "created_by, created_at, updated_at, deadline, lease_ttl, spend_limit, tool_calls_limit, "
            "writes_limit, active_seconds_limit, active_since, count_waiting, acked_spec_version, parent_run_id, "
            "predecessor_run_id, carved, checkpoint_version) "
            "VALUES (?, ?, ?, 'running', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                run_id,
                principal.tenant,
                lineage_id,
                terms.spec_version,
                canonical_json(body).decode(),
                terms.currency,
                contract.owner,
                principal.name,
                now,
                now,
                deadline,
                terms.lease_ttl,
                limits["spend"],
                limits["tool_calls"],
                limits["writes"],
                limits["active_seconds"],
                now,
                int(terms.count_waiting),
                terms.spec_version,
                parent_run_id,
                predecessor_run_id,
                json.dumps(carved) if carved is not None else None,
                checkpoint_version,
            ),
        )
        contract_sha = put_blob(conn, body, now)
        self._event(
            conn,
            run_id,
            "run_created",
            now,
            by=principal.name,
            tenant=principal.tenant,
            lineage_id=lineage_id,
            contract_sha256=contract_sha,
            spec_version=terms.spec_version,
            deadline=isoformat(deadline),
            **created,
            **{"parent_run_id": parent_run_id} if parent_run_id else {},
            **{"predecessor_run_id": predecessor_run_id} if predecessor_run_id else {},
            **{"carved": wire_reservation(carved, terms.currency)} if carved is not None else {},
        )
        return run_from_row(self._run_row(conn, run_id))

    # -- revisions ---------------------------------------------------------------------------
    async def revise(
        self,
        principal: Principal,
        run_id: str,
        *,
        contract: Contract,
        reason: str | None,
        widening: bool,
        base_spec_version: str,
    ) -> RunRecord:
        def tx(conn: Conn) -> RunRecord | Refusal:
            now = self._clock.now()
            run = self._expire_if_due(conn, run_from_row(self._run_row(conn, run_id, principal.tenant)), now)
            if run.status.terminal:
                return lifecycle.status_refusal(run.status)
            if run.spec_version != base_spec_version:
                raise Conflict(
                    f"the run was revised to {run.spec_version} meanwhile; revise that version",
                    code=Code.REVISION_CONFLICT,
                    spec_version=run.spec_version,
                )
            if contract.spec_version == run.spec_version:
                raise Conflict(
                    f"the run is already at {run.spec_version}; a revision names a new spec_version",
                    code=Code.SPEC_VERSION_UNCHANGED,
                )
            old = Contract.model_validate(run.contract)
            changes = classify(old, contract)
            require_narrowing(changes, may_widen=widening)
            terms = contract.terms()
            # Moved by the change of expires_in: a successor's or an extended deadline keeps its shift.
            deadline = run.deadline + (terms.expires_in - parse_duration(old.expires_in))
            active = run.active_seconds_spent + (max(0.0, now - run.active_since) if run.active_since else 0.0)
            accrues = run.status is RunStatus.RUNNING or (run.status is RunStatus.WAITING and terms.count_waiting)
            body = contract.model_dump(mode="json")
            conn.execute(
                "UPDATE runs SET spec_version = ?, contract = ?, spend_limit = ?, tool_calls_limit = ?, "
                "writes_limit = ?, active_seconds_limit = ?, deadline = ?, lease_ttl = ?, count_waiting = ?, "
                "active_seconds_spent = ?, active_since = ?, updated_at = ? WHERE run_id = ?",
                (
                    terms.spec_version,
                    canonical_json(body).decode(),
                    terms.limits["spend"],
                    terms.limits["tool_calls"],
                    terms.limits["writes"],
                    terms.limits["active_seconds"],
                    deadline,
                    terms.lease_ttl,
                    int(terms.count_waiting),
                    active,
                    now if accrues else None,
                    now,
                    run_id,
                ),
            )
            self._event(
                conn,
                run_id,
                "run_revised",
                now,
                **{"from": run.spec_version, "to": terms.spec_version},
                reason=reason,
                by=principal.name,
                widening=any(c.widens for c in changes),
                changes=[c.as_dict() for c in changes],
                contract_sha256=put_blob(conn, body, now),
                deadline=isoformat(deadline),
            )
            why = f"the contract was revised to {terms.spec_version}"
            self._close_approvals(conn, run_id, now, ApprovalStatus.SUPERSEDED, why)
            for milestone_id in invalidated_milestones(changes):
                updated = conn.execute(
                    "UPDATE milestones SET status = 'invalidated', reasons = ?, updated_at = ? "
                    "WHERE run_id = ? AND milestone_id = ? AND status != 'invalidated'",
                    (json.dumps([why]), now, run_id, milestone_id),
                )
                if updated.rowcount:
                    self._event(conn, run_id, "milestone_invalidated", now, milestone_id=milestone_id, reason=why)
            if run.status is RunStatus.WAITING:
                self._settle_waiting(conn, run_id, now, principal.name)
            return self._expire_if_due(conn, run_from_row(self._run_row(conn, run_id)), now)

        result = await self._db.transaction(tx, durable=True)
        if isinstance(result, Refusal):
            raise result
        return result

    async def acknowledge_spec(self, token_hash: str) -> RunRecord | None:
        def read(conn: Conn) -> tuple[RunRecord, int] | None:
            lease = conn.execute("SELECT run_id, epoch FROM leases WHERE token_hash = ?", (token_hash,)).fetchone()
            if lease is None:
                return None
            return run_from_row(self._run_row(conn, lease["run_id"])), lease["epoch"]

        found = await self._db.read(read)
        if found is None:
            return None
        run, epoch = found
        if run.acked_spec_version == run.spec_version or epoch != run.epoch:
            return run  # nothing to acknowledge, or not this token's to acknowledge: no write

        def tx(conn: Conn) -> RunRecord:
            now = self._clock.now()
            row = self._run_row(conn, run.run_id)
            if row["epoch"] == epoch and row["acked_spec_version"] != row["spec_version"]:
                conn.execute("UPDATE runs SET acked_spec_version = spec_version WHERE run_id = ?", (run.run_id,))
                self._event(
                    conn,
                    run.run_id,
                    "spec_acknowledged",
                    now,
                    spec_version=row["spec_version"],
                    previous=row["acked_spec_version"],
                    epoch=epoch,
                    worker=row["lease_worker"],
                )
            return run_from_row(self._run_row(conn, run.run_id))

        return await self._db.transaction(tx, durable=True)

    # -- successors --------------------------------------------------------------------------
    async def create_successor(
        self, principal: Principal, run_id: str, *, reason: str, extend_by: int | None
    ) -> RunRecord:
        reason = require_reason(reason)

        def tx(conn: Conn) -> RunRecord:
            now = self._clock.now()
            before = self._expire_if_due(conn, run_from_row(self._run_row(conn, run_id, principal.tenant)), now)
            if not before.status.terminal:
                raise Conflict(
                    f"run {run_id} is {before.status.value}; only a terminal run has a successor",
                    code=Code.RUN_NOT_TERMINAL,
                    status=before.status.value,
                )
            existing = self._run_row(conn, run_id)["successor_run_id"]
            if existing is not None:
                raise successor_exists(run_id, existing)
            if before.parent_run_id is not None:
                # Its carve went back to the parent when it ended: a successor would spend it twice.
                raise Conflict(
                    f"run {run_id} is a child of {before.parent_run_id}, whose budget it was carved from; "
                    "delegate a new child from the parent instead",
                    code=Code.SUCCESSOR_OF_CHILD,
                    parent_run_id=before.parent_run_id,
                )
            deadline = before.deadline + (extend_by or 0)
            if deadline <= now:
                raise Conflict(
                    f"run {run_id}'s deadline passed at {isoformat(deadline)}; an admin may extend it (extend_by)",
                    code=Code.DEADLINE_PASSED,
                    deadline=isoformat(deadline),
                )
            # Whatever the predecessor spent or still holds (unknown actions) is not the successor's.
            left = {dim: max(0, v) for dim, v in before.snapshot().remaining(now).items()}
            budgets = dict(before.contract["budgets"])
            budgets |= {"spend": format_money(left["spend"], before.currency)} | {
                dim: left[dim] for dim in ("tool_calls", "writes", "active_seconds")
            }
            contract = Contract.model_validate(before.contract | {"budgets": budgets})
            run = self._insert_run(
                conn,
                principal,
                contract,
                now,
                lineage_id=before.lineage_id,
                deadline=deadline,
                predecessor_run_id=run_id,
                checkpoint_version=before.checkpoint_version,
                reason=reason,
                extend_by=extend_by,
            )
            # The link, in this transaction and only into an empty slot: one successor per run.
            linked = conn.execute(
                "UPDATE runs SET successor_run_id = ? WHERE run_id = ? AND successor_run_id IS NULL",
                (run.run_id, run_id),
            )
            if linked.rowcount != 1:
                raise successor_exists(run_id, self._run_row(conn, run_id)["successor_run_id"])
            self._inherit_progress(conn, before, run.run_id, now)
            self._event(
                conn,
                run_id,
                "successor_created",
                now,
                successor_run_id=run.run_id,
                by=principal.name,
                reason=reason,
                extend_by=extend_by,
            )
            return run

        return await self._db.transaction(tx, durable=True)

    def _inherit_progress(self, conn: Conn, before: RunRecord, run_id: str, now: float) -> None:
        """The predecessor's newest checkpoint and its milestones' states, marked as inherited, and
        its plan with its tasks (an attempt under way is ready again: gateway/store/sql/tasks.py)."""
        conn.execute(
            "INSERT INTO checkpoints (run_id, version, epoch, worker, body, body_sha256, good, bad_reason, "
            "inherited_from, created_at) SELECT ?, version, epoch, worker, body, body_sha256, good, bad_reason, "
            "?, created_at FROM checkpoints WHERE run_id = ? ORDER BY version DESC LIMIT 1",
            (run_id, before.run_id, before.run_id),
        )
        conn.execute(_INHERIT_MILESTONES, (run_id, before.run_id, now, before.run_id))
        inherited = inherit_plan(conn, before.run_id, run_id, now)
        if inherited is not None:
            self._event(conn, run_id, "plan_inherited", now, **inherited)

    # -- delegated sub-runs ------------------------------------------------------------------
    async def create_child(self, principal: Principal, parent_id: str, contract: Contract) -> RunRecord:
        def tx(conn: Conn) -> RunRecord | Refusal:
            now = self._clock.now()
            parent = self._expire_if_due(conn, run_from_row(self._run_row(conn, parent_id, principal.tenant)), now)
            if parent.status.terminal:
                return lifecycle.status_refusal(parent.status)
            narrowed = narrow_child(
                Contract.model_validate(parent.contract),
                contract,
                parent.snapshot().remaining(now),
                parent.deadline - now,
            )
            if isinstance(narrowed, list):
                raise child_refusal(narrowed)
            carve = narrowed.carve
            child = self._insert_run(
                conn,
                principal,
                narrowed.contract,
                now,
                deadline=min(now + parse_duration(narrowed.contract.expires_in), parent.deadline),
                parent_run_id=parent_id,
                carved=carve,
            )
            conn.execute(
                "UPDATE runs SET spend_reserved = spend_reserved + ?, tool_calls_reserved = tool_calls_reserved + ?, "
                "writes_reserved = writes_reserved + ?, updated_at = ? WHERE run_id = ?",
                (carve["spend"], carve["tool_calls"], carve["writes"], now, parent_id),
            )
            self._event(
                conn,
                parent_id,
                "child_created",
                now,
                child_run_id=child.run_id,
                by=principal.name,
                carved=wire_reservation(carve, parent.currency),
                clamped=narrowed.clamped,
            )
            return child

        result = await self._db.transaction(tx, durable=True)
        if isinstance(result, Refusal):
            raise result
        return result
