"""The console's approvals inbox: the tenant's approvals, one approval with its exact destination and
payload, the agent's evidence and rationale, a diff against the previous proposal for the same tool,
the time left to decide, and approve / edit-and-approve / deny forms.

As the API: reading needs `approvals.read`, deciding `approvals.decide`; every query is scoped to the
key's tenant (another tenant's approval is 404, like a missing one); the decision is the store's own
`decide_approval`, with the payload hash the page showed as `expected_sha256`, so a stale page cannot
approve a payload it did not show, and self-approval and role rules are the store's, not repeated here.

"Edit and approve" posts the edited payload as JSON (a textarea prefilled with the proposal) to the
service's `decide_approval`, which checks it as the run's own call would be: a payload that is not
a JSON object, or that the run may not send (`edit_outside_authority`), is shown back on the page
with the reason and the text as typed, nothing decided (docs/decisions/0032-approve-edited.md).
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import ValidationError
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from gateway.api.approval_shown import approval_shown
from gateway.api.bodies import DecisionBody
from gateway.api.routes import gateway_of, query_limit
from gateway.api.views import approval_view
from gateway.console.pages import HEADERS, Console
from gateway.domain.roles import permits, require
from gateway.errors import Code, InvalidRequest, WarrantError
from gateway.service import Gateway
from gateway.store.records import ApprovalRecord, ApprovalStatus, Principal

VERBS = ("approve", "deny", "edit")
EDIT_REFUSALS = (Code.EDIT_OUTSIDE_AUTHORITY, Code.INVALID_JSON)  # shown on the page, beside the form
FILTERS = ("pending", "all", *(s.value for s in ApprovalStatus if s is not ApprovalStatus.PENDING))


def approval_routes(console: Console) -> list[Route]:
    pages = ApprovalPages(console)
    return [
        Route("/approvals", console.page("approvals.read", pages.inbox), methods=["GET"]),
        Route("/approvals/{approval_id}", console.page("approvals.read", pages.approval), methods=["GET"]),
        Route("/approvals/{approval_id}/{verb}", pages.decide, methods=["POST"]),
    ]


class ApprovalPages:
    def __init__(self, console: Console) -> None:
        self.console = console
        console.templates.env.filters["pretty"] = pretty

    async def inbox(self, request: Request, principal: Principal, gateway: Gateway, csrf: str) -> Response:
        """One page of the tenant's approvals in the API's order (GET /api/approvals): pending by default."""
        shown = request.query_params.get("status", "pending")
        if shown not in FILTERS:
            raise InvalidRequest(f"status must be one of {', '.join(FILTERS)}", code=Code.INVALID_REQUEST)
        page = await gateway.store.list_approvals(
            principal.tenant,
            status=None if shown == "all" else ApprovalStatus(shown),
            cursor=request.query_params.get("cursor"),
            limit=query_limit(request),
        )
        now = gateway.clock.now()
        items = []
        for approval in page.items:
            payload = await gateway.store.get_blob(approval.payload_sha256)
            items.append(self._facts(gateway, approval_view(approval, payload), approval, now))
        context = {
            "principal": principal,
            "csrf": csrf,
            "approvals": items,
            "shown": shown,
            "filters": FILTERS,
            "next_cursor": page.next_cursor,
            "may_read_runs": permits(principal, "runs.read"),
        }
        return self.console.render(request, "approvals.html", context)

    async def approval(
        self,
        request: Request,
        principal: Principal,
        gateway: Gateway,
        csrf: str,
        edit_error: WarrantError | None = None,
        edit_text: str | None = None,
    ) -> Response:
        approval = await gateway.store.get_approval(principal.tenant, request.path_params["approval_id"])
        view = await approval_shown(gateway, principal.tenant, approval, against="proposed")
        facts = self._facts(gateway, view, approval, gateway.clock.now())
        context = {
            "principal": principal,
            "csrf": csrf,
            "approval": facts,
            "may_decide": permits(principal, "approvals.decide"),
            "may_read_runs": permits(principal, "runs.read"),
            "own_request": approval.requested_by == principal.name,
            "edit_error": edit_error,
            "edit_text": edit_text if edit_text is not None else pretty(view["payload"]),
        }
        status = edit_error.http_status if edit_error is not None else 200
        return self.console.render(request, "approval.html", context, status)

    async def decide(self, request: Request) -> Response:
        """POST approve / deny: the session, then the CSRF token, then `approvals.decide`, then the store."""
        console = self.console
        posted = await console.form_post(request, VERBS)
        if isinstance(posted, Response):
            return posted
        principal, csrf, form = posted
        approval_id = request.path_params["approval_id"]
        verb = request.path_params["verb"]
        gateway = gateway_of(request)
        text = form.get("arguments", "") if verb == "edit" else None
        try:
            require(principal, "approvals.decide")
            body = decision(form)
            await gateway.decide_approval(
                principal,
                approval_id,
                approve=verb != "deny",
                note=body.note,
                expected_sha256=body.expected_sha256,
                arguments=edited(text) if text is not None else None,
            )
        except WarrantError as error:
            if text is not None and error.code in EDIT_REFUSALS:
                try:
                    return await self.approval(request, principal, gateway, csrf, edit_error=error, edit_text=text)
                except WarrantError as unreadable:
                    error = unreadable
            return console.refused(request, error, principal, csrf)
        return RedirectResponse(f"/console/approvals/{approval_id}", status_code=303, headers=HEADERS)

    def _facts(self, gateway: Gateway, view: dict[str, Any], approval: ApprovalRecord, now: float) -> dict[str, Any]:
        """The API's view, with where the call goes and how long is left, as the pages say them."""
        spec = gateway.catalog.get(approval.tool)
        if spec is None:
            destination = f"{approval.tool} (no longer in this gateway's catalog)"
        else:
            destination = spec.adapter.destination(spec.tool, view["payload"])
        # The view's `marks` (views.payload_marks): what the approver reads may not be what is sent.
        return {**view, "destination": destination, "time_left": time_left(approval, now)}


