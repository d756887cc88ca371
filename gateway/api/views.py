"""Records as the API shows them: ids named `<noun>_id`, money as decimal strings, times RFC 3339."""

from __future__ import annotations

import difflib
import json
from typing import Any

from gateway.canonical import canonical_json
from gateway.clock import isoformat
from gateway.domain.contract import DIMENSIONS
from gateway.domain.deception import marks
from gateway.domain.events import envelope
from gateway.domain.lease_rules import lease_held
from gateway.domain.units import format_money
from gateway.store.records import ActionRecord, ApprovalRecord, EventRecord, RunRecord
from gateway.store.reports import DroppedRefusals


def _money_or_count(dim: str, value: int, currency: str) -> Any:
    return format_money(value, currency) if dim == "spend" else value


def run_view(run: RunRecord, now: float) -> dict[str, Any]:
    remaining = run.snapshot().remaining(now)
    budgets: dict[str, Any] = {}
    for dim in DIMENSIONS:
        if dim == "active_seconds":
            used = int(run.snapshot().active_seconds(now))
            budgets[dim] = {"limit": run.limits[dim], "reserved": 0, "spent": used, "remaining": remaining[dim]}
        else:
            budgets[dim] = {
                key: _money_or_count(dim, value, run.currency)
                for key, value in (
                    ("limit", run.limits[dim]),
                    ("reserved", run.reserved[dim]),
                    ("spent", run.spent[dim]),
                    ("remaining", remaining[dim]),
                )
            }
    # Live: it holds against another worker's acquire (unexpired, or its run waits or is paused).
    lease_live = run.lease_expires_at is not None and lease_held(run.snapshot(), now)
    return {
        "run_id": run.run_id,
        "status": run.status.value,
        "status_reason": run.status_reason,
        "status_cause": run.status_cause,
        "goal": run.contract.get("goal"),
        "owner": run.owner,
        "spec_version": run.spec_version,
        "lineage_id": run.lineage_id,
        "parent_run_id": run.parent_run_id,
        "created_by": run.created_by,
        "created_at": isoformat(run.created_at),
        "updated_at": isoformat(run.updated_at),
        "deadline": isoformat(run.deadline),
        "currency": run.currency,
        "budgets": budgets,
        "lease": {
            "worker": run.lease_worker,
            "epoch": run.epoch,
            "expires_at": isoformat(run.lease_expires_at),
            "live": lease_live,
            "revoked_at": isoformat(run.lease_revoked_at),
        },
        "milestones": [
            {"id": m.get("id"), "required": m.get("required", True), "status": "pending"}
            for m in run.contract.get("milestones", [])
        ],
        "contract": run.contract,
    }


def action_view(action: ActionRecord, currency: str = "USD") -> dict[str, Any]:
    return {
        "action_id": action.action_id,
        "run_id": action.run_id,
        "tool": action.tool,
        "effect": action.effect,
        "status": action.status.value,
        "code": action.code,
        "reason": action.reason,
        "operation_id": action.operation_id,
        "payload_sha256": action.payload_sha256,
        "idempotency_key": action.idempotency_key,
        "epoch": action.epoch,
        "worker": action.worker,
        "approval_id": action.approval_id,
        "repeat_of": action.repeat_of,
        "compensates": action.compensates,
        "reserved": {dim: _money_or_count(dim, v, currency) for dim, v in action.reserved.items()},
        "actual_spend": format_money(action.actual_spend, currency) if action.actual_spend is not None else None,
        "receipt": action.receipt,
        "process_id": action.process_id,
        "created_at": isoformat(action.created_at),
        "settled_at": isoformat(action.settled_at),
        "task_id": action.task_id,
    }


def approval_view(
    approval: ApprovalRecord,
    payload: Any = None,
    diff: dict[str, Any] | None = None,
    edit: dict[str, Any] | None = None,
) -> dict[str, Any]:
    return {
        "approval_id": approval.approval_id,
        "run_id": approval.run_id,
        "tool": approval.tool,
        "status": approval.status.value,
        "payload_sha256": approval.payload_sha256,
        "payload": payload,
        "spec_version": approval.spec_version,
        "tool_def_sha256": approval.tool_def_sha256,
        "role": approval.role,
        "requested_by": approval.requested_by,
        "evidence": approval.evidence,
        "rationale": approval.rationale,
        "created_at": isoformat(approval.created_at),
        "decide_by": isoformat(approval.decide_by),
        "valid_until": isoformat(approval.valid_until),
        "decided_by": approval.decided_by,
        "decided_at": isoformat(approval.decided_at),
        "note": approval.note,
        "action_id": approval.action_id,
        "on_expiry": approval.on_expiry,
        "blocks_run": approval.blocks_run,
        "approvers": list(approval.approvers) if approval.approvers is not None else None,
        "escalate_at": isoformat(approval.escalate_at),
        "destination": approval.destination,
        "proposed_sha256": approval.proposed_sha256,
        "edit": edit,
        "diff": diff,
        "marks": payload_marks(payload),
    }


