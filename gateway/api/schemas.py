"""The API's responses as pydantic models, for the OpenAPI document (gateway/api/openapi.py).

`gateway/api/views.py` stays the one producer of response JSON; these models only describe it.
tests/api/test_openapi.py validates the views' output against them (and against the document),
so a field added to a view without its model here fails a test instead of drifting.
"""

from __future__ import annotations

from typing import Annotated, Any, Generic, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from gateway.catalog.catalog import PinState
from gateway.domain.contract import Contract
from gateway.domain.lifecycle import ActionStatus, RunStatus
from gateway.store.records import ApprovalStatus

Timestamp = Annotated[
    str,
    Field(
        pattern=r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$",
        json_schema_extra={"format": "date-time"},
        description="RFC 3339, UTC",
    ),
]
Money = Annotated[
    str,
    Field(pattern=r"^-?\d+(\.\d+)?$", description="a decimal string in the run's currency", examples=["4.20"]),
]
Sha256 = Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]


class _View(BaseModel):
    # A field a view emits that the model does not name is drift: refuse it.
    model_config = ConfigDict(extra="forbid")


T = TypeVar("T")


class ItemsPage(_View, Generic[T]):
    items: list[T]
    next_cursor: str | None = Field(description="pass as `cursor` for the next page; null on the last one")


# -- runs ------------------------------------------------------------------------------------
class MoneyBudget(_View):
    limit: Money
    reserved: Money
    spent: Money
    remaining: Money


class CountBudget(_View):
    limit: int
    reserved: int
    spent: int
    remaining: int


class RunBudgets(_View):
    spend: MoneyBudget
    tool_calls: CountBudget
    writes: CountBudget
    active_seconds: CountBudget


class RunLease(_View):
    worker: str | None
    epoch: int
    expires_at: Timestamp | None
    live: bool
    revoked_at: Timestamp | None = Field(
        description="when the API key that granted this lease was revoked (its calls are refused lease_revoked)"
    )


class MilestoneView(_View):
    id: str | None
    required: bool
    status: str


class StatusCause(_View):
    by: str = Field(description="the operator's key name, or `gateway` for a contract's rule")
    reason: str
    rule: str | None = Field(
        description="the contract's rule that failed the run (`completion.on_verification_failed`, "
        "`completion.max_completion_attempts`, `plan.fail_run_on_task_failure`); null for an operator"
    )


class RunView(_View):
    run_id: str
    status: RunStatus
    status_reason: str | None
    status_cause: StatusCause | None = Field(description="who or what failed the run and why; null unless failed")
    goal: str | None
    owner: str
    spec_version: str
    lineage_id: str
    parent_run_id: str | None
    created_by: str
    created_at: Timestamp
    updated_at: Timestamp
    deadline: Timestamp
    currency: str
    budgets: RunBudgets
    lease: RunLease
    milestones: list[MilestoneView]
    contract: Contract


class ChangeView(_View):
    field: str = Field(description='what changed: "budgets.spend", "authority.allow", "milestones.<id>", ...')
    effect: Literal["narrows", "widens", "neutral"]
    was: Any
    now: Any


class RevisedRun(RunView):
    changes: list[ChangeView] = Field(description="every change the revision made (gateway/domain/revision.py)")


class PayloadChange(_View):
    path: str = Field(description="an RFC 6901 pointer into the payload; empty: the whole payload")
    before: Any = Field(None, description="absent where the field was added")
    after: Any = Field(None, description="absent where the field was removed")


class SpecVersionChange(_View):
    from_: str = Field(alias="from")
    to: str


class ApprovalDiff(_View):
    against: str = Field(description="the approval compared with: the newest earlier one a person approved")
    against_status: ApprovalStatus
    against_payload_sha256: Sha256
    same_payload: bool
    changes: list[PayloadChange] | None = Field(description="the payload's changed fields; null: a body was purged")
    unified: str | None = Field(description="a unified diff of the payloads' pretty JSON; empty when the same")
    spec_version: SpecVersionChange | None = Field(description="null: the same spec_version")
    tool_definition_changed: bool


