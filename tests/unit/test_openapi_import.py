"""The OpenAPI → http adapter import (gateway/adapters/http/openapi_import.py): pure, a document in, a draft out."""

from __future__ import annotations

import copy
import re
from typing import Any

import jsonschema
import pytest
import yaml

from gateway.adapters import Adapter, CallRequest, Outcome, OutcomeKind, ToolDefinition
from gateway.adapters.http import ImportResult, OpenApiError, import_openapi
from gateway.adapters.http.openapi_import import IDEMPOTENCY_HEADER, MAX_EXPOSED, TOOL_NAME, WRITE_TIMEOUT
from gateway.catalog import Catalog
from gateway.catalog.catalog import ADAPTER_NAME, EXPOSED_NAME
from gateway.cli.adapters import render
from gateway.policy import parse_policy

AT = "2026-01-01T00:00:00Z"
KEY = {"name": "Idempotency-Key", "in": "header", "schema": {"type": "string"}}


def _created(schema_ref: str = "#/components/schemas/Contact") -> dict[str, Any]:
    return {"201": {"description": "created", "content": {"application/json": {"schema": {"$ref": schema_ref}}}}}


def _json_body(schema: dict[str, Any], required: bool = True) -> dict[str, Any]:
    return {"required": required, "content": {"application/json": {"schema": schema}}}


# Shaped like the demo CRM: keyed writes with a by-key lookup, reads with query parameters.
CRM: dict[str, Any] = {
    "openapi": "3.1.0",
    "info": {"title": "Demo CRM", "version": "1.0"},
    "servers": [{"url": "http://127.0.0.1:8801"}],
    "paths": {
        "/contacts": {
            "get": {
                "operationId": "search_contacts",
                "summary": "Search contacts",
                "parameters": [
                    {"name": "q", "in": "query", "required": True, "schema": {"type": "string"}},
                    {"$ref": "#/components/parameters/Limit"},
                ],
                "responses": {"200": {"description": "ok"}},
            },
            "post": {
                "operationId": "create_contact",
                "summary": "Create a contact.",
                "parameters": [{**KEY, "name": "idempotency-key"}],
                "requestBody": {"$ref": "#/components/requestBodies/NewContact"},
                "responses": _created(),
            },
        },
        "/contacts/by-key/{key}": {
            "get": {
                "operationId": "contact_by_key",
                "parameters": [{"name": "key", "in": "path", "required": True, "schema": {"type": "string"}}],
                "responses": _created(),
            }
        },
        "/contacts/{contact_id}": {
            "parameters": [{"name": "contact_id", "in": "path", "required": True, "schema": {"type": "string"}}],
            "get": {"operationId": "get_contact", "responses": {"200": {"description": "ok"}}},
            "patch": {
                "operationId": "update_contact",
                "parameters": [KEY],
                "requestBody": _json_body({"type": "object", "properties": {"name": {"type": "string"}}}),
                "responses": _created(),
            },
            "delete": {"operationId": "delete_contact", "responses": {"204": {"description": "gone"}}},
        },
        "/notes": {
            "post": {
                "operationId": "add_note",
                "requestBody": _json_body({"type": "object", "properties": {"text": {"type": "string"}}}),
                "responses": {"200": {"description": "ok"}},
            }
        },
    },
    "components": {
        "parameters": {"Limit": {"name": "limit", "in": "query", "schema": {"type": "integer", "maximum": 100}}},
        "requestBodies": {"NewContact": _json_body({"$ref": "#/components/schemas/NewContact"})},
        "schemas": {
            "NewContact": {
                "type": "object",
                "required": ["email"],
                "properties": {"email": {"type": "string"}, "name": {"type": "string"}},
            },
            "Contact": {
                "allOf": [
                    {"$ref": "#/components/schemas/NewContact"},
                    {"type": "object", "properties": {"id": {"type": "string"}}},
                ]
            },
        },
    },
}


def _import(spec: dict[str, Any], name: str = "crm", **options: Any) -> ImportResult:
    return import_openapi(spec, name=name, source="crm.json", generated_at=AT, **options)


