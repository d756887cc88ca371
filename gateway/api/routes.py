"""The operator API core: runs, leases, controls, approvals, actions, events, audit, ledger verify.

Every route names the one permission it needs (gateway/domain/roles.py) and scopes every query to the
key's tenant: another tenant's run is 404, exactly like a missing one.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from gateway.api.approval_shown import approval_shown
from gateway.api.audit import audit_filters
from gateway.api.bodies import (
    AcknowledgeBody,
    CompensateBody,
    ControlBody,
    DecisionBody,
    FailBody,
    LeaseBody,
    ResolveBody,
    UsageBody,
)
from gateway.api.events import run_events
from gateway.api.export import export_run
from gateway.api.nul import refuse_nul_body, refuse_nul_url
from gateway.api.openapi import openapi_json
from gateway.api.views import action_view, approval_view, dropped_view, run_view
from gateway.clock import isoformat
from gateway.domain.contract import parse_contract, problems_of
from gateway.domain.keys import looks_like_api_key
from gateway.domain.leases import looks_like_token, token_hash
from gateway.domain.lifecycle import RunStatus, status_refusal
from gateway.domain.report import build_report
from gateway.domain.roles import require
from gateway.domain.units import format_money, parse_money
from gateway.errors import Code, InvalidRequest, NotFound, Refusal, Unauthenticated, WarrantError
from gateway.gate.compensations import Compensations
from gateway.gate.held_leases import hold
from gateway.gate.limits import LimitSettings, RateLimited, check_api_rate, too_large
from gateway.gate.pipeline import META_ACTION_ID, META_REPLAYED
from gateway.service import Gateway
from gateway.store.records import ApprovalRecord, ApprovalStatus, Principal, RunRecord
from gateway.tools.plan_view import plan_view
from gateway.tools.standing_view import read_standing, standing_view

log = logging.getLogger("warrant.api")

Handler = Callable[[Request, Principal, Gateway], Awaitable[Response]]
M = TypeVar("M", bound=BaseModel)


def error_response(error: WarrantError) -> JSONResponse:
    headers = {"WWW-Authenticate": 'Bearer realm="warrant"'} if error.http_status == 401 else None
    if isinstance(error, RateLimited):
        headers = error.headers()
    body = {"error": {"code": error.code, "message": error.message, **_jsonable(error.details)}}
    return JSONResponse(body, status_code=error.http_status, headers=headers)


def _jsonable(details: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in details.items() if k not in ("code", "message")}


def gateway_of(request: Request) -> Gateway:
    gateway: Gateway = request.app.state.gateway
    return gateway


def bearer(request: Request) -> str | None:
    header = request.headers.get("authorization", "")
    scheme, _, value = header.partition(" ")
    return value.strip() if scheme.lower() == "bearer" and value.strip() else None


async def authenticate_key(request: Request, gateway: Gateway) -> Principal:
    """The configuration's (bootstrap) keys first, then the store's, on every request and with no
    cache: a revoked key fails on its next request, on every replica.

    Raises: Unauthenticated for no key, or one unknown, revoked or expired.
    """
    key = bearer(request)
    if key is None:
        raise Unauthenticated("an API key is required: Authorization: Bearer <key>")
    digest = hashlib.sha256(key.encode()).hexdigest()
    principal = gateway.principal_for_key(digest)
    if principal is None and looks_like_api_key(key):
        stored = await gateway.store.find_api_key(digest)
        if stored is not None:
            principal = Principal(name=stored.name, tenant=stored.tenant, roles=stored.roles, key_id=stored.key_id)
    if principal is None:
        raise Unauthenticated("unknown API key")
    return principal


def endpoint(permission: str) -> Callable[[Handler], Callable[[Request], Awaitable[Response]]]:
    def wrap(handler: Handler) -> Callable[[Request], Awaitable[Response]]:
        async def route(request: Request) -> Response:
            gateway = gateway_of(request)
            try:
                principal = await authenticate_key(request, gateway)
                require(principal, permission)
                await check_api_rate(gateway.store, limits_of(request), principal)
                refuse_nul_url(request)
                return await handler(request, principal, gateway)
            except WarrantError as error:
                return error_response(error)

        route.__name__ = handler.__name__
        route.__dict__["permission"] = permission  # the role matrix test walks the routes by it
        return route

    return wrap


def limits_of(request: Request) -> LimitSettings:
    limits: LimitSettings = getattr(request.app.state, "limits", None) or LimitSettings()
    return limits


async def read_json(request: Request) -> Any:
    """Raises: InvalidRequest for a body over `limits.max_request_body` (413) or not JSON (400)."""
    cap = limits_of(request).max_request_body
    length = request.headers.get("content-length")
    if length is not None and length.isdigit() and int(length) > cap:
        raise too_large("body", cap)
    chunks: list[bytes] = []
    size = 0
    # A body without a length is not read past the cap either. (uvicorn answers the 413 to a
    # client still sending the rest: tests/api/test_limits_api.py sends 3 MB.)
    async for chunk in request.stream():
        size += len(chunk)
        if size > cap:
            raise too_large("body", cap)
        chunks.append(chunk)
    body = b"".join(chunks)
    if not body.strip():
        return {}
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError, RecursionError):  # RecursionError: nested past the parser's depth
        raise InvalidRequest("the body is not valid JSON", code=Code.INVALID_JSON).with_status(400) from None
    refuse_nul_body(data)
    return data


async def read_model(request: Request, model: type[M]) -> M:
    data = await read_json(request)
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        problems = problems_of(exc)
        raise InvalidRequest(f"the request has {len(problems)} problem(s)", problems=problems) from None


def query_limit(request: Request, default: int = 50, maximum: int = 500) -> int:
    raw = request.query_params.get("limit")
    if raw is None:
        return default
    if not (raw.isascii() and raw.isdigit() and len(raw) <= 6) or not 1 <= int(raw) <= maximum:
        raise InvalidRequest(f"limit must be a whole number from 1 to {maximum}", code=Code.INVALID_REQUEST)
    return int(raw)


async def run_to_act_for(gateway: Gateway, principal: Principal, run_id: str) -> RunRecord:
    """The run, when this key may act for it (lease it, report its usage): a worker-role key only for
    the runs whose contract names it in `workers`, when it names any.

    Raises: NotFound, also for a run the worker key is not given (it sees only its own).
    """
    run = await gateway.store.get_run(principal.tenant, run_id)
    workers = run.contract.get("workers") or []
    if workers and "worker" in principal.roles and not principal.roles & {"admin", "operator"}:
        if principal.name not in workers:
            raise NotFound(f"no run {run_id}")
    return run


# -- runs ------------------------------------------------------------------------------------
@endpoint("runs.create")
async def create_run(request: Request, principal: Principal, gateway: Gateway) -> Response:
    contract = parse_contract(await read_json(request))
    gateway.check_against_policy(contract)
    run = await gateway.store.create_run(principal, contract)
    return JSONResponse(run_view(run, gateway.clock.now()), status_code=201)


@endpoint("runs.read")
async def list_runs(request: Request, principal: Principal, gateway: Gateway) -> Response:
    status = request.query_params.get("status")
    if status is not None and status not in {s.value for s in RunStatus}:
        raise InvalidRequest(
            f"status must be one of {', '.join(s.value for s in RunStatus)}", code=Code.INVALID_REQUEST
        )
    page = await gateway.store.list_runs(
        principal.tenant, status=status, cursor=request.query_params.get("cursor"), limit=query_limit(request)
    )
    now = gateway.clock.now()
    damaged = [{"run_id": d.run_id, "code": d.code} for d in page.damaged]
    items = [run_view(r, now) for r in page.items]
    return JSONResponse({"items": items, "next_cursor": page.next_cursor, "damaged": damaged})


@endpoint("runs.read")
async def get_run(request: Request, principal: Principal, gateway: Gateway) -> Response:
    run = await gateway.store.get_run(principal.tenant, request.path_params["run_id"])
    view = run_view(run, gateway.clock.now())
    states = {m.milestone_id: m.status for m in await gateway.store.list_milestones(run.run_id)}
    for milestone in view["milestones"]:
        milestone["status"] = states.get(milestone["id"], milestone["status"])
    pending = await gateway.store.list_approvals(principal.tenant, status=ApprovalStatus.PENDING, run_id=run.run_id)
    view["approvals"] = [approval_view(a) for a in pending.items]
    view["refusals_dropped"] = dropped_view(await gateway.store.dropped_refusals(principal.tenant, run.run_id))
    view["standing"] = standing_view(
        await read_standing(gateway.store, run, gateway.clock.now(), pending=pending.items)
    )
    return JSONResponse(view)


@endpoint("leases.acquire")
async def acquire_lease(request: Request, principal: Principal, gateway: Gateway) -> Response:
    body = await read_model(request, LeaseBody)
    run_id = request.path_params["run_id"]
    await run_to_act_for(gateway, principal, run_id)
    if body.held:
        return await held_lease(request, principal, gateway, run_id, body)
    grant = await gateway.store.acquire_lease(principal, run_id, body.worker, takeover=body.takeover)
    return JSONResponse(
        {
            "run_id": grant.run_id,
            "token": grant.token,
            "epoch": grant.epoch,
            "worker": grant.worker,
            "expires_at": isoformat(grant.expires_at),
        },
        status_code=201,
    )


async def held_lease(
    request: Request, principal: Principal, gateway: Gateway, run_id: str, body: LeaseBody
) -> Response:
    """Raises: Refusal `lease_superseded` (naming the worker that holds it now) or `run_<terminal>`
    for a held lease that no longer holds; as `Store.hold_worker_lease`."""
    api_key = bearer(request)
    assert api_key is not None, "the endpoint authenticated it"
    held = await hold(gateway.store, principal, api_key, run_id, body.worker, takeover=body.takeover)
    if held.run.status.terminal:
        raise status_refusal(held.run.status)
    if not held.current:
        raise Refusal(
            Code.LEASE_SUPERSEDED,
            f"this key's lease on {run_id} was taken over by {held.run.lease_worker}; "
            "it stays dead until the lease is taken over for this key (takeover: true)",
            epoch=held.epoch,
            current_epoch=held.run.epoch,
            worker=held.run.lease_worker,
        )
    return JSONResponse(
        {
            "run_id": run_id,
            "token": held.token,
            "epoch": held.epoch,
            "worker": held.worker,
            "expires_at": isoformat(held.run.lease_expires_at),
            "held": True,
            "granted": held.created,
        },
        status_code=201,
    )


async def renew_lease(request: Request) -> Response:
    """Authenticated by the lease token itself, not an API key."""
    gateway = gateway_of(request)
    try:
        token = bearer(request)
        if token is None or not looks_like_token(token):
            raise Unauthenticated("a lease token is required: Authorization: Bearer <lease token>")
        try:
            grant = await gateway.store.renew_lease(token_hash(token))
        except NotFound:
            raise Unauthenticated("unknown lease token") from None
        return JSONResponse(
            {
                "run_id": grant.run_id,
                "epoch": grant.epoch,
                "worker": grant.worker,
                "expires_at": isoformat(grant.expires_at),
            }
        )
    except WarrantError as error:
        return error_response(error)


@endpoint("runs.control")
async def pause_run(request: Request, principal: Principal, gateway: Gateway) -> Response:
    body = await read_model(request, ControlBody)
    run = await gateway.pause(principal, request.path_params["run_id"], body.reason)
    return JSONResponse(run_view(run, gateway.clock.now()))


@endpoint("runs.control")
async def resume_run(request: Request, principal: Principal, gateway: Gateway) -> Response:
    body = await read_model(request, ControlBody)
    run, found = await gateway.resume_reconciled(principal, request.path_params["run_id"], body.reason)
    return JSONResponse({**run_view(run, gateway.clock.now()), "reconciliation": found})


@endpoint("runs.control")
async def cancel_run(request: Request, principal: Principal, gateway: Gateway) -> Response:
    body = await read_model(request, ControlBody)
    run = await gateway.cancel(principal, request.path_params["run_id"], body.reason, hard=body.hard)
    return JSONResponse(run_view(run, gateway.clock.now()))


@endpoint("runs.control")
async def fail_run(request: Request, principal: Principal, gateway: Gateway) -> Response:
    body = await read_model(request, FailBody)
    run = await gateway.fail(principal, request.path_params["run_id"], body.reason)
    return JSONResponse(run_view(run, gateway.clock.now()))


@endpoint("actions.read")
async def list_actions(request: Request, principal: Principal, gateway: Gateway) -> Response:
    run = await gateway.store.get_run(principal.tenant, request.path_params["run_id"])
    page = await gateway.store.list_actions(
        principal.tenant, run.run_id, cursor=request.query_params.get("cursor"), limit=query_limit(request, 100)
    )
    dropped = dropped_view(await gateway.store.dropped_refusals(principal.tenant, run.run_id))
    items = [action_view(a, run.currency) for a in page.items]
    return JSONResponse({"items": items, "next_cursor": page.next_cursor, "refusals_dropped": dropped})


@endpoint("events.read")
async def list_events(request: Request, principal: Principal, gateway: Gateway) -> Response:
    """JSON pages, or Server-Sent Events with `Accept: text/event-stream` (gateway/api/events.py)."""

    async def still_allowed() -> bool:
        try:
            now = await authenticate_key(request, gateway)
            require(now, "events.read")
        except WarrantError:
            return False
        return now.tenant == principal.tenant

    limit = query_limit(request, 100, 1000)
    return await run_events(request, principal.tenant, gateway, limit=limit, recheck=still_allowed)


@endpoint("actions.read")
async def audit_actions(request: Request, principal: Principal, gateway: Gateway) -> Response:
    """Actions across the tenant's runs, newest first, filtered (gateway/api/audit.py)."""
    filters = audit_filters(request.query_params)
    cursor, limit = request.query_params.get("cursor"), query_limit(request, 100)
    page = await gateway.store.audit_actions(principal.tenant, **filters.as_kwargs(), cursor=cursor, limit=limit)
    currencies: dict[str, str] = {}
    for action in page.items:
        if action.run_id not in currencies:
            currencies[action.run_id] = (await gateway.store.get_run(principal.tenant, action.run_id)).currency
    items = [action_view(a, currencies[a.run_id]) for a in page.items]
    return JSONResponse({"items": items, "next_cursor": page.next_cursor})


