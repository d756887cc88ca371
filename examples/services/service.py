"""The demo services' frame: a service is a list of `Endpoint`s over one SQLite file, and
`Service.app()` makes it a Starlette app with keys, faults, auth, an OpenAPI document and a CLI.

Every endpoint but `/openapi.json` and `/_admin/*` runs through one pipeline:

    auth (401 missing / 403 wrong bearer token; /openapi.json, /healthz, /_admin/* are open)
    → a fault is taken (the first whose method and path match; `times` counts down)
    → rate_limit: 429, unavailable: 503, both with Retry-After and nothing else done
    → a write (POST, PATCH) with an `Idempotency-Key` claims the key, or answers the stored
      response (`Idempotent-Replayed: true`), 422 for another request, 409 in flight
    → delay: sleep `delay` seconds (after the claim, so a repeat meanwhile sees 409)
    → the work: a write's effect and its key's stored response commit in ONE transaction; any
      error rolls the effect back and releases the key (see idempotency.py)
    → die_after_commit: the process ends at once (exit code 17) without answering;
      error_after_commit: 500 although the work was committed;
      malformed, partial, contradictory: the work is done (a write committed) and its success
      status answered with a spoiled body (`spoil`): cut in half (not JSON), without its
      top-level `id`, or saying `"status": "failed"` with an `error` object. Only the answer is
      spoiled: a key's stored response (a replay's, `GET /by-key`'s) is the true one.
"""

from __future__ import annotations

import argparse
import hmac
import json
import os
import secrets
import socket
import sqlite3
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any, Literal, NoReturn, TypeVar

import anyio
import anyio.to_thread
import uvicorn
from starlette.applications import Starlette
from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from examples.services.idempotency import (
    KEY_HEADER,
    KEYS_SCHEMA,
    MAX_KEY_LENGTH,
    REFUSALS,
    REPLAYED_HEADER,
    SPOILED,
    ApiError,
    Fault,
    Faults,
    claim_key,
    connect,
    fingerprint,
    finish_key,
    json_response,
    lookup_key,
    release_key,
    render,
    transaction,
    validate,
)

DIE_EXIT_CODE = 17
WRITE_METHODS = frozenset({"POST", "PATCH", "DELETE"})

T = TypeVar("T")
Clock = Callable[[], float]
Sleep = Callable[[float], Awaitable[None]]
ExitProcess = Callable[[int], NoReturn]


# -- for handlers ---------------------------------------------------------------------------------


def new_id(prefix: str) -> str:
    return f"{prefix}_{secrets.token_hex(8)}"


