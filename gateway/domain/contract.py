"""The contract: the agreed job a run works under.

`Contract` is the wire form (what `POST /api/runs` takes and what the store keeps, canonical
JSON); `Contract.terms()` gives the compiled form the gate decides with: money in minor units,
durations in seconds, CEL expressions compiled. A bad contract is refused with every problem
listed, not only the first.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator

from gateway.domain.checks import check_problems
from gateway.domain.expressions import Expression, compiled
from gateway.domain.retries import RetryPolicy
from gateway.domain.units import currency_exponent, parse_duration, parse_money
from gateway.errors import CALL_CODES, Code, InvalidRequest

DIMENSIONS: tuple[str, ...] = ("spend", "tool_calls", "writes", "active_seconds")
MAX_COUNT = 10**15 - 1
# The plan's hard bounds, whatever a contract says (docs/tasks.md): tasks in one plan, plan
# versions one run keeps.
MAX_PLAN_TASKS = 500
MAX_PLAN_VERSIONS = 1000
# A contract's `tags` (what the pilot report sums cost by, GET /api/reports?tag=): a few short words.
MAX_TAGS = 16
TAG_PATTERN = r"^[a-z0-9_.:-]{1,64}$"
Tag = Annotated[str, Field(pattern=TAG_PATTERN)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _duration(value: object) -> str:
    parse_duration(value)
    return value if isinstance(value, str) else f"{value}s"


def _money(value: object) -> str:
    parse_money(value, "USD")  # the shape; decimals against the contract's currency are checked after
    return value if isinstance(value, str) else str(value)


class Budgets(_Strict):
    spend: str
    # Bounded like money (15 digits), so a limit always fits a 64-bit column.
    tool_calls: int = Field(ge=0, le=MAX_COUNT)
    writes: int = Field(ge=0, le=MAX_COUNT)
    active_seconds: int = Field(ge=0, le=MAX_COUNT)
    count_waiting: bool = False
    # Failed attempts across the run (every attempt the gate retried, and each failed last one);
    # used up, new calls are refused `budget_exhausted` naming `attempts` (docs/retries.md). None: no bound.
    attempts: int | None = Field(default=None, ge=0, le=MAX_COUNT)

    _spend = field_validator("spend", mode="before")(_money)


class Authority(_Strict):
    allow: list[str] = Field(min_length=1)
    deny: list[str] = []
    constraints: dict[str, str] = {}

    @field_validator("constraints")
    @classmethod
    def _compile(cls, value: dict[str, str]) -> dict[str, str]:
        problems = []
        for tool, source in value.items():
            try:
                Expression(source)
            except ValueError as exc:
                problems.append(f"{tool}: {exc}")
        if problems:
            raise ValueError("; ".join(problems))
        return value


class ApprovalRule(_Strict):
    tool: str = Field(min_length=1)
    # Only the roles that may decide approvals, so every rule ranks (gateway/domain/approvals.py).
    role: Literal["approver", "admin"] = "approver"
    decide_within: str = "4h"
    valid_for: str = "1h"
    on_expiry: Literal["pause", "resume"] = "pause"
    when: str | None = None
    # While the approval waits, every other write of the run is refused `run_waiting` (true), or
    # goes on (false; docs/decisions/0029-approvals-reach.md: a contract may say false only where
    # the policy does).
    blocks_run: bool = True
    # Who may decide it: API key names or ids (None: anyone holding `role`); an empty list, as
    # rules that name no one in common combine to, lets nobody decide: it expires by `on_expiry`.
    approvers: list[Annotated[str, Field(min_length=1, max_length=128)]] | None = Field(default=None, max_length=100)
    # Undecided this long after it was asked, the watchdog raises `approval_escalated` (once).
    escalate_after: str | None = None

    _durations = field_validator("decide_within", "valid_for", mode="before")(_duration)

    @field_validator("escalate_after", mode="before")
    @classmethod
    def _escalate(cls, value: object) -> str | None:
        return None if value is None else _duration(value)

    @field_validator("when")
    @classmethod
    def _compile(cls, value: str | None) -> str | None:
        if value is not None:
            Expression(value)
        return value


class Milestone(_Strict):
    id: str = Field(min_length=1, max_length=128)
    required: bool = True
    # Kept as given on the wire (the stored contract is what was agreed); each check is parsed
    # by gateway/domain/checks.py, and every bad one is listed with its index.
    checks: list[dict[str, Any]] = []

    @field_validator("checks")
    @classmethod
    def _checks(cls, value: list[dict[str, Any]]) -> list[dict[str, Any]]:
        problems = check_problems(value)
        if problems:
            raise ValueError("; ".join(problems))
        return value


class PlanRules(_Strict):
    """`plan:` in a contract (docs/tasks.md). Absent, a run may plan or not, as it likes."""

    # A write is refused `plan_required` while the run has no plan.
    required_before_writes: bool = False
    max_tasks: int = Field(default=100, ge=1, le=MAX_PLAN_TASKS)
    # Revisions after the first plan (`plan_revision_limit` past it); None: up to the hard bound.
    max_plan_revisions: int | None = Field(default=None, ge=0, le=MAX_PLAN_VERSIONS - 1)
    # A revision is refused `plan_over_budget` when the remaining budget cannot cover it.
    revision_needs_budget: bool = False
    # A task blocked longer than this raises `task_blocked_long` to the operator (the watchdog);
    # a task's own `blocked_expectation` overrides it. None: only tasks that name one.
    blocked_expectation: str | None = None
    # A task that fails with its attempts used up (`max_attempts`) fails the run
    # (gateway/domain/completion.py); false: the agent may revise the plan and go another way.
    fail_run_on_task_failure: bool = False

    _durations = field_validator("blocked_expectation", mode="before")(lambda v: None if v is None else _duration(v))


NO_PLAN_RULES = PlanRules()

MAX_COMPLETION_ATTEMPTS = 1000


class CompletionRules(_Strict):
    """`completion:` in a contract (docs/decisions/0024-failed-end.md; the decisions:
    gateway/domain/completion.py). Absent: today's behaviour, a run that fails verification or is
    refused completion goes on."""

    # A milestone whose checks failed, or a task's completion check that failed: the run goes on
    # (continue), is paused for an operator (pause), or fails (fail).
    on_verification_failed: Literal["continue", "pause", "fail"] = "continue"
    # Refused completion claims (`completion_refused`) the run may make; the one that uses the
    # last of them fails the run. None: no bound.
    max_completion_attempts: int | None = Field(default=None, ge=1, le=MAX_COMPLETION_ATTEMPTS)


NO_COMPLETION_RULES = CompletionRules()


class EscalationRules(_Strict):
    """`escalation:` in a contract: the refusals an operator hears of at once (a `serious_refusal`
    alert, webhook and console), not only the agent."""

    # Refusal codes of a tools/call (docs/refusals.md), e.g. forbidden, constraint_violated.
    serious_refusals: list[str] = Field(default=[], max_length=len(CALL_CODES))

    @field_validator("serious_refusals")
    @classmethod
    def _codes(cls, value: list[str]) -> list[str]:
        unknown = [code for code in value if code not in CALL_CODES]
        if unknown:
            raise ValueError(f"not refusal codes of a call (docs/refusals.md): {', '.join(sorted(unknown))}")
        if len(value) != len(set(value)):
            raise ValueError("each code once")
        return value


NO_ESCALATION_RULES = EscalationRules()


class Contract(_Strict):
    goal: str = Field(min_length=1, max_length=4000)
    spec_version: str = Field(min_length=1, max_length=64)
    owner: str = Field(min_length=1, max_length=256)
    expires_in: str
    lease_ttl: str = "5m"
    progress_expectation: str | None = None
    currency: str = "USD"
    budgets: Budgets
    authority: Authority
    approvals: list[ApprovalRule] = []
    milestones: list[Milestone] = []
    # Worker key names that may take this run's lease; empty means any worker key of the tenant.
    workers: list[str] = []
    # When true, the key that created the run may not decide its approvals.
    forbid_creator_approval: bool = False
    plan: PlanRules | None = None
    completion: CompletionRules | None = None
    escalation: EscalationRules | None = None
    # Per tool pattern, retries narrower than the policy's (docs/retries.md); a looser one is refused.
    retries: dict[str, RetryPolicy] = {}
    # Labels for reports (team, pilot, customer): cost and outcomes are summed by them.
    tags: list[Tag] = Field(default=[], max_length=MAX_TAGS)

    _durations = field_validator("expires_in", "lease_ttl", "progress_expectation", mode="before")(
        lambda v: None if v is None else _duration(v)
    )

    @field_validator("currency")
    @classmethod
    def _currency(cls, value: str) -> str:
        currency_exponent(value)
        return value

    # Cross-field checks are field validators, not a model validator: a model validator runs only
    # when every field is valid, so its problems would be missing from a list with other problems.
    @field_validator("budgets")
    @classmethod
    def _spend_in_currency(cls, value: Budgets, info: ValidationInfo) -> Budgets:
        currency = info.data.get("currency")  # absent when the currency itself is invalid
        if currency is not None:
            try:
                parse_money(value.spend, currency)
            except ValueError as exc:
                raise ValueError(f"spend: {exc}") from None
        return value

    @field_validator("tags")
    @classmethod
    def _unique_tags(cls, value: list[str]) -> list[str]:
        if len(value) != len(set(value)):
            raise ValueError("tags must be unique")
        return value

    @field_validator("milestones")
    @classmethod
    def _unique_milestones(cls, value: list[Milestone]) -> list[Milestone]:
        ids = [m.id for m in value]
        if len(ids) != len(set(ids)):
            raise ValueError("milestone ids must be unique")
        return value

    def terms(self) -> Terms:
        b = self.budgets
        return Terms(
            spec_version=self.spec_version,
            currency=self.currency,
            expires_in=parse_duration(self.expires_in),
            lease_ttl=parse_duration(self.lease_ttl),
            limits={
                "spend": parse_money(b.spend, self.currency),
                "tool_calls": b.tool_calls,
                "writes": b.writes,
                "active_seconds": b.active_seconds,
            },
            count_waiting=b.count_waiting,
            allow=tuple(self.authority.allow),
            deny=tuple(self.authority.deny),
            constraints={tool: compiled(src) for tool, src in self.authority.constraints.items()},
            approvals=tuple(self.approvals),
            forbid_creator_approval=self.forbid_creator_approval,
            workers=tuple(self.workers),
            plan=self.plan or NO_PLAN_RULES,
            retries=dict(self.retries),
            attempts=b.attempts,
        )


@dataclass(frozen=True)
class Terms:
    """A contract compiled for deciding: integers and compiled expressions."""

    spec_version: str
    currency: str
    expires_in: int
    lease_ttl: int
    limits: dict[str, int]
    count_waiting: bool
    allow: tuple[str, ...]
    deny: tuple[str, ...]
    constraints: dict[str, Expression]
    approvals: tuple[ApprovalRule, ...]
    forbid_creator_approval: bool
    workers: tuple[str, ...]
    plan: PlanRules = NO_PLAN_RULES
    retries: dict[str, RetryPolicy] = field(default_factory=dict)  # narrowing the policy's, by tool pattern
    attempts: int | None = None  # the run's failed attempts budget (None: unbounded)

    def allows(self, tool: str) -> bool:
        """Deny wins; otherwise the tool must match an allow pattern."""
        if any(fnmatch.fnmatchcase(tool, pattern) for pattern in self.deny):
            return False
        return any(fnmatch.fnmatchcase(tool, pattern) for pattern in self.allow)

    def approval_rules(self, tool: str) -> tuple[ApprovalRule, ...]:
        """Every rule whose pattern matches `tool`: all of them combine (gateway/domain/approvals.py)."""
        return tuple(rule for rule in self.approvals if fnmatch.fnmatchcase(tool, rule.tool))


def plan_rules(contract: Any) -> PlanRules:
    """The plan rules of a stored contract (its wire form); the defaults when it names none."""
    body = contract.get("plan") if isinstance(contract, dict) else None
    return PlanRules.model_validate(body) if body else NO_PLAN_RULES


def completion_rules(contract: Any) -> CompletionRules:
    """The completion rules of a stored contract (its wire form); the defaults when it names none."""
    body = contract.get("completion") if isinstance(contract, dict) else None
    return CompletionRules.model_validate(body) if body else NO_COMPLETION_RULES


def problems_of(exc: ValidationError) -> list[dict[str, str]]:
    out = []
    for err in exc.errors(include_url=False):
        loc = ".".join(str(part) for part in err["loc"]) or "(contract)"
        msg = str(err["msg"]).removeprefix("Value error, ")
        out.append({"field": loc, "problem": msg})
    return out


def parse_contract(data: Any) -> Contract:
    """Raises:
    InvalidRequest: code `invalid_contract`, every problem in `details["problems"]`.
    """
    try:
        return Contract.model_validate(data)
    except ValidationError as exc:
        problems = problems_of(exc)
        raise InvalidRequest(
            f"the contract has {len(problems)} problem(s)", code=Code.INVALID_CONTRACT, problems=problems
        ) from None
