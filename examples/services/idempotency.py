"""Stripe-like idempotency keys and injected faults: what both demo services (CRM, mail) share
below their endpoints, with the JSON errors and the per-request SQLite access they rest on.

Keys live in the service's own database (`idempotency_keys`). A write with an `Idempotency-Key`
claims it (a row `in_flight`, committed); the same key with the same request (method, path,
canonical JSON body) answers the stored response, with another request 422, while the first is in
flight 409. The write's effect and the key's stored response commit in ONE transaction; a write
that fails releases its claim, so a key is `done` exactly when its effect happened. Keys older
than KEY_RETENTION are purged lazily. One process serves one database file: at start, keys left
`in_flight` by a process that died are released (they have no effect).

Faults are kept in memory (`Faults`), taken by the first match on method and path prefix; the
modes are described in service.py, which applies them.

Errors are `{"error": {"type": ..., "message": ...}}`; the types: invalid_request (400),
unauthorized (401), forbidden (403), not_found (404), method_not_allowed (405),
idempotency_in_flight (409), idempotency_error (422), rate_limited (429), internal_error (500),
unavailable (503).
"""

from __future__ import annotations

import hashlib
import json
import secrets
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

import jsonschema
import rfc8785
from starlette.responses import Response

KEY_HEADER = "Idempotency-Key"
REPLAYED_HEADER = "Idempotent-Replayed"
KEY_RETENTION = 24 * 3600.0  # seconds a key is remembered; older rows are purged lazily
MAX_KEY_LENGTH = 255

KEYS_SCHEMA = """
CREATE TABLE IF NOT EXISTS idempotency_keys (
    key TEXT PRIMARY KEY,
    method TEXT NOT NULL,
    path TEXT NOT NULL,
    request_sha256 TEXT NOT NULL,          -- of the canonical JSON of {method, path, body}
    state TEXT NOT NULL CHECK (state IN ('in_flight', 'done')),
    status INTEGER,                        -- the stored response, once done
    response TEXT,
    created_at REAL NOT NULL               -- unix seconds
);
CREATE INDEX IF NOT EXISTS idempotency_keys_created_at ON idempotency_keys (created_at);
"""


class ApiError(Exception):
    """An answer other than success; `response()` renders the JSON error."""

    def __init__(self, status: int, type: str, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.type = type
        self.message = message
        self.headers = headers or {}

    def response(self) -> Response:
        return json_response(self.status, {"error": {"type": self.type, "message": self.message}}, self.headers)


def render(body: Any) -> bytes:
    return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def json_response(status: int, body: Any, headers: dict[str, str] | None = None) -> Response:
    return Response(render(body), status, headers, media_type="application/json")


def validate(schema: dict[str, Any], value: Any, what: str) -> None:
    """Raises:
    ApiError: 400 invalid_request, naming the first problem."""
    error = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(schema).iter_errors(value))
    if error is not None:
        where = "/".join(str(p) for p in error.absolute_path)
        raise ApiError(400, "invalid_request", f"{what}{' ' + where if where else ''}: {error.message}")


# -- the database ---------------------------------------------------------------------------------


@contextmanager
def connect(path: Path) -> Iterator[sqlite3.Connection]:
    """A connection for one request (autocommit mode: transactions are explicit)."""
    conn = sqlite3.connect(path, isolation_level=None, timeout=30)
    conn.row_factory = sqlite3.Row
    try:
        yield conn
    finally:
        conn.close()


@contextmanager
def transaction(conn: sqlite3.Connection, kind: Literal["IMMEDIATE", "DEFERRED"] = "IMMEDIATE") -> Iterator[None]:
    conn.execute(f"BEGIN {kind}")
    try:
        yield
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


# -- idempotency keys -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Stored:
    status: int
    content: bytes

    def replay(self) -> Response:
        return Response(self.content, self.status, {REPLAYED_HEADER: "true"}, media_type="application/json")


def fingerprint(method: str, path: str, body: Any) -> str:
    """The SHA-256 of the canonical JSON (RFC 8785) of the request.

    Raises:
        ApiError: 400 invalid_request for a body canonical JSON cannot hold (an integer past 2**53).
    """
    try:
        canonical = rfc8785.dumps({"method": method, "path": path, "body": body})
    except rfc8785.CanonicalizationError as exc:
        raise ApiError(400, "invalid_request", f"the body has no canonical JSON form: {exc}") from None
    return hashlib.sha256(canonical).hexdigest()


