"""Secret redaction in results catches the common encodings of a credential
(gateway/adapters/http/outcome.py `Redactor`)."""

from __future__ import annotations

import base64
import urllib.parse

import pytest

from gateway.adapters.http.outcome import REDACTED, Redactor

SECRET = "s3cr3t/T0ken+value=="

ECHOES = [
    SECRET,
    SECRET.upper(),
    SECRET.lower(),
    urllib.parse.quote(SECRET, safe=""),
    urllib.parse.quote(SECRET, safe="").lower(),
    urllib.parse.quote_plus(SECRET),
    base64.b64encode(SECRET.encode()).decode(),
    base64.urlsafe_b64encode(SECRET.encode()).decode(),
    base64.b64encode(f"user:{SECRET}".encode()).decode(),  # a Basic credential echoed
    base64.b64encode(f"ab{SECRET}xyz".encode()).decode(),
]


@pytest.mark.parametrize("echo", ECHOES)
def test_an_encoded_echo_of_the_credential_is_redacted(echo: str) -> None:
    redactor = Redactor([SECRET])
    text = f"upstream said: {echo} (end)"
    assert redactor.found_in(text)
    redacted = redactor.text(text)
    assert REDACTED in redacted
    decoded = [redacted]
    for word in redacted.split():
        for decode in (base64.b64decode, base64.urlsafe_b64decode):
            try:
                decoded.append(decode(word + "==").decode("latin-1"))
            except ValueError:
                pass
    assert not any(SECRET.lower() in (urllib.parse.unquote_plus(d)).lower() for d in decoded)


def test_text_without_the_credential_is_left_as_it_is() -> None:
    text = "a receipt: id 42, status ok, token none"
    assert Redactor([SECRET]).text(text) == text
    assert not Redactor([SECRET]).found_in(text)
