"""What the store hands back: plain, immutable records. No store types leak past the interface."""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from gateway.domain.admission import Reservation, RunSnapshot
from gateway.domain.approvals import Requirement
from gateway.domain.contract import DIMENSIONS
from gateway.domain.events import wants
from gateway.domain.lifecycle import ActionStatus, RunStatus
from gateway.domain.lifecycle import ApprovalStatus as ApprovalStatus
from gateway.domain.settlement import SettleKind as SettleKind
from gateway.domain.settlement import Settlement as Settlement
from gateway.domain.watch import Alert, RunWatch, UnknownAction
from gateway.errors import Code, Refusal


@dataclass(frozen=True)
class RunRecord:
    run_id: str
    tenant: str
    lineage_id: str
    parent_run_id: str | None
    status: RunStatus
    status_reason: str | None
    spec_version: str
    contract_json: str  # parsed only when asked for: the gate's hot path never needs it
    currency: str
    owner: str
    created_by: str
    created_at: float
    updated_at: float
    deadline: float
    lease_ttl: float
    epoch: int
    lease_worker: str | None
    lease_granted_by: str | None
    lease_expires_at: float | None
    limits: dict[str, int]
    reserved: dict[str, int]
    spent: dict[str, int]
    active_seconds_spent: float
    active_since: float | None
    count_waiting: bool
    checkpoint_version: int = 0  # the newest checkpoint; 0: none (docs/progress.md)
    acked_spec_version: str | None = None  # what the worker has read through warrant_status
    predecessor_run_id: str | None = None  # a successor's predecessor, in the same lineage
    carved: dict[str, int] | None = None  # a child run's share carved out of its parent
    completion: dict[str, Any] | None = None  # summary, milestones, uncertain: set when completed
    lease_revoked_at: float | None = None  # the key that granted the current lease was revoked then
    # Who or what ended a failed run and why: {by, reason, rule} (rule: the contract's, None for an operator).
    status_cause: dict[str, Any] | None = None

    @functools.cached_property
    def contract(self) -> dict[str, Any]:
        parsed: dict[str, Any] = json.loads(self.contract_json)
        return parsed

    def snapshot(self) -> RunSnapshot:
        return RunSnapshot(
            run_id=self.run_id,
            tenant=self.tenant,
            lineage_id=self.lineage_id,
            status=self.status,
            spec_version=self.spec_version,
            epoch=self.epoch,
            lease_expires_at=self.lease_expires_at,
            deadline=self.deadline,
            limits=self.limits,
            reserved=self.reserved,
            spent=self.spent,
            currency=self.currency,
            active_seconds_spent=self.active_seconds_spent,
            active_since=self.active_since,
            acked_spec_version=self.acked_spec_version,
            lease_revoked_at=self.lease_revoked_at,
        )


@dataclass(frozen=True)
class LeaseGrant:
    """A freshly granted lease. `token` is shown once and never stored."""

    run_id: str
    token: str
    epoch: int
    worker: str
    expires_at: float


@dataclass(frozen=True)
class HeldLease:
    """The lease the gateway holds for one API key on one run (gateway/gate/held_leases.py): the salt its
    token is derived from, whether this call granted it, and the run as it stands now."""

    run_id: str
    salt: str
    created: bool
    run: RunRecord


@dataclass(frozen=True)
class OAuthGrant:
    """One consent (gateway/oauth/): a client acting for one run through the lease the gateway
    holds for it (epoch `epoch`, token derived from `salt`), redeemed once by its code."""

    grant_id: str
    tenant: str
    run_id: str
    client_id: str
    client_name: str | None
    granted_by: str
    key_id: str | None
    epoch: int
    salt: str
    resource: str
    scopes: tuple[str, ...]
    code_challenge: str
    redirect_uri: str
    redirect_explicit: bool
    code_expires_at: float
    code_used_at: float | None
    created_at: float
    refreshed_at: float | None
    revoked_at: float | None
    revoked_reason: str | None
    revoked_by: str | None


@dataclass(frozen=True)
class OAuthTokenRow:
    """An access or refresh token's row (only its hash is stored) with the grant it belongs to."""

    kind: str  # access | refresh
    created_at: float
    expires_at: float
    used_at: float | None
    grant: OAuthGrant


@dataclass(frozen=True)
class OAuthTokens:
    """What a code redemption or a refresh wrote: the grant as it stands and the run's state."""

    grant: OAuthGrant
    run: RunRecord


@dataclass(frozen=True)
class TokenInfo:
    """What a lease token authenticates as. All but `run` never change for a given token."""

    run: RunRecord
    epoch: int
    worker: str
    granted_by: str
    token_hash: str


