"""A demo CRM for Warrant's HTTP adapter: contacts, their deals and notes, in one SQLite file.

    python -m examples.services.crm --host 127.0.0.1 --port 8801 --db crm.db [--token-env CRM_TOKEN]

Tables (the ground truth integration tests read): contacts(id, email, name, company, created_at),
deals(id, contact_id, title, amount, created_at), notes(id, contact_id, text, created_at), and
idempotency_keys (see idempotency.py). A duplicate email is allowed: counting rows shows whether a
write happened once. Keys, faults and auth: see idempotency.py.
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

SCHEMA = """
CREATE TABLE IF NOT EXISTS contacts (
    id TEXT PRIMARY KEY,
    email TEXT NOT NULL,
    name TEXT,
    company TEXT,
    created_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS contacts_email ON contacts (email);
CREATE TABLE IF NOT EXISTS deals (
    id TEXT PRIMARY KEY,
    contact_id TEXT NOT NULL REFERENCES contacts (id),
    title TEXT NOT NULL,
    amount TEXT NOT NULL,                  -- a decimal string, as sent
    created_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS deals_contact ON deals (contact_id);
CREATE TABLE IF NOT EXISTS notes (
    id TEXT PRIMARY KEY,
    contact_id TEXT NOT NULL REFERENCES contacts (id),
    text TEXT NOT NULL,
    created_at TEXT NOT NULL
);
"""

CONTACT_COLUMNS = "id, email, name, company, created_at"
OPTIONAL_TEXT = {"type": ["string", "null"]}
CONTACT_FIELDS = {"email": {**TEXT, "format": "email"}, "name": {"type": "string"}, "company": {"type": "string"}}
CONTACT = {
    "type": "object",
    "properties": {"id": TEXT, "email": TEXT, "name": OPTIONAL_TEXT, "company": OPTIONAL_TEXT, "created_at": TEXT},
    "required": ["id", "email", "name", "company", "created_at"],
}
DEAL = {
    "type": "object",
    "properties": {"id": TEXT, "contact_id": TEXT, "title": TEXT, "amount": TEXT, "created_at": TEXT},
    "required": ["id", "contact_id", "title", "amount", "created_at"],
}
NOTE = {
    "type": "object",
    "properties": {"id": TEXT, "contact_id": TEXT, "text": TEXT, "created_at": TEXT},
    "required": ["id", "contact_id", "text", "created_at"],
}
AMOUNT = {"type": "string", "pattern": r"^[0-9]+(\.[0-9]+)?$", "description": "a decimal string, e.g. 1200.00"}
CONTACT_ID = Param("contact_id", "path", {"type": "string"}, "a contact's id (ct_…)")


def _contact(conn: sqlite3.Connection, contact_id: str) -> dict[str, Any]:
    row = conn.execute(f"SELECT {CONTACT_COLUMNS} FROM contacts WHERE id = ?", (contact_id,)).fetchone()
    if row is None:
        raise ApiError(404, "not_found", f"no contact {contact_id}")
    return dict(row)


def search_contacts(conn: sqlite3.Connection, call: Call) -> dict[str, Any]:
    filters: list[tuple[str, list[Any]]] = []
    if text := call.params.get("q"):
        found = (
            "instr(lower(email), ?) OR instr(lower(coalesce(name, '')), ?) OR instr(lower(coalesce(company, '')), ?)"
        )
        filters.append((found, [text.lower()] * 3))
    if email := call.params.get("email"):
        filters.append(("email = ?", [email]))
    return select_items(conn, f"SELECT {CONTACT_COLUMNS} FROM contacts", filters, call.params["limit"])


def get_contact(conn: sqlite3.Connection, call: Call) -> dict[str, Any]:
    return _contact(conn, call.params["contact_id"])


def create_contact(conn: sqlite3.Connection, call: Call) -> dict[str, Any]:
    contact = {
        "id": new_id("ct"),
        "email": call.body["email"],
        "name": call.body.get("name"),
        "company": call.body.get("company"),
        "created_at": timestamp(call.now),
    }
    conn.execute("INSERT INTO contacts VALUES (:id, :email, :name, :company, :created_at)", contact)
    return contact


def update_contact(conn: sqlite3.Connection, call: Call) -> dict[str, Any]:
    contact = _contact(conn, call.params["contact_id"])
    contact.update(call.body)
    conn.execute("UPDATE contacts SET email = :email, name = :name, company = :company WHERE id = :id", contact)
    return contact


def delete_contact(conn: sqlite3.Connection, call: Call) -> dict[str, Any]:
    """Remove one contact, its deals and notes; answers the contact as it was (the compensation of
    create_contact in policies/default.yaml)."""
    contact = _contact(conn, call.params["contact_id"])
    for table in ("notes", "deals"):
        conn.execute(f"DELETE FROM {table} WHERE contact_id = ?", (contact["id"],))
    conn.execute("DELETE FROM contacts WHERE id = ?", (contact["id"],))
    return contact


def create_deal(conn: sqlite3.Connection, call: Call) -> dict[str, Any]:
    contact = _contact(conn, call.body["contact_id"])
    deal = {
        "id": new_id("dl"),
        "contact_id": contact["id"],
        "title": call.body["title"],
        "amount": call.body["amount"],
        "created_at": timestamp(call.now),
    }
    conn.execute("INSERT INTO deals VALUES (:id, :contact_id, :title, :amount, :created_at)", deal)
    return deal


def list_deals(conn: sqlite3.Connection, call: Call) -> dict[str, Any]:
    contact_id = call.params.get("contact_id")
    filters = [("contact_id = ?", [contact_id])] if contact_id else []
    return select_items(
        conn, "SELECT id, contact_id, title, amount, created_at FROM deals", filters, call.params["limit"]
    )


def add_note(conn: sqlite3.Connection, call: Call) -> dict[str, Any]:
    contact = _contact(conn, call.params["contact_id"])
    note = {
        "id": new_id("nt"),
        "contact_id": contact["id"],
        "text": call.body["text"],
        "created_at": timestamp(call.now),
    }
    conn.execute("INSERT INTO notes VALUES (:id, :contact_id, :text, :created_at)", note)
    return note


ENDPOINTS = (
    Endpoint(
        "search_contacts", "GET", "/contacts", "Search contacts by text (email, name, company) or exact email.",
        search_contacts, items_of(CONTACT),
        params=(
            Param("q", "query", {"type": "string"}, "text found in the email, name or company (any case)"),
            Param("email", "query", {"type": "string"}, "this exact email"),
            LIMIT,
        ),
    ),
    Endpoint(
        "get_contact", "GET", "/contacts/{contact_id}", "One contact.", get_contact, CONTACT, params=(CONTACT_ID,)
    ),
    Endpoint(
        "create_contact", "POST", "/contacts", "Create a contact (a duplicate email is allowed).",
        create_contact, CONTACT, status=201,
        body={"type": "object", "properties": CONTACT_FIELDS, "required": ["email"], "additionalProperties": False},
    ),
    Endpoint(
        "update_contact", "PATCH", "/contacts/{contact_id}", "Change a contact's email, name or company.",
        update_contact, CONTACT, params=(CONTACT_ID,),
        body={"type": "object", "properties": CONTACT_FIELDS, "minProperties": 1, "additionalProperties": False},
    ),
    Endpoint(
        "delete_contact", "DELETE", "/contacts/{contact_id}", "Delete a contact with its deals and notes.",
        delete_contact, CONTACT, params=(CONTACT_ID,),
    ),
    Endpoint(
        "create_deal", "POST", "/deals", "Open a deal with a contact.", create_deal, DEAL, status=201,
        body={
            "type": "object",
            "properties": {"contact_id": TEXT, "title": TEXT, "amount": AMOUNT},
            "required": ["contact_id", "title", "amount"],
            "additionalProperties": False,
        },
    ),
    Endpoint(
        "list_deals", "GET", "/deals", "Deals, optionally of one contact.", list_deals, items_of(DEAL),
        params=(Param("contact_id", "query", {"type": "string"}, "only this contact's deals"), LIMIT),
    ),
    Endpoint(
        "add_note", "POST", "/contacts/{contact_id}/notes", "Add a note to a contact.", add_note, NOTE, status=201,
        params=(CONTACT_ID,),
        body={"type": "object", "properties": {"text": TEXT}, "required": ["text"], "additionalProperties": False},
    ),
)  # fmt: skip


def create_app(db_path: Path, token: str | None, hooks: Hooks | None = None) -> Starlette:
    """The CRM over `db_path` (created if missing); with `token`, requests need it as a bearer token."""
    return Service("CRM", db_path, SCHEMA, ENDPOINTS, token, hooks).app()


if __name__ == "__main__":
    main(None, name="crm", port=8801, token_env="CRM_TOKEN", create_app=create_app)
