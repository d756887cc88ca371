"""What every answer to hostile input must be, and what must survive it.

Per answer (`answer_problems`): no stack trace (the word Traceback, a source path with a line, a
Python exception class name), no secret (the ledger key, an API key, a lease token, a webhook
secret) in the body or a header, and no 5xx unless the server logged why (`LogWatch`).

Per run of a fuzzer (`Record`, `record_of`, `lost_or_changed`): what the store held before is
still there after, unchanged: every run, every event (the old history is a prefix of the new,
hash for hash), every action's intent (tool, payload hash, operation id) and a settled status;
no budget spent shrank and none is overspent; the ledger verifies.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest

from gateway.cli.http import every_item

# The server runs on a thread of this process and draws from `random` (ids, retry jitter) while
# hypothesis draws examples: hypothesis would take that for a strategy using `random`.
SERVER_USES_RANDOM = pytest.mark.filterwarnings(
    "ignore:Do not use the `random` module inside strategies:hypothesis.errors.HypothesisDeprecationWarning"
)

# A Python stack trace or an exception's class name in what a client reads.
TRACE = re.compile(
    r"Traceback \(most recent call last\)"
    r"|File \"[^\"]+\", line \d+"
    r"|/[\w/.-]{0,200}\.py\b"  # bounded: a long run of word characters costs no backtracking
    r"|site-packages"
    r"|\b(?:Recursion|Value|Type|Key|Attribute|Index|Unicode(?:De|En)code|Assertion|Runtime|Name|Lookup|OS)Error\b"
    r"|\b(?:Operational|Integrity|Programming|Data|Interface|Internal|Validation)Error\b"
    r"|\b(?:psycopg|aiosqlite|sqlite3)\b"
)

# Statuses an action recorded before may have moved to since (DESIGN.md, action lifecycle).
SETTLED_FROM: dict[str, set[str]] = {
    "admitted": {"admitted", "succeeded", "failed", "unknown"},
    "unknown": {"unknown", "succeeded", "failed"},
    "succeeded": {"succeeded", "compensated"},
}


def answer_problems(response: httpx.Response, secrets: Iterable[str], *, traces: bool = True) -> list[str]:
    """What is wrong with one answer, by the rules above (5xx is LogWatch's). `traces=False` for a
    static document that names source files on purpose (the OpenAPI document's descriptions)."""
    problems = []
    text = response.content.decode("utf-8", "replace")
    headers = "\n".join(f"{k}: {v}" for k, v in response.headers.multi_items())
    for where, content in (("body", text), ("headers", headers)):
        trace = TRACE.search(content) if traces else None
        if trace is not None:
            problems.append(f"a stack trace or exception name in the {where}: {trace.group(0)!r}")
        problems += [f"a secret in the {where}: {s[:6]}..." for s in secrets if s and s in content]
    return problems


class LogWatch(logging.Handler):
    """The server's log records at WARNING and above, from the root and uvicorn's loggers."""

    LOGGERS = ("", "uvicorn", "uvicorn.error")

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.records: list[logging.LogRecord] = []
        self._lock2 = threading.Lock()

    def emit(self, record: logging.LogRecord) -> None:
        with self._lock2:
            self.records.append(record)

    @contextmanager
    def watching(self) -> Iterator[LogWatch]:
        loggers = [logging.getLogger(name) for name in self.LOGGERS]
        for logger in loggers:
            logger.addHandler(self)
        try:
            yield self
        finally:
            for logger in loggers:
                logger.removeHandler(self)

    def mark(self) -> int:
        with self._lock2:
            return len(self.records)

    def since(self, mark: int) -> list[logging.LogRecord]:
        with self._lock2:
            return self.records[mark:]


def server_error_problem(response: httpx.Response, logged: list[logging.LogRecord]) -> str | None:
    """A 5xx is allowed only with a reason the server logged at ERROR while answering it."""
    if response.status_code < 500:
        return None
    if any(r.levelno >= logging.ERROR for r in logged):
        return None
    return f"HTTP {response.status_code} without a logged reason: {response.text[:200]!r}"


@dataclass
class Record:
    """What the store holds, as the operator API shows it."""

    runs: dict[str, dict[str, Any]] = field(default_factory=dict)
    events: dict[str, list[str]] = field(default_factory=dict)  # run_id -> event hashes, in order
    actions: dict[str, dict[str, Any]] = field(default_factory=dict)


def record_of(api: httpx.Client) -> Record:
    """The whole record of the API key's tenant (runs, their events and actions)."""
    record = Record()
    for run in every_item(api, "/api/runs"):
        run_id = run["run_id"]
        record.runs[run_id] = api.get(f"/api/runs/{run_id}").json()
        record.events[run_id] = [e["hash"] for e in every_item(api, f"/api/runs/{run_id}/events")]
        for action in every_item(api, f"/api/runs/{run_id}/actions"):
            record.actions[action["action_id"]] = action
    return record


def lost_or_changed(before: Record, after: Record, api: httpx.Client) -> list[str]:
    """Everything recorded before that is missing or rewritten after; the ledger's verdict."""
    problems = []
    for run_id, run in before.runs.items():
        now = after.runs.get(run_id)
        if now is None:
            problems.append(f"run {run_id} is gone")
            continue
        for key in ("owner", "lineage_id", "created_at", "created_by", "currency"):  # a revision may change the goal
            if now.get(key) != run.get(key):
                problems.append(f"run {run_id}: {key} changed")
        old, new = before.events[run_id], after.events[run_id]
        if new[: len(old)] != old:
            problems.append(f"run {run_id}: its history before the fuzzing is not a prefix of its history after")
        for dim, budget in now["budgets"].items():
            if dim == "active_seconds":
                continue
            spent, reserved, limit = (_amount(budget[k]) for k in ("spent", "reserved", "limit"))
            if spent < _amount(run["budgets"][dim]["spent"]):
                problems.append(f"run {run_id}: {dim} spent went down")
            if spent < 0 or reserved < 0 or spent + reserved > limit:
                problems.append(f"run {run_id}: {dim} spent {spent} + reserved {reserved} > limit {limit}")
    for action_id, action in before.actions.items():
        now = after.actions.get(action_id)
        if now is None:
            problems.append(f"action {action_id} is gone")
            continue
        for key in ("run_id", "tool", "effect", "payload_sha256", "operation_id", "idempotency_key", "created_at"):
            if now[key] != action[key]:
                problems.append(f"action {action_id}: {key} changed")
        if now["status"] not in SETTLED_FROM.get(action["status"], {action["status"]}):
            problems.append(f"action {action_id}: {action['status']} became {now['status']}")
    verdict = api.get("/api/ledger/verify").json()
    if verdict.get("ok") is not True:
        problems.append(f"the ledger does not verify: {verdict}")
    return problems


def _amount(value: Any) -> float:
    return float(value)  # a decimal string (money) or an integer (counts); compared, never stored