class ApprovalEditView(_View):
    proposed_sha256: Sha256 = Field(description="the hash of the payload the agent proposed")
    proposed_payload: Any = Field(description="the payload the agent proposed (null: purged)")
    changes: list[PayloadChange] | None = Field(description="what the approver changed; null: a body was purged")
    unified: str | None = Field(description="a unified diff of the proposal against the approved edit")


class PayloadMark(_View):
    path: str = Field(description='where in the payload: "to", "items/0/name", "(payload)"; a key as "<path> (key)"')
    kind: Literal["bidi_control", "invisible", "mixed_scripts", "punycode"] = Field(
        description="bidi_control: direction overrides or isolates (the text may display reordered); invisible: "
        "zero-width characters, soft hyphens, BOM; mixed_scripts: a word mixing scripts (a look-alike, homoglyph "
        "name such as Cyrillic `а` in `аcme.example`); punycode: an `xn--` label a client shows as another name"
    )
    text: str = Field(description='the word or label involved ("" for control and invisible characters)')
    code_points: list[str] = Field(description='the characters to look at, as "U+202E"')


class ApprovalView(_View):
    approval_id: str
    run_id: str
    tool: str
    status: ApprovalStatus
    payload_sha256: Sha256
    payload: Any = Field(description="the exact arguments this approval binds (null in a run's summary)")
    spec_version: str
    tool_def_sha256: str
    role: str
    requested_by: str
    evidence: Any
    rationale: str | None
    created_at: Timestamp
    decide_by: Timestamp
    valid_until: Timestamp | None
    decided_by: str | None
    decided_at: Timestamp | None
    note: str | None
    action_id: str | None
    on_expiry: str
    blocks_run: bool = Field(
        description="true: while it is pending the run waits and its other writes are refused run_waiting; "
        "false: the run goes on (docs/decisions/0029-approvals-reach.md)"
    )
    approvers: list[str] | None = Field(description="the key names or ids that alone may decide it; null: its role")
    escalate_at: Timestamp | None = Field(description="when approval_escalated is raised if still undecided")
    destination: str | None = Field(description="where the call goes, as its adapter says (null: recorded before 0029)")
    proposed_sha256: Sha256 | None = Field(
        description="the payload the agent proposed, when a person approved an edited version of it (then "
        "payload_sha256 and payload are the edit's, what the approval binds); null: as proposed"
    )
    edit: ApprovalEditView | None = Field(
        description="the approver's edit against the proposal (null: not edited; docs/decisions/0032-approve-edited.md)"
    )
    diff: ApprovalDiff | None = Field(
        description="what changed since the last approval of this tool in this run that a person approved "
        "(null when there is none, and in a run's summary)",
    )
    marks: list[PayloadMark] | None = Field(
        description="what in the payload may not read as what it is, as the console's approval page marks it "
        "(gateway/domain/deception.py); empty: nothing found; null: no payload shown (purged, or a run's summary)",
    )


class DroppedByEpoch(_View):
    epoch: int = Field(ge=0, description="the lease token's epoch; 0: a call made without one")
    rate: int = Field(ge=0)
    max_per_run: int = Field(ge=0)


class RefusalsDropped(_View):
    rate: int = Field(ge=0, description="answered rate_limited: past the token's limits.refusals.rate, not recorded")
    max_per_run: int = Field(ge=0, description="answered with `recorded: false`: past limits.refusals.max_per_run")
    by_epoch: list[DroppedByEpoch] = Field(description="the same per lease token, newest epoch first, at most 50")


class StandingTask(_View):
    task_id: str
    title: str
    status: str
    attempts: int
    max_attempts: int | None


class StandingMilestone(_View):
    milestone_id: str
    status: str


class StandingArtifact(_View):
    artifact: dict[str, Any] = Field(description="the artifact as recorded: {id, uri, sha256, ...}")
    saved_at: Timestamp
    checkpoint_version: int | None = Field(description="the checkpoint that saved it, if a checkpoint did")
    task_id: str | None = Field(description="the task that named it as its output, if a task did")


class StandingBlocker(BaseModel):
    model_config = ConfigDict(extra="allow")
    kind: Literal["ended", "paused", "approval", "budget", "task_failed", "milestone_failed", "task_blocked"]
    detail: str = Field(description="what blocks the run, in words; quoted text at most 200 characters")


