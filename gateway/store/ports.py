"""The store interface. Every invariant lives in its transactions, never in process memory.

Two implementations pass the same contract tests (`tests/store/`): SQLite (embedded, one file)
and, later, PostgreSQL (several gateway replicas). Each method that decides something (admit,
lease grants, approval decisions, controls) reads the state it decides on and writes the result
in ONE transaction, with time taken from the store's clock inside it.

Methods raise `gateway.errors` types only: NotFound (also for another tenant's objects),
Conflict, Refusal, InvalidRequest, StoreError. No driver exception escapes.
"""

from __future__ import annotations

import abc
import asyncio
import logging
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from typing import Any

from gateway.clock import Clock
from gateway.domain.admission import CallFacts
from gateway.domain.contract import Contract
from gateway.domain.keys import ApiKeyRecord, KeyEvent
from gateway.domain.limits import Rate
from gateway.domain.refusals import RefusalLimits
from gateway.domain.report import ChargeRecorded, ReportInputs
from gateway.domain.retention import PURGE_BATCH, PurgeReport, PurgeScope
from gateway.domain.watch import Alert, RunWatch, UnknownAction
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
    ApprovalRecord,
    ApprovalRequest,
    ApprovalStatus,
    EventRecord,
    HeldLease,
    Intent,
    LeaseGrant,
    OAuthGrant,
    OAuthTokenRow,
    OAuthTokens,
    Page,
    Principal,
    RunRecord,
    Settlement,
    SettleResult,
    TokenInfo,
    ToolPin,
    ToolPins,
)
from gateway.store.reports import DroppedRefusals, Gauges, HealthReport, RunExport

CancelNotices = AbstractAsyncContextManager[AsyncIterator[str]]
"""While entered: the ids of runs cancelled hard by any gateway process sharing the store, as each
cancel commits. Entering it connects, iterating raises StoreError when the connection is lost
(notices sent meanwhile are not delivered; `Store.hard_cancelled_among` finds those runs)."""


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


