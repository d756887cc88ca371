"""The store's ports: one protocol per role, and `Store`, their union.

Each consumer takes the smallest role it needs (`GateStore` for the gate's transactions,
`LeaseStore` for held leases, `PinStore` for tool pins, ...); `Store` is every role at once, and
what the composition root opens (`gateway.store.factory.open_store`). Two implementations pass the
same contract tests (`tests/store/`): SQLite (embedded, one file) and PostgreSQL (several gateway
replicas), both the shared transactions of gateway/store/sql/ over a database of their own;
tests/store/test_ports.py holds both to every role.

Every invariant lives in the store's transactions, never in process memory. Each method that
decides something (admit, lease grants, approval decisions, controls) reads the state it decides
on and writes the result in ONE transaction, with time taken from the store's clock inside it.

Methods raise `gateway.errors` types only: NotFound (also for another tenant's objects),
Conflict, Refusal, InvalidRequest, StoreError (every method: when the database cannot answer
within its bound). No driver exception escapes.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any, Protocol

from gateway.clock import Clock
from gateway.domain.admission import CallFacts
from gateway.domain.checks import CheckResult
from gateway.domain.contract import Contract
from gateway.domain.keys import ApiKeyRecord, KeyEvent
from gateway.domain.limits import Rate
from gateway.domain.report import ChargeRecorded, ReportInputs
from gateway.domain.retention import PURGE_BATCH, PurgeReport, PurgeScope
from gateway.domain.tasks import Plan, TaskStatus
from gateway.domain.waits import SIGNALS_SHOWN, WaitSpec
from gateway.errors import Refusal
from gateway.store.chain import BadEntry, EntryRow, VerifyReport
from gateway.store.progress_records import (
    CheckpointRecord,
    MilestoneRecord,
    MilestoneSubmission,
    Recheck,
    RecoveryInputs,
)
from gateway.store.records import (
    ActionRecord,
    AdmitResult,
    AlertDraft,
    AlertRecord,
    ApprovalEdit,
    ApprovalPending,
    ApprovalRecord,
    ApprovalRequest,
    ApprovalStatus,
    Delivery,
    EventRecord,
    Held,
    HeldLease,
    Intent,
    LeaseGrant,
    OAuthGrant,
    OAuthTokenRow,
    OAuthTokens,
    Page,
    Principal,
    RaisedAlert,
    Refused,
    Restored,
    RunRecord,
    Settlement,
    SettleResult,
    Sweep,
    TokenInfo,
    ToolPin,
    ToolPins,
    WatchState,
)
from gateway.store.reports import DrillRun, DroppedRefusals, Gauges, HealthReport, ManyInputs, ReportFilter, RunExport
from gateway.store.retry_records import DeadLetterRecord, DeadLetterStatus, RetryAccount, RetryState
from gateway.store.task_records import PlanState, TaskMoved
from gateway.store.wait_records import SignalAnswer, SignalRecord, WaitRecord

__all__ = [
    "ApprovalStore",
    "AuditStore",
    "CancelNotices",
    "CancelStore",
    "DeliveryStore",
    "GateStore",
    "HealthStore",
    "KeyStore",
    "LeaseStore",
    "LedgerStore",
    "LifecycleStore",
    "OAuthStore",
    "PinStore",
    "PlanStore",
    "ProgressStore",
    "RateStore",
    "ReconcileStore",
    "RecordStore",
    "RetentionStore",
    "RetryStore",
    "RunStore",
    "Store",
    "UsageStore",
    "WaitStore",
    "WatchStore",
    "WatchdogStore",
]

CancelNotices = AbstractAsyncContextManager[AsyncIterator[str]]
"""While entered: the ids of runs cancelled hard by any gateway process sharing the store, as each
cancel commits. Entering it connects, iterating raises StoreError when the connection is lost
(notices sent meanwhile are not delivered; `Store.hard_cancelled_among` finds those runs)."""


class LifecycleStore(Protocol):
    """The store as the composition root opens it: its identity and time, and what a start and a
    restore mark. (What it is built with, `limits.refusals` and the drill's safeguards, is given to
    its constructor: gateway/store/factory.py.)"""

    @property
    def clock(self) -> Clock:
        """The store's time, the one every expiry is decided on: the clock it was given, or on
        PostgreSQL the database's (shared by every replica)."""

    @property
    def process_id(self) -> str:
        """This gateway process's id, recorded on every action it dispatches."""

    async def open(self) -> None: ...

    async def close(self) -> None: ...

    async def mark_orphans_unknown(self) -> list[str]:
        """Admitted actions of other (dead) processes become `unknown`. Call once at start-up."""

    async def mark_restored(self, *, by: str) -> Restored:
        """After a restore from a backup (`warrant restore`): in ONE transaction, every admitted action
        becomes `unknown` and every running or waiting run is paused, both with the reason "restored
        from backup <time of the newest entry>: reconcile before resume" (store/sql/restore.py)."""


