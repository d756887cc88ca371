"""`format` in a tool's input schema is asserted (gateway/domain/formats.py), and the quick check
steps aside for a schema that names one."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest

from gateway.catalog.catalog import FORMAT_CHECKER, quick_check_of
from gateway.domain.formats import is_date_time, is_email, is_uri

BYPASSES = [
    "attacker@evil.example, ceo@acme.example",
    "attacker@evil.example\nceo@acme.example",
    "ceo@acme.example\n",
    "Ceo <attacker@evil.example>",
    "attacker@evil.example;ceo@acme.example",
    "a b@acme.example",
    "@acme.example",
    "ceo@",
    "ceo@@acme.example",
    ".ceo@acme.example",
    "ceo@acme..example",
]


@pytest.mark.parametrize("value", ["ceo@acme.example", "first.last+tag@mail.acme.example"])
def test_a_plain_address_is_an_email(value: str) -> None:
    assert is_email(value)


@pytest.mark.parametrize("value", BYPASSES)
def test_a_list_a_newline_or_a_display_name_is_not_one_email(value: str) -> None:
    assert not is_email(value)


@pytest.mark.parametrize(
    ("value", "valid"),
    [
        ("https://acme.example/a?b=c#d", True),
        ("mailto:ceo@acme.example", True),
        ("acme.example/a", False),
        ("https://acme.example/a b", False),
        ("https://acme.example/\n", False),
        ("", False),
    ],
)
def test_a_uri_is_absolute_and_printable_ascii(value: str, valid: bool) -> None:
    assert is_uri(value) is valid


@pytest.mark.parametrize(
    ("value", "valid"),
    [
        ("2026-12-01T23:00:00Z", True),
        ("2026-12-01t23:00:00.5+01:00", True),
        ("2026-12-31T23:59:60Z", True),
        ("2026-12-01T23:00:00", False),
        ("2026-12-01 23:00:00Z", False),
        ("2026-02-30T00:00:00Z", False),
        ("2026-12-01T24:00:00Z", False),
        ("2026-12-01T23:00:00+25:00", False),
        ("2026-12-01T23:00:00Z\n", False),
    ],
)
def test_a_date_time_is_rfc_3339_with_its_offset(value: str, valid: bool) -> None:
    assert is_date_time(value) is valid


@pytest.mark.parametrize(("fmt", "bad"), [("email", BYPASSES[0]), ("uri", "not a uri"), ("date-time", "tomorrow")])
def test_a_tool_schema_with_a_format_refuses_a_value_that_breaks_it(fmt: str, bad: str) -> None:
    schema: dict[str, Any] = {"type": "object", "properties": {"v": {"type": "string", "format": fmt}}}
    validator = jsonschema.Draft202012Validator(schema, format_checker=FORMAT_CHECKER)
    assert quick_check_of(validator) is None  # the quick check would take format for an annotation
    assert list(validator.iter_errors({"v": bad}))


def test_the_quick_check_still_serves_a_schema_without_a_format() -> None:
    schema = {"type": "object", "properties": {"v": {"type": "string"}}}
    check = quick_check_of(jsonschema.Draft202012Validator(schema, format_checker=FORMAT_CHECKER))
    assert check is not None and check({"v": "x"})