def decision(form: dict[str, str]) -> DecisionBody:
    """The form's note and payload hash, checked as the API checks its JSON body; the hash is required here.

    Raises: InvalidRequest.
    """
    note = form.get("note", "").replace("\r\n", "\n").strip() or None  # a textarea's lines end CRLF
    expected = form.get("payload_sha256", "")
    try:
        body = DecisionBody.model_validate({"note": note, "expected_sha256": expected or None})
    except ValidationError:
        body = None
    if body is None or body.expected_sha256 is None:
        raise InvalidRequest(
            "the form must carry the payload_sha256 the page showed (64 hex digits) and a note of at most "
            "4000 characters without control characters: nothing was decided",
            code=Code.INVALID_REQUEST,
        )
    return body


def edited(text: str) -> dict[str, Any]:
    """The edit form's payload: a JSON object. Raises: InvalidRequest `invalid_json` naming what is wrong."""
    try:
        value = json.loads(text)
    except ValueError as error:
        raise InvalidRequest(
            f"the edited payload is not JSON ({error}): nothing was decided", code=Code.INVALID_JSON
        ) from None
    if not isinstance(value, dict):
        raise InvalidRequest(
            "the edited payload must be a JSON object: nothing was decided", code=Code.INVALID_JSON
        ) from None
    return value


def time_left(approval: ApprovalRecord, now: float) -> str:
    """What is left to decide (pending) or to use the approval (approved), in words; '' otherwise."""
    if approval.status is ApprovalStatus.PENDING:
        return f"{duration(approval.decide_by - now)} left to decide" if now < approval.decide_by else "expired"
    if approval.status is ApprovalStatus.APPROVED and approval.valid_until is not None:
        left = approval.valid_until - now
        return f"valid {duration(left)} more" if left > 0 else "expired unused"
    return ""


def duration(seconds: float) -> str:
    """`1h 05m`, `4m 10s`, `12s`: whole seconds, rounded down."""
    whole = max(0, int(seconds))
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h {minutes:02d}m"
    return f"{minutes}m {secs:02d}s" if minutes else f"{secs}s"


def pretty(value: Any) -> str:
    """Indented JSON, keys sorted as the diff shows them; the template escapes it."""
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False)


__all__ = ["approval_routes"]
