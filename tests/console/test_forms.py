"""The console's form reader: what a crafted post can carry into the store."""

from __future__ import annotations

import pytest
from starlette.requests import Request
from starlette.types import Message

from gateway.console.pages import read_form

pytestmark = pytest.mark.anyio


def posted(body: bytes, content_type: str = "application/x-www-form-urlencoded") -> Request:
    async def receive() -> Message:
        return {"type": "http.request", "body": body, "more_body": False}

    scope = {"type": "http", "method": "POST", "headers": [(b"content-type", content_type.encode())]}
    return Request(scope, receive)


async def test_a_nul_in_a_reason_is_kept_escaped_so_either_store_can_record_it() -> None:
    form = await read_form(posted(b"csrf=t&reason=stop%00now"))
    assert form == {"csrf": "t", "reason": "stop\\u0000now"}


async def test_a_body_that_is_not_a_form_reads_as_empty() -> None:
    assert await read_form(posted(b'{"reason": "x"}', "application/json")) == {}