def _doc(paths: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {
        "openapi": "3.0.3",
        "info": {"title": "t", "version": "1"},
        "servers": [{"url": "http://h"}],
        "paths": paths,
        **extra,
    }


def _op(**fields: Any) -> dict[str, Any]:
    return {"responses": {"200": {"description": "ok"}}, **fields}


def _codes(result: ImportResult, tool: str | None) -> set[str]:
    return {r.code for r in result.reviews if r.tool == tool}


class _Listed(Adapter):
    def __init__(self, name: str, definitions: list[ToolDefinition]) -> None:
        self.name = name
        self._definitions = definitions

    def definitions(self) -> list[ToolDefinition]:
        return self._definitions

    async def call(self, request: CallRequest) -> Outcome:
        return Outcome(OutcomeKind.NOT_SENT)


def assert_valid_http_adapter(document: dict[str, Any]) -> None:
    """The fields of DESIGN.md's adapter example, and what the gateway checks of each tool."""
    assert set(document) <= {"name", "kind", "base_url", "headers", "key_retention", "tools"}
    assert ("key_retention" in document) == any("lookup" in t for t in document["tools"].values())
    assert document["kind"] == "http" and ADAPTER_NAME.fullmatch(document["name"])
    assert re.fullmatch(r"https?://[^/\s]+(/\S*)?", document["base_url"]) and not document["base_url"].endswith("/")
    assert document["tools"]
    for name, tool in document["tools"].items():
        assert TOOL_NAME.fullmatch(name) and EXPOSED_NAME.fullmatch(f"{document['name']}__{name}")
        allowed = {"description", "method", "path", "input_schema", "timeout", "idempotency_header", "receipt_id"}
        assert set(tool) <= allowed | {"lookup", "query", "body"}
        assert isinstance(tool["description"], str) and tool["description"]
        assert tool["method"] in {"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"}
        assert tool["path"].startswith("/") and "?" not in tool["path"]
        schema = tool["input_schema"]
        assert schema["type"] == "object" and "idempotency_key" not in schema["properties"]
        jsonschema.validators.validator_for(schema).check_schema(schema)
        in_path = re.findall(r"\{([^{}]*)\}", tool["path"])
        for param in in_path:
            assert re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", param)
            assert param in schema["properties"] and param in schema["required"]
        mapped = [*tool.get("query", []), *tool.get("body", [])]
        assert len(set(mapped)) == len(mapped) and not set(mapped) & set(in_path)
        assert set(mapped) <= set(schema["properties"])
        assert "body" not in tool or tool["method"] not in {"GET", "HEAD"}
        if "lookup" in tool:
            assert set(tool["lookup"]) == {"method", "path"} and "{idempotency_key}" in tool["lookup"]["path"]
            assert tool.get("idempotency_header") and tool.get("receipt_id")
    # The catalog takes every tool, under the policies the header suggests.
    definitions = [ToolDefinition(n, t["description"], t["input_schema"]) for n, t in document["tools"].items()]
    Catalog([_Listed(document["name"], definitions)], {})


def suggested_policies(text: str) -> dict[str, Any]:
    """The policies/ snippet the header comment suggests, as YAML."""
    lines = text.split("\n")
    start = next(i for i, line in enumerate(lines) if line == "#   tools:")
    snippet = []
    for line in lines[start:]:
        if not line.startswith("#   "):
            break
        snippet.append(line[4:])
    loaded: dict[str, Any] = yaml.safe_load("\n".join(snippet))
    return loaded


def test_operation_ids_become_tools_in_order_of_path_then_method() -> None:
    result = _import(CRM)
    assert [t.name for t in result.tools] == [
        "search_contacts",
        "create_contact",
        "contact_by_key",
        "delete_contact",
        "get_contact",
        "update_contact",
        "add_note",
    ]
    assert_valid_http_adapter(result.document)


def test_get_and_head_are_reads_and_every_other_method_is_a_write() -> None:
    methods = ["get", "head", "post", "put", "patch", "delete"]
    result = _import(_doc({"/x": {m: _op(operationId=f"{m}_x") for m in methods}}))
    effects = {t.method: t.write for t in result.tools}
    assert effects == {"GET": False, "HEAD": False, "POST": True, "PUT": True, "PATCH": True, "DELETE": True}
    assert (result.reads, result.writes) == (2, 4)
    for tool in result.tools:
        assert ("timeout" in tool.definition) == tool.write
        if tool.write:
            assert tool.definition["timeout"] == WRITE_TIMEOUT


def test_parameters_and_the_json_body_become_one_object_schema_with_merged_required() -> None:
    tools = _import(CRM).document["tools"]
    assert tools["search_contacts"]["input_schema"] == {
        "type": "object",
        "properties": {"q": {"type": "string"}, "limit": {"type": "integer", "maximum": 100}},
        "required": ["q"],
    }
    assert tools["create_contact"]["input_schema"] == {
        "type": "object",
        "properties": {"email": {"type": "string"}, "name": {"type": "string"}},
        "required": ["email"],
    }
    update = tools["update_contact"]["input_schema"]
    assert list(update["properties"]) == ["contact_id", "name"] and update["required"] == ["contact_id"]


def test_path_level_parameters_apply_to_each_operation_and_path_parameters_are_required() -> None:
    tools = _import(CRM).document["tools"]
    for name in ("get_contact", "update_contact", "delete_contact"):
        assert tools[name]["input_schema"]["required"][0] == "contact_id"


def test_keyed_writes_carry_the_idempotency_header_and_receipt_id_from_the_2xx_response() -> None:
    tools = _import(CRM).document["tools"]
    create = tools["create_contact"]
    assert create["idempotency_header"] == IDEMPOTENCY_HEADER  # declared as `idempotency-key`
    assert create["receipt_id"] == "id"  # through allOf and $ref
    assert tools["update_contact"]["idempotency_header"] == IDEMPOTENCY_HEADER
    assert "receipt_id" not in tools["add_note"]  # its response names no id
    assert "idempotency_header" not in tools["add_note"]
    assert all("idempotency_header" not in t and "receipt_id" not in t for n, t in tools.items() if n.endswith("key"))


def test_a_write_without_an_idempotency_key_is_listed_for_review() -> None:
    result = _import(CRM)
    unkeyed = {r.tool for r in result.reviews if r.code == "no_idempotency_key"}
    assert unkeyed == {"add_note", "delete_contact"}
    assert any("add_note" in line for line in result.summary())


def test_a_by_key_get_is_proposed_as_the_lookup_of_keyed_writes_and_flagged_as_guessed() -> None:
    result = _import(CRM)
    tools = result.document["tools"]
    lookup = {"method": "GET", "path": "/contacts/by-key/{idempotency_key}"}
    assert tools["create_contact"]["lookup"] == lookup
    assert tools["update_contact"]["lookup"] == lookup
    assert "lookup" not in tools["add_note"]
    assert "guessed_lookup" in _codes(result, "create_contact")
    # The loader requires key_retention with a lookup: a guess, flagged.
    assert result.document["key_retention"] == "24h"
    assert "key_retention" in _codes(result, None)


def test_a_keyed_write_without_receipt_id_gets_no_lookup() -> None:
    spec = _doc(
        {
            "/send": {"post": _op(operationId="send", parameters=[KEY])},
            "/by-key/{key}": {"get": _op(operationId="by_key")},
        }
    )
    result = _import(spec)
    assert "lookup" not in result.document["tools"]["send"] and "key_retention" not in result.document
    assert _codes(result, "send") == {"no_lookup"}


def test_with_several_by_key_paths_each_write_gets_the_one_under_its_own_resource() -> None:
    by_key = {"get": _op(parameters=[{"name": "key", "in": "path", "required": True}])}
    body = _json_body({"type": "object", "properties": {"a": {}}})
    post = {"post": _op(parameters=[KEY], requestBody=body, responses=_created())}
    spec = _doc(
        {
            "/contacts": post,
            "/contacts/by-key/{key}": by_key,
            "/messages": copy.deepcopy(post),
            "/messages/by-key/{key}": by_key,
            "/other": copy.deepcopy(post),
        },
        components=CRM["components"],
    )
    result = _import(spec)
    tools = {t.path: t.definition for t in result.tools if t.write}
    assert tools["/contacts"]["lookup"]["path"] == "/contacts/by-key/{idempotency_key}"
    assert tools["/messages"]["lookup"]["path"] == "/messages/by-key/{idempotency_key}"
    assert "lookup" not in tools["/other"]  # no candidate is closer than another: no guess
    assert {r.code for r in result.reviews if r.tool == "post_other"} == {"no_lookup", "renamed"}


def test_a_hidden_by_key_get_still_serves_as_the_lookup() -> None:
    spec = _doc(
        {
            "/send": {"post": _op(operationId="send", parameters=[KEY], responses=_created())},
            "/_admin/by-key/{key}": {"get": _op(operationId="by_key")},
        },
        components=CRM["components"],
    )
    result = _import(spec)
    assert [t.name for t in result.tools] == ["send"]
    assert result.document["tools"]["send"]["lookup"]["path"] == "/_admin/by-key/{idempotency_key}"


def test_other_header_and_cookie_parameters_are_left_out_and_listed() -> None:
    params = [
        {"name": "X-Request-Id", "in": "header", "schema": {"type": "string"}},
        {"name": "Authorization", "in": "header", "schema": {"type": "string"}},
        {"name": "session", "in": "cookie", "schema": {"type": "string"}},
        {"name": "q", "in": "query", "schema": {"type": "string"}},
    ]
    result = _import(_doc({"/x": {"get": _op(operationId="x", parameters=params)}}))
    assert list(result.document["tools"]["x"]["input_schema"]["properties"]) == ["q"]
    assert [n.code for n in result.tools[0].notes] == ["left_out"]
    assert result.left_out == ("X-Request-Id (header)", "Authorization (header)", "session (cookie)")


def test_refs_to_schemas_parameters_and_request_bodies_are_inlined_without_yaml_aliases() -> None:
    result = _import(CRM)
    text = render(result)
    assert "$ref" not in text and "&id" not in text and "*id" not in text
    assert yaml.safe_load(text) == result.document


@pytest.mark.parametrize(
    ("schemas", "cycle"),
    [
        (
            {"Node": {"type": "object", "properties": {"child": {"$ref": "#/components/schemas/Node"}}}},
            ["Node", "Node"],
        ),
        (
            {
                "Node": {"type": "object", "properties": {"a": {"$ref": "#/components/schemas/A"}}},
                "A": {"type": "array", "items": {"$ref": "#/components/schemas/Node"}},
            },
            ["Node", "A", "Node"],
        ),
    ],
)
def test_a_ref_cycle_stops_the_import_naming_the_cycle(schemas: dict[str, Any], cycle: list[str]) -> None:
    body = _json_body({"$ref": "#/components/schemas/Node"})
    spec = _doc({"/nodes": {"post": _op(operationId="add", requestBody=body)}}, components={"schemas": schemas})
    with pytest.raises(OpenApiError) as caught:
        _import(spec)
    assert caught.value.code == "ref_cycle"
    assert caught.value.details["cycle"] == [f"#/components/schemas/{n}" for n in cycle]
    assert caught.value.details["operation"] == "POST /nodes"


def test_a_cyclic_response_schema_does_not_stop_the_import() -> None:
    node = {"type": "object", "properties": {"id": {}, "parent": {"$ref": "#/components/schemas/Node"}}}
    spec = _doc(
        {"/n": {"post": _op(operationId="add", responses=_created("#/components/schemas/Node"))}},
        components={"schemas": {"Node": node}},
    )
    assert _import(spec).document["tools"]["add"]["receipt_id"] == "id"


@pytest.mark.parametrize("ref", ["other.yaml#/components/schemas/X", "#/components/schemas/Missing"])
def test_a_ref_outside_the_document_or_to_nothing_is_refused(ref: str) -> None:
    spec = _doc({"/x": {"post": _op(operationId="x", requestBody=_json_body({"$ref": ref}))}}, components={})
    with pytest.raises(OpenApiError) as caught:
        _import(spec)
    assert caught.value.code == "bad_ref" and caught.value.details["ref"] == ref


def test_a_parameter_and_a_body_property_of_one_name_keep_the_parameters_schema_and_are_noted() -> None:
    body = _json_body(
        {"type": "object", "required": ["id", "name"], "properties": {"id": {"type": "integer"}, "name": {}}}
    )
    path_param = [{"name": "id", "in": "path", "required": True, "schema": {"type": "string"}}]
    result = _import(_doc({"/x/{id}": {"put": _op(operationId="put_x", parameters=path_param, requestBody=body)}}))
    schema = result.document["tools"]["put_x"]["input_schema"]
    assert schema["properties"]["id"] == {"type": "string"}
    assert schema["required"] == ["id", "name"]
    assert "name_clash" in _codes(result, "put_x")
    assert "name_clash" in {n.code for n in result.tools[0].notes}
    assert (
        _import(_doc({"/x/{id}": {"put": _op(operationId="put_x", parameters=path_param, requestBody=body)}})) == result
    )


@pytest.mark.parametrize(
    ("operation_id", "expected"),
    [
        ("createContact", "create_contact"),
        ("getHTTPResponse", "get_http_response"),
        ("contacts.list-all", "contacts_list_all"),
        ("2fa-verify", "op_2fa_verify"),
        ("Ünïcode Name", "n_code_name"),
    ],
)
def test_an_operation_id_that_breaks_the_tool_name_rule_is_converted_and_noted(
    operation_id: str, expected: str
) -> None:
    result = _import(_doc({"/x": {"get": _op(operationId=operation_id)}}))
    assert [t.name for t in result.tools] == [expected]
    assert "renamed" in _codes(result, expected)
    assert [n.code for n in result.tools[0].notes] == ["renamed"]


def test_a_long_operation_id_is_cut_to_the_exposed_name_limit_and_stays_distinct() -> None:
    long_a, long_b = "a_" + "x" * 60, "a_" + "x" * 59 + "y"
    result = _import(
        _doc({"/a": {"get": _op(operationId=long_a)}, "/b": {"get": _op(operationId=long_b)}}), name="crmsystem"
    )
    names = [t.name for t in result.tools]
    assert len(set(names)) == 2
    assert all(len(f"crmsystem__{n}") <= MAX_EXPOSED and EXPOSED_NAME.fullmatch(f"crmsystem__{n}") for n in names)
    assert_valid_http_adapter(result.document)


def test_exposed_name_limit_is_the_catalogs() -> None:
    assert EXPOSED_NAME.fullmatch("a" * MAX_EXPOSED) and not EXPOSED_NAME.fullmatch("a" * (MAX_EXPOSED + 1))


def test_operations_without_an_operation_id_are_named_from_method_and_path_and_clashes_get_a_suffix() -> None:
    spec = _doc(
        {
            "/": {"get": _op()},
            "/contacts/{id}/notes": {"get": _op()},
            "/z": {"get": _op(operationId="get_root")},
        }
    )
    result = _import(spec)
    assert [t.name for t in result.tools] == ["get_root", "get_contacts_by_id_notes", "get_root_2"]
    assert all("renamed" in _codes(result, t.name) for t in result.tools)


@pytest.mark.parametrize(
    ("path", "operation", "reason"),
    [
        ("/_admin/stats", _op(operationId="stats"), "admin_path"),
        ("/x", _op(operationId="x", **{"x-internal": True}), "internal"),
        ("/x", _op(operationId="x", tags=["x-internal"]), "internal"),
        ("/x", _op(operationId="x", **{"x-warrant-skip": True}), "warrant_skip"),
    ],
)
def test_admin_internal_and_skip_marked_operations_are_skipped_and_listed(
    path: str, operation: dict[str, Any], reason: str
) -> None:
    result = _import(_doc({path: {"get": operation}, "/kept": {"get": _op(operationId="kept")}}))
    assert [t.name for t in result.tools] == ["kept"]
    assert [(s.method, s.path, s.reason) for s in result.skipped] == [("GET", path, reason)]
    assert f"#   GET {path}: {reason}" in render(result).split("\n")


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ({"content": {"multipart/form-data": {"schema": {"type": "object"}}}}, "body_not_json"),
        (_json_body({"type": "array", "items": {"type": "string"}}), "body_not_object"),
        (_json_body({"oneOf": [{"type": "object", "properties": {"a": {}}}]}), "body_not_object"),
    ],
)
def test_an_operation_whose_body_is_not_a_json_object_is_skipped(body: dict[str, Any], reason: str) -> None:
    spec = _doc({"/x": {"post": _op(operationId="x", requestBody=body)}, "/y": {"get": _op(operationId="y")}})
    assert [s.reason for s in _import(spec).skipped] == [reason]