class RunStore(Protocol):
    """Runs and their controls, revisions, successors and delegated sub-runs (docs/progress.md): the
    operator API's and the console's runs."""

    async def create_run(self, principal: Principal, contract: Contract) -> RunRecord: ...

    async def get_run(self, tenant: str, run_id: str) -> RunRecord:
        """Raises: NotFound (also for another tenant's run)."""

    async def list_runs(
        self, tenant: str, *, status: str | None = None, cursor: str | None = None, limit: int = 50
    ) -> Page[RunRecord]:
        """The tenant's runs, oldest first. A row damaged behind the store's back is passed over and
        named in the page's `damaged` (run id and code), never silently left out."""

    async def pause(self, principal: Principal, run_id: str, reason: str | None) -> RunRecord:
        """Raises: NotFound; Refusal `run_<terminal>`."""

    async def resume(self, principal: Principal, run_id: str, reason: str | None) -> RunRecord:
        """To running, or waiting when approvals are pending. The caller reconciles first.

        Raises: NotFound; Refusal `run_<terminal>`; Conflict `invalid_transition`.
        """

    async def cancel(self, principal: Principal, run_id: str, reason: str | None, *, hard: bool) -> RunRecord:
        """Bump the epoch (every token dies), supersede open approvals, cancel child runs.

        `hard` (also on a run cancelled softly before, and its cancelled children): the run is
        marked cancelled hard and every process sharing the store is told (`cancel_notices`), so
        each aborts its calls in flight for it.

        Raises: NotFound; Refusal `run_completed` / `run_expired` / `run_failed`.
        """

    async def fail_run(self, run_id: str, reason: str, by: str, *, tenant: str | None = None) -> RunRecord:
        """End the run `failed`, in one transaction: the status with its cause (`status_cause`:
        by, reason), the `run_failed` ledger entry, the epoch bumped (every token dies), open
        approvals superseded, live children cancelled, and a `run_failed` alert raised (queued to
        the webhooks that take it). Its unknown actions stay reconcilable; it may get a successor.

        Raises: NotFound (also for another `tenant`'s run); Refusal `run_<status>` when it is over
        already (`run_failed` when failed before).
        """

    async def revise(
        self,
        principal: Principal,
        run_id: str,
        *,
        contract: Contract,
        reason: str | None,
        widening: bool,
        base_spec_version: str,
    ) -> RunRecord:
        """Put the run under `contract`, classified (gateway/domain/revision.py) against the run's
        contract as this transaction reads it, which must still be `base_spec_version`. Limits,
        deadline (moved by the change of expires_in), lease TTL and count_waiting follow it; unused
        approvals are superseded; removed milestones and those whose checks changed are invalidated.
        The worker must read it (acknowledge_spec) before its next call is admitted.

        Raises: NotFound; Refusal `run_<terminal>`; Conflict `revision_conflict` (revised meanwhile),
        `spec_version_unchanged`; Forbidden `widening_requires_admin` (a widening change and not
        `widening`), naming the changes; InvalidRequest `invalid_contract` (another currency).
        """

    async def create_successor(
        self, principal: Principal, run_id: str, *, reason: str, extend_by: int | None
    ) -> RunRecord:
        """A new run in the terminal run's lineage: its contract, with the limits it has left (limit −
        spent − reserved) and its deadline (+ extend_by seconds); its newest checkpoint and milestone
        states copied. Recorded in both runs' histories. At most one per run: the predecessor's
        `successor_run_id` is set in the same transaction, only while it is empty.

        Raises: NotFound; InvalidRequest `invalid_request` (reason missing or blank); Conflict
        `run_not_terminal`, `deadline_passed`, `successor_exists` (naming `successor_run_id`),
        `successor_of_child` (a child's budget went back to its parent).
        """

    async def create_child(self, principal: Principal, parent_id: str, contract: Contract) -> RunRecord:
        """A delegated sub-run: its contract narrowed to the live parent's (narrow_child) and its spend,
        tool_calls and writes carved out of the parent's remaining (held as parent reservation until
        the child ends, when its spent is charged to the parent and the carve released).

        Raises: NotFound; Refusal `run_<terminal>`, `budget_exhausted` (names the dimension);
        InvalidRequest `invalid_contract` (every problem).
        """


class CancelStore(Protocol):
    """Hard cancels across the processes sharing the store (gateway/runtime/cancel_relay.py)."""

    def cancel_notices(self) -> CancelNotices | None:
        """Hard cancels taken by other gateway processes sharing this store, as they commit; None
        where no other process can share it (SQLite: one server per file). Each call is a new
        subscription: gateway/runtime/cancel_relay.py enters one, and another after a lost connection."""

    async def hard_cancelled_among(self, run_ids: Sequence[str]) -> set[str]:
        """Those of `run_ids` that were cancelled hard (unknown ids are not)."""


