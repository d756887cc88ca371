"""The operator commands' HTTP client: one gateway, one API key, errors as `[code] message`.

The gateway is `--url`, else WARRANT_URL, else http://127.0.0.1:8700; the API key comes from
WARRANT_API_KEY. A refusal is one line on stderr (with `--json`: the error body on stdout) and
exit status 1.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import quote

import httpx

from gateway.errors import Code

DEFAULT_URL = "http://127.0.0.1:8700"


class ApiFailed(Exception):
    """An API refusal (its code as the gateway said it), or the CLI's own (a `Code`: unreachable, ...)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"[{code}] {message}")
        self.code = code
        self.message = message


def add_url(command: argparse.ArgumentParser) -> None:
    command.add_argument("--url", help=f"the gateway (default: WARRANT_URL, else {DEFAULT_URL})")


def client(args: argparse.Namespace) -> httpx.Client:
    """Raises: ApiFailed `unauthenticated` when WARRANT_API_KEY is not set."""
    key = os.environ.get("WARRANT_API_KEY", "")
    if not key:
        raise ApiFailed(Code.UNAUTHENTICATED, "set WARRANT_API_KEY to an API key of the gateway")
    url = (args.url or os.environ.get("WARRANT_URL") or DEFAULT_URL).rstrip("/")
    logging.getLogger("httpx").setLevel(logging.WARNING)  # plain output: no request log lines
    return httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=30)


def call(client: httpx.Client, method: str, path: str, body: Any = None, params: dict[str, str] | None = None) -> Any:
    """The answer's JSON. Raises: ApiFailed with the API's error code (`unreachable` without one)."""
    try:
        response = client.request(method, path, json=body, params=params)
    except httpx.HTTPError as exc:
        raise ApiFailed(
            Code.UNREACHABLE, f"cannot reach the gateway at {client.base_url}: {type(exc).__name__}"
        ) from exc
    try:
        data = response.json()
    except ValueError:
        data = {}
    if response.status_code >= 400:
        error = data.get("error", {}) if isinstance(data, dict) else {}
        raise ApiFailed(str(error.get("code", response.status_code)), str(error.get("message", response.reason_phrase)))
    return data


def reporting(func: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    """An API refusal is one line on stderr (the error body on stdout with `--json`) and exit status 1."""

    def command(args: argparse.Namespace) -> int:
        try:
            return func(args)
        except ApiFailed as exc:
            if getattr(args, "json", False):
                print(json.dumps({"error": {"code": exc.code, "message": exc.message}}))
            print(f"warrant: {exc}", file=sys.stderr)
            return 1

    return command


# -- helpers shared by the operator commands ---------------------------------------------------
def api_path(*parts: str) -> str:
    """`/api/...` with each caller-given part quoted: an id never changes which route is asked."""
    return "/api/" + "/".join(quote(part, safe="") for part in parts)


def each_item(http: httpx.Client, path: str, params: dict[str, str] | None = None) -> Iterator[dict[str, Any]]:
    """Every item of a list, page after page, following its `next_cursor`."""
    for page in each_page(http, path, params):
        yield from page["items"]


def each_page(http: httpx.Client, path: str, params: dict[str, str] | None = None) -> Iterator[dict[str, Any]]:
    """Every page of a list, following its `next_cursor`."""
    query = dict(params or {})
    while True:
        page: dict[str, Any] = call(http, "GET", path, params=query)
        yield page
        if not page.get("next_cursor"):
            return
        query["cursor"] = page["next_cursor"]


def every_item(http: httpx.Client, path: str, params: dict[str, str] | None = None) -> list[dict[str, Any]]:
    return list(each_item(http, path, params))


def print_json(value: Any) -> None:
    print(json.dumps(value, indent=2, ensure_ascii=False))
