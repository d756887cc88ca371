"""An approver's edit and denial, as the gate checks the one and answers the model with both
(docs/decisions/0032-approve-edited.md).

An edited payload is checked as the agent's own call would be, before any approval is decided: the
tool's input schema, the policy, the contract's allow/deny and constraints (`authority_refusal`), the
tool definition the proposal was asked under, and the approval rule the edit falls under — an edit
that would need a stricter approval than the one being decided (another role, fewer approvers, a
shorter validity) is refused, not approved under the looser one. Any refusal is 422
`edit_outside_authority`, its `constraint` the code the agent's call would have met.

To the model: the payload a person replaced is answered `approval_edited` with the exact approved
arguments in `details.arguments` (and in the answer's text, never in the recorded reason: the ledger
keeps hashes, the blobs keep bodies); a denied payload is answered `approval_denied` with the
approver's message verbatim (`gateway/text.py`'s `for_model`) and what the model may do.
"""

from __future__ import annotations

from typing import Any

from gateway.canonical import canonical_json, sha256_hex
from gateway.catalog.catalog import ToolSpec
from gateway.domain.approvals import Requirement
from gateway.domain.contract import Terms
from gateway.errors import Code, InvalidRequest, Refusal
from gateway.policy.engine import approval_rule, authority_refusal
from gateway.store.records import ApprovalEdit, ApprovalRecord
from gateway.text import for_model


def outside(constraint: str, problem: str, **details: Any) -> InvalidRequest:
    return InvalidRequest(
        f"the edited arguments are outside what this run may do, nothing was decided: {problem}",
        code=Code.EDIT_OUTSIDE_AUTHORITY,
        constraint=constraint,
        **details,
    )


def checked_edit(spec: ToolSpec | None, terms: Terms, approval: ApprovalRecord, arguments: Any) -> ApprovalEdit:
    """What `approval` binds once approved with `arguments` instead of its proposal.

    Raises: InvalidRequest `edit_outside_authority` (422) naming the constraint the edit fails.
    """
    try:
        body = canonical_json(arguments)
    except ValueError:
        raise outside(Code.INVALID_ARGUMENTS, "the arguments are not representable as canonical JSON") from None
    refusal = authority_refusal(approval.tool, spec, terms, arguments)
    if refusal is not None or spec is None:
        assert refusal is not None
        return _raise(refusal)
    if spec.definition_sha256 != approval.tool_def_sha256:
        raise outside(
            Code.TOOL_DEFINITION_CHANGED,
            f"the definition of {approval.tool} changed since this approval was asked for; the agent must ask again",
        )
    rule = approval_rule(approval.tool, spec, terms, arguments)
    if rule is not None and not Requirement.of(rule).met_by(approval.requirement):
        raise outside(
            "approval_rule",
            f"the edited arguments fall under a stricter approval rule for {approval.tool} (role {rule.role}, "
            f"valid for {rule.valid_for}, approvers {rule.approvers or 'anyone with the role'}) than the one "
            "this approval was asked under; deny it and let the agent propose the edit",
            role=rule.role,
            approvers=rule.approvers,
        )
    return ApprovalEdit(arguments, sha256_hex(body), spec.adapter.destination(spec.tool, arguments))


def _raise(refusal: Refusal) -> ApprovalEdit:
    problem = refusal.message.removeprefix("not executed: ")
    raise outside(refusal.code, problem, refusal=refusal.to_dict())


def edited_refusal(approval: ApprovalRecord, arguments: Any) -> Refusal:
    """The answer to a call with the payload a person replaced by an edit: the approved arguments, to
    resend verbatim (in `details.arguments`; the text quotes them as `echo`, answered, never recorded)."""
    note = f"; the approver's note: {for_model(approval.note)}" if approval.note else ""
    return Refusal(
        Code.APPROVAL_EDITED,
        f"not executed: a person approved an edited version of this payload instead (approval "
        f"{approval.approval_id}){note}; call {approval.tool} again with exactly the approved arguments "
        "(error.details.arguments, payload_sha256 as given) to make the approved call; this payload stays "
        "refused",
        echo=f"approved arguments: {canonical_json(arguments).decode()}" if arguments is not None else None,
        approval_id=approval.approval_id,
        tool=approval.tool,
        arguments=arguments,
        payload_sha256=approval.payload_sha256,
        proposed_sha256=approval.proposed_sha256,
        status=approval.status.value,
        note=for_model(approval.note) if approval.note else None,
    )


def denied_refusal(approval: ApprovalRecord) -> Refusal:
    """The answer to a call with a payload a person denied: the approver's message, verbatim."""
    message = for_model(approval.note) if approval.note else None
    said = f"; the approver's message: {message}" if message else " (no message given)"
    return Refusal(
        Code.APPROVAL_DENIED,
        f"not executed: a person denied this exact payload (approval {approval.approval_id}){said}; this payload "
        f"stays refused: change the arguments as the message asks and call {approval.tool} again (or propose "
        "the changed payload with warrant_propose, giving evidence and a rationale)",
        approval_id=approval.approval_id,
        tool=approval.tool,
        note=message,
        denied_by=approval.decided_by,
    )