class LeaseStore(Protocol):
    """Leases: grants, renewals, the token look-up every call makes, and the leases held for a worker
    key (gateway/gate/held_leases.py)."""

    async def acquire_lease(self, principal: Principal, run_id: str, worker: str, *, takeover: bool) -> LeaseGrant:
        """A new epoch and token. Raises: NotFound; Conflict `lease_held`; Refusal `run_<terminal>`."""

    async def renew_lease(self, token_hash: str) -> LeaseGrant:
        """The returned grant's `token` is empty: the token is never stored.

        Raises: NotFound (unknown token); Refusal `lease_superseded` / `lease_revoked` / `run_<terminal>`.
        A lease that lapsed with nobody taking it over is re-established (`lease_reestablished`).
        """

    async def hold_lease(self, token_hash: str) -> TokenInfo | None:
        """A request of this token was authenticated: apply the lease table (gateway/domain/lease_rules.py)
        in one transaction — renew the current holder's lease once a tenth of its TTL has passed since
        the last renewal, re-establish one that lapsed (same epoch, `lease_reestablished`), leave a
        dead token as it is. The token as it stands after; None for an unknown one."""

    async def authenticate(self, token_hash: str) -> TokenInfo | None: ...

    async def hold_worker_lease(
        self,
        principal: Principal,
        key_sha256: str,
        run_id: str,
        worker: str,
        salt: str,
        token: str,
        *,
        takeover: bool = False,
    ) -> HeldLease:
        """The lease held for this key on this run: the existing one (its salt, whatever became of
        it), else a new one granted to `token` (derived from `salt`) as `acquire_lease` would; with
        `takeover`, a new one in any case, replacing the key's held row.

        Raises: NotFound (also another tenant's run); Conflict `lease_held`; Refusal `run_<terminal>`.
        """

    async def held_salt(self, key_sha256: str, run_id: str) -> str | None:
        """The salt of the lease held for this key on this run, or None when there is none."""


class OAuthStore(Protocol):
    """MCP authorization (gateway/oauth/, store/sql/oauth.py): clients, consents, codes, tokens,
    grants."""

    async def oauth_client(self, client_id: str) -> tuple[str, str] | None:
        """(kind, metadata JSON) of a registered client, or None."""

    async def save_oauth_client(
        self, client_id: str, kind: str, metadata: str, *, max_clients: int, prune_age: float
    ) -> None:
        """Register a client. Raises: Conflict `oauth_clients_full`."""

    async def consent_oauth(
        self,
        principal: Principal,
        run_id: str,
        *,
        grant_id: str,
        client_id: str,
        client_name: str | None,
        salt: str,
        lease_token: str,
        code_hash: str,
        code_challenge: str,
        code_expires_at: float,
        redirect_uri: str,
        redirect_explicit: bool,
        resource: str,
        scopes: tuple[str, ...],
        takeover: bool,
        max_grants: int,
    ) -> OAuthGrant:
        """A person's consent: the run's lease taken for the client and the grant with its code, in
        one transaction (`oauth_consented`). Raises: NotFound, Conflict `lease_held`, a status refusal."""

    async def oauth_code(self, code_hash: str) -> OAuthGrant | None:
        """The grant of an unused code; a used code's second presentation revokes its grant."""

    async def redeem_oauth_code(
        self, code_hash: str, access_hash: str, access_expires: float, refresh_hash: str, refresh_expires: float
    ) -> OAuthTokens:
        """Use the code once for the grant's first tokens. Raises: OAuthRefused."""

    async def oauth_token(self, token_hash: str) -> OAuthTokenRow | None:
        """An access or refresh token's row with its grant (one read)."""

    async def rotate_oauth_refresh(
        self, refresh_hash: str, access_hash: str, access_expires: float, new_refresh_hash: str, refresh_expires: float
    ) -> OAuthTokens:
        """Rotate a refresh token (`oauth_refreshed`); a reused one revokes the grant. Raises: OAuthRefused."""

    async def revoke_oauth_grant(
        self, grant_id: str, *, reason: str, by: str, tenant: str | None = None, run_id: str | None = None
    ) -> OAuthGrant:
        """End a grant and the lease it holds (`oauth_revoked`). Raises: NotFound (also another
        tenant's, or another run's when `run_id` is given)."""

    async def list_oauth_grants(self, tenant: str, run_id: str, *, limit: int = 100) -> list[OAuthGrant]:
        """A run's connected clients, newest first. Raises: NotFound."""


