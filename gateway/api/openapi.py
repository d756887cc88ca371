"""`GET /api/openapi.json`: the operator API as an OpenAPI 3.1 document, generated from its models.

Request bodies are the models the routes validate with (gateway/api/bodies.py, and the contract);
responses are gateway/api/schemas.py, which mirrors views.py. `OPERATIONS` names every served
route once; tests/api/test_openapi.py checks it against the app's routes both ways, and
schemathesis (tests/api/test_schemathesis.py) checks the server against the document.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel
from pydantic.json_schema import models_json_schema
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from gateway import __version__
from gateway.api import schemas
from gateway.api.bodies import (
    MAX_LISTED,
    AcceptBody,
    AcknowledgeBody,
    CompensateBody,
    ControlBody,
    CreateKeyBody,
    DeadLetterBody,
    DecisionBody,
    DisconnectBody,
    FailBody,
    LeaseBody,
    PurgeBody,
    ResolveBody,
    ReviseBody,
    RevokeKeyBody,
    RotateKeyBody,
    SignalBody,
    SuccessorBody,
    UsageBody,
)
from gateway.domain.contract import TAG_PATTERN, Contract
from gateway.domain.lifecycle import ActionStatus, RunStatus
from gateway.domain.roles import ROLES
from gateway.gate.limits import LimitSettings
from gateway.store.records import ApprovalStatus
from gateway.store.reports import MAX_REPORT_RUNS

Security = Literal["key", "lease", "none"]
DEFAULT_MAX_BODY = LimitSettings().max_request_body  # when warrant.yaml does not set it

ERRORS: dict[int, str] = {
    400: "the body is not JSON (`invalid_json`)",
    401: "no API key, or an unknown one (`unauthenticated`)",
    403: "the key's roles may not do this (`forbidden`)",
    404: "no such object, or another tenant's (`not_found`)",
    409: "the object's state does not allow it now (`lease_held`, `run_cancelled`, `payload_mismatch`, ...)",
    413: "the body is larger than {max_body} bytes, this gateway's `limits.max_request_body` (`payload_too_large`)",
    422: "the body or query is invalid (`invalid_request`, `invalid_contract`, `invalid_cursor`, "
    "`approval_looser_than_policy`); `problems` lists why",
    429: "the key's tenant or the key is over its rate (`rate_limited`, `retry_after_s`); wait `Retry-After` seconds",
    501: "served by a later version (`not_implemented`)",
    503: "the store could not answer in time (`store_unavailable`); retry",
}
BODY_ERRORS = (400, 413, 422)


@dataclass(frozen=True)
class Param:
    name: str
    schema: dict[str, Any]
    description: str
    where: Literal["query", "header"] = "query"


@dataclass(frozen=True)
class Op:
    method: str
    path: str
    summary: str
    permission: str | None  # None: no API key is asked for (see `security`)
    ok: int = 200
    response: type[BaseModel] | None = None
    body: type[BaseModel] | None = None
    body_required: bool = False
    query: tuple[Param, ...] = ()
    errors: tuple[int, ...] = ()  # beyond those every route of its kind answers
    security: Security = "key"
    stream: bool = False  # also answers text/event-stream
    media: str | None = None  # answers a body that is not JSON, of this media type
    later: bool = False  # a route of a later issue: 501

    def statuses(self) -> list[int]:
        if self.later:
            return [401, 501]
        found = set(self.errors)
        if self.security == "key":
            found |= {401, 403, 429, 503}
        if self.security == "lease":
            found |= {401, 409, 503}
        if "{" in self.path:
            found.add(404)
        if self.body is not None:
            found |= set(BODY_ERRORS)
        if self.query:
            found.add(422)
        return sorted(found)


def _limit(default: int, maximum: int) -> Param:
    return Param("limit", {"type": "integer", "minimum": 1, "maximum": maximum, "default": default}, "page size")


CURSOR = Param("cursor", {"type": "string"}, "the `next_cursor` of the previous page")
SEQ = {"type": "string", "pattern": r"^[0-9]{1,18}$"}
TEXT = {"type": "string", "minLength": 1, "maxLength": 256}
TIME = {"type": "string", "format": "date-time"}


def _enum(values: type[Any]) -> dict[str, Any]:
    return {"type": "string", "enum": [v.value for v in values]}


def _operations() -> tuple[Op, ...]:
    run = "/api/runs/{run_id}"
    approval = "/api/approvals/{approval_id}"
    return (
        Op(
            "GET",
            "/healthz",
            "Health: the store, its background work and every adapter; version and tool count",
            None,
            response=schemas.Health,
            security="none",
        ),
        Op(
            "GET",
            "/metrics",
            "Prometheus metrics: the gate's counters, the key's tenant's gauges",
            "metrics.read",
            media="text/plain",
        ),
        Op("GET", "/api/openapi.json", "This document", None, security="none"),
        Op("POST", "/api/runs", "Create a run from a contract", "runs.create", 201, schemas.RunView, Contract, True),
        Op(
            "GET",
            "/api/runs",
            "List the tenant's runs, oldest first; a damaged row is named in `damaged`, never silently skipped",
            "runs.read",
            response=schemas.RunPage,
            query=(Param("status", _enum(RunStatus), "only runs in this status"), CURSOR, _limit(50, 500)),
        ),
        Op(
            "GET",
            run,
            "One run: budgets, lease, milestones, pending approvals",
            "runs.read",
            response=schemas.RunDetail,
        ),
        Op(
            "POST",
            f"{run}/lease",
            "Acquire the run's lease (or take it over)",
            "leases.acquire",
            201,
            schemas.LeaseGranted,
            LeaseBody,
            True,
            errors=(409,),
        ),
        *(
            Op(
                "POST",
                f"{run}/{verb}",
                f"{verb.capitalize()} the run",
                "runs.control",
                200,
                schemas.RunView,
                ControlBody,
                errors=(409,),
            )
            for verb in ("pause", "cancel")
        ),
        Op(
            "POST",
            f"{run}/fail",
            "End the run failed: its reason kept as its cause, a run_failed entry and alert",
            "runs.control",
            200,
            schemas.RunView,
            FailBody,
            True,
            errors=(409,),
        ),
        Op(
            "POST",
            f"{run}/resume",
            "Resume the run: unknown actions looked up, artifacts and sources re-checked, then running",
            "runs.control",
            200,
            schemas.ResumedRun,
            ControlBody,
            errors=(409,),
        ),
        Op(
            "GET",
            f"{run}/actions",
            "The run's action ledger, oldest first",
            "actions.read",
            response=schemas.RunActionPage,
            query=(CURSOR, _limit(100, 500)),
        ),
        Op(
            "GET",
            f"{run}/events",
            "The run's history; with `Accept: text/event-stream`, followed as Server-Sent Events",
            "events.read",
            response=schemas.EventPage,
            query=(
                Param("cursor", SEQ, "the seq of the last entry seen"),
                Param("after", SEQ, "the same as `cursor`"),
                _limit(100, 1000),
                Param("Last-Event-ID", SEQ, "where a stream resumes; wins over `cursor`", "header"),
            ),
            stream=True,
        ),
        Op(
            "POST",
            "/api/leases/renew",
            "Renew a lease (Bearer: the lease token)",
            None,
            response=schemas.LeaseRenewed,
            security="lease",
        ),
        Op(
            "GET",
            "/api/approvals",
            "Approvals with their exact payloads",
            "approvals.read",
            response=schemas.ApprovalPage,
            query=(
                Param("status", _enum(ApprovalStatus), "only approvals in this status"),
                Param("run_id", TEXT, "only this run's approvals"),
                CURSOR,
                _limit(50, 500),
            ),
        ),
        Op("GET", approval, "One approval", "approvals.read", response=schemas.ApprovalView),
        *(
            Op(
                "POST",
                f"{approval}/{verb}",
                f"{verb.capitalize()} the exact payload shown",
                "approvals.decide",
                200,
                schemas.ApprovalView,
                DecisionBody,
                errors=(409,),
            )
            for verb in ("approve", "deny")
        ),
        Op(
            "GET", "/api/ledger/verify", "Recompute the tenant's chains", "ledger.verify", response=schemas.LedgerReport
        ),
        Op(
            "POST",
            "/api/ledger/purge",
            "Purge settled actions' bodies now (docs/retention.md); hashes and chains stay, every chain verifies",
            "ledger.purge",
            200,
            schemas.PurgeDone,
            PurgeBody,
            True,
            errors=(404,),
        ),
        Op(
            "GET",
            f"{run}/export",
            "The run's evidence bundle: JSON Lines, verifiable offline with the ledger key",
            "ledger.verify",
            media="application/x-ndjson",
        ),
        Op(
            "POST",
            f"{run}/revise",
            "Revise the contract by a merge patch; widening needs an admin (`runs.widen`)",
            "runs.control",
            200,
            schemas.RevisedRun,
            ReviseBody,
            True,
            errors=(409,),
        ),
        Op(
            "POST",
            f"{run}/reconcile",
            "Ask the adapters about unknown actions now and re-check artifacts and sources",
            "actions.resolve",
            response=schemas.Reconciled,
            errors=(409,),
        ),
        Op(
            "POST",
            f"{run}/successor",
            "A new run in a terminal run's lineage, with its remaining budget; extend_by needs an admin",
            "runs.control",
            201,
            schemas.RunView,
            SuccessorBody,
            errors=(409,),
        ),
        Op(
            "POST",
            f"{run}/children",
            "A delegated sub-run, its budget carved out of the live parent's",
            "runs.create",
            201,
            schemas.RunView,
            Contract,
            True,
            errors=(409,),
        ),
        Op(
            "POST",
            f"{run}/usage",
            "Report model or runtime spend against the run; a retry with the same `ref` is charged once",
            "usage.report",
            201,
            schemas.ChargeView,
            UsageBody,
            True,
            errors=(409,),
        ),
        Op(
            "POST",
            f"{run}/signal",
            "Send the run an outside event: recorded once per idempotency_key; a waiting run whose wait names it "
            "goes on",
            "runs.signal",
            200,
            schemas.SignalView,
            SignalBody,
            True,
            errors=(409,),
        ),
        Op(
            "GET",
            f"{run}/dead-letters",
            "The run's dead letters: operation ids given up after their retry policy's max_attempts, oldest first",
            "runs.read",
            response=schemas.DeadLetterPage,
        ),
        Op(
            "POST",
            "/api/dead-letters/{dead_letter_id}/retry",
            "Send a dead letter's call again through the gate under a fresh operation id",
            "actions.resolve",
            200,
            schemas.DeadLetterRetried,
            DeadLetterBody,
            True,
            errors=(409,),
        ),
        Op(
            "POST",
            "/api/dead-letters/{dead_letter_id}/resolve",
            "Mark a dead letter dealt with otherwise",
            "actions.resolve",
            200,
            schemas.DeadLetterView,
            DeadLetterBody,
            True,
            errors=(409,),
        ),
        Op(
            "POST",
            "/api/dead-letters/{dead_letter_id}/drop",
            "Give a dead letter up",
            "actions.resolve",
            200,
            schemas.DeadLetterView,
            DeadLetterBody,
            True,
            errors=(409,),
        ),
        Op("GET", f"{run}/recovery", "The recovery package", "runs.read", response=schemas.RecoveryPackage),
        Op(
            "GET",
            f"{run}/plan",
            "The run's plan: each task's state, attempts and calls, the current task and the next eligible one",
            "runs.read",
            response=schemas.PlanView,
        ),
        Op("GET", f"{run}/report", "The pilot measures and the cost by tag", "runs.read", response=schemas.RunReport),
        Op(
            "GET",
            "/api/lineages/{lineage_id}/report",
            "The pilot measures of every run of a lineage, summed",
            "runs.read",
            response=schemas.ReportSums,
        ),
        Op(
            "GET",
            "/api/reports",
            "The pilot measures of the tenant's runs, newest first, filtered and summed (bounded: `truncated`)",
            "runs.read",
            response=schemas.ReportSums,
            query=(
                Param("tag", {"type": "string", "pattern": TAG_PATTERN}, "only runs whose contract has this tag"),
                Param("since", {"type": "string", "format": "date-time"}, "runs created at or after"),
                Param("until", {"type": "string", "format": "date-time"}, "runs created before"),
                Param(
                    "status", {"type": "string"}, f"a comma-separated list of {', '.join(s.value for s in RunStatus)}"
                ),
                _limit(50, MAX_REPORT_RUNS),
            ),
        ),
        Op(
            "GET",
            "/api/drills",
            "The drill runs recorded against this store (`warrant drill --record`), newest first",
            "runs.read",
            response=schemas.DrillList,
            query=(CURSOR, _limit(20, 100)),
        ),
        Op(
            "GET",
            f"{run}/connections",
            "The run's connected clients (MCP authorization's grants), newest first, each with its status",
            "runs.read",
            response=schemas.ConnectionList,
            query=(_limit(100, MAX_LISTED),),
        ),
        Op(
            "POST",
            f"{run}/connections/{{grant_id}}/revoke",
            "Disconnect a client: its tokens stop at once and the run's lease it held is freed",
            "runs.control",
            200,
            schemas.ConnectionView,
            DisconnectBody,
            True,
        ),
        Op(
            "POST",
            "/api/actions/{action_id}/resolve",
            "Settle an unknown action with evidence",
            "actions.resolve",
            200,
            schemas.ActionView,
            ResolveBody,
            True,
            errors=(409,),
        ),
        Op(
            "POST",
            "/api/actions/{action_id}/acknowledge",
            "Accept an unknown action as uncertain, so that its run may complete naming it",
            "actions.resolve",
            200,
            schemas.Acknowledged,
            AcknowledgeBody,
            True,
            errors=(409,),
        ),
        Op(
            "POST",
            "/api/actions/{action_id}/compensate",
            "Undo a confirmed write with the compensating call its policy names, through the gate",
            "actions.resolve",
            200,
            schemas.Compensated,
            CompensateBody,
            True,
            errors=(409,),
        ),
        Op(
            "GET",
            "/api/actions",
            "Audit: actions across the tenant's runs, newest first; every filter given must hold",
            "actions.read",
            response=schemas.ActionPage,
            query=(
                Param("tool", TEXT, "the exposed tool name"),
                Param("status", _enum(ActionStatus), "the action's status"),
                Param("code", TEXT, "the refusal or failure code"),
                Param("principal", TEXT, "the worker on the action, or the API key that granted its lease"),
                Param("run_id", TEXT, "one run"),
                Param("since", TIME, "admitted at or after (ISO 8601 with an offset)"),
                Param("until", TIME, "admitted before (ISO 8601 with an offset)"),
                CURSOR,
                _limit(100, 500),
            ),
        ),
        Op("GET", "/api/tools", "Exposed tools with their pin state", "tools.read", response=schemas.ToolPage),
        Op(
            "GET",
            "/api/tools/pending",
            "Tool definitions waiting for an admin, as diffs",
            "tools.read",
            response=schemas.PendingToolPage,
        ),
        Op(
            "POST",
            "/api/tools/{name}/accept",
            "Pin exactly the definition shown",
            "tools.accept",
            200,
            schemas.ToolView,
            AcceptBody,
            True,
            errors=(409,),
        ),
        Op(
            "POST",
            "/api/keys",
            "Create an API key, shown once",
            "keys.manage",
            201,
            schemas.KeyCreated,
            CreateKeyBody,
            True,
            errors=(409,),
        ),
        Op(
            "GET",
            "/api/keys",
            "The tenant's API keys (the first page starts with the bootstrap keys); never a key or its hash",
            "keys.manage",
            response=schemas.KeyPage,
            query=(CURSOR, _limit(50, 500)),
        ),
        Op(
            "GET",
            "/api/keys/events",
            "Every change to the tenant's keys, oldest first",
            "keys.manage",
            response=schemas.KeyEventPage,
            query=(Param("key_id", TEXT, "only this key's changes"), CURSOR, _limit(100, 500)),
        ),
        Op(
            "POST",
            "/api/keys/{key_id}/revoke",
            "Revoke a key: it fails from its next request on",
            "keys.manage",
            200,
            schemas.KeyView,
            RevokeKeyBody,
            errors=(409,),
        ),
        Op(
            "POST",
            "/api/keys/{key_id}/rotate",
            "A new key for this one; the old one works for the overlap",
            "keys.manage",
            201,
            schemas.KeyRotated,
            RotateKeyBody,
            True,
            errors=(409,),
        ),
    )


def _roles_with(permission: str) -> str:
    return ", ".join(role for role, granted in ROLES.items() if permission in granted)


def _json(schema: dict[str, Any]) -> dict[str, Any]:
    return {"application/json": {"schema": schema}}


Refs = dict[tuple[Any, Literal["validation", "serialization"]], dict[str, Any]]


def _operation(op: Op, refs: Refs) -> dict[str, Any]:
    description = op.summary + "."
    if op.permission is not None:
        description += f" Permission `{op.permission}` (roles: {_roles_with(op.permission)})."
    if op.later:
        description += " Not served by this version: answers 501."
    out: dict[str, Any] = {
        "operationId": f"{op.method.lower()}_{op.path.strip('/').replace('/', '_').replace('{', '').replace('}', '')}",
        "summary": op.summary,
        "description": description,
    }
    if op.security == "none":
        out["security"] = []
    elif op.security == "lease":
        out["security"] = [{"leaseToken": []}]
    names = [part[1:-1] for part in op.path.split("/") if part.startswith("{")]
    params = [
        {"name": name, "in": "path", "required": True, "schema": {"type": "string", "minLength": 1}} for name in names
    ]
    params += [
        {"name": p.name, "in": p.where, "required": False, "schema": p.schema, "description": p.description}
        for p in op.query
    ]
    if params:
        out["parameters"] = params
    if op.body is not None:
        out["requestBody"] = {"required": op.body_required, "content": _json(refs[(op.body, "validation")])}
    ok: dict[str, Any] = {"description": "OK" if op.ok == 200 else "Created"}
    if op.response is not None:
        ok["content"] = _json(refs[(op.response, "serialization")])
    elif op.path == "/api/openapi.json":
        ok["content"] = _json({"type": "object"})
    elif op.media is not None:
        ok["content"] = {op.media: {"schema": {"type": "string"}}}
    if op.stream:
        ok["content"]["text/event-stream"] = {"schema": {"type": "string"}}
        ok["description"] = (
            "JSON pages, or a stream of `id: <seq>`, `event: <type>`, `data: <the entry>` (docs/events.md)"
        )
    responses: dict[str, Any] = {} if op.later else {str(op.ok): ok}
    for status in op.statuses():
        responses[str(status)] = {"$ref": f"#/components/responses/{status}"}
    if op.path == "/healthz":  # degraded is the same body, with 503
        responses["503"] = {"description": "Degraded", "content": ok["content"]}
    out["responses"] = responses
    return out


@functools.cache
def document(max_body: int = DEFAULT_MAX_BODY) -> dict[str, Any]:
    """The OpenAPI 3.1 document for a gateway whose body cap is `max_body`, built once per process."""
    operations = _operations()
    requests = {op.body for op in operations if op.body is not None}
    responses = {op.response for op in operations if op.response is not None} | {schemas.ErrorBody}
    keys: list[tuple[type[BaseModel], Literal["validation", "serialization"]]] = [
        *((m, "validation") for m in sorted(requests, key=lambda m: m.__name__)),
        *((m, "serialization") for m in sorted(responses, key=lambda m: m.__name__)),
    ]
    refs, top = models_json_schema(keys, ref_template="#/components/schemas/{model}")
    paths: dict[str, dict[str, Any]] = {}
    for op in operations:
        paths.setdefault(op.path, {})[op.method.lower()] = _operation(op, refs)
    error = refs[(schemas.ErrorBody, "serialization")]
    error_responses: dict[str, Any] = {
        str(status): {"description": text.format(max_body=max_body), "content": _json(error)}
        for status, text in ERRORS.items()
    }
    error_responses["401"]["headers"] = {
        "WWW-Authenticate": {"schema": {"type": "string"}, "description": 'Bearer realm="warrant"'}
    }
    error_responses["429"]["headers"] = {
        "Retry-After": {"schema": {"type": "string"}, "description": "whole seconds to wait before trying again"}
    }
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "Warrant operator API",
            "version": __version__,
            "description": "Runs, leases, approvals, the action ledger and each run's history. Lists answer "
            '`{"items", "next_cursor"}`; errors `{"error": {"code", "message", ...}}`; money is a decimal string.',
        },
        "paths": paths,
        "components": {
            "schemas": top.get("$defs", {}),
            "responses": error_responses,
            "securitySchemes": {
                "apiKey": {"type": "http", "scheme": "bearer", "description": "an API key"},
                "leaseToken": {"type": "http", "scheme": "bearer", "description": "a run's lease token (`wl_...`)"},
            },
        },
        "security": [{"apiKey": []}],
    }


async def openapi_json(request: Request) -> Response:
    """No key needed: the document says what exists, never what a tenant holds; the body cap it
    names is this gateway's."""
    limits = getattr(request.app.state, "limits", None)
    return JSONResponse(document(limits.max_request_body if limits is not None else DEFAULT_MAX_BODY))