@dataclass(frozen=True)
class Intent:
    """Everything gate step 6 writes down before the side effect."""

    run_id: str
    tool: str
    effect: str
    payload: Any
    payload_sha256: str
    operation_id: str | None
    idempotency_key: str | None
    epoch: int
    worker: str
    process_id: str
    reservation: Reservation
    approval_id: str | None = None
    repeat_of: str | None = None
    spec_version: str | None = None  # the contract version the gate decided under; None: do not check
    operation_kept_for: float | None = None  # retention.idempotency in seconds; None: an id never expires
    payload_bytes: int | None = None  # the payload's canonical JSON size: a refusal records it beside the hash
    task_id: str | None = None  # the plan's task the call is made for (`_meta["warrant/task_id"]`)
    plan_required: bool = False  # a write: the contract needs a plan first (plan.required_before_writes)
    compensates: str | None = None  # the succeeded action this call undoes (docs/compensation.md)
    reason: str | None = None  # why (a compensation's): in its action_admitted entry


@dataclass(frozen=True)
class ActionRecord:
    action_id: str
    run_id: str
    tenant: str
    lineage_id: str
    tool: str
    effect: str
    operation_id: str | None
    payload_sha256: str
    idempotency_key: str | None
    status: ActionStatus
    code: str | None
    reason: str | None
    epoch: int | None
    worker: str | None
    approval_id: str | None
    repeat_of: str | None
    reserved: dict[str, int]
    actual_spend: int | None
    receipt: dict[str, Any] | None
    result_sha256: str | None
    process_id: str | None
    created_at: float
    settled_at: float | None
    task_id: str | None = None  # the plan's task it was made for (migration 0020)
    compensates: str | None = None  # the action this one undoes (migration 0031)


@dataclass(frozen=True)
class SettleResult:
    action: ActionRecord
    run: RunRecord | None  # the run after settling (None when the caller did not wait for it)
    overrun: bool = False
    after_cancel: bool = False


@dataclass(frozen=True)
class ApprovalEdit:
    """An approver's edited payload, checked against the run's authority before the store is asked
    (gateway/service.py): what the approval binds instead of the proposal, and where it goes."""

    payload: Any
    payload_sha256: str
    destination: str | None


@dataclass(frozen=True)
class ApprovalRequest:
    run_id: str
    tool: str
    payload: Any
    payload_sha256: str
    spec_version: str
    tool_def_sha256: str
    role: str
    decide_within: float
    valid_for: float
    on_expiry: str
    requested_by: str  # the key that granted the lease: it may not decide its own request
    worker: str  # the worker that asked: a refusal of the request is recorded as its action
    evidence: Any = None
    rationale: str | None = None
    payload_bytes: int | None = None  # as Intent's: recorded with a refusal of the request
    # The rule's reach (docs/decisions/0029-approvals-reach.md): whether the run waits, who may
    # decide (None: the role), seconds undecided before `approval_escalated`, where the call goes.
    blocks_run: bool = True
    approvers: tuple[str, ...] | None = None
    escalate_after: float | None = None
    destination: str | None = None
    # The payload the agent proposed, when the approver approved an edited version of it (then
    # payload_sha256 is the edited one's); None: approved, or pending, as proposed.
    proposed_sha256: str | None = None

    @property
    def requirement(self) -> Requirement:
        return Requirement(
            self.role, self.decide_within, self.valid_for, self.on_expiry, self.blocks_run, self.approvers
        )


@dataclass(frozen=True)
class ApprovalRecord:
    approval_id: str
    run_id: str
    tenant: str
    tool: str
    payload_sha256: str
    spec_version: str
    tool_def_sha256: str
    status: ApprovalStatus
    role: str
    on_expiry: str
    valid_for: float
    requested_by: str
    evidence: Any
    rationale: str | None
    created_at: float
    decide_by: float
    valid_until: float | None
    decided_by: str | None
    decided_at: float | None
    note: str | None
    action_id: str | None
    blocks_run: bool = True
    approvers: tuple[str, ...] | None = None
    escalate_at: float | None = None  # when the watchdog raises approval_escalated if still undecided
    destination: str | None = None
    # The payload the agent proposed, when the approver approved an edited version of it (then
    # payload_sha256 is the edited one's); None: approved, or pending, as proposed.
    proposed_sha256: str | None = None

    @property
    def requirement(self) -> Requirement:
        """The rule it was asked under (its decide_within as recorded: decide_by less created_at)."""
        return Requirement(
            self.role, self.decide_by - self.created_at, self.valid_for, self.on_expiry, self.blocks_run, self.approvers
        )


@dataclass(frozen=True)
class EventRecord:
    run_id: str
    seq: int
    type: str
    at: float
    data: dict[str, Any]
    hash: str
    # The run's plan as of this entry, `{done, total}` (gateway/domain/events.py): set by
    # `list_events`, from the entry or the plan or task entry before it; None where unknown.
    progress: dict[str, int] | None = None


@dataclass(frozen=True)
class ToolPin:
    """A downstream tool definition an operator (or first use) trusted. Gateway-wide, not per tenant."""

    tool: str  # the exposed name
    adapter: str
    definition_sha256: str  # ToolDefinition.sha256(): name, description, input schema
    definition: dict[str, Any]  # {name, description, input_schema, annotations}
    pinned_by: str  # "first_use", or the accepting key as "tenant/name"
    pinned_at: float
    previous_sha256: str | None = None


