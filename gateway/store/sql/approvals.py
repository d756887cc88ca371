"""The store's approvals: request, decide, list."""

from __future__ import annotations

import json
from dataclasses import replace

from gateway.clock import isoformat
from gateway.domain.admission import CallFacts, refusal_for
from gateway.domain.approval_selection import superseded_by_request
from gateway.domain.approvals import may_decide, role_satisfies
from gateway.domain.lifecycle import RunEvent, RunStatus
from gateway.domain.watch import Alert
from gateway.errors import Code, Conflict, Forbidden, InvalidRequest, NotFound
from gateway.ids import new_id
from gateway.store.records import (
    ApprovalEdit,
    ApprovalPending,
    ApprovalRecord,
    ApprovalRequest,
    ApprovalStatus,
    Page,
    Principal,
    Refused,
)
from gateway.store.sql.base import cursor_after
from gateway.store.sql.connection import Conn
from gateway.store.sql.ending import EndingOps
from gateway.store.sql.progress import check_reviewer, review_decided
from gateway.store.sql.rows import (
    approval_from_row,
    encode_cursor,
    put_blob,
    run_from_row,
)


class ApprovalOps(EndingOps):
    # -- approvals -------------------------------------------------------------------------
    async def approvals_for(self, run_id: str, tool: str, payload_sha256: str) -> list[ApprovalRecord]:
        # Also those a person approved in an edited version of this payload (proposed_sha256): the
        # choice answers with them, never uses them (gateway/domain/approval_selection.py).
        def read(conn: Conn) -> list[ApprovalRecord]:
            rows = conn.execute(
                "SELECT * FROM approvals WHERE run_id = ? AND tool = ? AND payload_sha256 = ? "
                "UNION ALL SELECT * FROM approvals WHERE run_id = ? AND tool = ? AND proposed_sha256 = ? "
                "AND payload_sha256 <> ? ORDER BY seq DESC",
                (run_id, tool, payload_sha256, run_id, tool, payload_sha256, payload_sha256),
            ).fetchall()
            return [approval_from_row(r) for r in rows]

        return await self._db.read(read)

    async def request_approval(self, request: ApprovalRequest, facts: CallFacts) -> ApprovalPending | Refused:
        def tx(conn: Conn) -> ApprovalPending | Refused:
            now = self._clock.now()
            run = self._expire_if_due(conn, run_from_row(self._run_row(conn, request.run_id)), now)
            self._expire_approvals_due(conn, run.run_id, now)
            existing = conn.execute(
                "SELECT * FROM approvals WHERE run_id = ? AND tool = ? AND payload_sha256 = ? AND spec_version = ? "
                "AND tool_def_sha256 = ? AND status = 'pending' ORDER BY seq DESC LIMIT 1",
                (run.run_id, request.tool, request.payload_sha256, run.spec_version, request.tool_def_sha256),
            ).fetchone()
            if existing is not None and request.requirement.met_by(approval_from_row(existing).requirement):
                return ApprovalPending(approval_from_row(existing), created=False)
            run = run_from_row(self._run_row(conn, run.run_id))
            row = conn.execute(
                "SELECT approval_id FROM approvals WHERE run_id = ? AND tool = ? AND requested_by = ? "
                "AND status = 'pending' AND milestone_id IS NULL ORDER BY seq DESC LIMIT 1",
                (run.run_id, request.tool, request.requested_by),
            ).fetchone()
            replaced, stale = superseded_by_request(
                existing["approval_id"] if existing is not None else None,
                row["approval_id"] if row is not None else None,
            )
            # A replacement is no second write while the run waits: it takes the pending one's place.
            # Nor is asking while the run is in its own warrant_wait with no approval holding it: the
            # request executes nothing, and the agent may prepare what it will do after the wait.
            in_wait = (
                run.status is RunStatus.WAITING
                and self._open_wait(conn, run.run_id) is not None
                and not self._approval_holds(conn, run.run_id)
            )
            asking = replace(facts, approved=True) if replaced or in_wait else facts
            refusal = refusal_for(run.snapshot(), asking, now)
            if refusal is not None:
                action_id = self._reject(
                    conn,
                    run,
                    now,
                    tool=request.tool,
                    payload_sha256=request.payload_sha256,
                    refusal=refusal,
                    epoch=facts.epoch,
                    worker=request.worker,
                    effect="write",
                    payload_bytes=request.payload_bytes,
                )
                return Refused(refusal, action_id)
            approval_id = new_id("apr")
            for old in (replaced, stale):
                if old is not None:
                    self._supersede_replaced(conn, run.run_id, old, approval_id, now)
            put_blob(conn, request.payload, now)
            conn.execute(
                "INSERT INTO approvals (approval_id, run_id, tenant, tool, payload_sha256, spec_version, "
                "tool_def_sha256, status, role, on_expiry, valid_for, requested_by, evidence, rationale, created_at, "
                "decide_by, blocks_run, approvers, escalate_at, destination) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, 'pending', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    approval_id,
                    run.run_id,
                    run.tenant,
                    request.tool,
                    request.payload_sha256,
                    run.spec_version,
                    request.tool_def_sha256,
                    request.role,
                    request.on_expiry,
                    request.valid_for,
                    request.requested_by,
                    json.dumps(request.evidence) if request.evidence is not None else None,
                    request.rationale,
                    now,
                    now + request.decide_within,
                    1 if request.blocks_run else 0,
                    json.dumps(list(request.approvers)) if request.approvers is not None else None,
                    now + request.escalate_after if request.escalate_after is not None else None,
                    request.destination,
                ),
            )
            self._event(
                conn,
                run.run_id,
                "approval_requested",
                now,
                approval_id=approval_id,
                tool=request.tool,
                payload_sha256=request.payload_sha256,
                spec_version=run.spec_version,
                tool_def_sha256=request.tool_def_sha256,
                requested_by=request.requested_by,
                decide_by=isoformat(now + request.decide_within),
                blocks_run=request.blocks_run,
            )
            if request.blocks_run:
                self._set_status(
                    conn,
                    run,
                    RunEvent.APPROVAL_PENDING,
                    now,
                    by="gateway",
                    reason=f"approval {approval_id} is pending",
                    approval_id=approval_id,
                )
            created = approval_from_row(
                conn.execute("SELECT * FROM approvals WHERE approval_id = ?", (approval_id,)).fetchone()
            )
            # The people who decide are told in this same transaction (docs/decisions/0029-approvals-reach.md).
            alert = Alert(run.run_id, run.tenant, "approval_requested", approval_id, self._approval_reach(created))
            self._raise_alert(conn, alert, now)
            return ApprovalPending(created, created=True, replaced=replaced)

        return await self._refusing(tx, durable=True)

    def _supersede_replaced(self, conn: Conn, run_id: str, approval_id: str, by: str, now: float) -> None:
        reason = f"replaced by {by}, a new proposal for the same tool"
        conn.execute(
            "UPDATE approvals SET status = 'superseded', decided_at = ?, note = ? WHERE approval_id = ?",
            (now, reason, approval_id),
        )
        self._event(conn, run_id, "approval_superseded", now, approval_id=approval_id, reason=reason, replaced_by=by)

    async def decide_approval(
        self,
        principal: Principal,
        approval_id: str,
        *,
        approve: bool,
        note: str | None,
        expected_sha256: str | None,
        edit: ApprovalEdit | None = None,
    ) -> ApprovalRecord:
        if edit is not None and not approve:
            raise InvalidRequest("only an approval may carry edited arguments", code=Code.INVALID_REQUEST)

        def tx(conn: Conn) -> ApprovalRecord | Conflict:
            now = self._clock.now()
            row = conn.execute(
                "SELECT * FROM approvals WHERE approval_id = ? AND tenant = ?", (approval_id, principal.tenant)
            ).fetchone()
            if row is None:
                raise NotFound(f"no approval {approval_id}")
            approval = approval_from_row(row)
            if approval.status is not ApprovalStatus.PENDING:
                raise Conflict(
                    f"the approval is {approval.status.value}, not pending",
                    code=Code.APPROVAL_NOT_PENDING,
                    status=approval.status.value,
                )
            if expected_sha256 is not None and expected_sha256 != approval.payload_sha256:
                raise InvalidRequest(
                    "the payload is not the one you were shown",
                    code=Code.PAYLOAD_MISMATCH,
                    payload_sha256=approval.payload_sha256,
                ).with_status(409)
            if approval.requested_by == principal.name:
                raise Forbidden("a principal never decides an approval it asked for")
            run = run_from_row(self._run_row(conn, approval.run_id))
            if run.contract.get("forbid_creator_approval") and run.created_by == principal.name:
                raise Forbidden("this run's contract forbids its creator from deciding its approvals")
            check_reviewer(approval, principal, row["reviewer"])
            if not role_satisfies(approval.role, principal.roles):
                raise Forbidden(f"this approval needs the {approval.role} role")
            if not may_decide(approval.approvers, principal.name, principal.key_id):
                raise Forbidden("this approval's rule names who may decide it, and not you", code=Code.NOT_AN_APPROVER)
            if now >= approval.decide_by:
                self._expire_approvals_due(conn, run.run_id, now)
                return Conflict("the approval was not decided in time and has expired", code=Code.APPROVAL_EXPIRED)
            status = ApprovalStatus.APPROVED if approve else ApprovalStatus.DENIED
            conn.execute(
                "UPDATE approvals SET status = ?, decided_by = ?, decided_at = ?, note = ?, valid_until = ? "
                "WHERE approval_id = ?",
                (status.value, principal.name, now, note, now + approval.valid_for if approve else None, approval_id),
            )
            bound = approval.payload_sha256
            if edit is not None and edit.payload_sha256 != approval.payload_sha256:
                if row["milestone_id"] is not None:
                    raise InvalidRequest("a milestone's review has no payload to edit", code=Code.INVALID_REQUEST)
                # The approval binds the edit from now on; the proposal's hash stays beside it.
                put_blob(conn, edit.payload, now)
                conn.execute(
                    "UPDATE approvals SET payload_sha256 = ?, proposed_sha256 = ?, destination = ? "
                    "WHERE approval_id = ?",
                    (edit.payload_sha256, approval.payload_sha256, edit.destination, approval_id),
                )
                bound = edit.payload_sha256
            self._event(
                conn,
                run.run_id,
                f"approval_{status.value}",
                now,
                approval_id=approval_id,
                by=principal.name,
                note=note,
                payload_sha256=bound,
                valid_until=isoformat(now + approval.valid_for) if approve else None,
                # Hashes only, as every entry: the edit's body is a blob, like the proposal's.
                **(
                    {"proposed_sha256": approval.payload_sha256, "edited": True}
                    if bound != approval.payload_sha256
                    else {}
                ),
            )
            if row["milestone_id"] is not None:
                review_decided(self, conn, approval, approve=approve, by=principal.name, note=note, now=now)
            self._settle_waiting(conn, run.run_id, now, principal.name)
            return approval_from_row(
                conn.execute("SELECT * FROM approvals WHERE approval_id = ?", (approval_id,)).fetchone()
            )

        result = await self._db.transaction(tx, durable=True)
        if isinstance(result, Conflict):
            raise result
        return result

    async def get_approval(self, tenant: str, approval_id: str) -> ApprovalRecord:
        def read(conn: Conn) -> ApprovalRecord:
            row = conn.execute(
                "SELECT * FROM approvals WHERE approval_id = ? AND tenant = ?", (approval_id, tenant)
            ).fetchone()
            if row is None:
                raise NotFound(f"no approval {approval_id}")
            return approval_from_row(row)

        return await self._db.read(read)

    async def approved_before(self, tenant: str, approval_id: str) -> ApprovalRecord | None:
        # Approving sets decided_by and valid_until; denying leaves valid_until NULL; what
        # happens later (used, expired, superseded) changes the status only.
        return await self._approval_before(
            tenant, approval_id, "b.decided_by IS NOT NULL AND b.valid_until IS NOT NULL"
        )

    async def proposed_before(self, tenant: str, approval_id: str) -> ApprovalRecord | None:
        return await self._approval_before(tenant, approval_id, "TRUE")

    async def _approval_before(self, tenant: str, approval_id: str, which: str) -> ApprovalRecord | None:
        """The newest earlier approval of the same run and tool (no milestone review) meeting `which`."""

        def read(conn: Conn) -> ApprovalRecord | None:
            row = conn.execute(
                "SELECT b.* FROM approvals a JOIN approvals b ON b.run_id = a.run_id AND b.tool = a.tool "
                f"AND b.seq < a.seq WHERE a.approval_id = ? AND a.tenant = ? AND {which} "
                "AND b.milestone_id IS NULL ORDER BY b.seq DESC LIMIT 1",
                (approval_id, tenant),
            ).fetchone()
            return approval_from_row(row) if row is not None else None

        return await self._db.read(read)

    async def list_approvals(
        self,
        tenant: str,
        *,
        status: ApprovalStatus | None = None,
        run_id: str | None = None,
        cursor: str | None = None,
        limit: int = 50,
    ) -> Page[ApprovalRecord]:
        after = cursor_after(cursor)

        def read(conn: Conn) -> Page[ApprovalRecord]:
            sql, args = "SELECT * FROM approvals WHERE tenant = ? AND seq > ?", [tenant, after]
            if status is not None:
                sql, args = sql + " AND status = ?", [*args, status.value]
            if run_id is not None:
                sql, args = sql + " AND run_id = ?", [*args, run_id]
            rows = conn.execute(sql + " ORDER BY seq LIMIT ?", (*args, limit + 1)).fetchall()
            more = len(rows) > limit
            rows = rows[:limit]
            return Page([approval_from_row(r) for r in rows], encode_cursor(rows[-1]["seq"]) if more else None)

        return await self._db.read(read)
