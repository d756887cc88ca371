"""A store taken back to an older schema version, as an older gateway left it, for the upgrade tests.

`back_to(version, backend)` is what undoes every migration after `version` (newest first) and
forgets that they ran; `world.backend._execute(*back_to(23, world.backend))` then reopening the store
runs them again. A migration that cannot simply run twice (its tables or columns would already
exist) must have its undo in UNDO: `test_migration_undo.py` refuses one from 0024 on without it, so
one upgrade test cannot leave the next one's database half-migrated.
"""

from __future__ import annotations

from typing import Any

Statement = tuple[str, tuple[Any, ...]]


def _undo_14(backend: str) -> list[Statement]:  # the money guards
    if backend == "sqlite":
        triggers = ("runs_money_insert", "runs_money_update", "actions_money", "charges_money")
        return [(f"DROP TRIGGER {t}", ()) for t in triggers]
    return [(f"ALTER TABLE {t} DROP CONSTRAINT {t}_money_bounded", ()) for t in ("runs", "actions", "charges")]


UNDO: dict[int, Any] = {
    14: _undo_14,
    20: lambda _: [  # plans and tasks
        ("DROP INDEX actions_task", ()),
        ("ALTER TABLE actions DROP COLUMN task_id", ()),
        ("ALTER TABLE runs DROP COLUMN plan_version", ()),
        ("DROP TABLE tasks", ()),
        ("DROP TABLE plans", ()),
    ],
    23: lambda _: [("ALTER TABLE tasks DROP COLUMN blocked_expectation", ())],
    24: lambda _: [(f"ALTER TABLE runs DROP COLUMN {c}", ()) for c in ("status_cause", "completion_refusals")],
    25: lambda _: [
        ("DROP INDEX webhook_deliveries_run_pending", ()),
        ("ALTER TABLE webhook_deliveries DROP COLUMN run_id", ()),
        ("ALTER TABLE webhook_deliveries DROP COLUMN event_id", ()),
        ("DROP TABLE event_drops", ()),
    ],
    26: lambda _: [("DROP TABLE drill_runs", ()), ("ALTER TABLE runs DROP COLUMN replays", ())],
    27: lambda _: [("DROP TABLE signals", ()), ("DROP TABLE waits", ())],  # waits (docs/decisions/0027-waits.md)
    28: lambda _: [("DROP INDEX actions_shared_in_flight", ())],
    29: lambda _: [  # approvals that reach people (docs/decisions/0029-approvals-reach.md)
        (f"ALTER TABLE approvals DROP COLUMN {c}", ())
        for c in ("blocks_run", "approvers", "escalate_at", "destination")
    ],
    30: lambda _: [  # retry policies and dead letters (docs/decisions/0030-retries.md)
        ("DROP TABLE dead_letters", ()),
        ("ALTER TABLE runs DROP COLUMN attempts_failed", ()),
        ("ALTER TABLE actions DROP COLUMN failed_attempts", ()),
    ],
    32: lambda _: [  # approving an edited payload (docs/decisions/0032-approve-edited.md)
        ("DROP INDEX approvals_proposed", ()),
        ("ALTER TABLE approvals DROP COLUMN proposed_sha256", ()),
    ],
    33: lambda _: [("ALTER TABLE signals DROP COLUMN payload_purged_at", ())],  # signal payloads purged
    31: lambda _: [  # compensation (docs/decisions/0031-compensation.md)
        ("DROP INDEX actions_compensates", ()),
        ("ALTER TABLE actions DROP COLUMN compensates", ()),
    ],
}


def undo_after(version: int, backend: Any) -> list[Statement]:
    """The undo statements of every migration in UNDO after `version`, newest first (`backend`: a
    test back end, or its name)."""
    name = backend if isinstance(backend, str) else backend.name
    steps: list[Statement] = []
    for number in sorted((n for n in UNDO if n > version), reverse=True):
        steps += UNDO[number](name)
    return steps


def back_to(version: int, backend: Any) -> list[Statement]:
    """`undo_after(version)`, then the migrations after `version` forgotten: the store's next open
    runs them again."""
    return [*undo_after(version, backend), ("DELETE FROM schema_migrations WHERE version > ?", (version,))]
