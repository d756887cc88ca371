"""What the contract's rules make of a run's setbacks, as one table: pure, no I/O.

Three setbacks can end a run by rule (docs/decisions/0024-failed-end.md):

    setback               the contract's rule                     setting      the run
    verification_failed   completion.on_verification_failed      continue     goes on (today's behaviour)
                                                                  pause        is paused for an operator
                                                                  fail         fails
    completion_refused    completion.max_completion_attempts     within       goes on
                                                                  used_up      fails
    task_failed           plan.fail_run_on_task_failure          keep_run     goes on (the plan may be revised)
                                                                  fail_run     fails

`verification_failed`: a milestone whose checks failed, or a task's completion check that failed
(a check that could not be read is `unverified`, not failed: no rule acts on it). `completion_refused`:
every completion claim the gateway refused counts; the claim that reaches `max_completion_attempts`
uses the last one. `task_failed`: a task that ends `failed` with its attempts used up.

Besides what happens to the run, each setback may raise an alert to the operator (`Verdict.alert`):
every refused completion raises `completion_refused`; a pause by rule raises `verification_failed`
(the run waits on a person); a run failed by any rule raises `run_failed`, as an operator's fail does.
The store reads the rows, calls `decide`, and writes what it returns, in the setback's transaction.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from gateway.domain.contract import EscalationRules, completion_rules, plan_rules


class Setback(StrEnum):
    VERIFICATION_FAILED = "verification_failed"
    COMPLETION_REFUSED = "completion_refused"
    TASK_FAILED = "task_failed"


class Outcome(StrEnum):
    CONTINUE = "continue"
    PAUSE = "pause"
    FAIL = "fail"


# The contract rule each setback reads, by its name in the contract.
RULE_OF: dict[Setback, str] = {
    Setback.VERIFICATION_FAILED: "completion.on_verification_failed",
    Setback.COMPLETION_REFUSED: "completion.max_completion_attempts",
    Setback.TASK_FAILED: "plan.fail_run_on_task_failure",
}

# (setback, the rule's setting) -> what happens to the run. A pair absent from the table is a bug
# (tests/unit/test_completion.py holds every setting of every rule to exactly one row).
TABLE: dict[tuple[Setback, str], Outcome] = {
    (Setback.VERIFICATION_FAILED, "continue"): Outcome.CONTINUE,
    (Setback.VERIFICATION_FAILED, "pause"): Outcome.PAUSE,
    (Setback.VERIFICATION_FAILED, "fail"): Outcome.FAIL,
    (Setback.COMPLETION_REFUSED, "within"): Outcome.CONTINUE,
    (Setback.COMPLETION_REFUSED, "used_up"): Outcome.FAIL,
    (Setback.TASK_FAILED, "keep_run"): Outcome.CONTINUE,
    (Setback.TASK_FAILED, "fail_run"): Outcome.FAIL,
}

# The alert each setback raises whatever the outcome (None: only the outcome's own, below).
SETBACK_ALERTS: dict[Setback, str | None] = {
    Setback.VERIFICATION_FAILED: None,
    Setback.COMPLETION_REFUSED: "completion_refused",
    Setback.TASK_FAILED: None,
}
OUTCOME_ALERTS: dict[Outcome, str | None] = {
    Outcome.CONTINUE: None,
    Outcome.PAUSE: "verification_failed",
    Outcome.FAIL: "run_failed",
}


@dataclass(frozen=True)
class Verdict:
    setback: Setback
    setting: str
    outcome: Outcome
    rule: str  # the contract rule that decided, as the contract names it
    alerts: tuple[str, ...]  # the alert kinds to raise, in order

    @property
    def reason(self) -> str:
        """Why the run is paused or failed, as its status reason says."""
        what = {
            Setback.VERIFICATION_FAILED: "verification failed",
            Setback.COMPLETION_REFUSED: "the completion attempts are used up",
            Setback.TASK_FAILED: "a task failed with its attempts used up",
        }[self.setback]
        return f"{what} ({self.rule}: {self.setting})"


def setting(contract: dict[str, Any], setback: Setback, *, refusals: int = 0) -> str:
    """The setting of the rule `setback` reads in `contract` (its wire form). `refusals`: the
    completion claims refused so far, this one included."""
    if setback is Setback.VERIFICATION_FAILED:
        return completion_rules(contract).on_verification_failed
    if setback is Setback.COMPLETION_REFUSED:
        bound = completion_rules(contract).max_completion_attempts
        return "used_up" if bound is not None and refusals >= bound else "within"
    return "fail_run" if plan_rules(contract).fail_run_on_task_failure else "keep_run"


def decide(contract: dict[str, Any], setback: Setback, *, refusals: int = 0) -> Verdict:
    """What `setback` does to a run under `contract`, and the alerts it raises."""
    chosen = setting(contract, setback, refusals=refusals)
    outcome = TABLE[(setback, chosen)]
    alerts = tuple(kind for kind in (SETBACK_ALERTS[setback], OUTCOME_ALERTS[outcome]) if kind is not None)
    return Verdict(setback, chosen, outcome, RULE_OF[setback], alerts)


def task_failure_is_final(status: str, attempts: int, max_attempts: int) -> bool:
    """A task's move that counts as `task_failed`: it ends failed with no attempt left."""
    return status == "failed" and attempts >= max_attempts


@functools.lru_cache(maxsize=256)
def serious_refusals(contract_json: str) -> frozenset[str]:
    """The refusal codes `escalation.serious_refusals` names in a stored contract (its JSON text):
    read on every recorded refusal, so kept per contract text."""
    body = json.loads(contract_json).get("escalation")
    if not body:
        return frozenset()
    return frozenset(EscalationRules.model_validate(body).serious_refusals)
