"""A demo email sender for Warrant's HTTP adapter: "sending" records the message in one SQLite file.

    python -m examples.services.mail --host 127.0.0.1 --port 8802 --db email.db [--token-env EMAIL_TOKEN]

Named `mail`, not `email`: run as a file, or with this folder on `sys.path`, a module `email`
would hide the standard library's `email` package that the HTTP stack imports.

Tables (the ground truth integration tests read): messages(id, to_address, subject, body, status,
cost, created_at), and idempotency_keys (see idempotency.py). Every send costs COST, reported as
the decimal string `cost` in the response. Keys, faults and auth: see idempotency.py.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from starlette.applications import Starlette

from examples.services.idempotency import ApiError
from examples.services.service import (
    LIMIT,
    TEXT,
    Call,
    Endpoint,
    Hooks,
    Param,
    Service,
    items_of,
    main,
    new_id,
    select_items,
    timestamp,
)

COST = "0.01"
SCHEMA = """
CREATE TABLE IF NOT EXISTS messages (
    id TEXT PRIMARY KEY,
    to_address TEXT NOT NULL,
    subject TEXT NOT NULL,
    body TEXT NOT NULL,
    status TEXT NOT NULL,
    cost TEXT NOT NULL,                    -- a decimal string
    created_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS messages_to ON messages (to_address);
"""
COLUMNS = "id, to_address AS 'to', subject, body, status, cost, created_at"

MESSAGE = {
    "type": "object",
    "properties": {
        "id": TEXT,
        "to": TEXT,
        "subject": TEXT,
        "body": {"type": "string"},
        "status": {"enum": ["sent"]},
        "cost": {"type": "string", "description": "the price of this send, a decimal string"},
        "created_at": TEXT,
    },
    "required": ["id", "to", "subject", "body", "status", "cost", "created_at"],
}
SEND = {
    "type": "object",
    "properties": {"to": {**TEXT, "format": "email"}, "subject": TEXT, "body": {"type": "string"}},
    "required": ["to", "subject"],
    "additionalProperties": False,
}


def send(conn: sqlite3.Connection, call: Call) -> dict[str, Any]:
    message = {
        "id": new_id("msg"),
        "to": call.body["to"],
        "subject": call.body["subject"],
        "body": call.body.get("body", ""),
        "status": "sent",
        "cost": COST,
        "created_at": timestamp(call.now),
    }
    conn.execute("INSERT INTO messages VALUES (:id, :to, :subject, :body, :status, :cost, :created_at)", message)
    return message


def list_outbox(conn: sqlite3.Connection, call: Call) -> dict[str, Any]:
    to = call.params.get("to")
    filters = [("to_address = ?", [to])] if to else []
    return select_items(conn, f"SELECT {COLUMNS} FROM messages", filters, call.params["limit"])


def get_message(conn: sqlite3.Connection, call: Call) -> dict[str, Any]:
    row = conn.execute(f"SELECT {COLUMNS} FROM messages WHERE id = ?", (call.params["message_id"],)).fetchone()
    if row is None:
        raise ApiError(404, "not_found", f"no message {call.params['message_id']}")
    return dict(row)


ENDPOINTS = (
    Endpoint("send", "POST", "/messages", "Send an email.", send, MESSAGE, status=201, body=SEND),
    Endpoint(
        "list_outbox", "GET", "/messages", "Sent messages, newest last.", list_outbox,
        items_of(MESSAGE),
        params=(Param("to", "query", {"type": "string"}, "only messages to this address"), LIMIT),
    ),
    Endpoint(
        "get_message", "GET", "/messages/{message_id}", "One sent message.", get_message, MESSAGE,
        params=(Param("message_id", "path", {"type": "string"}, "a message's id (msg_…)"),),
    ),
)  # fmt: skip


def create_app(db_path: Path, token: str | None, hooks: Hooks | None = None) -> Starlette:
    """The mail sender over `db_path` (created if missing); with `token`, requests need it as a bearer token."""
    return Service("Email", db_path, SCHEMA, ENDPOINTS, token, hooks).app()


if __name__ == "__main__":
    main(None, name="mail", port=8802, token_env="EMAIL_TOKEN", create_app=create_app)