class Standing(_View):
    """The four things a useful update names (docs/progress.md, "Where a run stands")."""

    task: StandingTask | None = Field(description="the task under way, else the next eligible one")
    milestone: StandingMilestone | None = Field(description="the first required milestone that does not hold yet")
    last_artifact: StandingArtifact | None
    blocker: StandingBlocker | None = Field(
        description="with the ids it concerns: approval_id and tool, task_id, milestone_id, dimensions"
    )
    next_decision: Literal["continue", "revise", "wait_for_input", "stop"]
    rule: str = Field(description="the rule that decided (gateway/domain/standing.py)")
    why: str


class RunDetail(RunView):
    approvals: list[ApprovalView] = Field(description="the run's pending approvals")
    refusals_dropped: RefusalsDropped = Field(
        description="refused calls answered but not recorded past limits.refusals (docs/limits.md), counted"
    )
    standing: Standing = Field(description="where the run stands: current task and milestone, blocker, next decision")


class LeaseGranted(_View):
    run_id: str
    token: str = Field(description="the lease token, shown once: the agent's bearer at /mcp")
    epoch: int
    worker: str
    expires_at: Timestamp
    held: bool | None = Field(None, description="with `held: true`: the lease the gateway holds for this key")
    granted: bool | None = Field(
        None, description="with `held: true`: whether this call granted it (false: the same token as before)"
    )


class LeaseRenewed(_View):
    run_id: str
    epoch: int
    worker: str
    expires_at: Timestamp


class Reconciliation(_View):
    """What reconciling reality found (docs/progress.md "Resume reconciles reality first")."""

    actions: list[dict[str, Any]] = Field(description="unknown actions the lookups settled: {action_id, status}")
    invalidated: list[dict[str, Any]] = Field(
        default=[], description="milestones a changed or unreadable artifact or source invalidated"
    )
    checkpoint_version: int | None = None
    checkpoint_good: bool = True
    checkpoint_reason: str | None = None
    checked: dict[str, Any] = Field(default={}, description="uri -> {status: same|changed|unreadable, reason, at}")


class Reconciled(_View):
    run_id: str
    settled: int = Field(description="how many unknown actions the adapters' lookups settled")
    run: RunView
    reconciliation: Reconciliation


class ResumedRun(RunView):
    reconciliation: Reconciliation


class RecoveryPackage(_View):
    """What the next worker needs: verified, uncertain, allowed (docs/progress.md)."""

    run_id: str
    lineage_id: str
    predecessor_run_id: str | None
    parent_run_id: str | None
    spec_version: str
    status: RunStatus
    checkpoint: dict[str, Any] | None = Field(description="the newest checkpoint: version, artifacts, sources, ...")
    last_good_version: int | None = Field(description="the newest checkpoint no re-check has found changed")
    artifacts: list[dict[str, Any]]
    sources: list[dict[str, Any]]
    milestones: dict[str, Any] = Field(description="{verified: [ids], items: [each milestone's state and reasons]}")
    effects: dict[str, Any] = Field(description="{confirmed: succeeded writes with receipts, uncertain: unknown}")
    compensable: list[dict[str, Any]] = Field(
        description="this run's succeeded writes that can be undone: {action_id, tool, compensate_with, receipt}"
    )
    budget_remaining: dict[str, Any]
    authority: dict[str, Any] | None
    deadline: Timestamp
    pending_approvals: list[dict[str, Any]]
    children: list[dict[str, Any]]
    next_operation: Any
    completion: dict[str, Any] | None
    plan: PlanView | None = Field(description="the plan and its tasks (docs/tasks.md)")


# -- the plan and its tasks (docs/tasks.md) ------------------------------------------------
TaskStatusName = Literal[
    "pending",
    "ready",
    "running",
    "blocked",
    "waiting_for_approval",
    "retrying",
    "completed",
    "failed",
    "cancelled",
    "compensated",
]


class TaskCalls(_View):
    """The tool calls made for the task (`_meta["warrant/task_id"]`); refused ones are not counted."""

    tool_calls: int
    writes: int
    effects: int = Field(description="writes that succeeded (or were compensated since)")
    uncertain: int = Field(description="calls whose outcome is unknown")
    spend: Money = Field(description="settled spend")


