"""Canonical JSON: the fast path writes byte for byte what the RFC 8785 reference writes."""

from __future__ import annotations

from typing import Any

import pytest
import rfc8785
from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.canonical import canonical_json

keys = st.text(max_size=8)
scalars = st.none() | st.booleans() | st.integers(-(2**60), 2**60) | st.floats(allow_nan=False) | st.text()
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(keys, inner, max_size=4))


def reference(value: Any) -> bytes | None:
    try:
        return bytes(rfc8785.dumps(value))
    except Exception:
        return None


@settings(max_examples=200, deadline=None)
@given(values)
def test_canonical_json_agrees_with_the_reference_or_refuses_with_it(value: Any) -> None:
    expected = reference(value)
    if expected is None:
        with pytest.raises(ValueError):
            canonical_json(value)
    else:
        assert canonical_json(value) == expected


@pytest.mark.parametrize(
    "value",
    [
        {"b": 1, "a": [1, "x", None, True]},
        {"é": 1, "e": 2},
        {"\U0001f600": 1, "\ufb01": 2},
        2**53 - 1,
        "\u2028\x7f\x1f",
    ],
)
def test_edge_values_match_the_reference(value: Any) -> None:
    assert canonical_json(value) == bytes(rfc8785.dumps(value))


@pytest.mark.parametrize("value", [2**53, float("nan"), "\ud800", {1: "x"}])
def test_values_rfc8785_cannot_represent_are_refused(value: Any) -> None:
    with pytest.raises(ValueError):
        canonical_json(value)
