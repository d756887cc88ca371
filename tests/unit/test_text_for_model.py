"""What a model is handed of an approver's note (gateway/text.py): no control characters but line
feeds, bounded; and the API's check that refuses them in a new note."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from gateway.api.bodies import DecisionBody
from gateway.text import NOTE_MAX, control_character, for_model


@pytest.mark.parametrize("char", ["\x00", "\x07", "\x1b", "\r", "\t", "\x7f", "\x85", "\x9b"])
def test_every_control_character_but_a_line_feed_is_found_and_handed_on_as_a_space(char: str) -> None:
    assert control_character(f"ok{char}ok") == 2
    assert for_model(f"ok{char}ok") == "ok ok"


def test_a_line_feed_and_any_other_text_reach_the_model_verbatim() -> None:
    text = "Not Bob.\nWrite to sales@acme.example — «merci», 5 % off, 🙂"
    assert control_character(text) is None
    assert for_model(text) == text


def test_a_long_note_is_cut_at_the_bound_and_says_so() -> None:
    cut = for_model("x" * (NOTE_MAX + 10))
    assert len(cut) == NOTE_MAX and cut.endswith("…")
    assert for_model("x" * NOTE_MAX) == "x" * NOTE_MAX


def test_the_api_refuses_a_note_with_control_characters_and_keeps_line_feeds() -> None:
    with pytest.raises(ValidationError):
        DecisionBody.model_validate({"note": "no\x1b[2J"})
    with pytest.raises(ValidationError):
        DecisionBody.model_validate({"note": "x" * (NOTE_MAX + 1)})
    assert DecisionBody.model_validate({"note": "a\nb"}).note == "a\nb"
    edited = DecisionBody.model_validate({"arguments": {"to": "carol@acme.example"}})
    assert edited.arguments == {"to": "carol@acme.example"}
    with pytest.raises(ValidationError):
        DecisionBody.model_validate({"arguments": [1]})