class PlanTaskView(_View):
    task_id: str
    title: str
    status: TaskStatusName
    attempts: int = Field(description="moves into running from ready or retrying")
    max_attempts: int
    depends_on: list[str]
    completion: list[dict[str, Any]] = Field(description="the checks that complete it, as a milestone's")
    output_ref: dict[str, Any] | None = Field(description="the artifact named with its last move that named one")
    error: str | None
    checks: list[dict[str, Any]] | None = Field(description="the last completion checks' results")
    calls: TaskCalls
    plan_version: int = Field(description="the plan version that last defined it")
    started_at: Timestamp | None
    finished_at: Timestamp | None
    updated_at: Timestamp


class PlanStep(_View):
    task_id: str
    title: str
    status: TaskStatusName
    attempts: int
    preconditions: dict[str, Any] = Field(
        description="{depends_on: [{task_id, status, output_ref}], completion: [checks], attempts_left}"
    )


class PlanView(_View):
    """The run's plan: every task's state, attempts and calls; the current and the next task."""

    run_id: str
    version: int = Field(description="0: the run has no plan")
    revisions: int
    diff: dict[str, list[str]] | None = Field(description="the newest version's {added, removed, changed}")
    updated_at: Timestamp | None
    progress: dict[str, int] = Field(description="{done, total}: tasks completed of the plan's")
    current: PlanStep | None = Field(description="the task under way (running first)")
    next: PlanStep | None = Field(description="the next eligible task: the first ready one")
    resume_at: str | None = Field(description="where a worker taking over goes on: current, else next")
    tasks: list[PlanTaskView]


# -- reported spend and the pilot report (gateway/domain/report.py) -------------------------
ChargeTag = Literal["model", "tool", "runtime", "recovery"]


class SignalView(_View):
    signal_id: str
    run_id: str
    name: str
    at: Timestamp
    by: str = Field(description="the API key that sent it")
    payload_sha256: Sha256
    payload_purged: bool = Field(
        description="the retention purge took the payload (a signal of an ended run, docs/retention.md); the hash stays"
    )
    woke_wait_id: str | None = Field(description="the wait it ended, when one named it in wake_on")
    status: str = Field(description="the run's status after the signal")
    replayed: bool = Field(description="this idempotency_key was sent before: its first result, nothing woken again")


class DeadLetterView(_View):
    """An operation id given up after its retry policy's max_attempts (docs/retries.md)."""

    dead_letter_id: str
    run_id: str
    operation_id: str
    tool: str
    payload_sha256: Sha256
    action_id: str = Field(description="the operation's last failed action")
    attempts: int = Field(description="failed attempts of the operation id, across its calls")
    last_code: str | None
    last_message: str | None
    status: Literal["open", "retried", "resolved", "dropped"]
    created_at: Timestamp
    decided_by: str | None
    decided_at: Timestamp | None
    reason: str | None
    retried_action_id: str | None = Field(description="the action the operator's retry made")


class DeadLetterPage(ItemsPage[DeadLetterView]):
    pass


class RetriedCall(_View):
    is_error: bool
    code: str | None = Field(description="the refusal or failure code, when is_error")
    action_id: str | None
    structured: dict[str, Any] | None = Field(description="the call's structured result, or its error")


class DeadLetterRetried(_View):
    dead_letter: DeadLetterView = Field(description="`retried` once the gate admitted the call; open when refused")
    result: RetriedCall


class ChargeView(_View):
    charge_id: str
    run_id: str
    kind: Literal["model", "runtime"]
    tag: ChargeTag = Field(description="`recovery` when reported after a resume and before the next checkpoint")
    amount: Money
    note: str | None
    ref: str | None
    by: str = Field(description="the API key that reported it")
    created_at: Timestamp
    replayed: bool = Field(description="this `ref` was reported before with the same body: nothing charged again")
    spend: MoneyBudget = Field(description="the run's spend after the charge; remaining is negative past the limit")


class ReviewTimeView(_View):
    approvals: int = Field(description="decided approvals (approved or denied)")
    total_seconds: float
    median_seconds: float | None
    max_seconds: float | None
    p50_seconds: float | None = Field(description="nearest-rank 50th percentile of the waits")
    p90_seconds: float | None = Field(description="nearest-rank 90th percentile of the waits")


RecoveryCause = Literal["takeover", "restart", "resume"]


