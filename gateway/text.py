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
