"""Money and durations as they appear on the wire, and as integers inside.

Money is a decimal string in the contract's currency ("4.20"), held inside as integer minor
units (420). Floats are refused: 0.1 + 0.2 is not a budget. Durations are written `72h`,
`5m`, `1h30m`, `90s`, `2d` and held as integer seconds.
"""

from __future__ import annotations

import re
from decimal import ROUND_CEILING, Decimal, InvalidOperation

# ISO 4217 currencies without minor units; every other currency is taken to have two.
_ZERO_DECIMAL = frozenset({"JPY", "KRW", "VND", "CLP", "ISK", "UGX", "XAF", "XOF", "PYG", "RWF"})
# ASCII digits only, matched in full: `\d` alone also takes non-ASCII digits, `$` a trailing newline.
_CURRENCY = re.compile(r"[A-Z]{3}", re.ASCII)
_MONEY = re.compile(r"\d{1,15}(\.\d+)?", re.ASCII)
_DURATION = re.compile(r"(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?", re.ASCII)
# Past this a deadline no longer fits a timestamp or a 64-bit column; nobody means it.
MAX_DURATION = 100 * 365 * 86400
# The largest amount of money, in minor units, that one value (a limit, a cost, a report) or one
# counter (spent, reserved) may hold: what 15 digits and two decimals can write. Far below 2^63,
# so no sum the store keeps can overflow a 64-bit column (or turn into a REAL in SQLite); the
# store refuses a report that would pass it and saturates a cost that already happened.
MAX_MONEY = 10**17 - 1


def currency_exponent(currency: str) -> int:
    if not _CURRENCY.fullmatch(currency):
        raise ValueError(f"currency must be an ISO 4217 code like USD, not {currency!r}")
    return 0 if currency in _ZERO_DECIMAL else 2


def parse_money(value: object, currency: str = "USD") -> int:
    """A decimal string (or a whole number) to minor units.

    Raises:
        ValueError: a float, a negative amount, or more decimals than the currency has.
    """
    if isinstance(value, bool) or isinstance(value, float):
        raise ValueError('money must be a decimal string like "4.20", never a float')
    if isinstance(value, int):
        text = str(value)
    elif isinstance(value, str):
        text = value.strip()
    else:
        raise ValueError('money must be a decimal string like "4.20"')
    if not _MONEY.fullmatch(text):
        raise ValueError(f'{text!r} is not a non-negative decimal amount like "4.20"')
    exponent = currency_exponent(currency)
    try:
        amount = Decimal(text)
    except InvalidOperation as exc:  # pragma: no cover - the pattern already excludes this
        raise ValueError(f"{text!r} is not a decimal amount") from exc
    minor = amount.scaleb(exponent)
    if minor != minor.to_integral_value():
        raise ValueError(f"{text!r} has more decimals than {currency} has minor units ({exponent})")
    return int(minor)


def reported_money(value: object, currency: str = "USD") -> int:
    """A cost a destination reported (a decimal string or number) to minor units, rounded UP.

    Destinations bill in fractions of a cent ("0.0125"); a budget must never undercount, so a
    fraction of a minor unit counts as a whole one. A float is taken through its shortest text
    form (a JSON number arrives as one). Raises ValueError for anything not a non-negative amount.
    """
    if isinstance(value, float):
        text = repr(value)
    elif isinstance(value, (str, int)) and not isinstance(value, bool):
        text = str(value).strip()
    else:
        raise ValueError("a cost must be a decimal amount")
    if not _MONEY.fullmatch(text):
        raise ValueError(f"{text!r} is not a non-negative decimal amount")
    minor = Decimal(text).scaleb(currency_exponent(currency))
    return int(minor.to_integral_value(rounding=ROUND_CEILING))


def headroom(counter: int, amount: int) -> int:
    """How much of `amount` a money counter holding `counter` can still take: `amount`, or what is
    left below `MAX_MONEY`."""
    return max(0, min(amount, MAX_MONEY - counter))


def format_money(minor: int, currency: str = "USD") -> str:
    exponent = currency_exponent(currency)
    if exponent == 0:
        return str(minor)
    sign = "-" if minor < 0 else ""
    whole, frac = divmod(abs(minor), 10**exponent)
    return f"{sign}{whole}.{frac:0{exponent}d}"


def parse_duration(value: object) -> int:
    """`72h`, `5m`, `1h30m`, `2d`, `90s` (or a whole number of seconds) to seconds.

    Raises:
        ValueError: not a positive duration in that form, or longer than `MAX_DURATION`.
    """
    if isinstance(value, bool):
        raise ValueError("a duration is written like 72h, 5m or 90s")
    if isinstance(value, int):
        seconds = value
    elif isinstance(value, str):
        match = _DURATION.fullmatch(value.strip())
        if not value.strip() or match is None:
            raise ValueError(f"{value!r} is not a duration like 72h, 1h30m, 5m or 90s")
        d, h, m, s = (int(part) if part else 0 for part in match.groups())
        seconds = ((d * 24 + h) * 60 + m) * 60 + s
    else:
        raise ValueError("a duration is written like 72h, 5m or 90s")
    if seconds <= 0:
        raise ValueError("a duration must be longer than zero")
    if seconds > MAX_DURATION:
        raise ValueError("a duration must not be longer than 100 years")
    return seconds


def format_duration(seconds: int) -> str:
    parts = []
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        count, seconds = divmod(seconds, size)
        if count:
            parts.append(f"{count}{unit}")
    return "".join(parts) or "0s"