class EpisodeView(_View):
    cause: RecoveryCause = Field(
        description="takeover: a new lease replaced the worker; restart: a gateway start-up or restore "
        "orphaned actions in flight; resume: an operator resumed a paused run"
    )
    started_at: Timestamp
    ended_at: Timestamp | None = Field(description="null while open")
    outcome: Literal["open", "recovered", "run_ended"] = Field(
        description="recovered: a checkpoint, task progress, a verified milestone or completion followed"
    )
    seconds: float = Field(description="start to end (an open episode: to now)")
    tool_calls: int = Field(description="tool calls admitted during the episode")
    spend: Money = Field(description="their settled cost and the charges reported during the episode")
    triggers: int = Field(description="entries that started or joined it (orphaned actions, leases, resumes)")
    joined: list[RecoveryCause] = Field(description="other causes that arrived while it was open")
    detail: dict[str, Any] = Field(
        description="takeover: epoch, worker, previous_worker; restart: by, actions_orphaned"
    )


class RecoveryByCause(_View):
    takeover: int
    restart: int
    resume: int


class RecoveryView(_View):
    resumes: int = Field(description="operator resumes (paused to running)")
    recovery_spend: Money = Field(description="= cost.by_tag.recovery")
    recovery_seconds: float = Field(description="the episodes' seconds, an open one until now")
    by_cause: RecoveryByCause
    episodes: list[EpisodeView]


class CostByTag(_View):
    model: Money
    tool: Money
    runtime: Money
    recovery: Money
    children: Money = Field(description="what the run's delegated sub-runs spent, charged as each ended")


class CostView(_View):
    total: Money = Field(description="equals budgets.spend.spent")
    by_tag: CostByTag


class LimitSpent(_View):
    limit: int
    spent: int


class MoneyLimitSpent(_View):
    limit: Money
    spent: Money


class ReportBudgets(_View):
    spend: MoneyLimitSpent
    tool_calls: LimitSpent
    writes: LimitSpent
    active_seconds: LimitSpent


UnusableReason = Literal["not_completed", "duplicate_effects", "unresolved_actions", "over_budget"]


class RunReport(_View):
    run_id: str
    lineage_id: str
    status: RunStatus
    currency: str
    tags: list[str] = Field(description="the contract's tags")
    usable: bool = Field(description="completed, no duplicate effect, no action left unknown, no budget overrun")
    unusable_reasons: list[UnusableReason] = Field(description="empty when usable")
    review_time: ReviewTimeView = Field(description="approval requested to decided")
    recovery: RecoveryView
    duplicates_prevented: int = Field(
        description="repeated writes answered from the record or refused operation_in_progress / outcome_unknown"
    )
    duplicate_effects: int = Field(description="effects a lookup's or an operator's evidence says happened twice")
    duplicates_found: int = Field(description="deprecated: the same as duplicate_effects", deprecated=True)
    cost: CostView
    budgets: ReportBudgets
    active_seconds: int


class SumsCost(_View):
    total: Money
    by_tag: CostByTag
    by_contract_tag: dict[str, Money] = Field(description="each run's total under each of its tags (`(untagged)`)")
    episode_spend: Money = Field(description="spent during recovery episodes")


class SumsRecovery(_View):
    episodes: int
    by_cause: RecoveryByCause
    open: int
    seconds: float
    tool_calls: int


class SumsItem(_View):
    run_id: str
    lineage_id: str
    status: RunStatus
    tags: list[str]
    usable: bool
    unusable_reasons: list[UnusableReason]
    currency: str
    total: Money
    episodes: int
    duplicate_effects: int


class ReportQuery(_View):
    tag: str | None
    since: Timestamp | None
    until: Timestamp | None
    status: list[RunStatus]
    limit: int


class ReportSums(_View):
    lineage_id: str | None = None
    query: ReportQuery | None = None
    runs: int
    truncated: bool = Field(description="more runs matched, or the rows bound was reached: narrow the query")
    by_status: dict[str, int]
    usable: int
    unusable_reasons: dict[str, int]
    review_time: ReviewTimeView = Field(description="over every decided approval of the runs")
    recovery: SumsRecovery
    duplicates_prevented: int
    duplicate_effects: int
    cost: dict[str, SumsCost] = Field(description="by currency: money is never converted")
    items: list[SumsItem] = Field(description="newest first")