@endpoint("actions.resolve")
async def reconcile_run(request: Request, principal: Principal, gateway: Gateway) -> Response:
    found = await gateway.reconcile_reality(principal, request.path_params["run_id"])
    run = await gateway.store.get_run(principal.tenant, request.path_params["run_id"])
    view = run_view(run, gateway.clock.now())
    return JSONResponse({"run_id": run.run_id, "settled": len(found["actions"]), "run": view, "reconciliation": found})


@endpoint("runs.read")
async def run_recovery(request: Request, principal: Principal, gateway: Gateway) -> Response:
    """The recovery package (docs/progress.md): what the next worker needs to go on."""
    run_id = request.path_params["run_id"]
    assert gateway.progress is not None, "the app builds the gateway with its progress part"
    return JSONResponse(await gateway.progress.recovery(principal.tenant, run_id))


@endpoint("runs.read")
async def run_plan(request: Request, principal: Principal, gateway: Gateway) -> Response:
    """The run's plan (docs/tasks.md): each task's state, attempts and calls, the current and next task."""
    return JSONResponse(plan_view(await gateway.store.read_plan(principal.tenant, request.path_params["run_id"])))


@endpoint("actions.resolve")
async def acknowledge_action(request: Request, principal: Principal, gateway: Gateway) -> Response:
    """Accept an `unknown` action as uncertain, so the run may complete naming it."""
    body = await read_model(request, AcknowledgeBody)
    action, ack = await gateway.store.acknowledge_action(principal, request.path_params["action_id"], body.note)
    run = await gateway.store.get_run(principal.tenant, action.run_id)
    return JSONResponse({**action_view(action, run.currency), "acknowledged": ack})


