"""Arguments to requests: path placeholders, query string, JSON body (gateway/adapters/http/mapping.py)."""

from __future__ import annotations

from typing import Any

import pytest

from gateway.adapters.http import HttpToolConfig
from gateway.adapters.http.mapping import MappingError, plan_call, plan_lookup
from tests.adapters.http_world import BASE, SECRET, Ticks, make_adapter


def _tool(**fields: Any) -> HttpToolConfig:
    return HttpToolConfig.model_validate({"description": "a tool", **fields})


def test_path_arguments_are_escaped_as_one_segment_and_the_rest_go_to_the_body_of_a_post() -> None:
    planned = plan_call(_tool(method="POST", path="/lists/{list_id}/contacts"), {"list_id": "a/b c", "x": 1}, None)
    assert planned.path == "/lists/a%2Fb%20c/contacts"
    assert planned.json == {"x": 1} and planned.params == []


@pytest.mark.parametrize("method", ["GET", "HEAD", "DELETE"])
def test_the_rest_go_to_the_query_string_of_a_get_head_or_delete(method: str) -> None:
    args = {"id": 7, "limit": 10, "tags": ["a", "b"], "active": True, "cursor": None}
    planned = plan_call(_tool(method=method, path="/things/{id}"), args, None)
    assert planned.path == "/things/7"
    assert planned.params == [("limit", "10"), ("tags", "a"), ("tags", "b"), ("active", "true")]
    assert planned.json is None


def test_query_and_body_lists_move_arguments_explicitly() -> None:
    tool = _tool(method="POST", path="/things", query=["dry_run"])
    planned = plan_call(tool, {"dry_run": False, "name": "n"}, None)
    assert planned.params == [("dry_run", "false")] and planned.json == {"name": "n"}
    planned = plan_call(_tool(method="DELETE", path="/things", body=["reason"]), {"reason": "r", "id": "1"}, None)
    assert planned.json == {"reason": "r"} and planned.params == [("id", "1")]


def test_a_post_without_arguments_sends_an_empty_object() -> None:
    assert plan_call(_tool(method="POST", path="/ping"), {}, None).json == {}


def test_the_key_goes_in_the_idempotency_header_only_when_one_is_configured() -> None:
    keyed = _tool(method="POST", path="/x", idempotency_header="Idempotency-Key", headers={"X-V": "2"})
    assert plan_call(keyed, {}, "wk_1").headers == {"X-V": "2", "Idempotency-Key": "wk_1"}
    assert plan_call(_tool(method="POST", path="/x"), {}, "wk_1").headers == {}


@pytest.mark.parametrize("value", [None, "", ".", "..", {"a": 1}, [1]])
def test_a_path_argument_that_cannot_name_a_segment_is_refused(value: object) -> None:
    with pytest.raises(MappingError):
        plan_call(_tool(method="GET", path="/contacts/{id}"), {"id": value}, None)


def test_a_missing_path_argument_is_refused() -> None:
    with pytest.raises(MappingError):
        plan_call(_tool(method="GET", path="/contacts/{id}"), {}, None)


def test_an_object_cannot_go_in_a_query_string() -> None:
    with pytest.raises(MappingError):
        plan_call(_tool(method="GET", path="/contacts"), {"filter": {"a": 1}}, None)


def test_a_path_that_takes_the_key_needs_one() -> None:
    with pytest.raises(MappingError):
        plan_call(_tool(method="PUT", path="/orders/{idempotency_key}"), {}, None)
    assert plan_call(_tool(method="PUT", path="/orders/{idempotency_key}"), {}, "wk_1").path == "/orders/wk_1"


def test_a_lookup_sends_only_what_its_path_and_query_name() -> None:
    tool = _tool(
        method="POST",
        path="/contacts",
        idempotency_header="Idempotency-Key",
        receipt_id="id",
        lookup={"path": "/contacts/by-key/{idempotency_key}", "query": ["email"]},
        headers={"X-V": "2"},
    )
    assert tool.lookup is not None
    planned = plan_lookup(tool, tool.lookup, {"email": "a@b", "name": "n"}, "wk_1")
    assert (planned.method, planned.path) == ("GET", "/contacts/by-key/wk_1")
    assert planned.params == [("email", "a@b")] and planned.json is None and planned.headers == {"X-V": "2"}


def test_the_destination_an_approver_reads_is_the_planned_request_without_the_base_url_or_secrets() -> None:
    adapter = make_adapter(Ticks())
    read = adapter.destination("get_contact", {"contact_id": "c/7"})
    assert read.startswith("GET /contacts/c%2F7 on the crm API")
    write = adapter.destination("create_contact", {"email": "a@b.example"})
    assert write.startswith("POST /contacts on the crm API")
    for shown in (read, write):
        assert BASE not in shown and SECRET not in shown
    # Arguments that make no request still name the tool, never fail the page that shows them.
    assert adapter.destination("get_contact", {}) == "tool get_contact of adapter crm"
    assert adapter.destination("no_such_tool", {}) == "tool no_such_tool of adapter crm"