class DrillView(_View):
    drill_id: str
    started_at: Timestamp
    seconds: float
    profile: str
    modes: str
    sabotage: str | None
    passed: int
    failed: int
    skipped: int
    ok: bool = Field(description="nothing failed; sabotaged: exactly the cases that depend on it failed")
    summary: dict[str, Any]
    results: list[dict[str, Any]] = Field(description="one per case run, as `warrant drill --json` writes")
    recorded_by: str


class DrillList(_View):
    items: list[DrillView]
    next_cursor: str | None


# -- actions and events ----------------------------------------------------------------------
class ActionReserved(_View):
    spend: Money
    tool_calls: int
    writes: int


class ActionView(_View):
    action_id: str
    run_id: str
    tool: str
    effect: str = Field(description="read, write, or unknown for a call refused before its tool was known")
    status: ActionStatus
    code: str | None
    reason: str | None
    operation_id: str | None
    payload_sha256: str
    idempotency_key: str | None
    epoch: int | None
    worker: str | None
    approval_id: str | None
    repeat_of: str | None
    compensates: str | None = Field(None, description="the action this one undoes (docs/compensation.md)")
    reserved: ActionReserved
    actual_spend: Money | None
    receipt: dict[str, Any] | None
    process_id: str | None
    created_at: Timestamp
    settled_at: Timestamp | None
    task_id: str | None = Field(description="the plan's task the call was made for (docs/tasks.md)")


class Compensated(_View):
    original: ActionView = Field(description="the action undone: `compensated` once its compensation succeeded")
    compensation: ActionView | None = Field(description="the compensating call; null when nothing was dispatched")
    replayed: bool = Field(description="a second request answered with the first compensation")
    code: str | None = Field(description="the compensation's refusal or failure code (outcome_unknown: reconcile)")
    error: dict[str, Any] | None


class Acknowledged(ActionView):
    acknowledged: dict[str, Any] = Field(description="{by, at, note}")


class EventProgress(_View):
    done: int = Field(ge=0, description="tasks of the current plan completed")
    total: int = Field(ge=0, description="tasks in the current plan")


class EventView(_View):
    v: Literal[1] = Field(description="the envelope's version (docs/events.md)")
    id: str = Field(description="evt_<run_id>_<seq>: the same however often it is served; deduplicate on it")
    run_id: str
    seq: int = Field(ge=1, description="the entry's position in its run's chain; the SSE id")
    type: str = Field(description="see docs/events.md, the versioned catalogue")
    at: Timestamp
    task_id: str | None = Field(default=None, description="the plan's task the entry is about, where it has one")
    message: str = Field(description="a fixed template per type over whitelisted fields; never payloads or secrets")
    progress: EventProgress | None = Field(default=None, description="the run's plan as of this entry, where known")
    data: dict[str, Any]
    hash: Sha256


# -- ledger, tools, health -------------------------------------------------------------------
class BadEntry(_View):
    run_id: str
    seq: int | None
    problem: str


class LedgerReport(_View):
    ok: bool
    runs: int
    entries: int
    first_bad: BadEntry | None


class ToolPin(_View):
    state: PinState
    definition_sha256: str
    pinned_sha256: str | None
    pinned_by: str | None
    pinned_at: Timestamp | None


class ToolView(_View):
    tool: str
    adapter: str
    name: str
    description: str
    effect: Literal["read", "write"]
    has_policy: bool
    pin: ToolPin


class PendingToolView(ToolView):
    definition: dict[str, Any]
    pinned_definition: dict[str, Any] | None
    diff: str


class HealthCheck(BaseModel):
    # Each check adds a few plain facts of its own (an adapter's `health()`): not a closed model.
    model_config = ConfigDict(extra="allow")
    status: Literal["ok", "degraded", "down"]
    code: str | None = Field(None, description="why a check is down: a stable code, never error text")


class Health(_View):
    status: Literal["ok", "degraded"] = Field(description="ok: every check is ok (200); else degraded (503)")
    version: str
    process_id: str
    tools: int
    checks: dict[str, HealthCheck] = Field(description="`store`, `checkpointer`, `adapter:<name>`")


