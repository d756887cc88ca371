"""The `format`s a tool's input schema asserts (pure: no I/O).

jsonschema's own FormatChecker asserts what it can with the standard library (`date`, `ipv4`,
`uuid`, ...), but its `email` only asks for an "@" (so `"a@evil.example, b@acme.example"` passes)
and `uri`/`date-time` need extra libraries. These three are checked here, strictly and with the
standard library only: an address the gate admits is one address, which a policy rule such as
`endsWith('@acme.example')` then reads for what it is.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

import jsonschema

_LOCAL = r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*"
_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_EMAIL = re.compile(rf"{_LOCAL}@(?:{_LABEL}\.)+{_LABEL}")
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:[\x21-\x7e]*")
_DATE_TIME = re.compile(r"(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-]\d{2}:\d{2})")


def is_email(value: Any) -> bool:
    """One plain address (dot-atom local part, DNS domain): no display name, list, space or comment."""
    return not isinstance(value, str) or (len(value) <= 254 and _EMAIL.fullmatch(value) is not None)


def is_uri(value: Any) -> bool:
    """An absolute URI (RFC 3986: a scheme, then printable ASCII only)."""
    return not isinstance(value, str) or _SCHEME.fullmatch(value) is not None


def is_date_time(value: Any) -> bool:
    """An RFC 3339 date-time with its offset."""
    if not isinstance(value, str):
        return True
    match = _DATE_TIME.fullmatch(value)
    if match is None:
        return False
    year, month, day, hour, minute, second = (int(g) for g in match.groups()[:6])
    try:
        datetime(year, month, day, hour, minute, min(second, 59))  # 60: a leap second
    except ValueError:
        return False
    offset = match.group(8)
    return second <= 60 and (len(offset) == 1 or (int(offset[1:3]) < 24 and int(offset[4:6]) < 60))


def format_checker() -> jsonschema.FormatChecker:
    """jsonschema's own checker, with `email`, `uri` and `date-time` asserted as above."""
    checker = jsonschema.FormatChecker()
    checker.checks("email")(is_email)
    checker.checks("uri")(is_uri)
    checker.checks("date-time")(is_date_time)
    return checker
