"""The demo adapter bundled with `make run`: an in-process notebook with a read, a write and an
approval-gated write. It lets a newcomer watch the gate work before fronting a real API.
"""

from __future__ import annotations

import itertools
from typing import Any

from gateway.adapters.base import CallRequest
from gateway.adapters.python import PythonAdapter


def notes_adapter(name: str = "notes") -> PythonAdapter:
    adapter = PythonAdapter(name)
    notes: dict[str, dict[str, Any]] = {}
    by_key: dict[str, str] = {}
    ids = itertools.count(1)

    @adapter.tool(
        description="Search notes by a word in the title or body.",
        input_schema={"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
    )
    async def search(args: dict[str, Any], call: CallRequest) -> dict[str, Any]:
        word = args["query"].lower()
        hits = [n for n in notes.values() if word in n["title"].lower() or word in n["body"].lower()]
        return {"notes": hits}

    @adapter.tool(
        description="Add a note.",
        input_schema={
            "type": "object",
            "properties": {"title": {"type": "string", "maxLength": 200}, "body": {"type": "string"}},
            "required": ["title", "body"],
            "additionalProperties": False,
        },
    )
    async def append(args: dict[str, Any], call: CallRequest) -> dict[str, Any]:
        # Deduplicate on the gateway's idempotency key, as a real destination would.
        if call.idempotency_key and call.idempotency_key in by_key:
            return notes[by_key[call.idempotency_key]]
        note = {"id": f"note-{next(ids)}", "title": args["title"], "body": args["body"]}
        notes[note["id"]] = note
        if call.idempotency_key:
            by_key[call.idempotency_key] = note["id"]
        return note

    @adapter.tool(
        description="Send a note to a recipient by email (approval required outside acme.example).",
        input_schema={
            "type": "object",
            "properties": {"note_id": {"type": "string"}, "to": {"type": "string"}},
            "required": ["note_id", "to"],
            "additionalProperties": False,
        },
    )
    async def send(args: dict[str, Any], call: CallRequest) -> dict[str, Any]:
        return {"id": f"msg-{next(ids)}", "note_id": args["note_id"], "to": args["to"], "status": "sent"}

    return adapter