def test_nothing_left_to_import_is_refused() -> None:
    with pytest.raises(OpenApiError) as caught:
        _import(_doc({"/_admin/x": {"get": _op()}}))
    assert caught.value.code == "no_tools"


def test_openapi_30_schemas_become_json_schema_and_read_only_properties_are_dropped() -> None:
    body = {
        "type": "object",
        "required": ["id", "n"],
        "properties": {
            "id": {"type": "string", "readOnly": True},
            "n": {"type": "integer", "minimum": 0, "exclusiveMinimum": True, "nullable": True, "example": 3},
            "m": {"type": "integer", "maximum": 9, "exclusiveMaximum": False},
            "kind": {"type": "string", "enum": ["a"], "nullable": True, "x-extra": 1},
        },
    }
    result = _import(_doc({"/x": {"post": _op(operationId="x", requestBody=_json_body(body))}}))
    schema = result.document["tools"]["x"]["input_schema"]
    assert schema["properties"] == {
        "n": {"type": ["integer", "null"], "exclusiveMinimum": 0},
        "m": {"type": "integer", "maximum": 9},
        "kind": {"type": ["string", "null"], "enum": ["a", None]},
    }
    assert schema["required"] == ["n"]
    jsonschema.Draft202012Validator({"type": "object"}).validate({})
    jsonschema.validators.validator_for(schema).check_schema(schema)


