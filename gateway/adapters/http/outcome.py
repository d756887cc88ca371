"""How one HTTP exchange ends: honest outcome classification for `kind: http` adapters.

Each attempt ends either in an `Outcome` (final) or in a `Retry` (worth asking again, with the
outcome to give if the call's bound comes first). "keyed" means a write that carries the
gateway's idempotency key, so the destination can tell a repeat from a new request.

    answer / error                         read                          write (unkeyed | keyed)
    2xx, JSON, receipt_id present          succeeded                     succeeded
    2xx, not JSON, receipt_id missing,     failed upstream_failed        unknown ("malformed response")
      or a body past the limit and a receipt_status to read in it
    2xx, a body past the gateway's cap     failed payload_too_large      succeeded, body withheld (receipt says so)
    2xx whose receipt_status field says    failed upstream_failed        unknown ("contradictory response")
      other than succeeded (or is missing)
    204 / HEAD without receipt_id          succeeded (result null)       succeeded
    3xx (redirects are not followed)       failed upstream_failed        unknown
    401, 403                               failed upstream_unauthorized  failed upstream_unauthorized
    409                                    failed upstream_failed        failed upstream_failed | retry → unknown
    422                                    failed upstream_failed        failed upstream_failed | unknown
    429                                    retry → failed rate_limited   failed rate_limited | retry → rate_limited
    other 4xx                              failed upstream_failed        failed upstream_failed
    503                                    retry → upstream_unavailable  unknown | retry → unknown
    other 5xx                              retry → upstream_unavailable  unknown
    connect error/timeout, pool timeout    retry → not_sent              retry → not_sent (nothing left)
    read/write timeout, reset, other       retry → upstream_unavailable  unknown, never retried
      (a body still coming at the bound)
    the request could not be made          not_sent upstream_failed      not_sent upstream_failed
      (UnsupportedProtocol, LocalProtocolError)

Retries wait `Retry-After` (seconds or an HTTP date) when the destination sends one, else an
exponential backoff with jitter. Once a write may have happened (a 409, a 503), only a success
settles it within the call: anything after is `unknown` (`settle`).

Secrets (the resolved header values) never enter an outcome: text the destination sends back is
passed through `Redactor` first. Messages name the adapter and the HTTP status, never a URL.
"""

from __future__ import annotations

import base64
import email.utils
import json
import logging
import re
import urllib.parse
from collections.abc import Iterable
from dataclasses import dataclass, replace
from decimal import Decimal, InvalidOperation
from typing import Any

import httpx

from gateway.adapters.base import Outcome, OutcomeKind
from gateway.adapters.http.config import HttpToolConfig
from gateway.canonical import sha256_hex
from gateway.errors import Code

log = logging.getLogger("warrant.adapters.http")

MAX_RETRY_AFTER = 3600.0  # seconds; a larger or later one is read as this (the call's bound decides anyway)
MESSAGE_LIMIT = 300
MIN_SECRET = 4  # shorter values are not secrets worth the damage of redacting them from every text
REDACTED = "[redacted]"
_NOT_SENT_ERRORS = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)
_COST = re.compile(r"\d{1,15}(\.\d+)?", re.ASCII)


class Redactor:
    """Removes the adapter's secrets from text the destination sends back (it may echo a header),
    also in the encodings an echo commonly takes: any letter case, URL-encoding (`%XX`, `+`) and
    base64 (standard and URL-safe, inside a longer encoded text too, as in `Basic` credentials)."""

    def __init__(self, secrets: Iterable[str]) -> None:
        self._secrets = sorted({s for s in secrets if len(s) >= MIN_SECRET}, key=len, reverse=True)
        plain = sorted({v for s in self._secrets for v in _plain_forms(s)}, key=len, reverse=True)
        encoded = sorted({v for s in self._secrets for v in _base64_forms(s)}, key=len, reverse=True)
        self._plain = re.compile("|".join(map(re.escape, plain)), re.IGNORECASE) if plain else None
        self._encoded = re.compile("|".join(map(re.escape, encoded))) if encoded else None

    def text(self, text: str) -> str:
        for pattern in (self._plain, self._encoded):
            if pattern is not None:
                text = pattern.sub(REDACTED, text)
        return text

    def value(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, list):
            return [self.value(v) for v in value]
        if isinstance(value, dict):
            return {self.text(k): self.value(v) for k, v in value.items()}
        return value

    def found_in(self, text: str) -> bool:
        return any(p is not None and p.search(text) is not None for p in (self._plain, self._encoded))


