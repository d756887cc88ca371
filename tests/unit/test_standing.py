"""Where a run stands (gateway/domain/standing.py): each rule of the table decides when it alone
holds, an earlier rule wins over every later one, and the module's docstring lists the rules in
the order the code applies them."""

from __future__ import annotations

import itertools
import re

import pytest

from gateway.domain import standing as mod
from gateway.domain.lifecycle import RunStatus
from gateway.domain.standing import (
    ApprovalLine,
    ArtifactLine,
    MilestoneLine,
    NextDecision,
    StandingInputs,
    TaskLine,
    standing,
)
from gateway.domain.tasks import TaskStatus

T = TaskStatus


def task(tid: str, status: TaskStatus, error: str | None = None) -> TaskLine:
    return TaskLine(tid, tid.title(), status, attempts=1, max_attempts=3, error=error)


# Inputs under which one rule holds and no earlier one does; each a change to a plain running run.
HOLDS: dict[str, dict[str, object]] = {
    "ended": {"status": RunStatus.CANCELLED, "status_reason": "operator stopped it"},
    "paused": {"status": RunStatus.PAUSED, "status_reason": "lunch"},
    "approval": {"status": RunStatus.WAITING, "approvals": [ApprovalLine("apr_1", "crm__update")]},
    "budget": {"exhausted": ["writes"]},
    "task_failed": {"tasks": [task("a", T.FAILED, "the API said 500 three times")]},
    "milestone_failed": {"milestones": [MilestoneLine("m1", "failed", True, ("schema: minItems 2",))]},
    "task_blocked": {"tasks": [task("a", T.BLOCKED, "waiting for the customer's file")]},
}
DECIDES = {name: decision for name, _, decision in mod.RULES}


def running(**changes: object) -> StandingInputs:
    fields: dict[str, object] = {"status": RunStatus.RUNNING}
    fields.update(changes)
    return StandingInputs(**fields)  # type: ignore[arg-type]


def test_every_rule_is_exercised_here() -> None:
    assert set(HOLDS) == set(DECIDES)


@pytest.mark.parametrize("name", list(HOLDS))
def test_each_rule_decides_when_it_alone_holds_and_names_its_blocker(name: str) -> None:
    found = standing(running(**HOLDS[name]))
    assert (found.rule, found.decision) == (name, DECIDES[name])
    assert found.blocker is not None and found.blocker.kind == name and found.why == found.blocker.detail


@pytest.mark.parametrize(("first", "later"), list(itertools.combinations(list(DECIDES), 2)))
def test_an_earlier_rule_wins_over_a_later_one(first: str, later: str) -> None:
    both = {**HOLDS[later], **HOLDS[first]}
    if "tasks" in HOLDS[first] and "tasks" in HOLDS[later]:
        both["tasks"] = [*HOLDS[first]["tasks"], *HOLDS[later]["tasks"]]  # type: ignore[misc]
    assert standing(running(**both)).rule == first


def test_the_docstring_table_lists_the_rules_in_the_order_they_apply() -> None:
    listed = re.findall(r"^\| `(\w+)`", mod.__doc__ or "", flags=re.M)
    assert listed == [name for name, _, _ in mod.RULES] + ["done", "go_on"]


def test_all_done_says_stop_and_claim_completion() -> None:
    found = standing(
        running(
            tasks=[task("a", T.COMPLETED), task("b", T.CANCELLED)],
            milestones=[MilestoneLine("m1", "verified"), MilestoneLine("opt", "failed", required=False)],
        )
    )
    assert (found.rule, found.decision, found.blocker) == ("done", NextDecision.STOP, None)
    assert "warrant_complete" in found.why and found.milestone is None


def test_go_on_names_the_task_under_way_else_the_next_ready_one_else_the_milestone() -> None:
    tasks = [task("a", T.COMPLETED), task("b", T.READY), task("c", T.RETRYING), task("d", T.PENDING)]
    found = standing(running(tasks=tasks, milestones=[MilestoneLine("m1", "pending")]))
    assert found.decision is NextDecision.CONTINUE and found.task is not None and found.task.task_id == "c"
    found = standing(running(tasks=tasks[:2], milestones=[MilestoneLine("m1", "pending")]))
    assert found.task is not None and found.task.task_id == "b" and "go on with task b" in found.why
    found = standing(running(tasks=[task("a", T.COMPLETED)], milestones=[MilestoneLine("m1", "pending")]))
    assert found.task is None and found.milestone is not None and "milestone m1" in found.why
    # Nothing planned and nothing required: nothing to stop for either.
    assert standing(running()).decision is NextDecision.CONTINUE


def test_a_task_waiting_for_approval_blocks_even_while_the_run_is_running() -> None:
    found = standing(running(tasks=[task("a", T.WAITING_FOR_APPROVAL)], approvals=[ApprovalLine("apr_9", "mail")]))
    assert found.rule == "approval" and found.blocker is not None
    assert dict(found.blocker.refs) == {"approval_id": "apr_9", "tool": "mail", "task_id": "a"}


def test_the_last_artifact_is_the_newest_of_checkpoints_and_task_outputs() -> None:
    older = ArtifactLine({"id": "cp"}, at=10.0, checkpoint_version=2)
    newer = ArtifactLine({"id": "out"}, at=20.0, task_id="a")
    assert standing(running(artifacts=[newer, older])).last_artifact is newer
    assert standing(running()).last_artifact is None


def test_quoted_words_are_flattened_and_bounded() -> None:
    said = "line one\nline two " + "x" * 500
    found = standing(running(tasks=[task("a", T.BLOCKED, said)]))
    assert found.blocker is not None and "\n" not in found.blocker.detail
    assert len(found.blocker.detail) <= mod.MAX_TEXT + len("task a is blocked: ")