def test_the_base_url_comes_from_the_first_server_with_its_variables() -> None:
    servers = [{"url": "https://{region}.api.example/v1/", "variables": {"region": {"default": "eu"}}}, {"url": "x"}]
    assert _import({**CRM, "servers": servers}).document["base_url"] == "https://eu.api.example/v1"


def test_base_url_option_wins_over_the_document() -> None:
    assert _import(CRM, base_url="http://10.0.0.1:9000").document["base_url"] == "http://10.0.0.1:9000"


def test_a_relative_server_is_resolved_against_the_url_the_document_came_from() -> None:
    fetched = "http://127.0.0.1:8801/openapi.json"
    assert _import({**CRM, "servers": [{"url": "/api"}]}, spec_url=fetched).document["base_url"] == (
        "http://127.0.0.1:8801/api"
    )
    no_servers = {k: v for k, v in CRM.items() if k != "servers"}
    assert _import(no_servers, spec_url=fetched).document["base_url"] == "http://127.0.0.1:8801"


@pytest.mark.parametrize(
    "servers",
    [None, [{"url": "/api"}], [{"url": "http://{host}/"}], [{"url": "https://u:p@h/"}], [{"url": "http://h/?a=1"}]],
)
def test_without_an_absolute_base_url_the_import_is_refused(servers: Any) -> None:
    spec = {k: v for k, v in CRM.items() if k != "servers"}
    if servers is not None:
        spec["servers"] = servers
    with pytest.raises(OpenApiError) as caught:
        _import(spec)
    assert caught.value.code == "no_base_url"