class GateStore(Protocol):
    """The gate's transactions, steps 6 and 8 (gateway/gate/pipeline.py): admit, settle, the refusals
    recorded before step 6, operation ids, the contract read."""

    @property
    def process_id(self) -> str:
        """This gateway process's id, recorded on every action it dispatches."""

    async def admit(self, intent: Intent, facts: CallFacts) -> AdmitResult:
        """Gate step 6: status, deadline, epoch, lease, budget, approval, intent: ONE transaction.

        A refusal is recorded as a `rejected` action in the same transaction.
        """

    async def record_rejection(
        self,
        run_id: str,
        *,
        tool: str,
        payload_sha256: str,
        refusal: Refusal,
        epoch: int | None,
        worker: str | None,
        payload_bytes: int | None = None,
    ) -> str:
        """Record a call refused before step 6 (authority, arguments, approvals); returns its action id.
        `payload_bytes`: the arguments' canonical JSON size, kept beside their hash (never the body).

        Raises: Refusal, not recorded but counted (`refusals_dropped`), past `refusal_limits`."""

    def settle_soon(
        self,
        action_id: str,
        settlement: Settlement,
        *,
        admitted: ActionRecord | None = None,
        retry: RetryAccount | None = None,
    ) -> None:
        """Settle without waiting for the commit (reads: no replay depends on their outcome).

        The store commits it with its next batch and finishes it before `close` returns.
        """

    async def settle(
        self,
        action_id: str,
        settlement: Settlement,
        *,
        admitted: ActionRecord | None = None,
        retry: RetryAccount | None = None,
    ) -> SettleResult:
        """Gate step 8 and reconciliation: record the outcome, release or spend the reservation.

        `retry`: the call was made under a retry policy: a failed outcome counts one more failed
        attempt, and may give the operation id up to a dead letter (RetryStore).

        Needs no lease. `admitted` → any outcome; `unknown` → succeeded / failed only.
        `admitted`: the action as `admit` returned it, when the caller holds it (the gate): the
        store need not read it back. Only a hint: an action no longer admitted is read as usual.
        Raises: NotFound; Conflict `invalid_transition`.
        """

    async def find_operation(self, lineage_id: str, operation_id: str, *, kept_for: float | None = None) -> Held | None:
        """The action that holds this operation id in the lineage, if any; expired as in `admit`
        when it is past `kept_for` seconds (None: never)."""

    async def acknowledge_spec(self, token_hash: str) -> RunRecord | None:
        """The worker holding this token has read the run's contract: when its epoch is the run's,
        acked_spec_version becomes spec_version (`spec_acknowledged`, only when it changed).
        None for an unknown token; otherwise the run as it is now."""


class RateStore(Protocol):
    """The rate counters an API request takes (gateway/gate/limits.py)."""

    async def take_rate(self, scopes: Sequence[tuple[str, Rate]]) -> tuple[str, float] | None:
        """One request from each scope's rate (an API request: its tenant and key), or from none:
        the first scope that refuses and the seconds until it would admit (gateway/gate/limits.py)."""


class ApprovalStore(Protocol):
    """Approvals: requested by the gate, decided by a person, listed and compared."""

    async def approvals_for(self, run_id: str, tool: str, payload_sha256: str) -> list[ApprovalRecord]:
        """Approvals bound to this run, tool and payload, newest first."""

    async def request_approval(self, request: ApprovalRequest, facts: CallFacts) -> ApprovalPending | Refused:
        """Create (or return) the pending approval, moving the run to waiting; refuses as step 6 would.

        A new payload for a tool whose earlier proposal (same run, same requester) is still pending
        replaces it: the earlier one becomes `superseded` in the same transaction, so it can no longer
        be approved (a page showing it is stale), and the run's waiting does not refuse the new one.
        """

    async def decide_approval(
        self,
        principal: Principal,
        approval_id: str,
        *,
        approve: bool,
        note: str | None,
        expected_sha256: str | None,
        edit: ApprovalEdit | None = None,
    ) -> ApprovalRecord:
        """Raises: NotFound; Forbidden (own request, creator, role); Conflict `approval_not_pending`,
        `approval_expired`; InvalidRequest `payload_mismatch`. With `edit` (approve only), the approval
        binds the edited payload from then on and keeps the proposal's hash as `proposed_sha256`."""

    async def get_approval(self, tenant: str, approval_id: str) -> ApprovalRecord: ...

    async def approved_before(self, tenant: str, approval_id: str) -> ApprovalRecord | None:
        """The newest approval of the same run and tool, requested before this one, that a person
        approved (whatever became of it since: used, expired, superseded); None if there is none.
        What an approver compares a fresh request with (the API's `diff`)."""

    async def proposed_before(self, tenant: str, approval_id: str) -> ApprovalRecord | None:
        """The newest approval of the same run and tool requested before this one, whatever its
        status (the proposal it replaced, a denied one, an approved one); None if there is none.
        What the console's diff compares with ("the previous proposal for the same tool")."""

    async def list_approvals(
        self,
        tenant: str,
        *,
        status: ApprovalStatus | None = None,
        run_id: str | None = None,
        cursor: str | None = None,
        limit: int = 50,
    ) -> Page[ApprovalRecord]: ...


