"""Example milestone validators, configured in warrant.yaml as

    validators:
      nonempty_list: examples.validators:nonempty_json_list

and named by a contract's check `{"validator": "nonempty_list", "artifact": "inventory"}`.

A validator takes (the artifact's bytes, or None when the check names no artifact; the milestone's
evidence) and returns True, False, or (bool, reason). It may be async. An exception fails the
check with its type and message; so does any other return value (fail closed).
"""

from __future__ import annotations

import json
from typing import Any


def nonempty_json_list(body: bytes | None, evidence: Any) -> tuple[bool, str]:
    """The artifact is a JSON array with at least one element."""
    if body is None:
        return False, "the check names no artifact"
    try:
        document = json.loads(body)
    except ValueError:
        return False, "the artifact is not JSON"
    if not isinstance(document, list):
        return False, f"the artifact is a JSON {type(document).__name__}, not a list"
    if not document:
        return False, "the list is empty"
    return True, f"{len(document)} item(s)"


def has_note(body: bytes | None, evidence: Any) -> bool:
    """The worker's evidence carries a non-empty `note`."""
    return isinstance(evidence, dict) and isinstance(evidence.get("note"), str) and bool(evidence["note"].strip())
