"""GET /api/openapi.json: a valid OpenAPI 3.1 document naming every served route, and the views'
output (views.py) conforming to the response models it is generated from (schemas.py)."""

from __future__ import annotations

from typing import Any

import pytest
import schemathesis
from jsonschema import Draft202012Validator
from starlette.routing import Route

from gateway.api import openapi, schemas
from gateway.domain.tasks import TASK_ID_META, TaskStatus, parse_plan
from gateway.drill.history import drill_run
from gateway.drill.runner import Result
from gateway.oauth import PATHS as OAUTH_PATHS
from tests.api.conftest import CONTRACT, Api
from tests.api.test_operator_api import create_run, lease
from tests.api.test_resolve import unknown_action

pytestmark = pytest.mark.anyio


async def fetch_document(api: Api) -> dict[str, Any]:
    async with api.client(None) as c:  # no key: the document says what exists, not what anyone holds
        r = await c.get("/api/openapi.json")
    assert r.status_code == 200
    document: dict[str, Any] = r.json()
    return document


def served(api: Api) -> set[tuple[str, str]]:
    """(method, path) of every route the app serves over plain HTTP, HEAD aside (/mcp is MCP's, and
    the OAuth server's endpoints are described by its RFC 8414 metadata, not by this document)."""
    found = set()
    for route in api.app.routes:
        if isinstance(route, Route) and route.methods is not None and route.path not in OAUTH_PATHS:
            found |= {(method, route.path) for method in route.methods if method != "HEAD"}
    return found


async def test_the_document_is_valid_openapi_3_1(api: Api) -> None:
    document = await fetch_document(api)
    assert document["openapi"] == "3.1.0"
    schemathesis.openapi.from_dict(document).validate()
    assert document == openapi.document()  # what test_schemathesis.py loads without a server


async def test_every_served_route_is_in_the_document_and_nothing_else(api: Api) -> None:
    document = await fetch_document(api)
    documented = {(method.upper(), path) for path, item in document["paths"].items() for method in item}
    assert documented == served(api)


async def test_every_operation_names_its_errors_with_the_error_envelope(api: Api) -> None:
    document = await fetch_document(api)
    envelope = document["components"]["responses"]
    for status in ("400", "401", "403", "404", "409", "413", "422", "501"):
        schema = envelope[status]["content"]["application/json"]["schema"]
        assert schema == {"$ref": "#/components/schemas/ErrorBody"}
    for path, item in document["paths"].items():
        for method, operation in item.items():
            public = path in ("/healthz", "/api/openapi.json")
            assert ("401" not in operation["responses"]) == public, (method, path)
            assert operation.get("security") != [] or public, (method, path)
    successor = document["paths"]["/api/runs/{run_id}/successor"]["post"]["responses"]
    assert {"201", "403", "404", "409", "422"} <= set(successor)
    assert document["components"]["securitySchemes"]["apiKey"] == {
        "type": "http",
        "scheme": "bearer",
        "description": "an API key",
    }


class Conformance:
    """Checks JSON bodies against the document's response schema of their operation."""

    def __init__(self, document: dict[str, Any]) -> None:
        self.document = document
        self.checked: set[str] = set()

    def check(self, method: str, path: str, status: int, body: Any) -> None:
        responses = self.document["paths"][path][method.lower()]["responses"]
        response = responses[str(status)]
        if "$ref" in response:
            response = self.document["components"]["responses"][response["$ref"].rsplit("/", 1)[1]]
        schema = response["content"]["application/json"]["schema"]
        name = schema["$ref"].rsplit("/", 1)[1]
        Draft202012Validator({**schema, "components": self.document["components"]}).validate(body)
        model = getattr(schemas, name)
        model.model_validate(body)  # extra="forbid": a field a view emits without its model fails here
        self.checked.add(name)