class PinStore(Protocol):
    """Tool pins, gateway-wide (gateway/catalog/pins.py)."""

    async def tool_pins(self) -> ToolPins:
        """Every pinned downstream tool definition, and the adapters already pinned on first use."""

    async def pin_first_use(self, adapter: str, pins: Sequence[ToolPin]) -> bool:
        """Pin an adapter's first listing, once ever: False (nothing written) when it was pinned before.

        A tool already pinned under one of these names keeps its pin.
        """

    async def accept_tool_pin(self, pin: ToolPin, *, replaces: str | None) -> ToolPin:
        """Pin (or re-pin) one tool, if its current pin is still `replaces` (None: not pinned yet).

        Raises: InvalidRequest `payload_mismatch` (HTTP 409) when the current pin is another.
        """


class RecordStore(Protocol):
    """The record of a run: its actions, its history, the bodies its actions name."""

    async def get_action(self, tenant: str, action_id: str) -> ActionRecord: ...

    async def list_actions(
        self, tenant: str, run_id: str, *, cursor: str | None = None, limit: int = 100
    ) -> Page[ActionRecord]: ...

    async def list_events(self, tenant: str, run_id: str, *, after: int = 0, limit: int = 100) -> list[EventRecord]: ...

    async def get_blob(self, sha256: str) -> Any:
        """A stored payload or result body, decoded; None when purged or never stored."""


class LedgerStore(Protocol):
    """The ledger as evidence: verification, anchors, and what an evidence bundle reads
    (gateway/store/bundle.py)."""

    async def verify_ledger(self, tenant: str | None = None) -> VerifyReport: ...

    async def ledger_anchor(self, tenant: str | None = None) -> dict[str, Any]:
        """Every run's head (of `tenant`, or all), MAC'd: kept outside the database, it later shows a
        run deleted or rolled back (gateway/store/anchor.py)."""

    async def check_anchor(self, anchor: dict[str, Any], tenant: str | None = None) -> BadEntry | None:
        """The first way the store contradicts an anchor `ledger_anchor` made, or None."""

    async def export_snapshot(self, tenant: str, run_id: str) -> RunExport:
        """The run, its MAC'd head and every action row, in ONE read; the rows are spooled to disk a
        page at a time (gateway/store/action_spool.py), never held in one list. The caller closes
        `actions`. Raises: NotFound."""

    async def ledger_entries(self, run_id: str, *, after: int, upto: int, limit: int) -> list[EntryRow]:
        """The run's chain entries exactly as stored, seq in (after, upto], in order."""

    async def blob_texts(self, sha256s: Sequence[str]) -> dict[str, str | None]:
        """Stored bodies as their exact canonical JSON; None for one purged (or never stored)."""


class RetentionStore(Protocol):
    """Retention (docs/retention.md): purging settled actions' bodies."""

    async def purge_bodies(self, scope: PurgeScope, *, by: str, reason: str, limit: int = PURGE_BATCH) -> PurgeReport:
        """Purge the bodies of at most `limit` settled actions in scope (oldest settled first), in ONE
        transaction: bodies nothing outside the purge still needs are deleted, the actions marked,
        a `bodies_purged` entry appended to each run whose bodies went. `more`: call again.

        Raises: NotFound for a run or action not in `scope.tenant`.
        """


class AuditStore(Protocol):
    """The audit: actions across a tenant's runs, and the refusals answered but not recorded."""

    async def audit_actions(
        self,
        tenant: str,
        *,
        tool: str | None = None,
        status: str | None = None,
        code: str | None = None,
        principal: str | None = None,
        run_id: str | None = None,
        since: float | None = None,
        until: float | None = None,
        cursor: str | None = None,
        limit: int = 100,
    ) -> Page[ActionRecord]:
        """Actions across the tenant's runs that match every filter given, newest first.

        `principal` matches the worker named on the action or the API key that granted the lease
        it was made under (not the run's creator). `since` is inclusive and `until` exclusive,
        both against the time the action was admitted (or refused).
        Raises: InvalidRequest `invalid_cursor`.
        """

    async def dropped_refusals(self, tenant: str, run_id: str) -> DroppedRefusals:
        """The run's refusals answered but not recorded past `refusal_limits`, counted by limit and
        lease token (zeros when none; another tenant's run reads as none)."""