@dataclass(frozen=True)
class ToolPins:
    pins: dict[str, ToolPin]  # by exposed name
    first_use_adapters: frozenset[str]  # adapters whose first listing was pinned already


T = TypeVar("T")


@dataclass(frozen=True)
class Damaged:
    """A row a list passed over because it holds what the gateway never writes (`record_damaged`)."""

    run_id: str
    code: str = Code.RECORD_DAMAGED


@dataclass(frozen=True)
class Page(Generic[T]):
    items: list[T]
    next_cursor: str | None = None
    damaged: list[Damaged] = field(default_factory=list)  # rows of this page passed over, never silently


def zero_dims() -> dict[str, int]:
    return dict.fromkeys(DIMENSIONS, 0)


@dataclass(frozen=True)
class Principal:
    """Who asks: an API key's name, tenant and roles, or a worker's lease."""

    name: str
    tenant: str
    roles: frozenset[str] = field(default_factory=frozenset)
    key_id: str | None = None  # the store's key (a lease remembers it: revoking the key ends the lease)


# -- what admit, approvals and a restore answer ---------------------------------------------------
@dataclass(frozen=True)
class Admitted:
    action: ActionRecord
    remaining: dict[str, int]  # every budget dimension after this call's reservation
    currency: str


@dataclass(frozen=True)
class Stale:
    """The run's contract changed since the caller decided on it (a revision): decide again."""

    spec_version: str


@dataclass(frozen=True)
class Refused:
    """The call was refused; the refusal is already recorded as a `rejected` action."""

    refusal: Refusal
    action_id: str | None = None


@dataclass(frozen=True)
class Held:
    """Another action already holds this operation id in the lineage. `expired`: it was first
    recorded longer ago than the intent's `operation_kept_for` (retention.idempotency), by the
    store's clock, and it is settled: the id is refused `idempotency_expired`, never replayed."""

    action: ActionRecord
    expired: bool = False


AdmitResult = Admitted | Refused | Held | Stale


@dataclass(frozen=True)
class ApprovalPending:
    approval: ApprovalRecord
    created: bool
    replaced: str | None = None  # the pending approval of the same tool this one superseded


@dataclass(frozen=True)
class Restored:
    """What `Store.mark_restored` did."""

    taken_at: float | None  # the newest ledger entry the backup holds (None: it holds none)
    reason: str
    runs_paused: list[str]
    actions_unknown: list[str]


# -- the watchdog's records ------------------------------------------------------------------
@dataclass(frozen=True)
class Sweep:
    runs_expired: list[str]
    approvals_expired: list[str]
    runs_paused: list[str]  # by an approval's `on_expiry: pause`
    failed: list[str] = field(default_factory=list)  # runs the sweep passed over (a damaged row), logged
    waits_timed_out: list[str] = field(default_factory=list)  # runs whose warrant_wait's on_timeout was applied


@dataclass(frozen=True)
class WatchState:
    runs: list[RunWatch]
    unknown: list[UnknownAction]


@dataclass(frozen=True)
class AlertDraft:
    alert: Alert
    targets: tuple[str, ...]  # the webhooks that take this kind


@dataclass(frozen=True)
class AlertRoutes:
    """Which webhooks take which alert kinds (`webhooks:` in warrant.yaml, as plain data): the store
    queues an alert it raises itself (run_failed, completion_refused, serious_refusal, ...) to each
    in the transaction that raises it, as the watchdog's `AlertDraft` names its targets."""

    hooks: tuple[tuple[str, frozenset[str] | None], ...] = ()  # (name, kinds it takes; None: every kind)
    max_attempts: int = 8
    # The gateway's public address (`oauth.public_url`): an approval's alerts link to its console
    # page there; None: no link (the gateway cannot know how people reach it).
    console_url: str | None = None

    def targets(self, kind: str) -> tuple[str, ...]:
        # As the webhook's `events:` takes alerts (the kind, `alert` or `*`; gateway/domain/events.py).
        return tuple(name for name, kinds in self.hooks if wants(kinds, "alert", kind))


NO_ALERT_ROUTES = AlertRoutes()


@dataclass(frozen=True)
class AlertRecord:
    """A raised alert as the store keeps it (watch_alerts): the watchdog's and the store's own."""

    alert_id: str
    run_id: str
    tenant: str
    kind: str
    at: float
    data: dict[str, Any]


@dataclass(frozen=True)
class RaisedAlert:
    alert_id: str
    alert: Alert
    at: float


@dataclass(frozen=True)
class Delivery:
    delivery_id: str
    target: str
    kind: str
    body: str  # the exact JSON to send
    status: str  # pending delivered failed
    attempts: int
    max_attempts: int
    next_at: float
    last_error: str | None
    created_at: float
    done_at: float | None