@endpoint("actions.resolve")
async def compensate_action(request: Request, principal: Principal, gateway: Gateway) -> Response:
    """Undo a confirmed write with the compensating call its policy names (docs/compensation.md):
    200 with the compensating action (settled, or `unknown` to be reconciled; a second request
    answers the first), 409 with the refusal (the error body, `original` among its details) when
    nothing was dispatched."""
    body = await read_model(request, CompensateBody)
    action_id = request.path_params["action_id"]
    result = await Compensations(gateway.gate).for_operator(principal, action_id, body.reason)
    original = await gateway.store.get_action(principal.tenant, action_id)
    run = await gateway.store.get_run(principal.tenant, original.run_id)
    made = result.meta.get(META_ACTION_ID)
    compensation = None
    if isinstance(made, str):
        action = await gateway.store.get_action(principal.tenant, made)
        compensation = action_view(action, run.currency) if action.compensates == action_id else None
    error = (result.structured or {}).get("error") if result.is_error else None
    if compensation is None:  # nothing dispatched: the house's error body, the original among its details
        refused = dict(error or {"code": Code.CONFLICT, "message": "the compensation was refused"})
        return JSONResponse({"error": {**refused, "original": action_view(original, run.currency)}}, status_code=409)
    answer = {
        "original": action_view(original, run.currency),
        "compensation": compensation,
        "replayed": bool(result.meta.get(META_REPLAYED)),
        "code": result.code,
        "error": error,
    }
    return JSONResponse(answer, status_code=200)