class KeyStore(Protocol):
    """API keys (gateway/domain/keys.py): the key is never passed in, only its sha256."""

    async def create_api_key(
        self, principal: Principal, *, name: str, roles: frozenset[str], key_sha256: str, expires_in: int | None
    ) -> ApiKeyRecord:
        """A key of the principal's tenant, created by it; recorded as a `key_created` event.

        Raises: Conflict `key_name_taken` when a valid key of the tenant already has this name.
        """

    async def get_api_key(self, tenant: str, key_id: str) -> ApiKeyRecord:
        """Raises: NotFound (also for another tenant's key)."""

    async def list_api_keys(self, tenant: str, *, cursor: str | None = None, limit: int = 50) -> Page[ApiKeyRecord]:
        """Oldest first, revoked and expired keys included. Raises: InvalidRequest `invalid_cursor`."""

    async def revoke_api_key(self, principal: Principal, key_id: str, *, reason: str | None = None) -> ApiKeyRecord:
        """Invalid from the next lookup on; revoking a revoked key changes nothing. Raises: NotFound."""

    async def rotate_api_key(
        self, principal: Principal, key_id: str, *, key_sha256: str, overlap: int, expires_in: int | None
    ) -> tuple[ApiKeyRecord, ApiKeyRecord]:
        """(new, old): a new key with the old one's name and roles; the old one expires at most
        `overlap` seconds from now. Both changes are recorded (`key_rotated`, `key_created`).

        Raises: NotFound; Conflict `key_not_active` (revoked, expired, or rotated already).
        """

    async def find_api_key(self, key_sha256: str) -> ApiKeyRecord | None:
        """The key with this hash if it is valid now (store clock): not revoked, not expired."""

    async def list_key_events(
        self, tenant: str, *, key_id: str | None = None, cursor: str | None = None, limit: int = 100
    ) -> Page[KeyEvent]:
        """The tenant's key changes, oldest first. Raises: InvalidRequest `invalid_cursor`."""


class HealthStore(Protocol):
    """Health and the metrics' gauges (gateway/api/health.py, gateway/observe/metrics.py)."""

    async def health(self) -> HealthReport:
        """A trivial query, and the store's background work. The caller bounds the wait."""

    async def gauges(self, tenant: str, *, limit: int) -> Gauges:
        """The tenant's approvals pending, unknown actions and (the newest `limit`) active runs.

        May be slow on a large store: implementations keep it off the gate's transactions.
        """


class UsageStore(Protocol):
    """Reported spend and the pilot report (gateway/domain/report.py)."""

    async def report_usage(
        self, principal: Principal, run_id: str, *, kind: str, amount: int, note: str | None, ref: str | None
    ) -> ChargeRecorded:
        """Record a reported cost (minor units) against the run's spend, in ONE transaction with its
        `usage_reported` entry (and `budget_overrun` when it takes the spend past the limit: a cost
        that already happened is recorded, never refused). Tagged `recovery` while the run is resumed
        and has no checkpoint since. Any status, terminal too.

        Raises: NotFound; Conflict `idempotency_conflict` when `ref` was reported with another body.
        """

    async def report_inputs(self, tenant: str, run_id: str) -> ReportInputs:
        """The run, its charges, its tool calls' settled costs and the ledger facts a report reads,
        in one read. Raises: NotFound."""

    async def reports_inputs(self, tenant: str, where: ReportFilter) -> ManyInputs:
        """The report inputs of the tenant's runs `where` selects, newest first, in one read,
        bounded (gateway/store/sql/reports.py: MAX_RUNS, MAX_ROWS; `truncated` when it stopped)."""

    async def note_replay(self, run_id: str) -> None:
        """Count a call answered with its operation's recorded result (the report's
        `duplicates_prevented`). Not durable: a lost count loses no effect."""

    async def record_drill(self, tenant: str, run: DrillRun) -> DrillRun:
        """Keep a drill's results; the tenant's oldest past DRILL_HISTORY_KEEP are deleted."""

    async def list_drills(self, tenant: str, *, cursor: str | None = None, limit: int = 50) -> Page[DrillRun]:
        """The tenant's drill runs, newest first. Raises: InvalidRequest `invalid_cursor`."""


class ProgressStore(Protocol):
    """Verified progress (docs/progress.md). The worker's writes (checkpoint, milestone, completion)
    are fenced like a call: epoch current, lease unexpired, revised contract read; a refusal is
    recorded as a `rejected` action and returned as `Refused`."""

    async def save_checkpoint(
        self, run_id: str, *, epoch: int, worker: str, expected_version: int, body: dict[str, Any]
    ) -> CheckpointRecord | Refused:
        """Compare-and-set on the run's checkpoint_version (`checkpoint_conflict`); a paused run
        still takes one. Sets last_checkpoint_at."""

    async def latest_checkpoint(self, run_id: str) -> CheckpointRecord | None: ...

    async def list_milestones(self, run_id: str) -> list[MilestoneRecord]:
        """The submitted milestones' states (a contract milestone never submitted has no row)."""

    async def record_milestone(
        self, run_id: str, *, epoch: int, worker: str, granted_by: str, submission: MilestoneSubmission
    ) -> MilestoneRecord | Refused:
        """Record a checked submission; a review creates its approval (decided by the named reviewer
        only, without making the run wait). Verified: the run's progress_at moves."""

    async def complete_run(self, run_id: str, *, epoch: int, worker: str, summary: str) -> RunRecord | Refused:
        """From running, when every required milestone is verified, every unknown action reconciled
        or acknowledged and no child live; else `completion_refused` naming what is missing."""

    async def acknowledge_action(
        self, principal: Principal, action_id: str, note: str
    ) -> tuple[ActionRecord, dict[str, Any]]:
        """Accept an `unknown` action as uncertain: (the action, the acknowledgement {by, at, note}).
        Raises: NotFound; Conflict `invalid_transition` when the action is not unknown."""

    async def apply_recheck(self, run_id: str, recheck: Recheck, *, by: str) -> None:
        """Invalidate milestones and mark the checkpoint not good, as a re-read found."""

    async def recovery_inputs(self, tenant: str, run_id: str) -> RecoveryInputs:
        """Everything the recovery package reads, in one read. Raises: NotFound."""