def timestamp(now: float) -> str:
    return datetime.fromtimestamp(now, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def select_items(
    conn: sqlite3.Connection, select: str, filters: Sequence[tuple[str, Sequence[Any]]], limit: int
) -> dict[str, Any]:
    """`{"items": [...]}`: the rows of `select` meeting every filter (an SQL condition and its
    arguments), oldest first, at most `limit`."""
    where = " AND ".join(f"({condition})" for condition, _ in filters)
    args = [arg for _, values in filters for arg in values]
    sql = f"{select} WHERE {where}" if filters else select
    rows = conn.execute(f"{sql} ORDER BY rowid LIMIT ?", (*args, limit)).fetchall()
    return {"items": [dict(row) for row in rows]}


# -- endpoints and the pipeline -------------------------------------------------------------------


@dataclass(frozen=True)
class Param:
    name: str
    location: Literal["path", "query"]
    schema: dict[str, Any]
    description: str = ""


TEXT: dict[str, Any] = {"type": "string", "minLength": 1}
LIMIT = Param("limit", "query", {"type": "integer", "minimum": 1, "maximum": 200, "default": 50}, "at most this many")


def items_of(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema of a list answer, `{"items": [...]}`."""
    return {"type": "object", "properties": {"items": {"type": "array", "items": schema}}, "required": ["items"]}


@dataclass(frozen=True)
class Call:
    """What a handler gets: path and query parameters (query ones typed), the JSON body, the time."""

    params: dict[str, Any]
    body: dict[str, Any]
    now: float


Handler = Callable[[sqlite3.Connection, Call], "dict[str, Any] | bytes"]


@dataclass(frozen=True)
class Endpoint:
    """One public operation. A write's handler runs inside the transaction that stores its key."""

    operation_id: str
    method: str
    path: str
    summary: str
    handler: Handler
    response: dict[str, Any]  # JSON Schema of the success body
    status: int = 200
    params: tuple[Param, ...] = ()
    body: dict[str, Any] | None = None  # JSON Schema of the request body (writes)
    open: bool = False  # no bearer token needed
    internal: bool = False  # not a tool: `x-internal` in the OpenAPI document

    @property
    def write(self) -> bool:
        return self.method in WRITE_METHODS


@dataclass(frozen=True)
class Hooks:
    """What tests replace: the clock (key expiry, timestamps), the delay fault's sleep (to hold a
    request in flight) and die_after_commit's exit (to survive a "death" in process)."""

    clock: Clock = time.time
    sleep: Sleep = anyio.sleep
    exit_process: ExitProcess = os._exit


class Service:
    """A demo service: endpoints over one SQLite file (created if missing), with keys, faults and
    auth (with `token`, requests need it as a bearer token)."""

    def __init__(
        self,
        title: str,
        db_path: Path,
        schema: str,
        endpoints: Sequence[Endpoint],
        token: str | None,
        hooks: Hooks | None = None,
    ) -> None:
        hooks = hooks or Hooks()
        self.title = title
        self.db_path = db_path
        self.token = token
        self.clock = hooks.clock
        self.sleep = hooks.sleep
        self.exit_process = hooks.exit_process
        self.faults = Faults()
        # Requests being answered now, and the most at once since the last reset: a destination
        # that counts its own load (GET/DELETE /_admin/in-flight), for tests of shared limits.
        self.in_flight = 0
        self.max_in_flight = 0
        lookup = Endpoint(
            "lookup_by_idempotency_key", "GET", "/by-key/{key}", "The stored response of an Idempotency-Key.",
            lambda conn, call: lookup_key(conn, call.params["key"], call.now), {"type": "object"},
            params=(Param("key", "path", {"type": "string"}, "an Idempotency-Key sent with a write"),),
            internal=True,
        )  # fmt: skip
        health = Endpoint(
            "healthz", "GET", "/healthz", "Liveness.", lambda conn, call: {"ok": True},
            {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]},
            open=True, internal=True,
        )  # fmt: skip
        self.endpoints = [*endpoints, lookup, health]
        self.openapi = openapi_document(title, self.endpoints)
        with connect(db_path) as conn:
            conn.execute("PRAGMA journal_mode = WAL")
            conn.executescript(KEYS_SCHEMA + schema)
            conn.execute("DELETE FROM idempotency_keys WHERE state = 'in_flight'")

    def app(self) -> Starlette:
        routes = [Route(e.path, partial(self._endpoint, e), methods=[e.method]) for e in self.endpoints]
        routes += [
            Route("/openapi.json", self._openapi, methods=["GET"]),
            Route("/_admin/faults", self._faults, methods=["GET", "POST", "DELETE"]),
            Route("/_admin/in-flight", self._load, methods=["GET", "DELETE"]),
        ]
        open_paths = {"/openapi.json", *(e.path for e in self.endpoints if e.open)}
        return Starlette(
            routes=routes,
            middleware=[Middleware(BearerAuth, token=self.token, open_paths=open_paths)],
            exception_handlers={HTTPException: _http_error, Exception: _server_error},
        )

    async def _db(self, fn: Callable[..., T], *args: Any) -> T:
        def run() -> T:
            with connect(self.db_path) as conn:
                return fn(conn, *args)

        return await anyio.to_thread.run_sync(run)

    async def _endpoint(self, endpoint: Endpoint, request: Request) -> Response:
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            return await self._answer(endpoint, request)
        finally:
            self.in_flight -= 1

    async def _load(self, request: Request) -> Response:
        """GET: requests in flight now and the most at once; DELETE: the same, the most reset to now."""
        body = {"in_flight": self.in_flight, "max_in_flight": self.max_in_flight}
        if request.method == "DELETE":
            self.max_in_flight = self.in_flight
        return json_response(200, body)

    async def _answer(self, endpoint: Endpoint, request: Request) -> Response:
        fault = self.faults.take(request.method, request.url.path)
        if fault is not None and fault.mode in REFUSALS:
            return fault.refusal()
        try:
            response = await (
                self._write(endpoint, request, fault) if endpoint.write else self._read(endpoint, request, fault)
            )
        except ApiError as exc:
            response = exc.response()
        if fault is not None and fault.mode == "die_after_commit":
            self.exit_process(DIE_EXIT_CODE)
        if fault is not None and fault.mode == "error_after_commit":
            return ApiError(500, "internal_error", "injected error after commit").response()
        if fault is not None and fault.mode in SPOILED and 200 <= response.status_code < 300:
            return spoil(fault.mode, response)
        return response

    async def _pause(self, fault: Fault | None) -> None:
        if fault is not None and fault.mode == "delay":
            await self.sleep(fault.delay)

    async def _read(self, endpoint: Endpoint, request: Request, fault: Fault | None) -> Response:
        call = Call(_params(endpoint, request), {}, self.clock())
        await self._pause(fault)
        result = await self._db(_run_read, endpoint, call)
        return Response(result, endpoint.status, media_type="application/json")

    async def _write(self, endpoint: Endpoint, request: Request, fault: Fault | None) -> Response:
        call = Call(_params(endpoint, request), await _json_object(request), self.clock())
        key = request.headers.get(KEY_HEADER)
        if key is not None:
            if not 1 <= len(key) <= MAX_KEY_LENGTH:
                raise ApiError(400, "invalid_request", f"{KEY_HEADER} must have 1 to {MAX_KEY_LENGTH} characters")
            digest = fingerprint(request.method, request.url.path, call.body)
            stored = await self._db(claim_key, key, request.method, request.url.path, digest, call.now)
            if stored is not None:
                await self._pause(fault)
                return stored.replay()
        try:
            await self._pause(fault)
            content = await self._db(_run_write, endpoint, call, key)
        except BaseException:
            if key is not None:
                with anyio.CancelScope(shield=True):
                    await self._db(release_key, key)
            raise
        return Response(content, endpoint.status, media_type="application/json")

    async def _openapi(self, request: Request) -> Response:
        return json_response(200, self.openapi)

    async def _faults(self, request: Request) -> Response:
        if request.method == "GET":
            return json_response(200, {"items": self.faults.listing()})
        if request.method == "DELETE":
            return json_response(200, {"cleared": self.faults.clear()})
        try:
            fault = self.faults.add(await _json_object(request))
        except ApiError as exc:
            return exc.response()
        return json_response(201, asdict(fault))


def spoil(mode: str, response: Response) -> Response:
    """A success answer spoiled by a fault: `malformed` cuts the body in half (no longer JSON),
    `partial` drops its top-level `id`, `contradictory` sets `"status": "failed"` and adds an
    `error` object. The status and the `Idempotent-Replayed` header stay."""
    content = bytes(response.body)
    if mode == "malformed":
        content = content[: len(content) // 2]
    else:
        body = json.loads(content)
        if isinstance(body, dict):
            if mode == "partial":
                body.pop("id", None)
            else:
                body["status"] = "failed"
                body["error"] = {"type": "internal_error", "message": "injected contradictory answer"}
        content = render(body)
    headers = {k: v for k, v in response.headers.items() if k.lower() == REPLAYED_HEADER.lower()}
    return Response(content, response.status_code, headers, media_type="application/json")


def _run_read(conn: sqlite3.Connection, endpoint: Endpoint, call: Call) -> bytes:
    with transaction(conn, "DEFERRED"):  # one snapshot for the whole answer
        result = endpoint.handler(conn, call)
    return result if isinstance(result, bytes) else render(result)


def _run_write(conn: sqlite3.Connection, endpoint: Endpoint, call: Call, key: str | None) -> bytes:
    with transaction(conn):
        if endpoint.body is not None:
            validate(endpoint.body, call.body, "body")
        result = endpoint.handler(conn, call)
        content = result if isinstance(result, bytes) else render(result)
        if key is not None:
            finish_key(conn, key, endpoint.status, content)
    return content


def _params(endpoint: Endpoint, request: Request) -> dict[str, Any]:
    """Path parameters as given; query parameters typed by their schema, validated, defaulted."""
    params: dict[str, Any] = dict(request.path_params)
    for param in endpoint.params:
        raw = request.query_params.get(param.name)
        if param.location != "query":
            continue
        if raw is None:
            if "default" in param.schema:
                params[param.name] = param.schema["default"]
            continue
        if param.schema.get("type") == "integer":
            try:
                params[param.name] = int(raw)
            except ValueError:
                raise ApiError(400, "invalid_request", f"query {param.name}: not an integer") from None
        else:
            params[param.name] = raw
        validate(param.schema, params[param.name], f"query {param.name}")
    return params


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


async def _json_object(request: Request) -> dict[str, Any]:
    if request.method == "DELETE" and not (await request.body()).strip():
        return {}  # a DELETE names its object in the path
    try:
        body = json.loads(await request.body(), parse_constant=_no_constant)
    except ValueError:
        raise ApiError(400, "invalid_request", "the body is not JSON") from None
    if not isinstance(body, dict):
        raise ApiError(400, "invalid_request", "the body must be a JSON object")
    return body


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    type = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "invalid_request")
    error = ApiError(exc.status_code, type, exc.detail, dict(exc.headers or {}))
    return error.response()


async def _server_error(request: Request, exc: Exception) -> Response:
    return ApiError(500, "internal_error", "internal error").response()


class BearerAuth:
    """401 without `Authorization: Bearer <token>`, 403 with another token; `open_paths` and
    `/_admin/*` need none. No token configured: everything is open."""

    def __init__(self, app: ASGIApp, token: str | None, open_paths: set[str]) -> None:
        self.app = app
        self.token = token
        self.open_paths = open_paths

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path: str = scope.get("path", "")
        if scope["type"] != "http" or self.token is None or path in self.open_paths or path.startswith("/_admin/"):
            await self.app(scope, receive, send)
            return
        scheme, _, given = (Headers(scope=scope).get("authorization") or "").partition(" ")
        if scheme.lower() != "bearer" or not given:
            error = ApiError(401, "unauthorized", "a bearer token is required", {"WWW-Authenticate": "Bearer"})
        elif not hmac.compare_digest(given.strip().encode(), self.token.encode()):
            error = ApiError(403, "forbidden", "the bearer token is not valid here")
        else:
            await self.app(scope, receive, send)
            return
        await error.response()(scope, receive, send)


# -- the OpenAPI document -------------------------------------------------------------------------

ERROR_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "error": {
            "type": "object",
            "properties": {"type": {"type": "string"}, "message": {"type": "string"}},
            "required": ["type", "message"],
        }
    },
    "required": ["error"],
}
KEY_PARAMETER: dict[str, Any] = {
    "name": KEY_HEADER,
    "in": "header",
    "required": False,
    "description": (
        "Stripe-like: a repeat with the same body answers the stored response (Idempotent-Replayed: true) "
        "and does nothing; another body answers 422, a repeat while the first is in flight 409. "
        "Kept 24 hours; GET /by-key/{key} answers the stored body."
    ),
    "schema": {"type": "string", "minLength": 1, "maxLength": MAX_KEY_LENGTH},
}