async def test_the_views_output_conforms_to_the_response_models(api: Api) -> None:
    conformance = Conformance(await fetch_document(api))
    check = conformance.check
    run = await create_run(api)
    check("POST", "/api/runs", 201, run)
    rid = run["run_id"]
    grant = await lease(api, rid)
    check("POST", "/api/runs/{run_id}/lease", 201, grant)
    gate = api.gateway.gate
    await gate.call(grant["token"], "shop__find", {"q": "a"})
    await gate.call(grant["token"], "shop__nope", {})
    await gate.call(grant["token"], "shop__charge", {"card": "ok"})
    await gate.call(grant["token"], "shop__order", {"to": "bob@example.com"})  # an approval, pending
    _, _, unknown = await unknown_action(api)
    async with api.client("ops") as c:
        renewed = await c.post("/api/leases/renew", headers={"Authorization": f"Bearer {grant['token']}"})
        check("POST", "/api/leases/renew", 200, renewed.json())
        check("GET", "/api/runs", 200, (await c.get("/api/runs")).json())
        check("GET", "/api/runs/{run_id}", 200, (await c.get(f"/api/runs/{rid}")).json())
        check("GET", "/api/runs/{run_id}/actions", 200, (await c.get(f"/api/runs/{rid}/actions")).json())
        check("GET", "/api/runs/{run_id}/events", 200, (await c.get(f"/api/runs/{rid}/events")).json())
        check("GET", "/api/actions", 200, (await c.get("/api/actions")).json())
        check("GET", "/api/runs/{run_id}/plan", 200, (await c.get(f"/api/runs/{rid}/plan")).json())  # none yet
        plan = parse_plan([{"id": "a", "title": "A"}, {"id": "b", "title": "B", "depends_on": ["a"]}], max_tasks=9)
        store = api.gateway.store
        await store.save_plan(rid, epoch=grant["epoch"], worker="w", expected_version=0, plan=plan)
        await store.move_task(rid, epoch=grant["epoch"], worker="w", task_id="a", status=TaskStatus.RUNNING)
        await gate.call(grant["token"], "shop__find", {"q": "b"}, {TASK_ID_META: "a"})
        check("GET", "/api/runs/{run_id}/plan", 200, (await c.get(f"/api/runs/{rid}/plan")).json())
        check("GET", "/api/runs/{run_id}/recovery", 200, (await c.get(f"/api/runs/{rid}/recovery")).json())
        check("GET", "/api/runs/{run_id}/actions", 200, (await c.get(f"/api/runs/{rid}/actions")).json())
        approvals = (await c.get("/api/approvals")).json()
        check("GET", "/api/approvals", 200, approvals)
        approval_id = approvals["items"][0]["approval_id"]
        check("GET", "/api/approvals/{approval_id}", 200, (await c.get(f"/api/approvals/{approval_id}")).json())
        check("GET", "/api/ledger/verify", 200, (await c.get("/api/ledger/verify")).json())
        check("GET", "/api/tools", 200, (await c.get("/api/tools")).json())
        check("GET", "/api/tools/pending", 200, (await c.get("/api/tools/pending")).json())
        check("GET", "/healthz", 200, (await c.get("/healthz")).json())
        reconciled = await c.post(f"/api/runs/{rid}/reconcile")
        check("POST", "/api/runs/{run_id}/reconcile", 200, reconciled.json())
        resolved = await c.post(f"/api/actions/{unknown}/resolve", json={"status": "failed", "evidence": "none"})
        check("POST", "/api/actions/{action_id}/resolve", 200, resolved.json())
        check("POST", "/api/runs/{run_id}/pause", 200, (await c.post(f"/api/runs/{rid}/pause")).json())
        bad = await c.post("/api/runs", json={"goal": ""})
        check("POST", "/api/runs", 422, bad.json())
        live = await c.post(f"/api/runs/{rid}/successor", json={"reason": "too early"})
        check("POST", "/api/runs/{run_id}/successor", 409, live.json())
        usage = await c.post(f"/api/runs/{rid}/usage", json={"kind": "model", "amount": "0.42", "ref": "r1"})
        check("POST", "/api/runs/{run_id}/usage", 201, usage.json())
        check("GET", "/api/runs/{run_id}/report", 200, (await c.get(f"/api/runs/{rid}/report")).json())
        lineage = f"/api/lineages/{run['lineage_id']}/report"
        check("GET", "/api/lineages/{lineage_id}/report", 200, (await c.get(lineage)).json())
        check("GET", "/api/reports", 200, (await c.get("/api/reports", params={"status": "running"})).json())
        info = {"passed": 1, "failed": 0, "skipped": 1, "failed_cases": []}
        results = [Result("crash", "integrity", "active", "replayed", "replayed", 0, [], "pass")]
        kept = drill_run(
            results, info, started_at=1.0, seconds=2.0, profile="full", modes="both", sabotage=None, by="me"
        )
        await api.gateway.store.record_drill("acme", kept)
        check("GET", "/api/drills", 200, (await c.get("/api/drills")).json())
    async with api.client("appr") as c:
        decided = await c.post(f"/api/approvals/{approval_id}/approve", json={})
        check("POST", "/api/approvals/{approval_id}/approve", 200, decided.json())
    async with api.client("ops") as c:  # a revision supersedes unused approvals: after the decision
        patch = {"budgets": {"writes": 5}}
        revised = await c.post(f"/api/runs/{rid}/revise", json={"spec_version": "v2", "patch": patch})
        check("POST", "/api/runs/{run_id}/revise", 200, revised.json())
        child = {**CONTRACT, "budgets": {**CONTRACT["budgets"], "spend": "0.10", "tool_calls": 5, "writes": 1}}
        delegated = await c.post(f"/api/runs/{rid}/children", json=child)
        check("POST", "/api/runs/{run_id}/children", 201, delegated.json())
    async with api.client(None) as c:
        check("GET", "/api/runs", 401, (await c.get("/api/runs")).json())
    expected = {
        "RunView",
        "RunDetail",
        "ActionPage",
        "EventPage",
        "ApprovalView",
        "ChargeView",
        "RunReport",
        "ReportSums",
        "DrillList",
        "RevisedRun",
        "ErrorBody",
        "PlanView",
        "RecoveryPackage",
    }
    assert expected <= conformance.checked


@pytest.mark.parametrize(
    ("path", "params", "code"),
    [
        ("/api/runs", {"limit": "²"}, "invalid_request"),  # a digit to str.isdigit, not to int(): was a 500
        ("/api/runs", {"limit": "9" * 5000}, "invalid_request"),  # past int()'s digit limit: was a 500
        ("/api/runs", {"status": "sleeping"}, "invalid_request"),  # was an empty list
        ("/api/runs/{rid}/events", {"cursor": "²"}, "invalid_cursor"),  # was a 500
        ("/api/runs/{rid}/events", {"after": "9" * 30}, "invalid_cursor"),  # past SQLite's integer: was a 500
    ],
)
async def test_query_values_the_document_refuses_are_422_never_500(
    api: Api, path: str, params: dict[str, str], code: str
) -> None:
    run = await create_run(api)
    async with api.client("ops") as c:
        r = await c.get(path.format(rid=run["run_id"]), params=params)
    assert (r.status_code, r.json()["error"]["code"]) == (422, code)
