"""`warrant events tail`: a run's history, one line per event, followed as it grows.

    warrant events tail RUN [--from SEQ] [--no-follow] [--json]

Follows `GET /api/runs/{id}/events` with `Accept: text/event-stream` (an auditor, operator or
admin key in WARRANT_API_KEY). Each line is the event's seq, time, type and a compact summary of
its data; `--json` prints each event as the API gives it, one JSON object per line. `--from SEQ`
starts at that seq (default: the first entry). A dropped stream is resumed with `Last-Event-ID`,
so no entry is missed or shown twice; after `MAX_DROPS` drops in a row without a sign of life the
command gives up (`[unreachable]`, exit 1). The stream never ends by itself (a terminal run can
still gain entries): Ctrl-C ends it, exit 0. `--no-follow` prints the history up to now and exits.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import httpx

from gateway.backoff import backoff_delay
from gateway.cli import http as cli_http
from gateway.cli.format import event_line
from gateway.cli.http import ApiFailed, add_url, api_path, each_item, reporting
from gateway.errors import Code

MAX_DROPS = 8  # reconnections in a row before giving up: pauses of 0.5 s doubling to 10 s, about 45 s in all
READ_TIMEOUT = 60.0  # seconds of silence that count as a drop (the gateway sends a keepalive every 15)
RETRYABLE_STATUS = frozenset({502, 503, 504})

Emit = Callable[[dict[str, Any]], None]


def add_commands(sub: Any) -> None:
    events = sub.add_parser("events", help="a run's history (WARRANT_API_KEY)")
    events_sub = events.add_subparsers(dest="events_command", required=True)
    tail = events_sub.add_parser("tail", help="print a run's events and follow new ones (Ctrl-C ends)")
    tail.add_argument("run_id")
    tail.add_argument("--from", dest="start", type=int, default=1, metavar="SEQ", help="the first seq to show")
    tail.add_argument("--no-follow", action="store_true", help="print the history up to now and exit")
    tail.add_argument("--json", action="store_true", help="each event as the API's JSON, one per line")
    add_url(tail)
    tail.set_defaults(func=reporting(_tail))


def sse_data(lines: Iterable[str]) -> Iterator[str | None]:
    """The `data` of each Server-Sent Event in `lines`, and None for each comment line (a keepalive).

    An event is dispatched at its blank line; one cut off before it is dropped, as the SSE
    specification says (its id was not delivered either, so a resume sends it again).
    """
    data: list[str] = []
    for line in lines:
        if not line:
            if data:
                yield "\n".join(data)
                data = []
        elif line.startswith(":"):
            yield None
        else:
            field, _, value = line.partition(":")
            if field == "data":
                data.append(value.removeprefix(" "))


def _refusal(response: httpx.Response) -> ApiFailed:
    try:
        error = response.json().get("error", {})
    except (ValueError, AttributeError):
        error = {}
    return ApiFailed(str(error.get("code", response.status_code)), str(error.get("message", response.reason_phrase)))


def follow(
    http: httpx.Client,
    run_id: str,
    after: int,
    emit: Emit,
    *,
    max_drops: int = MAX_DROPS,
    sleep: Callable[[float], None] = time.sleep,
) -> None:
    """Emit every event after seq `after`, then each new one; returns only by raising.

    Raises: ApiFailed with the API's code when it refuses (not found, unauthenticated, ...), or
    `unreachable` after `max_drops` drops in a row.
    """
    path = api_path("runs", run_id, "events")
    last, drops = after, 0
    while True:
        headers = {"Accept": "text/event-stream"} | ({"Last-Event-ID": str(last)} if last else {})
        try:
            with http.stream("GET", path, headers=headers, timeout=httpx.Timeout(10, read=READ_TIMEOUT)) as response:
                if response.status_code >= 400:
                    response.read()
                    if response.status_code not in RETRYABLE_STATUS:
                        raise _refusal(response)
                    why = f"HTTP {response.status_code}"
                else:
                    for data in sse_data(response.iter_lines()):
                        drops = 0  # an event or a keepalive: the connection was alive
                        if data is not None:
                            event = json.loads(data)
                            emit(event)
                            last = event["seq"]
                    why = "the gateway ended the stream"
        except httpx.TransportError as exc:
            why = type(exc).__name__
        except ValueError as exc:
            raise ApiFailed(Code.INVALID_RESPONSE, f"the event stream sent something that is not JSON: {exc}") from exc
        drops += 1
        if drops > max_drops:
            raise ApiFailed(Code.UNREACHABLE, f"the event stream of {run_id} dropped {drops} times in a row ({why})")
        print(f"warrant: the event stream dropped ({why}); resuming after seq {last}", file=sys.stderr, flush=True)
        sleep(backoff_delay(drops, initial=0.5, cap=10.0))


def _tail(args: argparse.Namespace) -> int:
    def emit(event: dict[str, Any]) -> None:
        text = json.dumps(event, ensure_ascii=False, separators=(",", ":")) if args.json else event_line(event)
        print(text, flush=True)  # a reader of a pipe sees each event as it comes

    after = max(args.start - 1, 0)
    try:
        with cli_http.client(args) as http:
            if args.no_follow:
                params = {"limit": "1000"} | ({"cursor": str(after)} if after else {})
                for event in each_item(http, api_path("runs", args.run_id, "events"), params):
                    emit(event)
            else:
                follow(http, args.run_id, after, emit)
    except KeyboardInterrupt:
        return 0
    except BrokenPipeError:  # `| head`: the reader has all it wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit
        return 0
    return 0
