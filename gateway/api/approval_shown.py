"""An approval as the API and the console show it: its exact payload, and a diff against an earlier
approval of the same tool in the same run.

The API's `diff` compares with the last one a person approved (what changed since I last said yes);
the console's approval page compares with the previous proposal, whatever became of it (what the
agent changed since it last asked). Both are `approval_diff` of views.py; only the other side differs.
"""

from __future__ import annotations

from typing import Any, Literal

from gateway.api.views import approval_diff, approval_edit, approval_view
from gateway.service import Gateway
from gateway.store.records import ApprovalRecord

Against = Literal["approved", "proposed"]


async def approval_shown(
    gateway: Gateway, tenant: str, approval: ApprovalRecord, *, against: Against = "approved"
) -> dict[str, Any]:
    """The approval's view with its payload and its diff against the earlier approval `against` names."""
    payload = await gateway.store.get_blob(approval.payload_sha256)
    if against == "approved":
        before = await gateway.store.approved_before(tenant, approval.approval_id)
    else:
        before = await gateway.store.proposed_before(tenant, approval.approval_id)
    diff = None
    if before is not None:
        diff = approval_diff(approval, payload, before, await gateway.store.get_blob(before.payload_sha256))
    edit = None
    if approval.proposed_sha256 is not None:  # approved in an edited version: shown against the proposal
        edit = approval_edit(approval, payload, await gateway.store.get_blob(approval.proposed_sha256))
    return approval_view(approval, payload, diff, edit)