def payload_marks(payload: Any) -> list[dict[str, Any]] | None:
    """What in the payload may not read as what it is (gateway/domain/deception.py), as the console's
    approval page marks it: `{path, kind, text, code_points}` each; None when no payload is shown."""
    if payload is None:
        return None
    return [
        {"path": m.path, "kind": m.kind, "text": m.text, "code_points": list(m.code_points)} for m in marks(payload)
    ]


def approval_diff(
    approval: ApprovalRecord, payload: Any, against: ApprovalRecord, against_payload: Any
) -> dict[str, Any]:
    """What changed since `against` (the last approval of the same tool in the run that a person
    approved): the payload field by field (JSON pointers) and as a unified diff of its pretty JSON,
    the spec_version, the tool definition. `changes` and `unified` are null when either payload was
    purged."""
    shown = payload is not None and against_payload is not None
    return {
        "against": against.approval_id,
        "against_status": against.status.value,
        "against_payload_sha256": against.payload_sha256,
        "same_payload": against.payload_sha256 == approval.payload_sha256,
        "changes": payload_changes(against_payload, payload) if shown else None,
        "unified": _unified(against_payload, payload, against.approval_id, approval.approval_id) if shown else None,
        "spec_version": (
            None
            if against.spec_version == approval.spec_version
            else {"from": against.spec_version, "to": approval.spec_version}
        ),
        "tool_definition_changed": against.tool_def_sha256 != approval.tool_def_sha256,
    }


def approval_edit(approval: ApprovalRecord, payload: Any, proposed: Any) -> dict[str, Any] | None:
    """The approver's edit against the agent's proposal (None: approved as proposed); `changes` and
    `unified` null when either body was purged."""
    if approval.proposed_sha256 is None:
        return None
    shown = payload is not None and proposed is not None
    return {
        "proposed_sha256": approval.proposed_sha256,
        "proposed_payload": proposed,
        "changes": payload_changes(proposed, payload) if shown else None,
        "unified": _unified(proposed, payload, "proposed", "approved") if shown else None,
    }


def payload_changes(old: Any, new: Any, path: str = "") -> list[dict[str, Any]]:
    """The fields that differ, as `{path, before?, after?}` (RFC 6901 pointers; a side is absent
    where the field is). Objects are compared key by key; anything else as a whole, canonically
    (so `1` and `1.0`, which hash the same, are the same here too)."""
    if isinstance(old, dict) and isinstance(new, dict):
        out: list[dict[str, Any]] = []
        for key in sorted(set(old) | set(new)):
            pointer = f"{path}/{key.replace('~', '~0').replace('/', '~1')}"
            if key not in old:
                out.append({"path": pointer, "after": new[key]})
            elif key not in new:
                out.append({"path": pointer, "before": old[key]})
            else:
                out += payload_changes(old[key], new[key], pointer)
        return out
    try:
        same = canonical_json(old) == canonical_json(new)
    except ValueError:
        same = old == new
    return [] if same else [{"path": path, "before": old, "after": new}]


def _unified(old: Any, new: Any, old_label: str, new_label: str) -> str:
    def lines(value: Any) -> list[str]:
        return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False).splitlines()

    return "\n".join(difflib.unified_diff(lines(old), lines(new), old_label, new_label, lineterm=""))


def dropped_view(dropped: DroppedRefusals) -> dict[str, Any]:
    """Refusals answered but not recorded (limits.refusals), by limit, and per lease token."""
    return {
        "rate": dropped.rate,
        "max_per_run": dropped.max_per_run,
        "by_epoch": [{"epoch": e, "rate": r, "max_per_run": m} for e, r, m in dropped.by_epoch],
    }


def event_view(event: EventRecord) -> dict[str, Any]:
    """The entry in its envelope (gateway/domain/events.py: v, id, message, task_id, progress),
    with the recorded `data` and the chain `hash`, as an events reader may see them."""
    body = envelope(event.run_id, event.seq, event.type, event.at, event.data, event.progress)
    body["data"] = event.data
    body["hash"] = event.hash
    return body
