"""The services' OpenAPI 3.1 documents: complete enough for `warrant adapters import-openapi`, every
schema valid JSON Schema, and the answers the services really give valid against them."""

from __future__ import annotations

import re
from typing import Any

import httpx
import jsonschema
import pytest

from tests.services.conftest import Svc

pytestmark = pytest.mark.anyio

TOOLS = {  # by the document's title
    "CRM": {
        "search_contacts",
        "get_contact",
        "create_contact",
        "update_contact",
        "delete_contact",
        "create_deal",
        "list_deals",
        "add_note",
    },
    "Email": {"send", "list_outbox", "get_message"},
}
METHODS = {"get", "post", "patch", "put", "delete"}


def operations(document: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [(m, p, op) for p, item in document["paths"].items() for m, op in item.items() if m in METHODS]


def schemas(op: dict[str, Any]) -> list[dict[str, Any]]:
    found = [param["schema"] for param in op.get("parameters", [])]
    found += [media["schema"] for media in op.get("requestBody", {}).get("content", {}).values()]
    for response in op["responses"].values():
        found += [media["schema"] for media in response.get("content", {}).values()]
    return found


@pytest.fixture(params=["crm", "mail"])
def svc(request: pytest.FixtureRequest) -> Svc:
    fixture: Svc = request.getfixturevalue(f"{request.param}_svc")
    return fixture


async def document_of(svc: Svc) -> dict[str, Any]:
    response = await svc.client.get("/openapi.json")
    assert response.status_code == 200
    document: dict[str, Any] = response.json()
    return document


async def test_every_public_operation_is_a_tool_named_by_its_operation_id(svc: Svc) -> None:
    document = await document_of(svc)
    assert document["openapi"] == "3.1.0"
    ops = operations(document)
    ids = [op["operationId"] for _, _, op in ops]
    assert len(ids) == len(set(ids))
    assert {op["operationId"] for _, _, op in ops if not op.get("x-internal")} == TOOLS[document["info"]["title"]]
    internal = {(m, p) for m, p, op in ops if op.get("x-internal")}
    assert internal == {("get", "/by-key/{key}"), ("get", "/healthz")}


async def test_every_schema_in_the_document_is_valid_json_schema(svc: Svc) -> None:
    for _, _, op in operations(await document_of(svc)):
        for schema in schemas(op):
            jsonschema.validators.validator_for(schema).check_schema(schema)


async def test_parameters_bodies_and_keys_are_declared(svc: Svc) -> None:
    for method, path, op in operations(await document_of(svc)):
        params = {(p["in"], p["name"]): p for p in op.get("parameters", [])}
        for name in re.findall(r"\{([^}]+)\}", path):
            assert params[("path", name)]["required"] is True
        success = next(code for code in op["responses"] if code.startswith("2"))
        response_schema = op["responses"][success]["content"]["application/json"]["schema"]
        if method in ("post", "patch"):
            assert ("header", "Idempotency-Key") in params
            body = op["requestBody"]["content"]["application/json"]["schema"]
            assert body["type"] == "object"
            assert set(body.get("required", [])) <= set(body["properties"])
            assert "id" in response_schema["required"]
            assert "default" in op["responses"]
        else:
            assert "requestBody" not in op


async def call(svc: Svc, method: str, path: str, body: dict[str, Any] | None = None) -> httpx.Response:
    response = await svc.client.request(method, path, json=body)
    assert response.is_success, response.text
    return response


async def test_the_answers_match_the_documented_response_schemas(crm_svc: Svc, mail_svc: Svc) -> None:
    contact = (await call(crm_svc, "POST", "/contacts", {"email": "ana@acme.example"})).json()
    message = (await call(mail_svc, "POST", "/messages", {"to": "ana@acme.example", "subject": "Hi"})).json()
    samples: list[tuple[Svc, list[tuple[str, str, dict[str, Any] | None]]]] = [
        (
            crm_svc,
            [
                ("GET", "/contacts", None),
                ("GET", f"/contacts/{contact['id']}", None),
                ("PATCH", f"/contacts/{contact['id']}", {"name": "Ana"}),
                ("POST", "/deals", {"contact_id": contact["id"], "title": "T", "amount": "10"}),
                ("GET", "/deals", None),
                ("POST", f"/contacts/{contact['id']}/notes", {"text": "hello"}),
                ("GET", "/healthz", None),
            ],
        ),
        (mail_svc, [("GET", "/messages", None), ("GET", f"/messages/{message['id']}", None)]),
    ]
    for svc, requests in samples:
        document = await document_of(svc)
        patterns = [(m, re.compile(re.sub(r"\{[^}]+\}", "[^/]+", p) + "$"), op) for m, p, op in operations(document)]
        for method, path, body in requests:
            response = await call(svc, method, path, body)
            (op,) = [op for m, pattern, op in patterns if m == method.lower() and pattern.match(path)]
            schema = op["responses"][str(response.status_code)]["content"]["application/json"]["schema"]
            jsonschema.validate(response.json(), schema)