class PlanStore(Protocol):
    """The run's plan and its tasks (docs/tasks.md). The worker's writes are fenced like a
    checkpoint (epoch current, lease unexpired, revised contract read); a refusal is recorded as a
    `rejected` action and returned as `Refused`."""

    async def save_plan(
        self, run_id: str, *, epoch: int, worker: str, expected_version: int, plan: Plan
    ) -> PlanState | Refused:
        """A new plan version, compare-and-set on runs.plan_version (`plan_conflict`), under the
        contract's plan rules as the transaction reads them: `plan_invalid` (past max_tasks, or a
        started task removed or redefined), `plan_revision_limit`, `plan_over_budget`. Tasks it
        adds start pending; tasks it keeps keep where they stand; readiness follows. A paused run
        still takes one. Recorded `plan_created` or `replanned` with the diff."""

    async def move_task(
        self,
        run_id: str,
        *,
        epoch: int,
        worker: str,
        task_id: str,
        status: TaskStatus,
        output_ref: dict[str, Any] | None = None,
        error: str | None = None,
        checks: Sequence[CheckResult] | None = None,
    ) -> TaskMoved | Refused:
        """Move one task by the table (gateway/domain/tasks.py `decide_move`): `unknown_task`,
        `invalid_task_transition`; `completed` with `checks` (their results, run by the caller)
        not all verified stays as it is (`task_check_failed`, the results kept); an attempt past
        max_attempts fails the task (`task_attempts_exhausted`, the failure written). Readiness
        follows every move. A paused run takes any move but to running."""

    async def read_plan(self, tenant: str, run_id: str) -> PlanState:
        """The newest plan, its tasks in order and the calls made for each. Raises: NotFound."""


class WaitStore(Protocol):
    """Waits and signals (docs/decisions/0027-waits.md). A wait is fenced like a task's move."""

    async def start_wait(self, run_id: str, *, epoch: int, worker: str, spec: WaitSpec) -> WaitRecord | Refused:
        """Move a running run to `waiting` until a signal in `spec.wake_on` or `spec.until`
        (`wait_started`). Refused (and recorded): a dead lease, a paused or waiting run
        (`run_waiting`), an open wait (`wait_open`), `until` past the deadline (`wait_invalid`)."""

    async def signal_run(
        self, principal: Principal, run_id: str, *, name: str, payload: Any, idempotency_key: str
    ) -> SignalAnswer:
        """Record a signal once per key (`signal_received`); one the open wait names wakes the run
        (`wait_ended`, cause signal). Raises: NotFound; Conflict `idempotency_conflict` (the key
        sent before with another name or payload); Refusal `run_<status>` for a run that is over."""

    async def open_wait(self, run_id: str) -> WaitRecord | None:
        """The run's open wait, if any."""

    async def list_signals(self, run_id: str, *, limit: int = SIGNALS_SHOWN) -> list[SignalRecord]:
        """The run's newest signals, oldest first."""


class RetryStore(Protocol):
    """Retry policies and dead letters (docs/decisions/0030-retries.md)."""

    async def retry_state(self, run_id: str, lineage_id: str, operation_id: str | None) -> RetryState:
        """The operation id's failed attempts in the lineage and its dead letter; the run's failed attempts."""

    async def record_retrying(
        self,
        action: ActionRecord,
        *,
        attempt: int,
        max_attempts: int,
        code: str,
        reason: str | None,
        wait: float,
        attempts_budget: int | None,
    ) -> bool:
        """Count failed attempt `attempt` of the admitted `action` and write its `action_retrying`
        entry: True. False (nothing written: the gate settles with this attempt's outcome) when the
        action's lease is no longer current or the run not live, or this failure uses the last of
        the contract's `attempts` budget."""

    async def current_lease_hash(self, run_id: str) -> str | None:
        """The hash of the run's current lease token (None: no lease was ever granted): what an
        operator's call through the gate is fenced by (gateway/gate/operator_calls.py)."""

    async def list_dead_letters(self, tenant: str, run_id: str) -> list[DeadLetterRecord]:
        """The run's dead letters, oldest first. Raises: NotFound (also another tenant's run)."""

    async def get_dead_letter(self, tenant: str, dead_letter_id: str) -> DeadLetterRecord:
        """Raises: NotFound (also another tenant's)."""

    async def decide_dead_letter(
        self,
        principal: Principal,
        dead_letter_id: str,
        status: DeadLetterStatus,
        reason: str,
        *,
        retried_action_id: str | None = None,
    ) -> DeadLetterRecord:
        """An open dead letter decided once (`dead_letter_decided`). Raises: NotFound; Conflict
        `invalid_transition` when it was decided already."""