class Store(abc.ABC):
    """Raises (every method): StoreError when the database cannot answer within its bound."""

    # How many refusals a lease token and a run may have recorded (`limits.refusals`, docs/limits.md):
    # a refusal past them is answered without a record (rate_limited, or recorded: false).
    refusal_limits: RefusalLimits = RefusalLimits()

    @property
    @abc.abstractmethod
    def clock(self) -> Clock:
        """The store's time, the one every expiry is decided on: the clock it was given, or on
        PostgreSQL the database's (shared by every replica)."""

    # -- lifecycle -------------------------------------------------------------------------
    @abc.abstractmethod
    async def open(self) -> None: ...

    @abc.abstractmethod
    async def close(self) -> None: ...

    @property
    @abc.abstractmethod
    def process_id(self) -> str:
        """This gateway process's id, recorded on every action it dispatches."""

    # -- runs ------------------------------------------------------------------------------
    @abc.abstractmethod
    async def create_run(self, principal: Principal, contract: Contract) -> RunRecord: ...

    @abc.abstractmethod
    async def get_run(self, tenant: str, run_id: str) -> RunRecord:
        """Raises: NotFound (also for another tenant's run)."""

    @abc.abstractmethod
    async def list_runs(
        self, tenant: str, *, status: str | None = None, cursor: str | None = None, limit: int = 50
    ) -> Page[RunRecord]:
        """The tenant's runs, oldest first. A row damaged behind the store's back is passed over and
        named in the page's `damaged` (run id and code), never silently left out."""

    @abc.abstractmethod
    async def pause(self, principal: Principal, run_id: str, reason: str | None) -> RunRecord:
        """Raises: NotFound; Refusal `run_<terminal>`."""

    @abc.abstractmethod
    async def resume(self, principal: Principal, run_id: str, reason: str | None) -> RunRecord:
        """To running, or waiting when approvals are pending. The caller reconciles first.

        Raises: NotFound; Refusal `run_<terminal>`; Conflict `invalid_transition`.
        """

    @abc.abstractmethod
    async def cancel(self, principal: Principal, run_id: str, reason: str | None, *, hard: bool) -> RunRecord:
        """Bump the epoch (every token dies), supersede open approvals, cancel child runs.

        `hard` (also on a run cancelled softly before, and its cancelled children): the run is
        marked cancelled hard and every process sharing the store is told (`cancel_notices`), so
        each aborts its calls in flight for it.

        Raises: NotFound; Refusal `run_completed` / `run_expired`.
        """

    def cancel_notices(self) -> CancelNotices | None:
        """Hard cancels taken by other gateway processes sharing this store, as they commit; None
        where no other process can share it (SQLite: one server per file). Each call is a new
        subscription: gateway/runtime/cancel_relay.py enters one, and another after a lost connection."""
        return None

    @abc.abstractmethod
    async def hard_cancelled_among(self, run_ids: Sequence[str]) -> set[str]:
        """Those of `run_ids` that were cancelled hard (unknown ids are not)."""

    # -- revisions, successors and sub-runs (docs/progress.md) -----------------------------
    @abc.abstractmethod
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

    @abc.abstractmethod
    async def acknowledge_spec(self, token_hash: str) -> RunRecord | None:
        """The worker holding this token has read the run's contract: when its epoch is the run's,
        acked_spec_version becomes spec_version (`spec_acknowledged`, only when it changed).
        None for an unknown token; otherwise the run as it is now."""

    @abc.abstractmethod
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

    @abc.abstractmethod
    async def create_child(self, principal: Principal, parent_id: str, contract: Contract) -> RunRecord:
        """A delegated sub-run: its contract narrowed to the live parent's (narrow_child) and its spend,
        tool_calls and writes carved out of the parent's remaining (held as parent reservation until
        the child ends, when its spent is charged to the parent and the carve released).

        Raises: NotFound; Refusal `run_<terminal>`, `budget_exhausted` (names the dimension);
        InvalidRequest `invalid_contract` (every problem).
        """

    # -- leases ----------------------------------------------------------------------------
    @abc.abstractmethod
    async def acquire_lease(self, principal: Principal, run_id: str, worker: str, *, takeover: bool) -> LeaseGrant:
        """A new epoch and token. Raises: NotFound; Conflict `lease_held`; Refusal `run_<terminal>`."""

    @abc.abstractmethod
    async def renew_lease(self, token_hash: str) -> LeaseGrant:
        """The returned grant's `token` is empty: the token is never stored.

        Raises: NotFound (unknown token); Refusal `lease_superseded` / `lease_revoked` / `run_<terminal>`.
        A lease that lapsed with nobody taking it over is re-established (`lease_reestablished`).
        """

    @abc.abstractmethod
    async def hold_lease(self, token_hash: str) -> TokenInfo | None:
        """A request of this token was authenticated: apply the lease table (gateway/domain/lease_rules.py)
        in one transaction — renew the current holder's lease once a tenth of its TTL has passed since
        the last renewal, re-establish one that lapsed (same epoch, `lease_reestablished`), leave a
        dead token as it is. The token as it stands after; None for an unknown one."""

    @abc.abstractmethod
    async def authenticate(self, token_hash: str) -> TokenInfo | None: ...

    @abc.abstractmethod
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

    @abc.abstractmethod
    async def held_salt(self, key_sha256: str, run_id: str) -> str | None:
        """The salt of the lease held for this key on this run, or None when there is none."""

    # -- MCP authorization (gateway/oauth/, store/sqlite_oauth.py) ---------------------------
    @abc.abstractmethod
    async def oauth_client(self, client_id: str) -> tuple[str, str] | None:
        """(kind, metadata JSON) of a registered client, or None."""

    @abc.abstractmethod
    async def save_oauth_client(
        self, client_id: str, kind: str, metadata: str, *, max_clients: int, prune_age: float
    ) -> None:
        """Register a client. Raises: Conflict `oauth_clients_full`."""

    @abc.abstractmethod
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

    @abc.abstractmethod
    async def oauth_code(self, code_hash: str) -> OAuthGrant | None:
        """The grant of an unused code; a used code's second presentation revokes its grant."""

    @abc.abstractmethod
    async def redeem_oauth_code(
        self, code_hash: str, access_hash: str, access_expires: float, refresh_hash: str, refresh_expires: float
    ) -> OAuthTokens:
        """Use the code once for the grant's first tokens. Raises: OAuthRefused."""

    @abc.abstractmethod
    async def oauth_token(self, token_hash: str) -> OAuthTokenRow | None:
        """An access or refresh token's row with its grant (one read)."""

    @abc.abstractmethod
    async def rotate_oauth_refresh(
        self, refresh_hash: str, access_hash: str, access_expires: float, new_refresh_hash: str, refresh_expires: float
    ) -> OAuthTokens:
        """Rotate a refresh token (`oauth_refreshed`); a reused one revokes the grant. Raises: OAuthRefused."""

    @abc.abstractmethod
    async def revoke_oauth_grant(
        self, grant_id: str, *, reason: str, by: str, tenant: str | None = None, run_id: str | None = None
    ) -> OAuthGrant:
        """End a grant and the lease it holds (`oauth_revoked`). Raises: NotFound (also another
        tenant's, or another run's when `run_id` is given)."""

    @abc.abstractmethod
    async def list_oauth_grants(self, tenant: str, run_id: str, *, limit: int = 100) -> list[OAuthGrant]:
        """A run's connected clients, newest first. Raises: NotFound."""

    # -- the gate --------------------------------------------------------------------------
    @abc.abstractmethod
    async def admit(self, intent: Intent, facts: CallFacts) -> AdmitResult:
        """Gate step 6: status, deadline, epoch, lease, budget, approval, intent: ONE transaction.

        A refusal is recorded as a `rejected` action in the same transaction.
        """

    @abc.abstractmethod
    async def take_rate(self, scopes: Sequence[tuple[str, Rate]]) -> tuple[str, float] | None:
        """One request from each scope's rate (an API request: its tenant and key), or from none:
        the first scope that refuses and the seconds until it would admit (gateway/gate/limits.py)."""

    @abc.abstractmethod
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

    def settle_soon(self, action_id: str, settlement: Settlement, *, admitted: ActionRecord | None = None) -> None:
        """Settle without waiting for the commit (reads: no replay depends on their outcome).

        The store commits it with its next batch and finishes it before `close` returns.
        """
        task = asyncio.get_running_loop().create_task(self.settle(action_id, settlement, admitted=admitted))
        task.add_done_callback(log_if_failed(action_id))

    @abc.abstractmethod
    async def settle(
        self, action_id: str, settlement: Settlement, *, admitted: ActionRecord | None = None
    ) -> SettleResult:
        """Gate step 8 and reconciliation: record the outcome, release or spend the reservation.

        Needs no lease. `admitted` → any outcome; `unknown` → succeeded / failed only.
        `admitted`: the action as `admit` returned it, when the caller holds it (the gate): the
        store need not read it back. Only a hint: an action no longer admitted is read as usual.
        Raises: NotFound; Conflict `invalid_transition`.
        """

    @abc.abstractmethod
    async def find_operation(self, lineage_id: str, operation_id: str, *, kept_for: float | None = None) -> Held | None:
        """The action that holds this operation id in the lineage, if any; expired as in `admit`
        when it is past `kept_for` seconds (None: never)."""

    @abc.abstractmethod
    async def mark_orphans_unknown(self) -> list[str]:
        """Admitted actions of other (dead) processes become `unknown`. Call once at start-up."""

    @abc.abstractmethod
    async def mark_restored(self, *, by: str) -> Restored:
        """After a restore from a backup (`warrant restore`): in ONE transaction, every admitted action
        becomes `unknown` and every running or waiting run is paused, both with the reason "restored
        from backup <time of the newest entry>: reconcile before resume" (store/sqlite_restore.py)."""

    # -- approvals -------------------------------------------------------------------------
    @abc.abstractmethod
    async def approvals_for(self, run_id: str, tool: str, payload_sha256: str) -> list[ApprovalRecord]:
        """Approvals bound to this run, tool and payload, newest first."""

    @abc.abstractmethod
    async def request_approval(self, request: ApprovalRequest, facts: CallFacts) -> ApprovalPending | Refused:
        """Create (or return) the pending approval, moving the run to waiting; refuses as step 6 would.

        A new payload for a tool whose earlier proposal (same run, same requester) is still pending
        replaces it: the earlier one becomes `superseded` in the same transaction, so it can no longer
        be approved (a page showing it is stale), and the run's waiting does not refuse the new one.
        """

    @abc.abstractmethod
    async def decide_approval(
        self, principal: Principal, approval_id: str, *, approve: bool, note: str | None, expected_sha256: str | None
    ) -> ApprovalRecord:
        """Raises: NotFound; Forbidden (own request, creator, role); Conflict `approval_not_pending`,
        `approval_expired`; InvalidRequest `payload_mismatch`."""

    @abc.abstractmethod
    async def get_approval(self, tenant: str, approval_id: str) -> ApprovalRecord: ...

    @abc.abstractmethod
    async def approved_before(self, tenant: str, approval_id: str) -> ApprovalRecord | None:
        """The newest approval of the same run and tool, requested before this one, that a person
        approved (whatever became of it since: used, expired, superseded); None if there is none.
        What an approver compares a fresh request with (the API's `diff`)."""

    @abc.abstractmethod
    async def proposed_before(self, tenant: str, approval_id: str) -> ApprovalRecord | None:
        """The newest approval of the same run and tool requested before this one, whatever its
        status (the proposal it replaced, a denied one, an approved one); None if there is none.
        What the console's diff compares with ("the previous proposal for the same tool")."""

    @abc.abstractmethod
    async def list_approvals(
        self,
        tenant: str,
        *,
        status: ApprovalStatus | None = None,
        run_id: str | None = None,
        cursor: str | None = None,
        limit: int = 50,
    ) -> Page[ApprovalRecord]: ...

    # -- tool pins (gateway-wide) ----------------------------------------------------------
    @abc.abstractmethod
    async def tool_pins(self) -> ToolPins:
        """Every pinned downstream tool definition, and the adapters already pinned on first use."""

    @abc.abstractmethod
    async def pin_first_use(self, adapter: str, pins: Sequence[ToolPin]) -> bool:
        """Pin an adapter's first listing, once ever: False (nothing written) when it was pinned before.

        A tool already pinned under one of these names keeps its pin.
        """

    @abc.abstractmethod
    async def accept_tool_pin(self, pin: ToolPin, *, replaces: str | None) -> ToolPin:
        """Pin (or re-pin) one tool, if its current pin is still `replaces` (None: not pinned yet).

        Raises: InvalidRequest `payload_mismatch` (HTTP 409) when the current pin is another.
        """

    # -- the record ------------------------------------------------------------------------
    @abc.abstractmethod
    async def get_action(self, tenant: str, action_id: str) -> ActionRecord: ...

    @abc.abstractmethod
    async def list_actions(
        self, tenant: str, run_id: str, *, cursor: str | None = None, limit: int = 100
    ) -> Page[ActionRecord]: ...

    @abc.abstractmethod
    async def list_events(self, tenant: str, run_id: str, *, after: int = 0, limit: int = 100) -> list[EventRecord]: ...

    @abc.abstractmethod
    async def get_blob(self, sha256: str) -> Any:
        """A stored payload or result body, decoded; None when purged or never stored."""

    @abc.abstractmethod
    async def verify_ledger(self, tenant: str | None = None) -> VerifyReport: ...

    @abc.abstractmethod
    async def ledger_anchor(self, tenant: str | None = None) -> dict[str, Any]:
        """Every run's head (of `tenant`, or all), MAC'd: kept outside the database, it later shows a
        run deleted or rolled back (gateway/store/anchor.py)."""

    @abc.abstractmethod
    async def check_anchor(self, anchor: dict[str, Any], tenant: str | None = None) -> BadEntry | None:
        """The first way the store contradicts an anchor `ledger_anchor` made, or None."""

    # -- retention (docs/retention.md) -----------------------------------------------------
    @abc.abstractmethod
    async def purge_bodies(self, scope: PurgeScope, *, by: str, reason: str, limit: int = PURGE_BATCH) -> PurgeReport:
        """Purge the bodies of at most `limit` settled actions in scope (oldest settled first), in ONE
        transaction: bodies nothing outside the purge still needs are deleted, the actions marked,
        a `bodies_purged` entry appended to each run whose bodies went. `more`: call again.

        Raises: NotFound for a run or action not in `scope.tenant`.
        """

    # -- the audit -------------------------------------------------------------------------
    @abc.abstractmethod
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

    # -- API keys (gateway/domain/keys.py): the key is never passed in, only its sha256 ----
    @abc.abstractmethod
    async def create_api_key(
        self, principal: Principal, *, name: str, roles: frozenset[str], key_sha256: str, expires_in: int | None
    ) -> ApiKeyRecord:
        """A key of the principal's tenant, created by it; recorded as a `key_created` event.

        Raises: Conflict `key_name_taken` when a valid key of the tenant already has this name.
        """

    @abc.abstractmethod
    async def get_api_key(self, tenant: str, key_id: str) -> ApiKeyRecord:
        """Raises: NotFound (also for another tenant's key)."""

    @abc.abstractmethod
    async def list_api_keys(self, tenant: str, *, cursor: str | None = None, limit: int = 50) -> Page[ApiKeyRecord]:
        """Oldest first, revoked and expired keys included. Raises: InvalidRequest `invalid_cursor`."""

    @abc.abstractmethod
    async def revoke_api_key(self, principal: Principal, key_id: str, *, reason: str | None = None) -> ApiKeyRecord:
        """Invalid from the next lookup on; revoking a revoked key changes nothing. Raises: NotFound."""

    @abc.abstractmethod
    async def rotate_api_key(
        self, principal: Principal, key_id: str, *, key_sha256: str, overlap: int, expires_in: int | None
    ) -> tuple[ApiKeyRecord, ApiKeyRecord]:
        """(new, old): a new key with the old one's name and roles; the old one expires at most
        `overlap` seconds from now. Both changes are recorded (`key_rotated`, `key_created`).

        Raises: NotFound; Conflict `key_not_active` (revoked, expired, or rotated already).
        """

    @abc.abstractmethod
    async def find_api_key(self, key_sha256: str) -> ApiKeyRecord | None:
        """The key with this hash if it is valid now (store clock): not revoked, not expired."""

    @abc.abstractmethod
    async def list_key_events(
        self, tenant: str, *, key_id: str | None = None, cursor: str | None = None, limit: int = 100
    ) -> Page[KeyEvent]:
        """The tenant's key changes, oldest first. Raises: InvalidRequest `invalid_cursor`."""

    # -- evidence, metrics and health ------------------------------------------------------
    @abc.abstractmethod
    async def export_snapshot(self, tenant: str, run_id: str) -> RunExport:
        """The run, its MAC'd head and every action row, in ONE read; the rows are spooled to disk a
        page at a time (gateway/store/action_spool.py), never held in one list. The caller closes
        `actions`. Raises: NotFound."""

    @abc.abstractmethod
    async def ledger_entries(self, run_id: str, *, after: int, upto: int, limit: int) -> list[EntryRow]:
        """The run's chain entries exactly as stored, seq in (after, upto], in order."""

    @abc.abstractmethod
    async def blob_texts(self, sha256s: Sequence[str]) -> dict[str, str | None]:
        """Stored bodies as their exact canonical JSON; None for one purged (or never stored)."""

    @abc.abstractmethod
    async def dropped_refusals(self, tenant: str, run_id: str) -> DroppedRefusals:
        """The run's refusals answered but not recorded past `refusal_limits`, counted by limit and
        lease token (zeros when none; another tenant's run reads as none)."""

    @abc.abstractmethod
    async def gauges(self, tenant: str, *, limit: int) -> Gauges:
        """The tenant's approvals pending, unknown actions and (the newest `limit`) active runs.

        May be slow on a large store: implementations keep it off the gate's transactions.
        """

    @abc.abstractmethod
    async def health(self) -> HealthReport:
        """A trivial query, and the store's background work. The caller bounds the wait."""

    # -- reported spend and the pilot report (gateway/domain/report.py) --------------------
    @abc.abstractmethod
    async def report_usage(
        self, principal: Principal, run_id: str, *, kind: str, amount: int, note: str | None, ref: str | None
    ) -> ChargeRecorded:
        """Record a reported cost (minor units) against the run's spend, in ONE transaction with its
        `usage_reported` entry (and `budget_overrun` when it takes the spend past the limit: a cost
        that already happened is recorded, never refused). Tagged `recovery` while the run is resumed
        and has no checkpoint since. Any status, terminal too.

        Raises: NotFound; Conflict `idempotency_conflict` when `ref` was reported with another body.
        """

    @abc.abstractmethod
    async def report_inputs(self, tenant: str, run_id: str) -> ReportInputs:
        """The run, its charges, its tool calls' settled costs and the ledger facts a report reads,
        in one read. Raises: NotFound."""

    # -- verified progress (docs/progress.md) ------------------------------------------------
    # The worker's writes (checkpoint, milestone, completion) are fenced like a call: epoch current,
    # lease unexpired, revised contract read; a refusal is recorded as a `rejected` action and
    # returned as `Refused`.
    @abc.abstractmethod
    async def save_checkpoint(
        self, run_id: str, *, epoch: int, worker: str, expected_version: int, body: dict[str, Any]
    ) -> CheckpointRecord | Refused:
        """Compare-and-set on the run's checkpoint_version (`checkpoint_conflict`); a paused run
        still takes one. Sets last_checkpoint_at."""

    @abc.abstractmethod
    async def latest_checkpoint(self, run_id: str) -> CheckpointRecord | None: ...

    @abc.abstractmethod
    async def list_milestones(self, run_id: str) -> list[MilestoneRecord]:
        """The submitted milestones' states (a contract milestone never submitted has no row)."""

    @abc.abstractmethod
    async def record_milestone(
        self, run_id: str, *, epoch: int, worker: str, granted_by: str, submission: MilestoneSubmission
    ) -> MilestoneRecord | Refused:
        """Record a checked submission; a review creates its approval (decided by the named reviewer
        only, without making the run wait). Verified: the run's progress_at moves."""

    @abc.abstractmethod
    async def complete_run(self, run_id: str, *, epoch: int, worker: str, summary: str) -> RunRecord | Refused:
        """From running, when every required milestone is verified, every unknown action reconciled
        or acknowledged and no child live; else `completion_refused` naming what is missing."""

    @abc.abstractmethod
    async def acknowledge_action(
        self, principal: Principal, action_id: str, note: str
    ) -> tuple[ActionRecord, dict[str, Any]]:
        """Accept an `unknown` action as uncertain: (the action, the acknowledgement {by, at, note}).
        Raises: NotFound; Conflict `invalid_transition` when the action is not unknown."""

    @abc.abstractmethod
    async def apply_recheck(self, run_id: str, recheck: Recheck, *, by: str) -> None:
        """Invalidate milestones and mark the checkpoint not good, as a re-read found."""

    @abc.abstractmethod
    async def recovery_inputs(self, tenant: str, run_id: str) -> RecoveryInputs:
        """Everything the recovery package reads, in one read. Raises: NotFound."""

    # -- the watchdog and webhook deliveries (gateway/runtime/watchdog.py, gateway/runtime/webhooks.py) ----
    @abc.abstractmethod
    async def hold_watch_lease(self, holder: str, ttl: float) -> bool:
        """Take or renew the watchdog's lease for `ttl` seconds of store time: True while `holder`
        holds it. Another holder gets it only once it expired unrenewed."""

    @abc.abstractmethod
    async def sweep_expiries(self, *, limit: int = 500) -> Sweep:
        """Expire runs past their deadline and approvals past `decide_by` or `valid_until`, as the
        lazy path does (each run in its own transaction, `on_expiry` applied)."""

    @abc.abstractmethod
    async def watch_state(self, *, limit: int = 5000, tenant: str | None = None) -> WatchState:
        """Live runs (running, waiting, paused) with their pending approvals, and `unknown` actions
        of any run, terminal ones included; at most `limit` of each, oldest first; only `tenant`'s
        when one is named (the console), every tenant's otherwise (the watchdog)."""

    @abc.abstractmethod
    async def raise_alerts(self, alerts: Sequence[AlertDraft], *, max_attempts: int) -> list[RaisedAlert]:
        """Record each alert once per (run, kind, episode). A new one gets, in ONE transaction, its
        row, its run's `alert` entry and one pending delivery per target. Returns the new ones only."""

    @abc.abstractmethod
    async def queue_heartbeat(self, holder: str, every: float, targets: Sequence[str], data: dict[str, Any]) -> bool:
        """Queue a `heartbeat` delivery to each target if `holder` holds the watchdog lease and the
        last heartbeat is at least `every` seconds old. One attempt each: a late heartbeat misleads."""

    @abc.abstractmethod
    async def claim_deliveries(self, claimer: str, *, hold: float, limit: int) -> list[Delivery]:
        """Pending deliveries due now and not claimed by anyone else, each claimed for `hold`
        seconds (its attempt counted), oldest first."""

    @abc.abstractmethod
    async def finish_delivery(
        self, delivery_id: str, claimer: str, *, ok: bool, error: str | None, retry_at: float | None
    ) -> None:
        """Record an attempt: delivered (`ok`), pending again at `retry_at`, or failed for good
        (`retry_at` None or attempts used up). Ignored unless `claimer` still holds the claim."""

    @abc.abstractmethod
    async def list_deliveries(self, *, status: str | None = None, limit: int = 100) -> list[Delivery]:
        """Deliveries oldest first, for operators and tests."""


_log = logging.getLogger("warrant.store")


def log_if_failed(action_id: str) -> Callable[[asyncio.Future[Any]], None]:
    """A done-callback for a settle nobody awaits: its failure must at least be logged."""

    def done(future: asyncio.Future[Any]) -> None:
        if not future.cancelled() and future.exception() is not None:
            _log.error(
                "settling %s failed; it stays admitted until a restart marks it unknown",
                action_id,
                exc_info=future.exception(),
            )

    return done


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


@dataclass(frozen=True)
class WatchState:
    runs: list[RunWatch]
    unknown: list[UnknownAction]


@dataclass(frozen=True)
class AlertDraft:
    alert: Alert
    targets: tuple[str, ...]  # the webhooks that take this kind


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