def claim_key(conn: sqlite3.Connection, key: str, method: str, path: str, digest: str, now: float) -> Stored | None:
    """Claim `key` for this request (None), or the response it already stored.

    Raises:
        ApiError: 422 idempotency_error when the key came with another request;
            409 idempotency_in_flight when its first request is still being handled.
    """
    with transaction(conn):
        conn.execute("DELETE FROM idempotency_keys WHERE created_at < ?", (now - KEY_RETENTION,))
        row = conn.execute(
            "SELECT request_sha256, state, status, response FROM idempotency_keys WHERE key = ?", (key,)
        ).fetchone()
        if row is None:
            conn.execute(
                "INSERT INTO idempotency_keys (key, method, path, request_sha256, state, created_at)"
                " VALUES (?, ?, ?, ?, 'in_flight', ?)",
                (key, method, path, digest, now),
            )
            return None
    if row["request_sha256"] != digest:
        raise ApiError(422, "idempotency_error", "this Idempotency-Key was used with another request")
    if row["state"] == "in_flight":
        raise ApiError(409, "idempotency_in_flight", "a request with this Idempotency-Key is still being handled")
    return Stored(row["status"], row["response"].encode("utf-8"))


def finish_key(conn: sqlite3.Connection, key: str, status: int, content: bytes) -> None:
    """Store the response of `key`'s request, inside the transaction of its effect."""
    done = conn.execute(
        "UPDATE idempotency_keys SET state = 'done', status = ?, response = ? WHERE key = ? AND state = 'in_flight'",
        (status, content.decode("utf-8"), key),
    )
    if done.rowcount != 1:
        raise RuntimeError(f"the claim on idempotency key {key!r} was lost")  # rolls the effect back


def release_key(conn: sqlite3.Connection, key: str) -> None:
    """Forget a claim whose request did nothing; a `done` key is never released."""
    conn.execute("DELETE FROM idempotency_keys WHERE key = ? AND state = 'in_flight'", (key,))


def lookup_key(conn: sqlite3.Connection, key: str, now: float) -> bytes:
    """The response body stored under `key`, exactly as it was sent.

    Raises:
        ApiError: 404 not_found (unknown or expired), 409 idempotency_in_flight.
    """
    row = conn.execute(
        "SELECT state, response FROM idempotency_keys WHERE key = ? AND created_at >= ?", (key, now - KEY_RETENTION)
    ).fetchone()
    if row is None:
        raise ApiError(404, "not_found", "no request with this Idempotency-Key")
    if row["state"] == "in_flight":
        raise ApiError(409, "idempotency_in_flight", "a request with this Idempotency-Key is still being handled")
    content: str = row["response"]
    return content.encode("utf-8")


# -- faults ---------------------------------------------------------------------------------------

REFUSALS = {"rate_limit": (429, "rate_limited"), "unavailable": (503, "unavailable")}
SPOILED = ("malformed", "partial", "contradictory")  # the work is done, its success answer spoiled
FAULT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "method": {"type": "string", "minLength": 1, "description": "HTTP method, or * for any"},
        "path": {"type": "string", "pattern": "^/", "description": "a concrete path, matched as a prefix by segment"},
        "mode": {"enum": ["delay", "die_after_commit", "error_after_commit", "rate_limit", "unavailable", *SPOILED]},
        "times": {"type": ["integer", "null"], "minimum": 1, "default": 1, "description": "null: until cleared"},
        "delay": {"type": "number", "minimum": 0, "default": 1.0},
        "retry_after": {"type": "integer", "minimum": 0, "default": 1},
    },
    "required": ["method", "path", "mode"],
    "additionalProperties": False,
}


@dataclass
class Fault:
    mode: str
    method: str
    path: str
    times: int | None = 1
    delay: float = 1.0
    retry_after: int = 1
    id: str = field(default_factory=lambda: f"ft_{secrets.token_hex(8)}")

    def matches(self, method: str, path: str) -> bool:
        prefix = self.path.rstrip("/") + "/"
        return self.method in ("*", method) and (path == self.path or path.startswith(prefix))

    def refusal(self) -> Response:
        status, type = REFUSALS[self.mode]
        error = ApiError(status, type, f"injected {self.mode}", {"Retry-After": str(self.retry_after)})
        return error.response()


class Faults:
    """The faults to inject, in memory: a restarted process has none."""

    def __init__(self) -> None:
        self._items: list[Fault] = []

    def add(self, spec: dict[str, Any]) -> Fault:
        """Raises:
        ApiError: 400 invalid_request."""
        validate(FAULT_SCHEMA, spec, "fault")
        fault = Fault(**{**spec, "method": spec["method"].upper()})
        self._items.append(fault)
        return fault

    def take(self, method: str, path: str) -> Fault | None:
        """The first fault matching the request, counted down (and dropped when used up)."""
        for fault in self._items:
            if fault.matches(method, path):
                if fault.times is not None:
                    fault.times -= 1
                    if fault.times == 0:
                        self._items.remove(fault)
                return fault
        return None

    def listing(self) -> list[dict[str, Any]]:
        return [asdict(fault) for fault in self._items]

    def clear(self) -> int:
        count = len(self._items)
        self._items.clear()
        return count