@endpoint("actions.resolve")
async def resolve_action(request: Request, principal: Principal, gateway: Gateway) -> Response:
    body = await read_model(request, ResolveBody)
    action = await gateway.resolve(
        principal,
        request.path_params["action_id"],
        body.status,
        body.evidence,
        receipt_id=body.receipt_id,
        actual_spend=body.actual_spend,
        duplicate=body.duplicate,
    )
    run = await gateway.store.get_run(principal.tenant, action.run_id)
    return JSONResponse(action_view(action, run.currency))


@endpoint("usage.report")
async def report_usage(request: Request, principal: Principal, gateway: Gateway) -> Response:
    """Model or runtime spend against the run: recorded even past its limit (it already happened)."""
    body = await read_model(request, UsageBody)
    run_id = request.path_params["run_id"]
    run = await run_to_act_for(gateway, principal, run_id)
    try:
        amount = parse_money(body.amount, run.currency)
    except ValueError as exc:
        raise InvalidRequest(
            f"the amount is not one in {run.currency}", problems=[{"field": "amount", "problem": str(exc)}]
        ) from None
    recorded = await gateway.store.report_usage(
        principal, run_id, kind=body.kind, amount=amount, note=body.note, ref=body.ref
    )
    charge, after = recorded.charge, recorded.run
    spend = {
        "limit": format_money(after.limits["spend"], after.currency),
        "reserved": format_money(after.reserved["spend"], after.currency),
        "spent": format_money(after.spent["spend"], after.currency),
        "remaining": format_money(after.remaining(gateway.clock.now())["spend"], after.currency),
    }
    view = {
        "charge_id": charge.charge_id,
        "run_id": charge.run_id,
        "kind": charge.kind,
        "tag": charge.tag,
        "amount": format_money(charge.amount, after.currency),
        "note": charge.note,
        "ref": charge.ref,
        "by": charge.principal,
        "created_at": isoformat(charge.created_at),
        "replayed": recorded.replayed,
        "spend": spend,
    }
    return JSONResponse(view, status_code=201)


