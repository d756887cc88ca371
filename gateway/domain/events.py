"""What a consumer of a run's events gets: the envelope, its message and the webhook subscriptions. Pure.

Every served event (a JSON page, a Server-Sent Event, a webhook body) is the ledger entry in one
envelope, version `VERSION`:

    {v, id, run_id, seq, type, at, task_id?, message, progress?}

`id` is `evt_<run_id>_<seq>`: the same wherever and however often the entry is served, so a
consumer deduplicates on it and orders a run's events by `seq` (docs/events.md, "Consuming").
`message` is a fixed template per type (`TEMPLATES`) that interpolates only whitelisted fields,
each checked for its shape (an id, a tool name, a count, a status): a value that fails its check
is shown as `?`. Arguments, payloads, receipts, notes, reasons and errors are never in a message;
the entry's `data` carries what the ledger recorded, for those allowed to read it.

`progress` is `{done, total}` of the run's current plan (tasks completed, tasks in the plan): the
plan and task entries carry it in their data as they are written (`plan_progress`), and the other
entries are given the one before them (the store looks it up once per page, not per entry).
"""

from __future__ import annotations

import re
import string
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from gateway.clock import isoformat
from gateway.domain.watch import KINDS as WATCHDOG_KINDS
from gateway.domain.watch import RAISED_KINDS

VERSION = 1
EVENT_ID_PREFIX = "evt_"

# The names the issue gives an event where the ledger's own type differs (docs/events.md, "Aliases").
ALIASES: dict[str, str] = {
    "run_started": "run_created",
    "approval_required": "approval_requested",
    "retrying": "task_retrying",
}

# Alerts raised outside the watchdog: by the gate on settle, by the outbox when it is full, by an
# approval's request (docs/decisions/0029-approvals-reach.md).
GATE_ALERT_KINDS = ("upstream_unauthorized", "deliveries_dropped", "approval_requested", "dead_letter")
ALERT_KINDS: tuple[str, ...] = (*WATCHDOG_KINDS, *RAISED_KINDS, *GATE_ALERT_KINDS)
HEARTBEAT = "heartbeat"
EVERYTHING = "*"
MAX_SUBSCRIPTIONS = 100  # names one webhook's `events:` may list
OUTBOX_CAP = 1000  # pending deliveries per run; past it, deliveries are counted dropped

# Entries that carry `progress` in their data, as written (gateway/store/sql/tasks.py).
PROGRESS_TYPES = frozenset(
    {"plan_created", "replanned", "plan_inherited"}
    | {
        f"task_{s}"
        for s in (
            "ready",
            "pending",
            "started",
            "resumed",
            "blocked",
            "waiting_for_approval",
            "retrying",
            "completed",
            "failed",
            "cancelled",
            "compensated",
        )
    }
)

# -- the shape checks a field must pass to be shown ------------------------------------------------
_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}")
_TOOL = re.compile(r"[A-Za-z0-9][A-Za-z0-9_./:-]{0,127}")
_WORD = re.compile(r"[a-z][a-z0-9_]{0,39}")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.@:-]{0,63}")  # a key's or worker's name, as people type them
_MONEY = re.compile(r"-?[0-9]{1,15}(\.[0-9]{1,6})? [A-Z]{3}")


def _matching(pattern: re.Pattern[str]) -> Callable[[Any], str | None]:
    def check(value: Any) -> str | None:
        return value if isinstance(value, str) and pattern.fullmatch(value) else None

    return check


def _count(value: Any) -> str | None:
    return str(value) if type(value) is int and 0 <= value < 10**12 else None


SHAPES: dict[str, Callable[[Any], str | None]] = {
    "id": _matching(_ID),
    "tool": _matching(_TOOL),
    "word": _matching(_WORD),
    "name": _matching(_NAME),
    "count": _count,
    "money": _matching(_MONEY),
}

