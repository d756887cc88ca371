"""Text the store can hold on both backends: PostgreSQL's text columns refuse U+0000 (SQLite keeps it).

The operator API refuses a NUL in its input (gateway/api/nul.py). An agent's tools/call is recorded
even when refused, so a NUL in a tool name or a rationale is recorded escaped (`\\u0000`) instead:
no tool is named so, and the audit trail keeps what was asked, readably, on either store.
"""

from __future__ import annotations

from typing import Any

NUL = "\x00"


def escape_nul(text: str) -> str:
    """`text` with each U+0000 written as the six characters `\\u0000`."""
    return text.replace(NUL, "\\u0000") if NUL in text else text


def nul_field(value: Any) -> str | None:
    """Where the first string (key or value) carrying U+0000 is in a parsed JSON value, else None.
    Iterative: a value nested as deep as the JSON parser allows is walked without recursion."""
    stack: list[tuple[Any, str]] = [(value, "")]
    while stack:
        item, where = stack.pop()
        if isinstance(item, str):
            if NUL in item:
                return where or "(the body)"
        elif isinstance(item, dict):
            for key, child in item.items():
                path = f"{where}.{escape_nul(str(key))}" if where else escape_nul(str(key))
                if isinstance(key, str) and NUL in key:
                    return path
                stack.append((child, path))
        elif isinstance(item, list):
            stack.extend((child, f"{where}[{i}]") for i, child in enumerate(item))
    return None


# What an approver writes for the model (a denial's message, an approval's note), at most this long.
NOTE_MAX = 4000


def control_character(text: str, keep: str = "\n") -> int | None:
    """The index of the first control character (C0, DEL, C1) in `text` other than those in `keep`, else None."""
    for index, char in enumerate(text):
        point = ord(char)
        if (point < 0x20 or 0x7F <= point <= 0x9F) and char not in keep:
            return index
    return None


def for_model(text: str, limit: int = NOTE_MAX) -> str:
    """`text` as a model is handed it: each control character but a line feed a space, at most
    `limit` characters (the API refuses both in a new note; this holds for notes written before)."""
    cleaned = "".join(" " if control_character(c) is not None else c for c in text)
    return cleaned if len(cleaned) <= limit else cleaned[: limit - 1] + "…"
