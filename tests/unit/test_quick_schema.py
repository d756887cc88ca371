"""The quick argument check decides exactly as jsonschema does, wherever it offers to decide; with
the `quick_schema` accelerator off (gateway/accelerators.py) jsonschema alone finds the same faults."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gateway.adapters import ToolDefinition
from gateway.catalog import Catalog
from gateway.catalog.catalog import quick_check_of
from gateway.domain import compile_check
from tests.unit.test_catalog import StaticAdapter

pytestmark = pytest.mark.differential

DIALECTS = {
    "draft6": jsonschema.Draft6Validator,
    "draft7": jsonschema.Draft7Validator,
    "draft2019-09": jsonschema.Draft201909Validator,
    "draft2020-12": jsonschema.Draft202012Validator,
}
NAMES = ["a", "b", "c", "d"]
TYPES = ["string", "integer", "number", "boolean", "null", "object", "array"]

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.sampled_from([0.0, 1.0, -1.0, 2.5, 1e20])
    | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.sampled_from([*NAMES, "e"]), inner, max_size=4),
    max_leaves=12,
)


def _keywords(sub: st.SearchStrategy[Any]) -> st.SearchStrategy[dict[str, Any]]:
    bound = st.integers(min_value=-3, max_value=5) | st.sampled_from([0.5, 2.0, -1.5])
    count = st.integers(min_value=0, max_value=4)
    return st.fixed_dictionaries(
        {},
        optional={
            "type": st.sampled_from(TYPES) | st.lists(st.sampled_from(TYPES), min_size=1, max_size=3, unique=True),
            "enum": st.lists(st.text(max_size=3), min_size=1, max_size=3),
            "minLength": count,
            "maxLength": count,
            "minimum": bound,
            "maximum": bound,
            "properties": st.dictionaries(st.sampled_from(NAMES), sub, max_size=3),
            "required": st.lists(st.sampled_from(NAMES), max_size=3, unique=True),
            "additionalProperties": st.booleans() | sub,
            "items": sub,
            "minItems": count,
            "maxItems": count,
            "description": st.text(max_size=5),
            "format": st.sampled_from(["email", "date-time", "uri"]),
            "x-mcp-header": st.just("Region"),
        },
    )


schemas = st.recursive(st.booleans() | _keywords(st.booleans()), _keywords, max_leaves=8)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schema=schemas, value=json_values, dialect=st.sampled_from(sorted(DIALECTS)))
def test_the_quick_check_agrees_with_jsonschema(schema: Any, value: Any, dialect: str) -> None:
    cls = DIALECTS[dialect]
    cls.check_schema(schema)  # every generated schema is a valid one
    check = compile_check(schema, dialect)
    assert check is not None  # built from understood keywords only
    assert check(value) == cls(schema).is_valid(value)


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "properties": {"a": {"$ref": "#/$defs/x"}}, "$defs": {"x": {"type": "string"}}},
        {"type": "object", "patternProperties": {"^a": {"type": "string"}}},
        {"anyOf": [{"type": "string"}, {"type": "integer"}]},
        {"type": "string", "pattern": "^a"},
        {"enum": ["a", 1]},
        {"type": "array", "items": [{"type": "string"}]},
        {"type": "object", "minProperties": 1},
        {"type": "object", "unevaluatedProperties": False},
        {"const": "a"},
    ],
)
def test_anything_else_is_left_to_jsonschema(schema: dict[str, Any]) -> None:
    assert compile_check(schema, "draft2020-12") is None


def test_draft_4_and_a_format_under_a_format_checker_are_left_to_jsonschema() -> None:
    simple = {"type": "object", "properties": {"n": {"type": "integer"}}}
    assert compile_check(simple, "draft4") is None  # there, 1.0 is not an integer
    assert quick_check_of(jsonschema.Draft4Validator(simple)) is None
    assert quick_check_of(jsonschema.Draft202012Validator(simple)) is not None
    checked = jsonschema.Draft202012Validator(simple, format_checker=jsonschema.FormatChecker())
    assert quick_check_of(checked) is not None  # no format named: nothing for the checker to assert
    formatted = {"type": "object", "properties": {"n": {"type": "string", "format": "email"}}}
    checked = jsonschema.Draft202012Validator(formatted, format_checker=jsonschema.FormatChecker())
    assert quick_check_of(checked) is None  # `format` asserts there
    assert quick_check_of(jsonschema.Draft202012Validator(formatted)) is not None  # an annotation here


def test_a_tool_schema_of_the_usual_shape_is_checked_quickly() -> None:
    schema = {
        "type": "object",
        "properties": {
            "title": {"type": "string", "minLength": 1},
            "tags": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["title"],
        "additionalProperties": False,
    }
    check = compile_check(schema, "draft2020-12")
    assert check is not None
    assert check({"title": "x", "tags": ["a"]})
    assert not check({"title": ""})
    assert not check({"title": "x", "other": 1})
    assert not check({"tags": []})
    assert not check({"title": "x", "tags": [1]})


EDGE_VALUES = [True, False, None, 0, 1, -1, 1.0, 1.5, 2**64, 1e20, "", "é", [], {}, [1], {"a": 1}]


@pytest.mark.parametrize("dialect", sorted(DIALECTS))
@pytest.mark.parametrize(
    "schema",
    [
        *({"type": name} for name in TYPES),
        {"type": ["integer", "null"]},
        {"minimum": 0, "maximum": 1},
        {"minimum": 1.5},
        {"minLength": 1, "maxLength": 1},
        {"minItems": 1},
        {"enum": ["", "é"]},
        {"properties": {"a": {"type": "boolean"}}},
        {"additionalProperties": {"type": "integer"}},
    ],
)
def test_the_edges_of_each_keyword_agree_with_jsonschema(schema: dict[str, Any], dialect: str) -> None:
    # Booleans are not numbers, 1.0 is an integer, lengths count code points, keywords pass
    # values of other types: each as jsonschema has it.
    check = compile_check(schema, dialect)
    assert check is not None
    validator = DIALECTS[dialect](schema)
    for value in EDGE_VALUES:
        assert check(value) == validator.is_valid(value), value


def spec_of(schema: Any, quick: bool) -> Any:
    definition = ToolDefinition("x", "", {"type": "object", "properties": {"a": schema}, "required": ["a"]})
    spec = Catalog([StaticAdapter("t", definition)], {}, quick_schema=quick).get("t__x")
    assert spec is not None
    return spec


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schema=schemas, value=json_values)
def test_with_the_switch_off_jsonschema_alone_finds_the_same_faults(schema: Any, value: Any) -> None:
    on, off = spec_of(schema, True), spec_of(schema, False)
    assert off.quick_check is None  # on: a quick check unless the schema names a `format`
    for arguments in ({"a": value}, {}, value):
        assert on.argument_faults(arguments) == off.argument_faults(arguments)


def test_with_the_switch_off_no_tool_gets_a_quick_check() -> None:
    schema = {"type": "string", "minLength": 1}
    assert spec_of(schema, True).quick_check is not None
    assert spec_of(schema, False).quick_check is None