@endpoint("runs.read")
async def run_report(request: Request, principal: Principal, gateway: Gateway) -> Response:
    """The pilot measures (gateway/domain/report.py), from the ledger's records."""
    inputs = await gateway.store.report_inputs(principal.tenant, request.path_params["run_id"])
    return JSONResponse(build_report(inputs, gateway.clock.now()).as_dict())


# -- approvals -------------------------------------------------------------------------------
@endpoint("approvals.read")
async def list_approvals(request: Request, principal: Principal, gateway: Gateway) -> Response:
    raw_status = request.query_params.get("status")
    try:
        status = ApprovalStatus(raw_status) if raw_status else None
    except ValueError:
        raise InvalidRequest(
            f"status must be one of {', '.join(s.value for s in ApprovalStatus)}", code=Code.INVALID_REQUEST
        ) from None
    page = await gateway.store.list_approvals(
        principal.tenant,
        status=status,
        run_id=request.query_params.get("run_id"),
        cursor=request.query_params.get("cursor"),
        limit=query_limit(request),
    )
    items = [await _approval_shown(gateway, principal, a) for a in page.items]
    return JSONResponse({"items": items, "next_cursor": page.next_cursor})


async def _approval_shown(gateway: Gateway, principal: Principal, approval: ApprovalRecord) -> dict[str, Any]:
    """An approval with its exact payload and its diff against the last one a person approved."""
    return await approval_shown(gateway, principal.tenant, approval)


