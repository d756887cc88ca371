"""The consent page's CSP source for the client's redirect URI (gateway/console/consent.py): built
from the URI's parsed parts, valid CSP for every redirect URI the gateway accepts (Chromium drops an
invalid source and then blocks the redirect: tests/oauth/test_python_sdk_oauth.py sees it), and never
the URI's raw text."""

from __future__ import annotations

import pytest

from gateway.console.consent import form_action_source
from gateway.console.pages import HEADERS


@pytest.mark.parametrize(
    ("uri", "source"),
    [
        ("http://127.0.0.1:9/callback", "http://127.0.0.1:9"),
        ("http://localhost:3030/callback?x=1", "http://localhost:3030"),
        ("http://LOCALHOST:3030/callback", "http://localhost:3030"),
        ("https://app.example/oauth/callback", "https://app.example"),
        ("https://app.example:8443/cb", "https://app.example:8443"),
        # CSP's host-source has no IPv6 literal: the scheme alone (plain http is loopback-only).
        ("http://[::1]:8080/callback", "http:"),
        ("cursor://anysphere.cursor-retrieval/oauth/callback", "cursor:"),
        ("com.example.app:/oauth2redirect", "com.example.app:"),
        # Userinfo, a port out of range, a bad scheme: never copied into the header.
        ("http://someone@127.0.0.1:9/cb", "http://127.0.0.1:9"),
        ("http://127.0.0.1:99999/cb", ""),
        ("1bad://x/y", ""),
        ("cursor://x;script-src%20*/cb", "cursor:"),
        ("https://app.example;sandbox/cb", ""),
    ],
)
def test_form_action_source(uri: str, source: str) -> None:
    assert form_action_source(uri) == source


def test_no_source_can_end_or_add_a_directive() -> None:
    for uri in ("https://a.example;script-src */cb", "http://127.0.0.1:9 ;x/cb", "x-y://h; default-src *"):
        source = form_action_source(uri)
        assert ";" not in source and " " not in source and "," not in source, (uri, source)
    assert "form-action 'self'" in HEADERS["Content-Security-Policy"]  # what _headers extends