# The fields any template may interpolate, by the shape each must have. Nothing else is ever shown.
_SHOWN: dict[str, tuple[str, ...]] = {
    "id": (
        "run_id", "task_id", "action_id", "approval_id", "milestone_id", "charge_id", "grant_id", "client_id",
        "child_run_id", "successor_run_id", "predecessor_run_id", "from_run_id", "wait_id", "signal_id",
        "dead_letter_id",
        "compensation_id", "compensates",
    ),
    "tool": ("tool",),
    "word": ("kind", "status", "previous", "effect", "code", "dimension", "cause", "on_timeout"),
    "name": ("worker", "by", "name"),
    "count": ("epoch", "version", "attempts", "max_attempts", "tasks", "cap", "refusals", "spec_version", "from", "to"),
    "money": ("actual_spend", "amount"),
}  # fmt: skip
FIELDS: dict[str, str] = {name: shape for shape, names in _SHOWN.items() for name in names}


@dataclass(frozen=True)
class Template:
    """A type's message: `text` with `{field}` placeholders, each a key of FIELDS."""

    text: str

    @property
    def fields(self) -> tuple[str, ...]:
        return tuple(name for _, name, _, _ in string.Formatter().parse(self.text) if name)

    def render(self, data: Mapping[str, Any]) -> str:
        shown = {}
        for name in self.fields:
            shown[name] = SHAPES[FIELDS[name]](data.get(name)) or "?"
        return self.text.format(**shown)


_T = Template
TEMPLATES: dict[str, Template] = {
    "run_created": _T("Run {run_id} started (contract version {spec_version})"),
    "run_revised": _T("The contract was revised from version {from} to {to} by {by}"),
    "spec_acknowledged": _T("Worker {worker} read contract version {spec_version}"),
    "successor_created": _T("Successor run {successor_run_id} was created by {by}"),
    "child_created": _T("Child run {child_run_id} was created by {by}"),
    "child_ended": _T("Child run {child_run_id} ended {status}"),
    "run_running": _T("The run is running (was {previous})"),
    "run_waiting": _T("The run is waiting (was {previous})"),
    "run_paused": _T("The run was paused by {by}"),
    "run_cancelled": _T("The run was cancelled by {by}"),
    "run_completed": _T("The run completed"),
    "run_expired": _T("The run expired (was {previous})"),
    "run_failed": _T("The run failed (was {previous}; by {by})"),
    "run_cancel_hardened": _T("The cancellation was made hard by {by}"),
    "lease_granted": _T("Worker {worker} holds the lease (epoch {epoch})"),
    "lease_reestablished": _T("Worker {worker} re-established its lease (epoch {epoch})"),
    "lease_revoked": _T("The lease of epoch {epoch} was revoked with its API key"),
    "oauth_consented": _T("An MCP client ({client_id}) was let act for the run by {by}"),
    "oauth_token_issued": _T("The MCP client of grant {grant_id} got its first token"),
    "oauth_refreshed": _T("The MCP client of grant {grant_id} refreshed its token"),
    "oauth_revoked": _T("The connection of grant {grant_id} was revoked by {by}"),
    "action_admitted": _T("Call {action_id} to {tool} admitted ({effect})"),
    "action_settled": _T("Call {action_id} settled {status}"),
    "action_rejected": _T("A call to {tool} was refused: {code}"),
    "action_acknowledged": _T("Unknown call {action_id} was acknowledged by {by}"),
    "action_compensated": _T("Call {action_id} was compensated by call {compensation_id}"),
    "approval_requested": _T("Approval {approval_id} is required for {tool}"),
    "approval_approved": _T("Approval {approval_id} was approved by {by}"),
    "approval_denied": _T("Approval {approval_id} was denied by {by}"),
    "approval_expired": _T("Approval {approval_id} expired"),
    "approval_superseded": _T("Approval {approval_id} was superseded"),
    "approval_restored": _T("Approval {approval_id} was restored as {status}"),
    "budget_overrun": _T("The budget was overrun ({dimension})"),
    "usage_reported": _T("Usage was reported: {amount} ({kind})"),
    "effect_after_cancel": _T("Call {action_id} to {tool} took effect after the cancellation"),
    "checkpoint_saved": _T("Checkpoint version {version} was saved by {worker}"),
    "checkpoint_invalidated": _T("Checkpoint version {version} was invalidated"),
    "milestone_verified": _T("Milestone {milestone_id} was verified"),
    "milestone_failed": _T("Milestone {milestone_id} failed its checks"),
    "milestone_unverified": _T("Milestone {milestone_id} could not be verified"),
    "milestone_pending_review": _T("Milestone {milestone_id} waits for a review"),
    "milestone_invalidated": _T("Milestone {milestone_id} was invalidated"),
    "plan_created": _T("A plan of {tasks} tasks was made (version {version})"),
    "replanned": _T("The plan was revised to version {version} ({tasks} tasks)"),
    "plan_inherited": _T("The plan version {version} ({tasks} tasks) was inherited from {from_run_id}"),
    "task_ready": _T("Task {task_id} is ready"),
    "task_pending": _T("Task {task_id} is pending again"),
    "task_started": _T("Task {task_id} started (attempt {attempts} of {max_attempts})"),
    "task_resumed": _T("Task {task_id} resumed (was {previous})"),
    "task_blocked": _T("Task {task_id} is blocked"),
    "task_waiting_for_approval": _T("Task {task_id} waits for an approval"),
    "task_retrying": _T("Task {task_id} will be retried (attempt {attempts} of {max_attempts})"),
    "task_completed": _T("Task {task_id} completed"),
    "task_failed": _T("Task {task_id} failed (attempt {attempts} of {max_attempts})"),
    "task_cancelled": _T("Task {task_id} was cancelled"),
    "task_compensated": _T("Task {task_id} was compensated"),
    "task_check_failed": _T("Task {task_id} stays {status}: a completion check failed"),
    "wait_started": _T("Worker {worker} made the run wait ({wait_id}; on timeout: {on_timeout})"),
    "wait_ended": _T("Wait {wait_id} ended ({cause})"),
    "signal_received": _T("Signal {name} was received from {by}"),
    "action_retrying": _T(
        "Call {action_id} to {tool} is tried again: attempt {attempts} of {max_attempts} failed ({code})"
    ),
    "dead_lettered": _T(
        "Call {action_id} to {tool} is a dead letter {dead_letter_id} after {attempts} failed attempts"
    ),
    "dead_letter_decided": _T("Dead letter {dead_letter_id} was {status} by {by}"),
    "bodies_purged": _T("Stored bodies were purged by {by}"),
    "alert": _T("Alert: {kind}"),
}

