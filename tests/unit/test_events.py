"""The served envelope (gateway/domain/events.py): its message templates against the catalogue in
docs/events.md and against every entry type the store can write, messages that never show what
they must not, and webhook subscriptions as warrant.yaml names them."""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.config import load_settings
from gateway.domain.events import (
    ALERT_KINDS,
    ALERT_TEMPLATES,
    ALIASES,
    FIELDS,
    MAX_SUBSCRIPTIONS,
    SHAPES,
    TEMPLATES,
    Outbox,
    Subscriber,
    envelope,
    event_id,
    message,
    subscription,
    wants,
)
from gateway.domain.lifecycle import ApprovalStatus, RunStatus
from gateway.domain.tasks import TaskStatus
from gateway.errors import ConfigError
from gateway.store.sql.tasks import move_event

ROOT = Path(__file__).resolve().parents[2]
CATALOGUE = (ROOT / "docs" / "events.md").read_text()
ISSUE_NAMES = (
    "run_started", "plan_created", "task_started", "task_completed", "task_blocked", "approval_required",
    "retrying", "replanned", "run_cancelled", "run_completed", "run_failed",
)  # fmt: skip


def _section(title: str) -> str:
    start = CATALOGUE.index(f"\n## {title}\n")
    end = CATALOGUE.find("\n## ", start + 1)
    return CATALOGUE[start : end if end > 0 else None]


def _rows(section: str) -> dict[str, str]:
    """`| \\`name\\` | text |` rows of a section's tables: name -> text."""
    found = {}
    for line in section.splitlines():
        match = re.fullmatch(r"\| `([a-z0-9_]+)` \| (.*) \|", line.strip())
        if match:
            found[match[1]] = match[2]
    return found


def _written_types() -> set[str]:
    """Every entry type the store's code can append: the literal (or the expanded pattern) given
    to `_event`/`_append` anywhere under gateway/store. A form not understood here fails."""
    types: set[str] = set()
    patterns = {
        "run_": [f"run_{s.value}" for s in RunStatus],
        # an approval's entry names what it became by a decision or a close: never pending, and
        # a used one is told by its action's entries
        "approval_": [f"approval_{s.value}" for s in ApprovalStatus if s.value not in ("pending", "used")],
        "milestone_": [f"milestone_{s}" for s in ("verified", "failed", "unverified", "pending_review")],
    }

    def add(node: ast.expr, where: str) -> None:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            types.add(node.value)
        elif isinstance(node, ast.IfExp):
            add(node.body, where)
            add(node.orelse, where)
        elif isinstance(node, ast.JoinedStr) and isinstance(node.values[0], ast.Constant):
            prefix = str(node.values[0].value)
            assert prefix in patterns, f"{where}: an entry type f'{prefix}...' this test cannot expand"
            types.update(patterns[prefix])
        elif isinstance(node, ast.Name) and node.id in ("type_", "t") and where.startswith("base.py"):
            pass  # `_event` handing its own argument on to `_append`, the outbox's `append` callback
        elif isinstance(node, ast.Call) and getattr(node.func, "id", None) == "move_event":
            types.update(move_event(a, b) for a in TaskStatus for b in TaskStatus)
        else:
            raise AssertionError(f"{where}: an entry type this test cannot read: {ast.unparse(node)}")

    for path in sorted((ROOT / "gateway" / "store").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", None) in ("_event", "_append"):
                if len(node.args) > 2:
                    add(node.args[2], f"{path.name}:{node.lineno}")
    return types


def test_every_entry_type_the_store_can_write_has_a_template() -> None:
    written = _written_types()
    assert len(written) > 40
    missing = sorted(t for t in written if t not in TEMPLATES)
    assert missing == [], f"entry types without a message template: {missing}"


def test_the_catalogue_lists_every_template_exactly_as_the_code_has_it() -> None:
    assert _rows(_section("Messages")) == {t: v.text for t, v in TEMPLATES.items()} | {
        k: v.text for k, v in ALERT_TEMPLATES.items()
    }


def test_the_catalogue_describes_the_fields_of_every_type_with_a_template() -> None:
    listed = set(re.findall(r"`([a-z_]+)`", "".join(re.findall(r"^\| ([^|]+) \|", CATALOGUE, re.M))))
    assert set(TEMPLATES) <= listed, sorted(set(TEMPLATES) - listed)


def test_the_issue_names_are_types_or_documented_aliases() -> None:
    for name in ISSUE_NAMES:
        assert ALIASES.get(name, name) in TEMPLATES, name
    assert _rows(_section("Aliases")) == {k: f"`{v}`" for k, v in ALIASES.items()}


def test_every_template_interpolates_only_whitelisted_fields_with_a_shape() -> None:
    for template in (*TEMPLATES.values(), *ALERT_TEMPLATES.values()):
        for name in template.fields:
            assert name in FIELDS and FIELDS[name] in SHAPES, (template.text, name)
    assert set(ALERT_TEMPLATES) <= set(ALERT_KINDS)


def test_a_message_shows_a_field_that_fails_its_shape_as_a_question_mark() -> None:
    assert message("task_started", {"task_id": "a b", "attempts": "1", "max_attempts": 3}) == (
        "Task ? started (attempt ? of 3)"
    )
    assert "crm__update" in message("alert", {"kind": "upstream_unauthorized", "tool": "crm__update"})
    assert message("no_such_type", {}) == "Event no_such_type"


def test_the_envelope_names_the_event_once_and_carries_task_and_progress() -> None:
    data = {"task_id": "t1", "attempts": 1, "max_attempts": 2, "progress": {"done": 1, "total": 5}}
    body = envelope("run_x", 7, "task_started", 0.0, data, None)
    assert body == {
        "v": 1,
        "id": event_id("run_x", 7),
        "run_id": "run_x",
        "seq": 7,
        "type": "task_started",
        "at": body["at"],
        "task_id": "t1",
        "message": "Task t1 started (attempt 1 of 2)",
        "progress": {"done": 1, "total": 5},
    }
    assert event_id("run_x", 7) == "evt_run_x_7"
    assert envelope("run_x", 8, "action_settled", 0.0, {}, {"done": 2, "total": 5})["progress"] == {
        "done": 2,
        "total": 5,
    }
    assert "progress" not in envelope("run_x", 9, "lease_granted", 0.0, {}, None)


SECRET = st.from_regex(r"(sk|ghp|xoxb|AKIA|eyJ)[-_][A-Za-z0-9]{16,40}", fullmatch=True)
# What no message may show: arguments, payloads, receipts, notes, reasons, errors, messages.
UNSHOWN = ("arguments", "payload", "receipt", "note", "reason", "error", "message", "summary", "output_ref", "body")


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(sorted(TEMPLATES) + [f"alert:{k}" for k in ALERT_TEMPLATES]), SECRET, st.data())
def test_secret_looking_values_never_reach_a_message(type_: str, secret: str, draw: Any) -> None:
    kind = type_.split(":", 1)[1] if type_.startswith("alert:") else None
    type_ = "alert" if kind else type_
    data: dict[str, Any] = {name: draw.draw(st.sampled_from([secret, {"k": secret}, [secret]])) for name in UNSHOWN}
    # Whitelisted fields holding a secret in a shape they do not have (a space, a nesting, a number as text).
    for name in FIELDS:
        data[name] = draw.draw(st.sampled_from([f"{secret} {secret}", {"id": secret}, f"{secret}\n", f"1{secret}!"]))
    if kind:
        data["kind"] = kind
    text = message(type_, data, run_id=f"run {secret}")
    assert secret not in text
    assert secret not in str(envelope("run_x", 1, type_, 0.0, data, None)["message"])


