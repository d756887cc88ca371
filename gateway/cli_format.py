"""How the operator commands show things to a person: plain aligned text, no colours.

Pure functions of the API's JSON (tests/unit/test_cli_format.py): tables, budget bars, times,
payloads and their diffs, one-line event summaries. `--json` output never passes through here.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping, Sequence
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import Any

BAR_WIDTH = 10
SUMMARY_WIDTH = 160  # the longest event summary on one line


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


def cell(value: Any) -> str:
    """A table cell: `-` for nothing, the text otherwise."""
    if value is None or value == "":
        return "-"
    return str(value)


def table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """Columns aligned on two spaces; the last column is not padded, so no line ends in blanks."""
    lines = [list(header), *([cell(v) for v in row] for row in rows)]
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip() for line in lines)


def _amount(value: Any) -> Decimal:
    try:
        return Decimal(str(value))
    except InvalidOperation:
        return Decimal(0)


def _cells(part: Decimal, limit: Decimal, width: int) -> int:
    """Cells for `part` of `limit`: full only when all is used, empty only when none is."""
    if part <= 0:
        return 0
    if part >= limit:
        return width
    cells = int((part / limit * width).quantize(Decimal(1), rounding=ROUND_HALF_UP))
    return min(max(cells, 1), width - 1)


def bar(spent: Any, reserved: Any, limit: Any, width: int = BAR_WIDTH) -> str:
    """`[###++-----]`: `#` spent, `+` reserved for actions in flight, `-` still free."""
    used, held, whole = _amount(spent), _amount(reserved), _amount(limit)
    if whole <= 0:
        return "[" + ("#" if used > 0 else "-") * width + "]"
    done = _cells(used, whole, width)
    taken = max(_cells(used + held, whole, width), done)
    return "[" + "#" * done + "+" * (taken - done) + "-" * (width - taken) + "]"


def budget_lines(budgets: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """`spend       [####------] 2.10 / 5.00 (reserved 0.10)`, one line per dimension."""
    width = max((len(name) for name in budgets), default=0)
    lines = []
    for name, b in budgets.items():
        line = f"{name.ljust(width)}  {bar(b['spent'], b['reserved'], b['limit'])} {b['spent']} / {b['limit']}"
        if _amount(b["reserved"]) > 0:
            line += f" (reserved {b['reserved']})"
        lines.append(line)
    return lines


def short_time(value: str | None) -> str:
    """`2026-03-01T12:00:05.123456Z` as `2026-03-01 12:00:05Z`; `-` for none."""
    if not value:
        return "-"
    date, _, rest = value.partition("T")
    return f"{date} {rest.split('.')[0].rstrip('Z')}Z" if rest else value


def short_hash(value: str | None, length: int = 12) -> str:
    return value[:length] if value else "-"


def pretty_json(value: Any) -> str:
    """A payload as a person reads it: indented, keys sorted (the order the hash binds anyway)."""
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False)


def compact_json(value: Any, width: int = 60) -> str:
    return _clip(json.dumps(value, separators=(",", ":"), sort_keys=True, ensure_ascii=False), width)


def payload_diff(old: Any, new: Any, old_label: str, new_label: str) -> str:
    """A unified diff of two payloads' pretty JSON; empty when they are the same."""
    lines = difflib.unified_diff(
        pretty_json(old).splitlines(), pretty_json(new).splitlines(), old_label, new_label, lineterm=""
    )
    return "\n".join(lines)


def _summary_value(value: Any, width: int = 48) -> str:
    if isinstance(value, str):
        if len(value) == 64 and all(c in "0123456789abcdef" for c in value):
            return short_hash(value)
        return _clip(value if value.isprintable() and " " not in value else json.dumps(value), width)
    return compact_json(value, width)


def summarize(data: Mapping[str, Any], width: int = SUMMARY_WIDTH) -> str:
    """An event's data as `key=value ...`: nothing empty, hashes shortened, one line at most `width`."""
    return _clip(" ".join(f"{k}={_summary_value(v)}" for k, v in data.items() if v not in (None, "", [], {})), width)


def event_line(event: Mapping[str, Any]) -> str:
    """One line per event: seq, time, type, a compact summary of its data."""
    data = event.get("data")
    summary = summarize(data) if isinstance(data, Mapping) else cell(data)
    return f"{event['seq']:>5}  {short_time(event.get('at'))}  {event['type']:<20}  {summary}".rstrip()
