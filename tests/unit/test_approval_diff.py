"""The payload diff an approval shows against the last one a person approved (gateway/api/views.py)."""

from __future__ import annotations

from gateway.api.views import payload_changes


def test_objects_are_compared_key_by_key_with_rfc6901_pointers() -> None:
    old = {"to": "a@x.example", "body": "hi", "meta": {"a/b": 1, "c~d": [1, 2], "same": True}}
    new = {"to": "b@x.example", "meta": {"a/b": 2, "c~d": [1, 2], "same": True}, "cc": None}
    assert payload_changes(old, new) == [
        {"path": "/body", "before": "hi"},
        {"path": "/cc", "after": None},
        {"path": "/meta/a~1b", "before": 1, "after": 2},
        {"path": "/to", "before": "a@x.example", "after": "b@x.example"},
    ]


def test_values_that_hash_the_same_are_the_same() -> None:
    assert payload_changes({"amount": 1}, {"amount": 1.0}) == []  # one canonical form, one payload hash
    assert payload_changes({"flag": True}, {"flag": 1}) == [{"path": "/flag", "before": True, "after": 1}]
    assert payload_changes([1, 2], [2, 1]) == [{"path": "", "before": [1, 2], "after": [2, 1]}]