def _json_content(schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def _operation(endpoint: Endpoint) -> dict[str, Any]:
    op: dict[str, Any] = {"operationId": endpoint.operation_id, "summary": endpoint.summary}
    params = [
        {
            "name": p.name,
            "in": p.location,
            "required": p.location == "path",
            "description": p.description,
            "schema": p.schema,
        }
        for p in endpoint.params
    ]
    if endpoint.write:
        params.append(KEY_PARAMETER)
    if params:
        op["parameters"] = params
    if endpoint.body is not None:
        op["requestBody"] = {"required": True, "content": {"application/json": {"schema": endpoint.body}}}
    op["responses"] = {str(endpoint.status): _json_content(endpoint.response, "success")}
    if endpoint.write:
        op["responses"]["409"] = _json_content(ERROR_SCHEMA, "the Idempotency-Key's first request is in flight")
        op["responses"]["422"] = _json_content(ERROR_SCHEMA, "the Idempotency-Key came with another request")
    op["responses"]["default"] = _json_content(ERROR_SCHEMA, "an error")
    if endpoint.open:
        op["security"] = []
    if endpoint.internal:
        op["x-internal"] = True
    return op


def openapi_document(title: str, endpoints: Sequence[Endpoint]) -> dict[str, Any]:
    """An OpenAPI 3.1 document of `endpoints` (the admin API is left out: it is not for tools)."""
    paths: dict[str, dict[str, Any]] = {}
    for endpoint in endpoints:
        paths.setdefault(endpoint.path, {})[endpoint.method.lower()] = _operation(endpoint)
    return {
        "openapi": "3.1.0",
        "info": {"title": title, "version": "1.0.0", "description": f"Warrant's demo {title}."},
        "servers": [{"url": "/"}],
        "security": [{"bearer": []}],
        "paths": paths,
        "components": {"securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}}},
    }


# -- the command line -----------------------------------------------------------------------------


def main(
    argv: Sequence[str] | None, *, name: str, port: int, token_env: str, create_app: Callable[..., Starlette]
) -> None:
    """`python -m examples.services.<name> --host H --port P --db PATH --token-env VAR`.

    Prints `listening on http://H:P` once the socket listens (connections wait in its backlog
    until uvicorn accepts them), then serves until stopped.
    """
    parser = argparse.ArgumentParser(prog=f"python -m examples.services.{name}")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=port, help="0: any free port (the line printed names it)")
    parser.add_argument("--db", type=Path, default=Path(f"{name}.db"), help="the SQLite file")
    parser.add_argument("--token-env", default=token_env, help="the variable holding the bearer token, if any")
    args = parser.parse_args(argv)
    app = create_app(args.db, os.environ.get(args.token_env) or None)
    family = socket.AF_INET6 if ":" in args.host else socket.AF_INET
    sock = socket.create_server((args.host, args.port), family=family, backlog=128)
    host = f"[{args.host}]" if family == socket.AF_INET6 else args.host
    print(f"listening on http://{host}:{sock.getsockname()[1]}", flush=True)
    server = uvicorn.Server(uvicorn.Config(app, lifespan="off", log_level="warning", access_log=False))
    server.run(sockets=[sock])