class DamagedRun(_View):
    run_id: str
    code: Literal["record_damaged"] = Field(description="why it is not listed (GET /api/runs/{run_id} answers 500 so)")


class RunPage(ItemsPage[RunView]):
    damaged: list[DamagedRun] = Field(
        description="runs of this page that are not in `items`: their row holds what the gateway never writes "
        "(changed behind its back); empty when every row was read. The list goes on past them"
    )


class ActionPage(ItemsPage[ActionView]):
    pass


class RunActionPage(ActionPage):
    refusals_dropped: RefusalsDropped = Field(
        description="the run's refused calls not in `items` because limits.refusals dropped them, counted"
    )


class EventPage(ItemsPage[EventView]):
    next_cursor: str | None = Field(
        description="the seq of the last entry, when more may follow; null on the last page"
    )


class ApprovalPage(ItemsPage[ApprovalView]):
    pass


class ToolPage(ItemsPage[ToolView]):
    pass


class PendingToolPage(ItemsPage[PendingToolView]):
    pass


# -- API keys (gateway/api/keys.py) ---------------------------------------------------------
class KeyView(_View):
    key_id: str
    name: str
    tenant: str
    roles: list[str]
    source: Literal["store", "config"] = Field(description="config: a bootstrap key, read-only here")
    status: Literal["active", "expired", "revoked"]
    created_at: Timestamp | None
    created_by: str | None
    expires_at: Timestamp | None
    revoked_at: Timestamp | None
    revoked_by: str | None
    rotated_from: str | None
    rotated_to: str | None


class KeyCreated(KeyView):
    key: str = Field(description="the key itself, shown this once and never again")


class KeyRotated(KeyCreated):
    old_key: KeyView = Field(description="the key replaced, with the expiry the overlap gave it")


class KeyEventView(_View):
    seq: int
    key_id: str
    type: Literal["key_created", "key_revoked", "key_rotated"]
    at: Timestamp
    by: str
    data: dict[str, Any]


class KeyPage(ItemsPage[KeyView]):
    pass


class KeyEventPage(ItemsPage[KeyEventView]):
    pass


# -- errors ----------------------------------------------------------------------------------
# -- connected clients (MCP authorization) --------------------------------------------------
class ConnectionView(_View):
    grant_id: str
    run_id: str
    client_id: str = Field(description="the OAuth client: a registered id, or its metadata document's URL")
    client_name: str | None
    granted_by: str = Field(description="the name of the API key whose holder consented")
    epoch: int = Field(description="the lease epoch the connection holds")
    created_at: Timestamp = Field(description="when the person consented")
    refreshed_at: Timestamp | None = Field(description="the client's last token refresh")
    status: Literal["active", "ended", "revoked"] = Field(
        description="active: it can act for the run; ended: it can no more (`reason`); revoked: disconnected"
    )
    reason: str | None = Field(
        description="ended: `run_finished`, `lease_taken_over` or `key_revoked`; revoked: the reason given"
    )
    message: str | None = Field(description="ended: why, in words, and what to do")
    revoked_at: Timestamp | None
    revoked_reason: str | None
    revoked_by: str | None = Field(description="who disconnected it (`gateway` for a replayed code or token)")


class ConnectionList(_View):
    items: list[ConnectionView] = Field(description="newest first")


class Problem(BaseModel):
    field: str
    problem: str


class ErrorDetail(BaseModel):
    # Codes may carry details of their own (`problems`, `status`, `approval_id`, ...).
    model_config = ConfigDict(extra="allow")
    code: str = Field(description="stable: DESIGN.md's list and docs/decisions.md")
    message: str
    problems: list[Problem] | None = None


class ErrorBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    error: ErrorDetail


class PurgeDone(BaseModel):
    # POST /api/ledger/purge's answer (gateway/api/retention.py)
    model_config = ConfigDict(extra="forbid")
    actions: int = Field(ge=0, description="settled actions whose bodies this request purged")
    purged: int = Field(ge=0, description="bodies deleted")
    kept: int = Field(ge=0, description="bodies still named by a record outside the purge, kept for it")
    signals: int = Field(ge=0, description="signals of ended runs whose payloads this request purged (rows kept)")
    runs: list[str] = Field(description="the runs whose history records the purge")
    more: bool = Field(description="more actions match: send the request again")