@pytest.mark.parametrize("name", ["CRM", "crm_x", "a" * 17, "warrant", ""])
def test_an_adapter_name_the_catalog_would_refuse_is_refused(name: str) -> None:
    with pytest.raises(OpenApiError) as caught:
        _import(CRM, name=name)
    assert caught.value.code == "invalid_name"


@pytest.mark.parametrize(
    "spec", [{"swagger": "2.0", "paths": {}}, {"openapi": "4.0.0", "paths": {}}, {"openapi": "3.1.0"}, [], "text"]
)
def test_a_document_that_is_not_openapi_3_is_refused(spec: Any) -> None:
    with pytest.raises(OpenApiError) as caught:
        _import(spec)
    assert caught.value.code == "not_openapi"


def test_the_rendered_yaml_loads_back_to_the_document_with_comments_and_a_policy_snippet() -> None:
    result = _import(CRM)
    text = render(result)
    assert yaml.safe_load(text) == result.document
    assert text.startswith("# ")
    assert AT in text.split("\n")[1] and "crm.json" in text.split("\n")[0]
    policies = suggested_policies(text)
    assert policies == {"tools": {f"crm__{t.name}": {"effect": "write" if t.write else "read"} for t in result.tools}}
    parse_policy(policies)
    assert any(line.startswith("# headers: ") for line in text.split("\n"))
    assert all(line == "" or not line.endswith(" ") for line in text.split("\n"))


