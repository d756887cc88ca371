"""Text in a payload that shows an approver something other than what it is (pure: no I/O).

An approver reads the payload on a page; these make what they read differ from what is sent:
bidirectional overrides and isolates (U+202E turns `moc.evil` into what looks like `live.com`),
invisible characters (zero-width spaces and joiners, soft hyphens, BOM), words that mix scripts
(Cyrillic `а` in `аcme.example`) and punycode labels (`xn--`), which a mail or web client shows
as some other name. `marks(payload)` names each, with where it is and the code points involved.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

BIDI = frozenset(chr(c) for c in [*range(0x202A, 0x202F), *range(0x2066, 0x206A), 0x200E, 0x200F, 0x061C])
INVISIBLE = frozenset(chr(c) for c in [*range(0x200B, 0x200E), *range(0x2060, 0x2065), 0xFEFF, 0x00AD, 0x180E])
_WORD = re.compile(r"[^\s@./:,;<>()\[\]{}\"'=?&#!]+")
_PUNYCODE = re.compile(r"(?<![A-Za-z0-9-])xn--[A-Za-z0-9-]+", re.IGNORECASE)


@dataclass(frozen=True)
class Mark:
    path: str  # where in the payload: "to", "items/0/name", "(payload)"
    kind: str  # "bidi_control", "invisible", "mixed_scripts", "punycode"
    text: str  # the word or label involved ("" for a control character)
    code_points: tuple[str, ...]  # "U+202E", ...: the characters to look at


def code_point(char: str) -> str:
    return f"U+{ord(char):04X}"


def _script(char: str) -> str | None:
    if not char.isalpha():
        return None
    name = unicodedata.name(char, "")
    return name.split(" ", 1)[0] if name else "UNKNOWN"


def marks_in_text(path: str, text: str) -> list[Mark]:
    found: list[Mark] = []
    bidi = tuple(dict.fromkeys(code_point(c) for c in text if c in BIDI))
    if bidi:
        found.append(Mark(path, "bidi_control", "", bidi))
    invisible = tuple(dict.fromkeys(code_point(c) for c in text if c in INVISIBLE))
    if invisible:
        found.append(Mark(path, "invisible", "", invisible))
    for word in _WORD.findall(text):
        scripts = {s for s in map(_script, word) if s is not None}
        if len(scripts) > 1:
            minority = [c for c in word if _script(c) not in (None, "LATIN")] if "LATIN" in scripts else list(word)
            found.append(Mark(path, "mixed_scripts", word, tuple(dict.fromkeys(map(code_point, minority)))))
    for label in _PUNYCODE.findall(text):
        found.append(Mark(path, "punycode", label, ()))
    return found


def marks(payload: Any) -> list[Mark]:
    """Every mark in the payload's strings, keys included, in document order."""
    return list(_walk(payload, ""))


def _walk(value: Any, path: str) -> Iterator[Mark]:
    if isinstance(value, str):
        yield from marks_in_text(path or "(payload)", value)
    elif isinstance(value, dict):
        for key, item in value.items():
            where = f"{path}/{key}" if path else str(key)
            yield from marks_in_text(f"{where} (key)", str(key))
            yield from _walk(item, where)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _walk(item, f"{path}/{index}" if path else str(index))