MIN_BASE64_SECRET = 8  # a shorter secret's base64 fragment is too short to tell from other text


def _plain_forms(secret: str) -> set[str]:
    """The secret and its URL-encodings (matched in any letter case)."""
    return {secret, urllib.parse.quote(secret, safe=""), urllib.parse.quote_plus(secret, safe="")}


def _base64_forms(secret: str) -> set[str]:
    """The base64 characters that depend on the secret's bytes alone, at each of the three byte
    offsets it may have inside a longer encoded text, in both alphabets."""
    raw = secret.encode()
    if len(raw) < MIN_BASE64_SECRET:
        return set()
    forms: set[str] = set()
    for offset in range(3):
        start, end = -(-8 * offset // 6), (8 * offset + 8 * len(raw)) // 6
        for encode in (base64.b64encode, base64.urlsafe_b64encode):
            forms.add(encode(b"\0" * offset + raw).decode()[start:end])
    return forms


@dataclass(frozen=True)
class Answer:
    """An HTTP answer as read: at most the adapter's limit of its body (`complete` False: cut)."""

    status: int
    headers: httpx.Headers
    body: bytes
    text: str  # the body decoded with its charset (UTF-8 when it names none)
    method: str  # of the request it answers
    complete: bool = True


@dataclass(frozen=True)
class Exchange:
    """What classification needs to know about the call."""

    adapter: str
    tool: HttpToolConfig
    write: bool
    keyed: bool
    redactor: Redactor


@dataclass(frozen=True)
class Retry:
    """Ask again (after `wait` seconds, or a backoff when None); answer `at_bound` if there is no time."""

    at_bound: Outcome
    wait: float | None = None
    maybe_done: bool = False  # this attempt may have had the effect (a write's later failure is unknown)
    sent: bool = True  # the request reached the destination
    # Why it is worth asking again, when `at_bound` is `unknown` (a keyed write's 409 or 503): the
    # transient code a retry policy names (upstream_unavailable). None: `at_bound`'s own code.
    cause: str | None = None


def unknown(message: str, receipt: dict[str, Any] | None = None) -> Outcome:
    return Outcome(OutcomeKind.UNKNOWN, code=Code.OUTCOME_UNKNOWN, message=message, receipt=receipt)


def failed(code: str, message: str, receipt: dict[str, Any] | None = None) -> Outcome:
    return Outcome(OutcomeKind.FAILED, code=code, message=message, receipt=receipt)


def on_response(ex: Exchange, response: Answer, now: float) -> Outcome | Retry:
    """Classify one answer (`now`: epoch seconds, for a `Retry-After` date)."""
    status = response.status
    receipt = {"status": status, "digest": sha256_hex(response.body)}
    said = f"{ex.adapter} answered HTTP {status}"
    if 200 <= status < 300:
        result = success(ex, response)
        if isinstance(result, Outcome):
            return result
        text = f"{result.kind} response: {result.reason} (HTTP {status} from {ex.adapter})"
        if ex.write:
            return unknown(text, {**receipt, result.kind: True})
        return failed(Code.UPSTREAM_FAILED, text, receipt)
    if status in (401, 403):
        return failed(Code.UPSTREAM_UNAUTHORIZED, _with_summary(ex, said, response), receipt)
    wait = retry_after(response.headers.get("Retry-After"), now)
    if status == 409 and ex.keyed:
        still = unknown(f"{said}: still working on this key", receipt)
        return Retry(still, wait, maybe_done=True, cause=Code.UPSTREAM_UNAVAILABLE)
    if status == 422 and ex.keyed:
        return unknown(f"{said}: the key may have been used before with another body", receipt)
    if status == 429:
        limited = failed(Code.RATE_LIMITED, f"{said}: rate limited, not done", receipt)
        return limited if ex.write and not ex.keyed else Retry(limited, wait)
    if 400 <= status < 500:
        return failed(Code.UPSTREAM_FAILED, _with_summary(ex, said, response), receipt)
    if status == 503 and ex.keyed:
        return Retry(unknown(f"{said}: unavailable", receipt), wait, maybe_done=True, cause=Code.UPSTREAM_UNAVAILABLE)
    if ex.write:
        return unknown(f"{said}: it may have acted" if status >= 500 else f"{said}, not followed", receipt)
    if status >= 500:
        return Retry(failed(Code.UPSTREAM_UNAVAILABLE, f"{said}: unavailable", receipt), wait)
    return failed(Code.UPSTREAM_FAILED, f"{said}, not followed", receipt)


def on_error(ex: Exchange, exc: httpx.HTTPError) -> Outcome | Retry:
    """Classify an exchange that got no answer. Only a connect failure proves nothing was sent."""
    kind = type(exc).__name__
    if isinstance(exc, _NOT_SENT_ERRORS):
        outcome = Outcome(
            OutcomeKind.NOT_SENT, code=Code.UPSTREAM_UNAVAILABLE, message=f"{ex.adapter} could not be reached ({kind})"
        )
        return Retry(outcome, sent=False)
    if isinstance(exc, httpx.UnsupportedProtocol | httpx.LocalProtocolError):
        return Outcome(
            OutcomeKind.NOT_SENT, code=Code.UPSTREAM_FAILED, message=f"the request was not sendable ({kind})"
        )
    if ex.write:
        return unknown(f"no complete answer from {ex.adapter} ({kind}): it may have acted")
    return Retry(failed(Code.UPSTREAM_UNAVAILABLE, f"no complete answer from {ex.adapter} ({kind})"))


@dataclass(frozen=True)
class Untrusted:
    """Why a 2xx answer is not a success: `malformed` (unreadable, or without its receipt id) or
    `contradictory` (its `receipt_status` field says the work did not succeed)."""

    reason: str
    kind: str = "malformed"


def success(ex: Exchange, response: Answer) -> Outcome | Untrusted:
    """A 2xx answer as a success, or why it cannot be one (a lookup uses it too)."""
    status = response.status
    digest = sha256_hex(response.body)
    if not response.complete:
        if ex.tool.receipt_status is not None:
            field = ex.tool.receipt_status.field
            return Untrusted(f"the body is larger than {len(response.body)} bytes, so no {field!r}")
        # Done, says the status; the body is past the gateway's cap: kept neither whole nor in part.
        withheld = {"status": status, "withheld": True, "result_bytes": len(response.body)}
        return Outcome(OutcomeKind.SUCCEEDED, receipt=withheld, withheld=len(response.body))
    if not response.body.strip() and (status == 204 or response.method == "HEAD"):
        if ex.tool.receipt_id is not None:
            return Untrusted(f"no body, so no {ex.tool.receipt_id!r}")
        if ex.tool.receipt_status is not None:
            return Untrusted(f"no body, so no {ex.tool.receipt_status.field!r}", "contradictory")
        content = [{"type": "text", "text": "null"}]
        return Outcome(OutcomeKind.SUCCEEDED, content, {"result": None}, {"status": status, "digest": digest})
    try:
        text = response.text
        value = json.loads(text, parse_constant=_no_constant)
    except (ValueError, RecursionError):  # a body nested past the parser's depth is not JSON we can read
        return Untrusted("the body is not JSON")
    receipt: dict[str, Any] = {"status": status, "digest": digest}
    if ex.tool.receipt_id is not None:
        found, receipt_id = field_at(value, ex.tool.receipt_id)
        if not found or isinstance(receipt_id, bool) or not isinstance(receipt_id, str | int):
            return Untrusted(f"no {ex.tool.receipt_id!r} naming the object")
        receipt = {"id": ex.redactor.value(receipt_id), **receipt}
    said = ex.tool.receipt_status
    if said is not None:
        found, state = field_at(value, said.field)
        if not found or not any(type(state) is type(ok) and state == ok for ok in said.succeeded):
            shown = ex.redactor.text(json.dumps(state)[:80]) if found else "missing"
            return Untrusted(f"{said.field!r} is {shown}, not one of {said.succeeded}", "contradictory")
    redactor = ex.redactor
    if redactor.found_in(text):
        value = redactor.value(value)
        text = json.dumps(value, ensure_ascii=False)
    structured = value if isinstance(value, dict) else {"result": value}
    cost = reported_cost(ex, text) if ex.tool.cost is not None else None
    return Outcome(OutcomeKind.SUCCEEDED, [{"type": "text", "text": text}], structured, receipt, reported_cost=cost)


def settle(outcome: Outcome, *, write: bool, maybe_done: bool, sent: bool) -> Outcome:
    """The call's outcome given its earlier attempts: a write that may have happened stays unknown
    unless it succeeded; `not_sent` only when no attempt reached the destination."""
    if outcome.kind is OutcomeKind.SUCCEEDED:
        return outcome
    if write and maybe_done:
        return unknown(f"{outcome.message}; an earlier attempt may have acted", outcome.receipt)
    if outcome.kind is OutcomeKind.NOT_SENT and sent:
        return replace(outcome, kind=OutcomeKind.FAILED)
    return outcome


def field_at(value: Any, dotted: str) -> tuple[bool, Any]:
    """The value at `data.items.0.id` (a digit indexes a list); (False, None) when absent."""
    for part in dotted.split("."):
        if isinstance(value, dict) and part in value:
            value = value[part]
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            return False, None
    return True, value


def reported_cost(ex: Exchange, text: str) -> str | None:
    """The actual cost the body reports, as a plain non-negative decimal string; None (and a
    warning) when the field is there but not such an amount."""
    assert ex.tool.cost is not None
    found, value = field_at(json.loads(text, parse_float=Decimal), ex.tool.cost.field)
    if not found or value is None:
        return None
    amount: Decimal | None = None
    if isinstance(value, Decimal | int) and not isinstance(value, bool):
        amount = Decimal(value)
    elif isinstance(value, str) and _COST.fullmatch(value.strip()):
        try:
            amount = Decimal(value.strip())
        except InvalidOperation:  # pragma: no cover - the pattern already excludes this
            amount = None
    if amount is None or not amount.is_finite() or amount < 0 or amount >= Decimal(10) ** 15:
        field = ex.tool.cost.field
        log.warning("%s: the reported cost in %r is not a non-negative decimal; ignored", ex.adapter, field)
        return None
    return format(amount, "f")


def retry_after(value: str | None, now: float) -> float | None:
    """Seconds to wait from a `Retry-After` header (seconds or an HTTP date); None when absent or unreadable."""
    if value is None:
        return None
    value = value.strip()
    if value.isascii() and value.isdigit():
        return min(float(value), MAX_RETRY_AFTER)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:  # an HTTP date is GMT
        return None
    return min(max(0.0, when.timestamp() - now), MAX_RETRY_AFTER)


def _with_summary(ex: Exchange, said: str, response: Answer) -> str:
    summary = error_summary(response)
    text = f"{said}: {summary}" if summary else said
    return ex.redactor.text(text)[:MESSAGE_LIMIT]  # cut after redacting: a cut secret would not be found


def error_summary(response: Answer) -> str:
    """The destination's own error type and message, on one line (JSON bodies, or plain text), whole:
    the caller redacts, then shortens."""
    try:
        data = json.loads(response.text)
    except (ValueError, RecursionError):
        data = None
    if isinstance(data, dict):
        error = data.get("error")
        if isinstance(error, dict):
            kind, message = error.get("type") or error.get("code"), error.get("message") or error.get("detail")
        elif isinstance(error, str):
            kind, message = error, data.get("message") or data.get("error_description") or data.get("detail")
        else:
            kind, message = data.get("type") or data.get("code") or data.get("title"), data.get("message")
            message = message or data.get("detail")
        parts = [p if isinstance(p, str) else json.dumps(p) for p in (kind, message) if p not in (None, "")]
        return _one_line(": ".join(parts))
    if response.headers.get("Content-Type", "").startswith("text/plain"):
        return _one_line(response.text)
    return ""


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _one_line(text: str) -> str:
    return " ".join(text.split())
