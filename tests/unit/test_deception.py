from __future__ import annotations

from typing import Any

import pytest

from gateway.domain import marks

CASES: list[tuple[Any, list[tuple[str, str, tuple[str, ...]]]]] = [
    ({"to": "ceo@acme.example"}, []),
    ({"to": "ceo@\u0430cme.example"}, [("to", "mixed_scripts", ("U+0430",))]),
    ({"to": "ceo@xn--cme-7cd.example"}, [("to", "punycode", ())]),
    ({"body": "pay to moc.\u202eevil"}, [("body", "bidi_control", ("U+202E",))]),
    ({"body": "ac\u200bme"}, [("body", "invisible", ("U+200B",))]),
    ({"items": [{"name": "Ρaypal"}]}, [("items/0/name", "mixed_scripts", ("U+03A1",))]),
    ({"to": "Grüße, Ελλάδα, Москва"}, []),  # one script per word is no mark
    ("\u2066x\u2069", [("(payload)", "bidi_control", ("U+2066", "U+2069"))]),
    ({"k\u202e": 1}, [("k\u202e (key)", "bidi_control", ("U+202E",))]),
]


@pytest.mark.parametrize(("payload", "expected"), CASES)
def test_deceptive_text_in_a_payload_is_marked_with_where_and_which_characters(
    payload: Any, expected: list[tuple[str, str, tuple[str, ...]]]
) -> None:
    assert [(m.path, m.kind, m.code_points) for m in marks(payload)] == expected