@endpoint("approvals.read")
async def get_approval(request: Request, principal: Principal, gateway: Gateway) -> Response:
    approval = await gateway.store.get_approval(principal.tenant, request.path_params["approval_id"])
    return JSONResponse(await _approval_shown(gateway, principal, approval))


async def _decide(request: Request, principal: Principal, gateway: Gateway, approve: bool) -> Response:
    body = await read_model(request, DecisionBody)
    approval = await gateway.decide_approval(
        principal,
        request.path_params["approval_id"],
        approve=approve,
        note=body.note,
        expected_sha256=body.expected_sha256,
        arguments=body.arguments,
    )
    return JSONResponse(await _approval_shown(gateway, principal, approval))


@endpoint("approvals.decide")
async def approve(request: Request, principal: Principal, gateway: Gateway) -> Response:
    return await _decide(request, principal, gateway, True)


@endpoint("approvals.decide")
async def deny(request: Request, principal: Principal, gateway: Gateway) -> Response:
    return await _decide(request, principal, gateway, False)


# -- ledger ----------------------------------------------------------------------------------
@endpoint("ledger.verify")
async def verify_ledger(request: Request, principal: Principal, gateway: Gateway) -> Response:
    report = await gateway.store.verify_ledger(principal.tenant)
    return JSONResponse(report.as_dict())


def not_yet(what: str, issue: str) -> Callable[[Request], Awaitable[Response]]:
    async def route(request: Request) -> Response:
        gateway = gateway_of(request)
        try:
            await authenticate_key(request, gateway)
        except WarrantError as error:
            return error_response(error)
        body = {
            "error": {"code": Code.NOT_IMPLEMENTED, "message": f"{what} is not served by this version yet ({issue})"}
        }
        return JSONResponse(body, status_code=501)

    route.__dict__["permission"] = None  # any key; the route answers 501 until it is built
    return route


routes = [
    Route("/api/runs", create_run, methods=["POST"]),
    Route("/api/runs", list_runs, methods=["GET"]),
    Route("/api/runs/{run_id}", get_run, methods=["GET"]),
    Route("/api/runs/{run_id}/lease", acquire_lease, methods=["POST"]),
    Route("/api/runs/{run_id}/pause", pause_run, methods=["POST"]),
    Route("/api/runs/{run_id}/resume", resume_run, methods=["POST"]),
    Route("/api/runs/{run_id}/cancel", cancel_run, methods=["POST"]),
    Route("/api/runs/{run_id}/fail", fail_run, methods=["POST"]),
    Route("/api/runs/{run_id}/actions", list_actions, methods=["GET"]),
    Route("/api/runs/{run_id}/events", list_events, methods=["GET"]),
    Route("/api/leases/renew", renew_lease, methods=["POST"]),
    Route("/api/approvals", list_approvals, methods=["GET"]),
    Route("/api/approvals/{approval_id}", get_approval, methods=["GET"]),
    Route("/api/approvals/{approval_id}/approve", approve, methods=["POST"]),
    Route("/api/approvals/{approval_id}/deny", deny, methods=["POST"]),
    Route("/api/ledger/verify", verify_ledger, methods=["GET"]),
    Route("/api/runs/{run_id}/export", endpoint("ledger.verify")(export_run), methods=["GET"]),
    Route("/api/runs/{run_id}/reconcile", reconcile_run, methods=["POST"]),
    Route("/api/runs/{run_id}/usage", report_usage, methods=["POST"]),
    Route("/api/runs/{run_id}/recovery", run_recovery, methods=["GET"]),
    Route("/api/runs/{run_id}/plan", run_plan, methods=["GET"]),
    Route("/api/runs/{run_id}/report", run_report, methods=["GET"]),
    Route("/api/actions/{action_id}/resolve", resolve_action, methods=["POST"]),
    Route("/api/actions/{action_id}/acknowledge", acknowledge_action, methods=["POST"]),
    Route("/api/actions/{action_id}/compensate", compensate_action, methods=["POST"]),
    Route("/api/actions", audit_actions, methods=["GET"]),
    Route("/api/openapi.json", openapi_json, methods=["GET"]),
]
