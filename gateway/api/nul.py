"""U+0000 in operator input: refused at the API's edge, the same on both stores.

PostgreSQL's text columns cannot hold a NUL character: a pause reason, a worker name or a path id
carrying one made the store refuse the statement, answered 503 `store_unavailable` (retryable, so a
client would retry bad input for ever) where SQLite stored it. Refused here, before any store, it
is 422 `invalid_request` on both (tests/hostile/test_api_hostile.py).
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request

from gateway.errors import InvalidRequest
from gateway.text import NUL, nul_field

PROBLEM = "the NUL character (U+0000) is not accepted in text"


def refuse_nul_body(value: Any) -> None:
    """Raises: InvalidRequest (422) naming the field whose text carries U+0000."""
    field = nul_field(value)
    if field is not None:
        raise InvalidRequest("the request has 1 problem(s)", problems=[{"field": field, "problem": PROBLEM}])


def refuse_nul_url(request: Request) -> None:
    """Raises: InvalidRequest (422) when the decoded path or a query parameter carries U+0000."""
    if NUL in request.url.path or any(NUL in k or NUL in v for k, v in request.query_params.multi_items()):
        raise InvalidRequest("the request has 1 problem(s)", problems=[{"field": "(the URL)", "problem": PROBLEM}])