# An alert's message names its kind; these say more, from the same whitelisted fields.
ALERT_TEMPLATES: dict[str, Template] = {
    "upstream_unauthorized": _T("Alert: the destination of {tool} refused the gateway's credentials"),
    "lease_missed": _T("Alert: worker {worker} missed its lease (epoch {epoch})"),
    "stalled": _T("Alert: the run made no progress within its expectation"),
    "budget_80": _T("Alert: 80% of the {dimension} budget is used"),
    "budget_exhausted": _T("Alert: the {dimension} budget is used up"),
    "approval_expiring": _T("Alert: approval {approval_id} for {tool} is about to expire"),
    "approval_requested": _T("Alert: approval {approval_id} for {tool} waits for a decision"),
    "approval_escalated": _T("Alert: approval {approval_id} for {tool} is still undecided"),
    "unknown_action": _T("Alert: the outcome of call {action_id} to {tool} is unknown"),
    "task_blocked_long": _T("Alert: task {task_id} is blocked longer than expected"),
    "run_failed": _T("Alert: the run failed (by {by})"),
    "completion_refused": _T("Alert: a completion claim was refused ({refusals} so far)"),
    "verification_failed": _T("Alert: a failed verification paused the run"),
    "serious_refusal": _T("Alert: a call to {tool} was refused: {code}"),
    "dead_letter": _T("Alert: call {action_id} to {tool} is a dead letter after {attempts} failed attempts"),
    "deliveries_dropped": _T("Alert: webhook deliveries were dropped (over {cap} pending)"),
}


def event_id(run_id: str, seq: int) -> str:
    return f"{EVENT_ID_PREFIX}{run_id}_{seq}"


