"""`warrant events tail`'s stream reading: the SSE parser, and resuming a dropped stream from the last
seq with Last-Event-ID, against httpx's MockTransport (no server, no waiting)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from gateway.cli.events import follow, sse_data
from gateway.cli.http import ApiFailed


def frame(seq: int, type_: str = "run_paused") -> bytes:
    event = {"run_id": "run_1", "seq": seq, "type": type_, "at": "2026-03-01T12:00:00.000000Z", "data": {}}
    return f"id: {seq}\nevent: {type_}\ndata: {json.dumps(event)}\n\n".encode()


def test_sse_data_yields_each_event_joins_data_lines_and_marks_keepalives() -> None:
    lines = ["retry: 2000", "", "id: 1", "event: x", "data: {", "data: }", "", ": keepalive", "", "data: cut off"]
    assert list(sse_data(lines)) == ["{\n}", None]


def test_a_dropped_stream_resumes_after_the_last_seq_it_showed() -> None:
    asked: list[str | None] = []

    def cut_after_two() -> Iterator[bytes]:
        yield b"retry: 2000\n\n" + frame(1) + frame(2)
        raise httpx.ReadError("connection reset")

    def handler(request: httpx.Request) -> httpx.Response:
        asked.append(request.headers.get("last-event-id"))
        assert request.headers["accept"] == "text/event-stream"
        if len(asked) == 1:
            return httpx.Response(200, content=cut_after_two())
        if len(asked) == 2:
            return httpx.Response(200, content=frame(3))  # then the gateway ends the stream
        return httpx.Response(404, json={"error": {"code": "not_found", "message": "no run"}})

    shown: list[int] = []
    pauses: list[float] = []
    with httpx.Client(transport=httpx.MockTransport(handler), base_url="http://gw") as http:
        with pytest.raises(ApiFailed) as stopped:
            follow(http, "run_1", 0, lambda e: shown.append(e["seq"]), sleep=pauses.append)
    assert shown == [1, 2, 3]
    assert asked == [None, "2", "3"]
    assert stopped.value.code == "not_found" and len(pauses) == 2


def test_following_gives_up_after_the_bound_on_drops_in_a_row() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused")

    pauses: list[float] = []
    with httpx.Client(transport=httpx.MockTransport(handler), base_url="http://gw") as http:
        with pytest.raises(ApiFailed) as stopped:
            follow(http, "run_1", 5, lambda e: None, max_drops=3, sleep=pauses.append)
    assert stopped.value.code == "unreachable"
    assert len(pauses) == 3


def test_a_gateway_that_is_briefly_unavailable_is_retried_not_a_refusal() -> None:
    answers: list[Any] = [
        httpx.Response(503, json={"error": {"code": "unavailable", "message": "draining"}}),
        httpx.Response(200, content=frame(6)),
        httpx.Response(403, json={"error": {"code": "forbidden", "message": "no"}}),
    ]

    def handler(request: httpx.Request) -> httpx.Response:
        response: httpx.Response = answers.pop(0)
        return response

    shown: list[int] = []
    with httpx.Client(transport=httpx.MockTransport(handler), base_url="http://gw") as http:
        with pytest.raises(ApiFailed) as stopped:
            follow(http, "run_1", 5, lambda e: shown.append(e["seq"]), sleep=lambda s: None)
    assert shown == [6] and stopped.value.code == "forbidden"
