"""The fuzzers' checks can fail: each finds what it looks for (tests/hostile/checks.py)."""

from __future__ import annotations

import logging

import httpx

from tests.hostile.checks import answer_problems, server_error_problem


def test_a_stack_trace_or_an_exception_name_in_a_body_is_found() -> None:
    for body in [
        'Traceback (most recent call last):\n  File "/srv/gateway/gate/pipeline.py", line 451, in _dispatch',
        '{"error": {"message": "RecursionError: maximum recursion depth exceeded"}}',
        '{"error": {"message": "psycopg.errors.DataError"}}',
        "at /usr/lib/python3.11/json/decoder.py",
    ]:
        assert answer_problems(httpx.Response(500, text=body), []) != [], body
    assert answer_problems(httpx.Response(200, text='{"result": {"content": []}}'), []) == []


def test_a_secret_in_a_body_or_a_header_is_found() -> None:
    secret = "wl_1234567890abcdef"
    assert answer_problems(httpx.Response(200, text=f"token {secret}"), [secret]) != []
    assert answer_problems(httpx.Response(200, headers={"X-Echo": secret}), [secret]) != []
    assert answer_problems(httpx.Response(200, text="nothing here"), [secret]) == []


def test_a_5xx_needs_a_logged_reason() -> None:
    logged = logging.LogRecord("warrant", logging.ERROR, __file__, 1, "tools/call failed", None, None)
    assert server_error_problem(httpx.Response(503), []) is not None
    assert server_error_problem(httpx.Response(503), [logged]) is None
    assert server_error_problem(httpx.Response(422), []) is None