class WatchStore(Protocol):
    """The watchdog's part (gateway/runtime/watchdog.py): its lease, the expiry sweep, what it watches,
    alerts once, heartbeats."""

    @property
    def process_id(self) -> str:
        """This gateway process's id, recorded on every action it dispatches."""

    async def hold_watch_lease(self, holder: str, ttl: float) -> bool:
        """Take or renew the watchdog's lease for `ttl` seconds of store time: True while `holder`
        holds it. Another holder gets it only once it expired unrenewed."""

    async def sweep_expiries(self, *, limit: int = 500) -> Sweep:
        """Expire runs past their deadline and approvals past `decide_by` or `valid_until`, as the
        lazy path does (each run in its own transaction, `on_expiry` applied)."""

    async def watch_state(self, *, limit: int = 5000, tenant: str | None = None) -> WatchState:
        """Live runs (running, waiting, paused) with their pending approvals, and `unknown` actions
        of any run, terminal ones included; at most `limit` of each, oldest first; only `tenant`'s
        when one is named (the console), every tenant's otherwise (the watchdog)."""

    async def raise_alerts(self, alerts: Sequence[AlertDraft], *, max_attempts: int) -> list[RaisedAlert]:
        """Record each alert once per (run, kind, episode). A new one gets, in ONE transaction, its
        row, its run's `alert` entry and one pending delivery per target. Returns the new ones only."""

    async def list_alerts(self, tenant: str, *, run_id: str | None = None, limit: int = 100) -> list[AlertRecord]:
        """The alerts raised for the tenant's runs (the watchdog's and the store's own), newest
        first; only `run_id`'s when one is named."""

    async def open_raised_alerts(self, tenant: str, *, run_id: str | None = None) -> list[AlertRecord]:
        """The alerts the store raised itself (run_failed, completion_refused, verification_failed,
        serious_refusal) that are still open, oldest first: raised since the run's last verified
        progress (`runs.progress_at`), and a run_failed one while its run stays failed."""

    async def queue_heartbeat(self, holder: str, every: float, targets: Sequence[str], data: dict[str, Any]) -> bool:
        """Queue a `heartbeat` delivery to each target if `holder` holds the watchdog lease and the
        last heartbeat is at least `every` seconds old. One attempt each: a late heartbeat misleads."""


class DeliveryStore(Protocol):
    """The webhook outbox (gateway/runtime/webhooks.py): deliveries claimed by one process at a time."""

    @property
    def process_id(self) -> str:
        """This gateway process's id, recorded on every action it dispatches."""

    async def claim_deliveries(self, claimer: str, *, hold: float, limit: int) -> list[Delivery]:
        """Pending deliveries due now and not claimed by anyone else, each claimed for `hold`
        seconds (its attempt counted), oldest first."""

    async def finish_delivery(
        self, delivery_id: str, claimer: str, *, ok: bool, error: str | None, retry_at: float | None
    ) -> None:
        """Record an attempt: delivered (`ok`), pending again at `retry_at`, or failed for good
        (`retry_at` None or attempts used up). Ignored unless `claimer` still holds the claim."""

    async def list_deliveries(self, *, status: str | None = None, limit: int = 100) -> list[Delivery]:
        """Deliveries oldest first, for operators and tests."""


# -- what one consumer takes that spans roles ---------------------------------------------------
class ReconcileStore(RecordStore, GateStore, Protocol):
    """Reconciling an action whose outcome is unknown: the action and its arguments read, its outcome
    settled (gateway/gate/reconcile.py)."""


class WatchdogStore(WatchStore, ReconcileStore, Protocol):
    """The watchdog: its own part, and the reconciliation it runs on unknown actions."""


# -- every role ---------------------------------------------------------------------------------
class Store(
    LifecycleStore,
    RunStore,
    CancelStore,
    LeaseStore,
    OAuthStore,
    GateStore,
    RateStore,
    ApprovalStore,
    PinStore,
    RecordStore,
    LedgerStore,
    RetentionStore,
    AuditStore,
    KeyStore,
    HealthStore,
    UsageStore,
    ProgressStore,
    PlanStore,
    WaitStore,
    RetryStore,
    WatchStore,
    DeliveryStore,
    Protocol,
):
    """The whole store: every role. What the composition root opens and `Gateway.store` holds; a
    consumer that takes the store as a parameter names the role it uses instead."""