def test_a_line_break_in_a_name_cannot_escape_its_comment() -> None:
    result = _import(_doc({"/x": {"get": _op(operationId="evil\nkind: mcp\n")}}))
    loaded = yaml.safe_load(render(result))
    assert loaded == result.document and loaded["kind"] == "http"


def test_the_draft_is_the_same_whatever_order_the_document_lists_paths_in() -> None:
    reordered = copy.deepcopy(CRM)
    reordered["paths"] = dict(reversed(list(CRM["paths"].items())))
    for item in reordered["paths"].values():
        for key in list(item):
            item[key] = item.pop(key)
    assert render(_import(reordered)) == render(_import(CRM))


def test_the_document_is_not_changed_by_the_import() -> None:
    before = copy.deepcopy(CRM)
    _import(CRM)
    assert before == CRM


def test_query_parameters_of_a_body_write_and_the_body_of_a_delete_are_mapped_explicitly() -> None:
    query = [{"name": "dry_run", "in": "query", "schema": {"type": "boolean"}}]
    body = _json_body({"type": "object", "properties": {"reason": {"type": "string"}}})
    spec = _doc(
        {
            "/x": {
                "post": _op(operationId="make", parameters=query, requestBody=body),
                "delete": _op(operationId="remove", parameters=query, requestBody=body),
            }
        }
    )
    tools = _import(spec).document["tools"]
    assert tools["make"]["query"] == ["dry_run"] and "body" not in tools["make"]
    assert tools["remove"]["body"] == ["reason"] and "query" not in tools["remove"]
    assert_valid_http_adapter(_import(spec).document)


