"""Verified progress: the gateway tools `warrant_checkpoint`, `warrant_milestone` and
`warrant_complete`, resume's re-check of artifacts and sources, and the recovery package
(docs/progress.md).

The agent's word is never the evidence: a milestone is verified by checks the gateway runs itself
(gateway/tools/evidence.py), reading only under the configured roots and hosts; its result is recorded
in a transaction that fences the worker again (a lease lost while the checks ran refuses it).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from gateway.canonical import canonical_json, payload_sha256, sha256_hex
from gateway.clock import Clock, isoformat
from gateway.domain.admission import lease_refusal
from gateway.domain.checks import (
    ArtifactRef,
    CheckResult,
    ReviewCheck,
    SourceRef,
    Validator,
    milestone_status,
    parse_check,
)
from gateway.domain.lifecycle import ActionStatus, RunStatus
from gateway.errors import Code, Refusal
from gateway.gate.pipeline import CallResult, Gate, budget_remaining
from gateway.store.ports import Store
from gateway.store.progress_records import (
    CheckpointRecord,
    Invalidation,
    MilestoneRecord,
    MilestoneSubmission,
    Recheck,
    RecoveryInputs,
    ReviewRequest,
)
from gateway.store.records import Refused, RunRecord, TokenInfo
from gateway.tools.evidence import Fetcher, recheck_artifact, recheck_source, run_checks, taken_on_trust
from gateway.tools.plan_view import plan_view
from gateway.tools.standing_view import read_standing, standing_view

log = logging.getLogger("warrant.progress")

MAX_REFS = 200  # artifacts or sources in one checkpoint or evidence
MAX_BODY = 256 * 1024  # canonical JSON bytes of a checkpoint or an evidence
MAX_SUMMARY = 8000


@dataclass
class Progress:
    gate: Gate
    fetcher: Fetcher
    clock: Clock
    validators: Mapping[str, Validator] = field(default_factory=dict)

    @property
    def store(self) -> Store:
        return self.gate.store

    async def _dead(self, info: TokenInfo, tool: str, digest: str) -> CallResult | None:
        """Refuse (and record) a dead lease or run before any check runs; a paused run may still
        save its progress, and the store fences the write again."""
        refusal = lease_refusal(info.run.snapshot(), info.epoch, self.clock.now())
        if refusal is None or refusal.code == Code.RUN_PAUSED:
            return None
        action_id = await self.store.record_rejection(
            info.run.run_id, tool=tool, payload_sha256=digest, refusal=refusal, epoch=info.epoch, worker=info.worker
        )
        return CallResult.refused(refusal, action_id)

    # -- warrant_checkpoint ------------------------------------------------------------------
    async def checkpoint(self, token: str | None, arguments: Mapping[str, Any]) -> CallResult:
        info = await self.gate.authenticate(token)
        expected = arguments.get("expected_version")
        if not isinstance(expected, int) or isinstance(expected, bool) or expected < 0:
            return _bad("warrant_checkpoint needs expected_version: the version you last read (0 before the first)")
        try:
            artifacts = _refs(arguments.get("artifacts"), ArtifactRef.from_wire, "artifacts")
            sources = _refs(arguments.get("sources"), SourceRef.from_wire, "sources")
        except ValueError as exc:
            return _bad(str(exc))
        body = {
            "artifacts": [a.to_wire() for a in artifacts],
            "sources": [s.to_wire() for s in sources],
            "next_operation": arguments.get("next_operation"),
        }
        too_big = _too_big(body, "checkpoint")
        if too_big is not None:
            return CallResult.refused(too_big)
        saved = await self.store.save_checkpoint(
            info.run.run_id, epoch=info.epoch, worker=info.worker, expected_version=expected, body=body
        )
        if isinstance(saved, Refused):
            return CallResult.refused(saved.refusal, saved.action_id)
        text = f"checkpoint version {saved.version} saved; pass expected_version={saved.version} next time"
        return CallResult([{"type": "text", "text": text}], {"checkpoint": checkpoint_view(saved)})

    # -- warrant_milestone -------------------------------------------------------------------
    async def milestone(self, token: str | None, arguments: Mapping[str, Any]) -> CallResult:
        info = await self.gate.authenticate(token)
        milestone_id = arguments.get("milestone_id")
        evidence = arguments.get("evidence", {})
        if not isinstance(milestone_id, str) or not milestone_id:
            return _bad("warrant_milestone needs {milestone_id, evidence}")
        if evidence is None:
            evidence = {}
        if not isinstance(evidence, dict):
            return _bad("evidence is an object: {artifacts?, sources?, note?}")
        try:
            digest = payload_sha256(evidence)
        except ValueError:
            return _bad("the evidence is not representable as canonical JSON")
        dead = await self._dead(info, "warrant_milestone", digest)
        if dead is not None:
            return dead
        run = info.run
        spec = next((m for m in run.contract.get("milestones") or [] if m.get("id") == milestone_id), None)
        if spec is None:
            known = ", ".join(m["id"] for m in run.contract.get("milestones") or []) or "none"
            return _bad(f"no milestone {milestone_id!r} in this run's contract ({run.spec_version}); known: {known}")
        too_big = _too_big(evidence, "evidence")
        if too_big is not None:
            return CallResult.refused(too_big)
        try:
            given = _refs(evidence.get("artifacts"), ArtifactRef.from_wire, "evidence.artifacts")
            given_sources = _refs(evidence.get("sources"), SourceRef.from_wire, "evidence.sources")
        except ValueError as exc:
            return _bad(str(exc))
        checkpoint = await self.store.latest_checkpoint(run.run_id)
        artifacts: dict[str, ArtifactRef] = {}
        if checkpoint is not None:
            for item in checkpoint.artifacts:
                ref = ArtifactRef.from_wire(item)
                artifacts[ref.id] = ref
        for ref in given:
            artifacts[ref.id] = ref
        sources = given_sources
        if not sources and checkpoint is not None:
            sources = [SourceRef.from_wire(s) for s in checkpoint.sources]

        checks = [parse_check(c) for c in spec.get("checks") or []]
        if self.gate.safeguards.sabotaged("checks"):  # the drill's negative control: the agent's word is taken
            results = taken_on_trust(checks)
        else:
            results = await run_checks(checks, artifacts, evidence, self.fetcher, self.validators)
        status, reasons = milestone_status(results)
        read = {
            r.detail["artifact"]: r.detail
            for r in results
            if isinstance(r.detail.get("artifact"), str) and r.detail.get("sha256")
        }
        depends = {
            "artifacts": [
                {"id": aid, "uri": artifacts[aid].uri, "sha256": d["sha256"]}
                for aid, d in sorted(read.items())
                if aid in artifacts
            ],
            "sources": [s.to_wire() for s in sources],
        }
        review = None
        reviewers = [c for c in checks if isinstance(c, ReviewCheck)]
        if status == "pending_review" and reviewers:
            payload = {
                "milestone_id": milestone_id,
                "evidence": evidence,
                "artifacts": depends["artifacts"],
                "checks": [_result_wire(r) for r in results],
            }
            review = ReviewRequest(
                reviewer=reviewers[0].reviewer,
                payload=payload,
                payload_sha256=payload_sha256(payload),
                definition_sha256=sha256_hex(canonical_json(spec.get("checks") or [])),
            )
        submission = MilestoneSubmission(
            milestone_id=milestone_id,
            status=status,
            checks=[_result_wire(r) for r in results],
            reasons=reasons,
            depends=depends,
            evidence=evidence,
            review=review,
        )
        recorded = await self.store.record_milestone(
            run.run_id, epoch=info.epoch, worker=info.worker, granted_by=info.granted_by, submission=submission
        )
        if isinstance(recorded, Refused):
            return CallResult.refused(recorded.refusal, recorded.action_id)
        text = _milestone_text(recorded)
        body: dict[str, Any] = {"milestone": milestone_view(recorded)}
        if recorded.status == "failed":  # completion.on_verification_failed may pause or fail the run with it
            after = await self.store.get_run(run.tenant, run.run_id)
            if after.status is not run.status:
                text += f"; the run is {after.status.value}: {after.status_reason}"
                body["run_status"] = after.status.value
        return CallResult([{"type": "text", "text": text}], body)

    # -- warrant_complete --------------------------------------------------------------------
    async def complete(self, token: str | None, arguments: Mapping[str, Any]) -> CallResult:
        info = await self.gate.authenticate(token)
        summary = arguments.get("summary")
        if not isinstance(summary, str) or not summary.strip():
            return _bad("warrant_complete needs a summary of what was done")
        if len(summary) > MAX_SUMMARY:
            return CallResult.refused(Refusal(Code.PAYLOAD_TOO_LARGE, f"the summary is over {MAX_SUMMARY} characters"))
        dead = await self._dead(info, "warrant_complete", sha256_hex(canonical_json({"summary": summary})))
        if dead is not None:
            return dead
        # The agent's claim is checked against the evidence as it is now, not as it was when each
        # milestone was verified: an artifact changed since invalidates its milestone first. A run
        # that cannot complete (paused, waiting) is refused by the store before anything is re-read.
        if info.run.status is RunStatus.RUNNING:
            await self.recheck(info.run, by=info.worker)
        done = await self.store.complete_run(info.run.run_id, epoch=info.epoch, worker=info.worker, summary=summary)
        if isinstance(done, Refused):
            return CallResult.refused(done.refusal, done.action_id)
        completion = done.completion or {}
        uncertain = completion.get("uncertain") or []
        text = "the run is completed"
        if uncertain:
            text += f"; uncertain (acknowledged by an operator): {', '.join(u['action_id'] for u in uncertain)}"
        return CallResult([{"type": "text", "text": text}], {"status": done.status.value, "completion": completion})

    # -- resume's re-check -------------------------------------------------------------------
    async def recheck(self, run: RunRecord, *, by: str) -> Recheck:
        """Read again the newest checkpoint's artifacts and sources and those of every verified or
        in-review milestone; record what changed (milestones invalidated, checkpoint not good)."""
        checkpoint = await self.store.latest_checkpoint(run.run_id)
        milestones = await self.store.list_milestones(run.run_id)
        seen: dict[tuple[str, str, str], tuple[str, str | None]] = {}
        checked: dict[str, Any] = {}

        async def read_again(kind: str, item: Mapping[str, Any]) -> tuple[str, str | None]:
            """Each artifact or source read once per re-check: (same | changed | unreadable, reason)."""
            uri = str(item.get("uri"))
            key = (kind, uri, str(item.get("sha256") if kind == "artifact" else item.get("etag") or item.get("sha256")))
            if key not in seen:
                try:
                    if kind == "artifact":
                        ref = ArtifactRef.from_wire({k: item[k] for k in ("id", "uri", "sha256") if k in item})
                        seen[key] = await recheck_artifact(ref, self.fetcher)
                    else:
                        seen[key] = await recheck_source(SourceRef.from_wire(dict(item)), self.fetcher)
                except ValueError as exc:
                    seen[key] = ("unreadable", str(exc))
                checked[uri] = {"status": seen[key][0], "reason": seen[key][1], "at": isoformat(self.clock.now())}
            return seen[key]

        checkpoint_bad = None
        if checkpoint is not None and checkpoint.good:
            for item in checkpoint.artifacts:
                state, reason = await read_again("artifact", item)
                if state != "same":
                    checkpoint_bad = f"artifact {item.get('id')} {state}: {reason}"
                    break
        invalidated = []
        for milestone in milestones:
            if milestone.status not in ("verified", "pending_review"):
                continue
            why = None
            for item in milestone.depends.get("artifacts") or []:
                state, reason = await read_again("artifact", item)
                if state != "same":
                    why = f"artifact {item.get('id')} {state}: {reason}"
                    break
            if why is None:
                for item in milestone.depends.get("sources") or []:
                    state, reason = await read_again("source", item)
                    if state != "same":
                        why = f"source {item.get('uri')} {state}: {reason}"
                        break
            if why is not None:
                invalidated.append(Invalidation(milestone.milestone_id, why))
        found = Recheck(
            invalidated=invalidated,
            checkpoint_version=checkpoint.version if checkpoint is not None else None,
            checkpoint_bad=checkpoint_bad,
            checked=checked,
        )
        await self.store.apply_recheck(run.run_id, found, by=by)
        if invalidated or checkpoint_bad:
            log.info(
                "run %s re-check: %d milestone(s) invalidated, checkpoint %s",
                run.run_id,
                len(invalidated),
                "not good" if checkpoint_bad else "good",
            )
        return found

    # -- the recovery package ----------------------------------------------------------------
    async def recovery_of(self, token: str | None) -> dict[str, Any]:
        info = await self.gate.authenticate(token)
        return await self.recovery(info.run.tenant, info.run.run_id)

    async def standing_of(self, token: str | None) -> dict[str, Any]:
        """Where the run stands (`gateway.domain.standing`): what `warrant_status` names first."""
        info = await self.gate.authenticate(token)
        run = await self.store.get_run(info.run.tenant, info.run.run_id)
        return standing_view(await read_standing(self.store, run, self.clock.now()))

    async def recovery(self, tenant: str, run_id: str) -> dict[str, Any]:
        inputs = await self.store.recovery_inputs(tenant, run_id)
        return recovery_package(inputs, self.clock.now(), self.gate.catalog.compensating_tools())


def recheck_view(found: Recheck) -> dict[str, Any]:
    return {
        "invalidated": [{"milestone_id": i.milestone_id, "reason": i.reason} for i in found.invalidated],
        "checkpoint_version": found.checkpoint_version,
        "checkpoint_good": found.checkpoint_bad is None,
        "checkpoint_reason": found.checkpoint_bad,
        "checked": found.checked,
    }


def checkpoint_view(checkpoint: CheckpointRecord) -> dict[str, Any]:
    return {
        "version": checkpoint.version,
        "artifacts": checkpoint.artifacts,
        "sources": checkpoint.sources,
        "next_operation": checkpoint.next_operation,
        "good": checkpoint.good,
        "bad_reason": checkpoint.bad_reason,
        "epoch": checkpoint.epoch,
        "worker": checkpoint.worker,
        "inherited_from": checkpoint.inherited_from,
        "created_at": isoformat(checkpoint.created_at),
    }


def milestone_view(milestone: MilestoneRecord) -> dict[str, Any]:
    return {
        "milestone_id": milestone.milestone_id,
        "status": milestone.status,
        "reasons": milestone.reasons,
        "checks": milestone.checks,
        "spec_version": milestone.spec_version,
        "depends": milestone.depends,
        "review_approval_id": milestone.review_approval_id,
        "attempts": milestone.attempts,
        "inherited_from": milestone.inherited_from,
        "updated_at": isoformat(milestone.updated_at),
        "verified_at": isoformat(milestone.verified_at) if milestone.verified_at is not None else None,
    }


def recovery_package(
    inputs: RecoveryInputs, now: float, compensating: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """What the next worker needs to go on: what is verified, what is uncertain, what it may do.
    `compensating`: each tool's compensating tool (the policy's `compensate:`), for `compensable`:
    this run's confirmed effects that can be undone (docs/compensation.md)."""
    run = inputs.run
    compensating = compensating or {}
    contract = run.contract
    by_id = {m.milestone_id: m for m in inputs.milestones}
    milestones = []
    for spec in contract.get("milestones") or []:
        record = by_id.get(spec["id"])
        view = milestone_view(record) if record is not None else {"milestone_id": spec["id"], "status": "pending"}
        milestones.append({**view, "required": spec.get("required", True)})
    checkpoint = inputs.checkpoint
    return {
        "run_id": run.run_id,
        "lineage_id": run.lineage_id,
        "predecessor_run_id": run.predecessor_run_id,
        "parent_run_id": run.parent_run_id,
        "spec_version": run.spec_version,
        "status": run.status.value,
        "checkpoint": checkpoint_view(checkpoint) if checkpoint is not None else None,
        "last_good_version": inputs.last_good_version,
        "artifacts": checkpoint.artifacts if checkpoint is not None else [],
        "sources": checkpoint.sources if checkpoint is not None else [],
        "milestones": {
            "verified": [m["milestone_id"] for m in milestones if m["status"] == "verified"],
            "items": milestones,
        },
        "effects": {
            "confirmed": [
                {
                    "action_id": a.action_id,
                    "tool": a.tool,
                    "operation_id": a.operation_id,
                    "receipt": a.receipt,
                    "status": a.status.value,
                }
                for a in inputs.confirmed
            ],
            "uncertain": [
                {"action_id": a.action_id, "tool": a.tool, "operation_id": a.operation_id, "acknowledged": ack}
                for a, ack in inputs.uncertain
            ],
        },
        "compensable": [
            {"action_id": a.action_id, "tool": a.tool, "compensate_with": compensating[a.tool], "receipt": a.receipt}
            for a in inputs.confirmed
            if a.run_id == run.run_id and a.status is ActionStatus.SUCCEEDED and a.tool in compensating
        ],
        "budget_remaining": budget_remaining(run, now),
        "authority": contract.get("authority"),
        "deadline": isoformat(run.deadline),
        "pending_approvals": [
            {
                "approval_id": a.approval_id,
                "tool": a.tool,
                "status": a.status.value,
                "payload_sha256": a.payload_sha256,
                "decide_by": isoformat(a.decide_by),
            }
            for a in inputs.pending_approvals
        ],
        "children": [{"run_id": c.run_id, "status": c.status.value} for c in inputs.children],
        "next_operation": checkpoint.next_operation if checkpoint is not None else None,
        "completion": run.completion,
        # The plan (docs/tasks.md): each task's state and attempts, the current task, and the next
        # eligible one with its preconditions; None for a store read without it.
        "plan": plan_view(inputs.plan) if inputs.plan is not None else None,
    }