def message(type_: str, data: Mapping[str, Any], run_id: str | None = None) -> str:
    """The entry's human-readable line: its type's template over whitelisted, shape-checked fields."""
    template = TEMPLATES.get(type_)
    kind = data.get("kind")
    if type_ == "alert" and isinstance(kind, str) and kind in ALERT_TEMPLATES:
        template = ALERT_TEMPLATES[kind]
    if template is None:
        return f"Event {SHAPES['word'](type_) or '?'}"
    return template.render({**data, "run_id": run_id})


def plan_progress(done: int, total: int) -> dict[str, int]:
    return {"done": done, "total": total}


def progress_of(data: Mapping[str, Any]) -> dict[str, int] | None:
    """The `progress` an entry's data carries, when it is well formed."""
    value = data.get("progress")
    if isinstance(value, dict) and _count(value.get("done")) is not None and _count(value.get("total")) is not None:
        return {"done": value["done"], "total": value["total"]}
    return None


def envelope(
    run_id: str, seq: int, type_: str, at: float, data: Mapping[str, Any], progress: Mapping[str, int] | None
) -> dict[str, Any]:
    """The served form of one entry (without its `data`: each surface adds what it shows)."""
    body: dict[str, Any] = {"v": VERSION, "id": event_id(run_id, seq), "run_id": run_id, "seq": seq, "type": type_}
    body["at"] = isoformat(at)
    task_id = SHAPES["id"](data.get("task_id"))
    if task_id is not None:
        body["task_id"] = task_id
    body["message"] = message(type_, data, run_id)
    own = progress_of(data)
    if own is not None or progress is not None:
        body["progress"] = own or dict(progress or {})
    return body


# -- subscriptions ------------------------------------------------------------------------------
def subscribable() -> frozenset[str]:
    """Every name a webhook's `events:` may list."""
    return frozenset({*ALERT_KINDS, HEARTBEAT, *TEMPLATES, *ALIASES, EVERYTHING})


def subscription(names: Iterable[str] | None) -> frozenset[str] | None:
    """A webhook's `events:` as the outbox matches it: aliases resolved. None: every alert and heartbeat.

    Raises: ValueError for more than MAX_SUBSCRIPTIONS names or one not in `subscribable()`.
    """
    if names is None:
        return None
    listed = list(names)
    if len(listed) > MAX_SUBSCRIPTIONS:
        raise ValueError(f"at most {MAX_SUBSCRIPTIONS} event names per webhook, not {len(listed)}")
    unknown = sorted(set(listed) - subscribable())
    if unknown:
        raise ValueError(
            f"unknown event names {', '.join(unknown)}: an alert kind, heartbeat, an event type of "
            "docs/events.md, an alias, or '*'"
        )
    return frozenset(ALIASES.get(n, n) for n in listed)


def wants(events: frozenset[str] | None, type_: str, kind: str | None = None) -> bool:
    """Whether a webhook subscribed to `events` takes an entry of `type_` (an alert of `kind`), or a
    heartbeat (`type_` = "heartbeat"). Without `events:`, only the alerts and heartbeats, as before."""
    if events is None:
        return type_ in ("alert", HEARTBEAT)
    if EVERYTHING in events:
        return True
    if type_ == "alert":
        return "alert" in events or (kind is not None and kind in events)
    # A name that is an alert kind and an entry type both (`run_failed`) subscribes to the alert,
    # which follows the entry in its transaction; the entry itself comes with `*`.
    return type_ in events and type_ not in ALERT_KINDS


@dataclass(frozen=True)
class Subscriber:
    name: str
    events: frozenset[str] | None  # as `subscription` returns it


@dataclass(frozen=True)
class Outbox:
    """What the store needs to queue deliveries in the entry's own transaction."""

    subscribers: tuple[Subscriber, ...] = ()
    max_attempts: int = 8
    cap: int = OUTBOX_CAP

    def targets(self, type_: str, kind: str | None = None) -> tuple[str, ...]:
        return tuple(s.name for s in self.subscribers if wants(s.events, type_, kind))