@pytest.mark.parametrize(
    ("method", "operation", "reason"),
    [
        ("options", _op(operationId="x"), "unsupported_method"),
        ("trace", _op(operationId="x"), "unsupported_method"),
        (
            "get",
            _op(operationId="x", requestBody=_json_body({"type": "object", "properties": {"a": {}}})),
            "body_on_read",
        ),
    ],
)
def test_what_the_http_adapter_cannot_send_is_skipped(method: str, operation: dict[str, Any], reason: str) -> None:
    result = _import(_doc({"/x": {method: operation}, "/y": {"get": _op(operationId="y")}}))
    assert [(s.method, s.reason) for s in result.skipped] == [(method.upper(), reason)]


def test_a_path_parameter_whose_name_is_not_an_identifier_is_renamed_in_path_and_schema() -> None:
    params = [{"name": "contact-id", "in": "path", "required": True, "schema": {"type": "string"}}]
    result = _import(_doc({"/contacts/{contact-id}": {"get": _op(operationId="get_contact", parameters=params)}}))
    tool = result.document["tools"]["get_contact"]
    assert tool["path"] == "/contacts/{contact_id}"
    assert tool["input_schema"]["properties"] == {"contact_id": {"type": "string"}}
    assert "renamed_parameter" in {n.code for n in result.tools[0].notes}
    assert_valid_http_adapter(result.document)


def test_an_argument_named_like_the_gateways_key_placeholder_is_left_out_and_flagged() -> None:
    params = [
        {"name": "idempotency_key", "in": "path", "required": True, "schema": {"type": "string"}},
        {"name": "idempotency_key", "in": "query", "schema": {"type": "string"}},
    ]
    body = _json_body({"type": "object", "properties": {"idempotency_key": {}, "a": {}}})
    spec = _doc(
        {
            "/k/{idempotency_key}": {"get": _op(operationId="read_k", parameters=params)},
            "/k": {"post": _op(operationId="write_k", requestBody=body)},
        }
    )
    result = _import(spec)
    tools = result.document["tools"]
    assert tools["read_k"]["path"] == "/k/{idempotency_key_value}"
    assert list(tools["write_k"]["input_schema"]["properties"]) == ["a"]
    assert "reserved" in _codes(result, "write_k")
    assert_valid_http_adapter(result.document)


@pytest.mark.parametrize(
    ("schemes", "security", "expected"),
    [
        ({"k": {"type": "apiKey", "in": "header", "name": "X-Api-Key"}}, [{"k": []}], 'X-Api-Key: "${CRM_API_KEY}"'),
        ({"b": {"type": "http", "scheme": "basic"}}, None, 'Authorization: "Basic ${CRM_BASIC}"'),
        ({"b": {"type": "http", "scheme": "bearer"}}, [{"b": []}], 'Authorization: "Bearer ${CRM_TOKEN}"'),
        ({}, None, 'Authorization: "Bearer ${CRM_TOKEN}"'),
    ],
)
def test_the_commented_headers_example_follows_the_documents_security_scheme(
    schemes: dict[str, Any], security: Any, expected: str
) -> None:
    spec = copy.deepcopy(CRM)
    spec["components"]["securitySchemes"] = schemes
    if security is not None:
        spec["security"] = security
    result = _import(spec)
    assert result.auth_header == expected
    example = next(line for line in render(result).split("\n") if line.startswith("# headers: "))
    assert yaml.safe_load(example[2:].split("   #")[0]) == {"headers": yaml.safe_load("{" + expected + "}")}