def _milestone_text(milestone: MilestoneRecord) -> str:
    mid = milestone.milestone_id
    if milestone.status == "verified":
        return f"milestone {mid} verified"
    if milestone.status == "pending_review":
        return (
            f"milestone {mid}: every check passed but the review; approval {milestone.review_approval_id} "
            "is pending with the named reviewer"
        )
    return f"milestone {mid} {milestone.status}: " + "; ".join(milestone.reasons)


def _result_wire(result: CheckResult) -> dict[str, Any]:
    return {"kind": result.kind, "status": result.status, "reason": result.reason, "detail": result.detail}


def _refs(value: Any, parse: Any, what: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise ValueError(f"{what} is a list")
    if len(value) > MAX_REFS:
        raise ValueError(f"{what}: at most {MAX_REFS}")
    out = []
    for i, item in enumerate(value):
        try:
            out.append(parse(item))
        except ValueError as exc:
            raise ValueError(f"{what}[{i}]: {exc}") from None
    return out


def _too_big(body: Any, what: str) -> Refusal | None:
    try:
        size = len(canonical_json(body))
    except ValueError:
        return Refusal(Code.INVALID_ARGUMENTS, f"the {what} is not representable as canonical JSON")
    if size > MAX_BODY:
        return Refusal(Code.PAYLOAD_TOO_LARGE, f"the {what} is {size} bytes; at most {MAX_BODY}")
    return None


def _bad(message: str) -> CallResult:
    return CallResult.refused(Refusal(Code.INVALID_ARGUMENTS, message))