def test_subscriptions_resolve_aliases_and_refuse_unknown_names_and_too_many() -> None:
    assert subscription(["run_started", "retrying", "stalled", "heartbeat", "*"]) == frozenset(
        {"run_created", "task_retrying", "stalled", "heartbeat", "*"}
    )
    assert subscription(None) is None
    with pytest.raises(ValueError, match="run_stared"):
        subscription(["run_stared"])
    with pytest.raises(ValueError, match=str(MAX_SUBSCRIPTIONS)):
        subscription(["task_started"] * (MAX_SUBSCRIPTIONS + 1))


@pytest.mark.parametrize(
    ("events", "type_", "kind", "taken"),
    [
        (None, "alert", "upstream_unauthorized", True),  # unset: every alert and the heartbeat, as before
        (None, "heartbeat", None, True),
        (None, "task_started", None, False),
        (frozenset({"*"}), "task_started", None, True),
        (frozenset({"*"}), "alert", "stalled", True),
        (frozenset({"stalled"}), "alert", "stalled", True),
        (frozenset({"stalled"}), "alert", "lease_missed", False),
        (frozenset({"alert"}), "alert", "lease_missed", True),
        (frozenset({"task_retrying"}), "task_retrying", None, True),
        (frozenset({"task_retrying"}), "heartbeat", None, False),
        (frozenset({"run_failed"}), "alert", "run_failed", True),  # both a kind and a type: the alert
        (frozenset({"run_failed"}), "run_failed", None, False),
        (frozenset({"*"}), "run_failed", None, True),
    ],
)
def test_a_webhook_takes_what_it_subscribed_to(
    events: frozenset[str] | None, type_: str, kind: str | None, taken: bool
) -> None:
    assert wants(events, type_, kind) is taken
    outbox = Outbox((Subscriber("a", events), Subscriber("b", frozenset({"plan_created"}))))
    assert ("a" in outbox.targets(type_, kind)) is taken


def _config(tmp_path: Path, events: str) -> Path:
    path = tmp_path / "warrant.yaml"
    path.write_text(f"webhooks:\n  - {{url: 'https://hooks.example/w', secret_env: S, events: {events}}}\n")
    return path


def test_webhook_events_in_warrant_yaml_take_types_aliases_and_everything(tmp_path: Path) -> None:
    settings_ = load_settings(
        _config(tmp_path, "['*', approval_required, upstream_unauthorized]"), {"WARRANT_LEDGER_KEY": "k", "S": "s"}
    )
    [hook] = settings_.webhooks
    assert hook.events == frozenset({"*", "approval_requested", "upstream_unauthorized"})
    assert hook.wants("upstream_unauthorized") and hook.wants("heartbeat")


@pytest.mark.parametrize("events", ["[task_startd]", "[" + ", ".join(["task_started"] * 101) + "]"])
def test_an_unknown_or_overlong_webhook_events_list_stops_start_up(tmp_path: Path, events: str) -> None:
    with pytest.raises(ConfigError, match="event names"):
        load_settings(_config(tmp_path, events), {"WARRANT_LEDGER_KEY": "k", "S": "s"})
