"""The gate: one tools/call from the bearer lease token to the settled outcome.

1. authenticate the token; a dead lease or a run that is not live is refused at once
2. resolve the tool and validate its arguments        3. authority (policy and contract)
4. operation id (writes): replay, conflict, in progress, unknown
5. approval for exactly this payload, or a pending one created
6. admit: ONE store transaction (status, deadline, epoch, lease, budget, approval, intent)
7. dispatch through the adapter with its timeout      8. settle: outcome, receipt, actual cost

The gate speaks in `CallResult`s, not MCP types: the MCP front turns them into tool results.
A refused call never reaches an adapter.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from gateway import backoff
from gateway.adapters.base import CallRequest, Outcome, OutcomeKind
from gateway.bounded import BoundedDict
from gateway.canonical import canonical_json, sha256_hex
from gateway.catalog.catalog import Catalog, ToolSpec
from gateway.clock import Clock, isoformat
from gateway.domain.admission import CallFacts, dead_refusal, lease_refusal
from gateway.domain.answers import CHECK_BACK_S, WAITING_CODES, approval_wait
from gateway.domain.approval_selection import ApprovalCall, ApprovalChoice, choose_approval
from gateway.domain.approvals import Requirement
from gateway.domain.contract import ApprovalRule, Contract, Terms
from gateway.domain.lease_rules import LeaseWrite, lease_rule, lease_write, renewal_due
from gateway.domain.leases import looks_like_token, token_hash
from gateway.domain.lifecycle import ActionStatus
from gateway.domain.operations import (
    OPERATION_ID_META,
    derive_operation_id,
    idempotency_key,
    repeat_operation_id,
    valid_client_operation_id,
)
from gateway.domain.replay import Replay, ReplayCall, replay_refusal, replay_rule
from gateway.domain.retries import Attempt, RetryPolicy, delay, effective, retryable
from gateway.domain.settlement import Settlement
from gateway.domain.tasks import TASK_ID_META, valid_task_id
from gateway.domain.units import format_money, parse_duration
from gateway.errors import Code, Refusal, Unauthenticated, WarrantError
from gateway.gate.approval_edits import checked_edit, denied_refusal, edited_refusal
from gateway.gate.in_flight import ABORTED_BY_CANCEL, InFlight
from gateway.gate.limits import LimitSettings, cap_result, withheld_text
from gateway.ids import new_id
from gateway.observe import tracing
from gateway.observe.metrics import Metrics
from gateway.policy.engine import approval_rule, authority_refusal
from gateway.safeguards import ALL_ON, Safeguards
from gateway.store.ports import Store
from gateway.store.records import (
    ActionRecord,
    Admitted,
    ApprovalEdit,
    ApprovalRecord,
    ApprovalRequest,
    ApprovalStatus,
    Held,
    Intent,
    Refused,
    RunRecord,
    Stale,
    TokenInfo,
)
from gateway.store.retry_records import RetryAccount, RetryState
from gateway.text import escape_nul

log = logging.getLogger("warrant.gate")

META_ACTION_ID = "warrant/action_id"
META_REPLAYED = "warrant/replayed"
META_BUDGET = "warrant/budget_remaining"
META_RESULT_PURGED = "warrant/result_purged"  # a replay whose recorded result was purged (retention)
META_RECEIPT = "warrant/receipt"  # ... and the receipt it answers with instead
# Every refused or failed call's code, also on a waiting answer that is not an error result (isError
# false: approval_required, run_waiting), so a harness tells "not executed" from a success by `_meta`.
META_CODE = "warrant/code"
TOKENS_KEPT = 10_000  # lease tokens whose identity is remembered (`Gate.knows`, step 1)
TERMS_KEPT = 4096  # contracts' terms remembered, by run and spec version


@dataclass(frozen=True)
class CallResult:
    """The gate's answer to one call, in no protocol's types: the MCP front turns it into a
    `CallToolResult` (gateway/mcp/server.py `to_mcp_result`, or `result_body` on the fast path).

    `content` holds MCP content blocks as plain dicts, `structured` the structured content, `meta`
    the `_meta` the answer carries (`warrant/action_id`, `warrant/replayed`,
    `warrant/budget_remaining`, `warrant/code`, ...: the META_* names above).

    Invariants: a refused or failed call has `code` set, and `meta["warrant/code"]` equal to it,
    and its `structured` is `{"error": ...}` (`refused` builds all three from one error); `is_error`
    is true for it, except for a wait on a person (`WAITING_CODES`, for a tool without an output
    schema), which the gate answers as a non-error result that still names its code. A success
    has no `code`; a replay is a success with `warrant/replayed` true. Built by the gate and its
    gateway tools (gateway/tools/); frozen: a changed answer is a new one (`dataclasses.replace`).
    """

    content: list[dict[str, Any]]
    structured: dict[str, Any] | None = None
    is_error: bool = False
    meta: dict[str, Any] = field(default_factory=dict)
    code: Code | None = None  # the refusal or failure code when is_error

    @classmethod
    def refused(cls, error: WarrantError, action_id: str | None = None) -> CallResult:
        meta: dict[str, Any] = {META_ACTION_ID: action_id} if action_id else {}
        meta[META_CODE] = error.code
        return cls(
            content=[{"type": "text", "text": f"[{error.code}] {error.answer}"}],
            structured={"error": error.to_dict()},
            is_error=True,
            meta=meta,
            code=error.code,
        )


class Gate:
    """The pipeline every tools/call goes through, from the lease token to the settled outcome
    (the steps in this module's docstring), and the gateway tools beside it (`status`, `propose`,
    `repeat`; `progress` serves the rest).

    Owns what one process keeps between calls: the one cache of lease tokens (`knows`, step 1),
    contracts' terms by run and spec version, the lease renewals under way, the dispatches in
    flight by run (what a hard cancel aborts and the drain waits for), and the metrics. Everything
    it decides on is in the store: each admit is one store transaction that reads again whatever
    the caches hold, so any number of gates (replicas) may share one store.

    Invariants: a refused call never reaches an adapter; an admitted call is settled exactly once,
    even when its client goes away (a write's dispatch is shielded) or a hard cancel aborts it
    (settled `unknown`, or `not_sent` when it had not begun); calls answer with `CallResult`s, and
    the only exception out of `call` is `Unauthenticated`.

    Built once per process by the composition root (gateway/app.py) over the store, the tool
    catalog and the clock; the app gives it its `limits`, its progress tools and the idempotency
    window from the configuration, and the shutdown drain sets `refusing`.
    """

    def __init__(
        self,
        store: Store,
        catalog: Catalog,
        clock: Clock,
        *,
        limits: LimitSettings | None = None,
        idempotency_for: float | None = None,
        in_flight: InFlight | None = None,
        safeguards: Safeguards = ALL_ON,
    ) -> None:
        """`limits`: `limits:` in warrant.yaml (gateway/gate/limits.py). `idempotency_for`:
        retention.idempotency (docs/retention.md), seconds a settled write's operation id replays
        for, then is refused `idempotency_expired`; None: for as long as the record. `in_flight`:
        the process's calls in flight, shared with the drain (gateway/gate/in_flight.py; a gate of
        its own when not given). `safeguards`: the drill's switches (gateway/safeguards.py)."""
        self.store = store
        self.catalog = catalog
        self.clock = clock
        self.limits = limits or LimitSettings()
        self.idempotency_for = idempotency_for
        self.in_flight = in_flight or InFlight()
        self.safeguards = safeguards
        self._terms: BoundedDict[tuple[str, str], Terms] = BoundedDict(TERMS_KEPT)
        # The one cache of lease tokens (by hash): the /mcp guard's "is it known" and step 1's identity.
        self._tokens: BoundedDict[str, TokenInfo] = BoundedDict(TOKENS_KEPT)
        self._holds: dict[str, asyncio.Future[TokenInfo | None]] = {}  # lease renewals under way, by token
        self.metrics = Metrics(known_tool=lambda name: catalog.get(name) is not None)

    # -- step 1 ------------------------------------------------------------------------------
    async def authenticate(self, token: str | None) -> TokenInfo:
        """Raises: Unauthenticated for a missing or unknown token (HTTP 401 at the front)."""
        if not token or not looks_like_token(token):
            raise Unauthenticated("a lease token is required: Authorization: Bearer <lease token>")
        info = await self.store.authenticate(token_hash(token))
        if info is None:
            raise Unauthenticated("unknown lease token")
        return await self._hold(info)

    async def knows(self, digest: str) -> bool:
        """Whether the store knows the lease token of this hash: the question the /mcp guard asks
        before any MCP handling (gateway/mcp/server.py `LeaseTokenGuard`).

        A token the store has known once is known for good (lease tokens are never deleted; a
        superseded or expired one is refused by the gate, with its code, not by the guard), so the
        answer comes from the same cache as step 1's identity: a token's first request costs one
        store read, and the requests after it none.
        """
        if digest in self._tokens:
            return True
        info = await self.store.authenticate(digest)
        if info is None:
            return False
        self._remember(info)
        return True

    async def _identify(self, token: str | None) -> TokenInfo:
        """Step 1's identity, from a cache: a token's run, epoch and worker never change.

        The run record inside may be stale; the admit transaction re-reads everything it decides on,
        and refusals re-read it before they answer (`_reject`).
        """
        if not token or not looks_like_token(token):
            raise Unauthenticated("a lease token is required: Authorization: Bearer <lease token>")
        digest = token_hash(token)
        info = self._tokens.get(digest)
        if info is None:
            info = await self.store.authenticate(digest)
            if info is None:
                raise Unauthenticated("unknown lease token")
            self._remember(info)
        return await self._hold(info)

    async def _hold(self, info: TokenInfo) -> TokenInfo:
        """Every authenticated request of the current holder renews its lease, and re-establishes one
        that lapsed (gateway/domain/lease_rules.py). Decided here from what this process last read of
        the run, so most requests write nothing (a renewal is due once a tenth of the TTL has passed);
        the store decides again in its transaction."""
        run = info.run
        now = self.clock.now()
        if not renewal_due(run, now, run.lease_ttl):  # the common case, without building a snapshot
            return info
        if lease_write(run.snapshot(), info.epoch, now, run.lease_ttl) is LeaseWrite.NOTHING:
            return info
        # Requests of one token that find a renewal due at once share one transaction: on PostgreSQL
        # several on the same run row would conflict and be retried.
        pending = self._holds.get(info.token_hash)
        if pending is None:
            pending = asyncio.ensure_future(self.store.hold_lease(info.token_hash))
            self._holds[info.token_hash] = pending
            pending.add_done_callback(lambda _: self._holds.pop(info.token_hash, None))
        held = await asyncio.shield(pending)
        assert held is not None, "lease tokens are never deleted"
        self._remember(held)
        return held

    def _remember(self, info: TokenInfo) -> None:
        self._tokens.put(info.token_hash, info)

    async def _fresh(self, info: TokenInfo) -> TokenInfo:
        fresh = await self.store.authenticate(info.token_hash)
        assert fresh is not None, "lease tokens are never deleted"
        self._remember(fresh)
        if self.safeguards.sabotaged("fencing"):  # the drill's negative control: on every path of the call
            return TokenInfo(fresh.run, fresh.run.epoch, fresh.worker, fresh.granted_by, fresh.token_hash)
        return fresh

    def terms_of(self, run: RunRecord) -> Terms:
        key = (run.run_id, run.spec_version)
        terms = self._terms.get(key)
        if terms is None:
            terms = Contract.model_validate(run.contract).terms()
            self._terms.put(key, terms)
        return terms

    async def _live(self, info: TokenInfo, tool: str, digest: str, size: int | None) -> CallResult | None:
        refusal = lease_refusal(info.run.snapshot(), info.epoch, self.clock.now())
        if refusal is None:
            return None
        return await self._recorded(info, tool, digest, refusal, size)

    # -- the call ----------------------------------------------------------------------------
    async def call(
        self, token: str | None, tool: str, arguments: Any, meta: Mapping[str, Any] | None = None
    ) -> CallResult:
        """One tools/call. Refusals and failures come back as error results, never as exceptions.

        Raises:
            Unauthenticated: missing or unknown token (the only case answered without a result).
        """
        if not tracing.enabled():  # no span to open: skip even the context manager (the hot path)
            return self._counted(tool, await self._answered(token, tool, arguments, meta))
        with tracing.decision(tool) as span:
            result = await self._answered(token, tool, arguments, meta)
            tracing.decided(span, result.meta.get(META_ACTION_ID), result.code)
            return self._counted(tool, result)

    async def _answered(
        self, token: str | None, tool: str, arguments: Any, meta: Mapping[str, Any] | None
    ) -> CallResult:
        try:
            result = await self._call_entry(token, tool, arguments, meta)
        except Refusal as refusal:  # one the store would not record (limits.refusals): answered all the same
            result = CallResult.refused(refusal)
        return self._waiting_answer(tool, result)

    def _waiting_answer(self, tool: str, result: CallResult) -> CallResult:
        """A call that waits on a person (WAITING_CODES) is answered as a non-error result, unless its
        tool declares an output schema (a client validates a non-error result against it): the text
        and `structuredContent.error` say "not executed" and how to wait, and a framework that turns
        error results into retries (pydantic-ai: two per tool and the run is over) spends none on
        waiting. docs/decisions/0021-answers-a-model-can-act-on.md."""
        if not result.is_error or result.code not in WAITING_CODES:
            return result
        spec = self.catalog.get(tool)
        if spec is not None and spec.definition.output_schema is not None:
            return result
        return replace(result, is_error=False)

    def _counted(self, tool: str, result: CallResult) -> CallResult:
        if META_BUDGET not in result.meta:  # not dispatched: a dispatched call counts as it settles
            outcome = "replayed" if result.meta.get(META_REPLAYED) else "refused"
            self.metrics.observe_call(tool, outcome, result.code)
        return result

    async def _call_entry(
        self, token: str | None, tool: str, arguments: Any, meta: Mapping[str, Any] | None
    ) -> CallResult:
        info = await self._identify(token)
        tool = escape_nul(tool)  # no tool is named so; recorded readably on either store (gateway/text.py)
        if self.safeguards.sabotaged("fencing"):  # the drill's negative control: any epoch passes as current
            info = await self._fresh(info)
        tracing.tag_run(info.run.run_id, info.run.tenant)
        try:
            body = canonical_json(arguments)
        except ValueError:
            refusal = Refusal(Code.INVALID_ARGUMENTS, "the arguments are not representable as canonical JSON")
            return await self._reject(info, tool, "0" * 64, refusal, None)
        digest, size = sha256_hex(body), len(body)  # a refusal records both, never the arguments
        operation_id = (meta or {}).get(OPERATION_ID_META)
        if operation_id is not None and not valid_client_operation_id(operation_id):
            refusal = Refusal(
                Code.INVALID_ARGUMENTS, f"_meta[{OPERATION_ID_META!r}] must be 1-200 characters of [A-Za-z0-9._:/@+=-]"
            )
            return await self._reject(info, tool, digest, refusal, size)
        task_id = (meta or {}).get(TASK_ID_META)
        if task_id is not None and not valid_task_id(task_id):
            refusal = Refusal(
                Code.INVALID_ARGUMENTS,
                f"_meta[{TASK_ID_META!r}] must be a task id of the run's plan (1-128 characters)",
            )
            return await self._reject(info, tool, digest, refusal, size)
        return await self._call(info, tool, arguments, digest, operation_id, size=size, task_id=task_id)

    async def call_as(self, info: TokenInfo, tool: str, arguments: Any, operation_id: str) -> CallResult:
        """A call made as `info`'s lease holder by someone else (an operator's dead-letter retry,
        gateway/gate/operator_calls.py): every step after authentication, nothing renewed."""
        try:
            body = canonical_json(arguments)
        except ValueError:
            return CallResult.refused(Refusal(Code.INVALID_ARGUMENTS, "the arguments are not canonical JSON"))
        return await self._call(info, tool, arguments, sha256_hex(body), operation_id, size=len(body))

    async def _spec(self, tool: str) -> ToolSpec | None:
        """Gate step 2: the catalog's entry. A definition that does not match its pin is checked
        against the store's pins once more: another replica may have accepted it."""
        spec = self.catalog.get(tool)
        if spec is not None and not spec.pin_state.callable and self.catalog.pins is not None:
            if await self.catalog.pins.refresh():
                spec = self.catalog.get(tool)
        return spec

    async def _reject(self, info: TokenInfo, tool: str, digest: str, refusal: Refusal, size: int | None) -> CallResult:
        """Record and answer a refusal; a dead lease or run is named first, whatever else was wrong.
        `size`: the arguments' canonical JSON in bytes, recorded beside their hash (None: unknown)."""
        info = await self._fresh(info)
        refusal = lease_refusal(info.run.snapshot(), info.epoch, self.clock.now()) or refusal
        return await self._recorded(info, tool, digest, refusal, size)

    async def _recorded(
        self, info: TokenInfo, tool: str, digest: str, refusal: Refusal, size: int | None
    ) -> CallResult:
        action_id = await self.store.record_rejection(
            info.run.run_id,
            tool=tool,
            payload_sha256=digest,
            refusal=refusal,
            epoch=info.epoch,
            worker=info.worker,
            payload_bytes=size,
        )
        return CallResult.refused(refusal, action_id)

    async def _call(
        self,
        info: TokenInfo,
        tool: str,
        arguments: Any,
        digest: str,
        client_operation_id: str | None,
        repeat_of: str | None = None,
        *,
        size: int,
        stale_retry: bool = False,
        task_id: str | None = None,
        compensates: str | None = None,
        reason: str | None = None,
    ) -> CallResult:
        refusing = self.in_flight.refusing
        if refusing is not None:  # draining: no approval requested, nothing admitted
            return await self._reject(info, tool, digest, refusing, size)
        run = info.run
        terms = self.terms_of(run)
        spec = await self._spec(tool)
        refusal = authority_refusal(tool, spec, terms, arguments)
        if refusal is not None or spec is None:
            assert refusal is not None
            return await self._reject(info, tool, digest, refusal, size)

        operation_id: str | None = None
        if spec.is_write:
            operation_id = client_operation_id or derive_operation_id(run.lineage_id, tool, digest)
            if self.safeguards.sabotaged("idempotency"):  # the drill's negative control: every call is new
                operation_id = new_id("sab")
        plan: RetryPlan | None = None
        policy = effective(spec.policy.retries if spec.policy else None, terms.retries, tool)
        if policy is not None or terms.attempts is not None:
            state = await self.store.retry_state(run.run_id, run.lineage_id, operation_id)
            refusal = retry_refusal(tool, operation_id, policy, state, terms.attempts)
            if refusal is not None:
                return await self._reject(info, tool, digest, refusal, size)
            if policy is not None:
                plan = RetryPlan(policy, state.failed_attempts, terms.attempts, spec.adapter.keyed(spec.tool))
        limits = self.limits.for_call(run.tenant, run.run_id).sharing(self.catalog.shared_for(tool))
        facts = CallFacts(epoch=info.epoch, is_write=spec.is_write, reservation=spec.reservation(), limits=limits)
        approval_id: str | None = None
        rule = None if self.safeguards.sabotaged("approval") else approval_rule(tool, spec, terms, arguments)
        if rule is not None:
            # The approval path reads the run first: a dead lease is refused before any replay,
            # and no approval is requested for a call the run could not admit anyway.
            info = await self._fresh(info)
            dead = await self._live(info, tool, digest, size)
            if dead is not None:
                return dead
            if operation_id is not None:
                holder = await self.store.find_operation(run.lineage_id, operation_id, kept_for=self.idempotency_for)
                if holder is not None:
                    return await self._held(info, holder, tool, digest, size)
            decided = await self._approval(info, spec, arguments, digest, rule, facts, size=size)
            if isinstance(decided, CallResult):
                return decided
            approval_id = decided
            facts = replace(facts, approved=True)

        intent = Intent(
            run_id=run.run_id,
            tool=tool,
            effect="write" if spec.is_write else "read",
            payload=arguments,
            payload_sha256=digest,
            payload_bytes=size,
            operation_id=operation_id,
            idempotency_key=(
                idempotency_key(run.tenant, run.lineage_id, operation_id)
                if operation_id and not self.safeguards.sabotaged("idempotency")
                else None
            ),
            epoch=info.epoch,
            worker=info.worker,
            process_id=self.store.process_id,
            reservation=facts.reservation,
            approval_id=approval_id,
            repeat_of=repeat_of,
            spec_version=run.spec_version,
            operation_kept_for=self.idempotency_for if operation_id else None,
            task_id=task_id,
            plan_required=spec.is_write and terms.plan.required_before_writes,
            compensates=compensates,
            reason=reason,
        )
        refusing = self.in_flight.refusing
        if refusing is not None:  # the drain began while this call was deciding
            return await self._reject(info, tool, digest, refusing, size)
        self.in_flight.admitting += 1
        try:
            admitted = await self.metrics.timed(self.store.admit(intent, facts))
        finally:
            self.in_flight.admitting -= 1  # an Admitted's task is in flight before the next await
        if isinstance(admitted, Stale):
            if stale_retry:  # decided again on the revision, and another one landed meanwhile
                return await self._reject(info, tool, digest, revised_refusal(admitted.spec_version), size)
            fresh = await self._fresh(info)
            return await self._call(
                fresh,
                tool,
                arguments,
                digest,
                client_operation_id,
                repeat_of,
                size=size,
                stale_retry=True,
                task_id=task_id,
                compensates=compensates,
                reason=reason,
            )
        if isinstance(admitted, Refused):
            refusal = admitted.refusal
            if refusal.code == Code.RUN_WAITING:
                refusal = await self._waiting_refusal(info, tool, refusal)
            return CallResult.refused(refusal, admitted.action_id)
        if isinstance(admitted, Held):
            return await self._held(info, admitted, tool, digest, size)
        return await self._dispatch_and_settle(spec, admitted, arguments, plan)

    async def _waiting_refusal(self, info: TokenInfo, tool: str, refusal: Refusal) -> Refusal:
        """`run_waiting`, naming the approvals the run waits on and when to check back."""
        run = info.run
        listed = await self.store.list_approvals(run.tenant, status=ApprovalStatus.PENDING, run_id=run.run_id)
        pending = replace(listed, items=[a for a in listed.items if a.blocks_run])  # the ones the run waits on
        now = self.clock.now()
        ids = [f"{a.approval_id} ({a.tool}, decided by {isoformat(a.decide_by)})" for a in pending.items[:5]]
        on = f"approval {', '.join(ids)}" if ids else "an approval"
        check_after = isoformat(now + CHECK_BACK_S)
        return Refusal(
            Code.RUN_WAITING,
            f"not executed: {tool} is a write and the run is waiting on {on}; while it waits only reads, the "
            f"warrant_* tools and the approved write are admitted; check with warrant_status after {check_after} "
            f"({CHECK_BACK_S} s) and call {tool} again once the run's status is running",
            status="waiting",
            pending_approvals=[a.approval_id for a in pending.items],
            check_after=check_after,
            retry_after_s=CHECK_BACK_S,
        )

    async def _held(self, info: TokenInfo, held: Held, tool: str, digest: str, size: int) -> CallResult:
        """Gate step 4: the operation id is already taken in this lineage (gateway/domain/replay.py)."""
        holder = held.action
        decision = replay_rule(holder, ReplayCall(tool, digest), held.expired).decision
        if decision is Replay.REPLAY:
            # Counted for the report's duplicates_prevented; a lost count loses no effect.
            await self.store.note_replay(info.run.run_id)
            return await self._replay(holder)
        refusal = replay_refusal(decision, holder)
        assert refusal is not None, "the store's holder holds the operation id"
        return await self._reject(info, tool, digest, refusal, size)

    async def _replay(self, holder: ActionRecord) -> CallResult:
        stored = await self.store.get_blob(holder.result_sha256) if holder.result_sha256 else None
        text = (
            f"not executed again: identical to action {holder.action_id}, which already succeeded; this is its "
            "recorded result (to make the same write twice on purpose, call warrant_repeat with that action_id "
            "and a reason)"
        )
        meta: dict[str, Any] = {META_ACTION_ID: holder.action_id, META_REPLAYED: True}
        if holder.result_sha256 and stored is None:
            # Purged under retention (docs/retention.md): the write happened once; its receipt is all
            # that is left of its answer.
            text += "; its result was purged under the retention policy, only its receipt is kept"
            meta[META_RESULT_PURGED] = True
            meta[META_RECEIPT] = holder.receipt
        stored = stored if isinstance(stored, dict) else {}
        note = {"type": "text", "text": text}
        content, structured = stored.get("content", []), stored.get("structured")
        spec = self.catalog.get(holder.tool)
        if spec is None or spec.definition.output_schema is None:
            # No schema holds the client to the tool's own shape: the replay says so where models
            # read (pydantic-ai and Claude Code hand the model structuredContent alone).
            structured = replay_structured(holder.action_id, text, structured, content)
        # else: structuredContent stays exactly the tool's, valid against its output schema; the replay
        # is told by the text and `_meta` (warrant/replayed, warrant/action_id).
        return CallResult(content=[note, *content], structured=structured, meta=meta)

    # -- step 5 ------------------------------------------------------------------------------
    async def _approval(
        self,
        info: TokenInfo,
        spec: ToolSpec,
        arguments: Any,
        digest: str,
        rule: ApprovalRule,
        facts: CallFacts,
        evidence: Any = None,
        rationale: str | None = None,
        *,
        size: int,
    ) -> str | CallResult:
        """The approval id to consume, or the result that answers the call now."""
        now = self.clock.now()
        run = info.run
        call = ApprovalCall(run.spec_version, spec.definition_sha256, Requirement.of(rule), digest)
        chosen = choose_approval(await self.store.approvals_for(run.run_id, spec.name, digest), call, now)
        found = chosen.approval  # gateway/domain/approval_selection.py: the approval the choice is about
        if found is not None and chosen.choice is ApprovalChoice.USE:
            return found.approval_id
        if found is not None and chosen.choice is ApprovalChoice.WAIT:
            return _approval_required(found, now)
        if found is not None and chosen.choice is ApprovalChoice.EDITED:
            # A person approved other arguments in this payload's place (gateway/gate/approval_edits.py).
            approved = await self.store.get_blob(found.payload_sha256)
            return await self._reject(info, spec.name, digest, edited_refusal(found, approved), size)
        if found is not None and chosen.choice is ApprovalChoice.DENIED:
            return await self._reject(info, spec.name, digest, denied_refusal(found), size)
        # `renew`: the newest one lapsed, and the answer names it beside the fresh one; else `request`.
        lapsed = found if chosen.choice is ApprovalChoice.RENEW else None
        request = ApprovalRequest(
            run_id=run.run_id,
            tool=spec.name,
            payload=arguments,
            payload_sha256=digest,
            payload_bytes=size,
            spec_version=run.spec_version,
            tool_def_sha256=spec.definition_sha256,
            role=rule.role,
            decide_within=parse_duration(rule.decide_within),
            valid_for=parse_duration(rule.valid_for),
            on_expiry=rule.on_expiry,
            requested_by=info.granted_by,
            worker=info.worker,
            evidence=evidence,
            rationale=rationale,
            blocks_run=rule.blocks_run,
            approvers=call.required.approvers,
            escalate_after=parse_duration(rule.escalate_after) if rule.escalate_after is not None else None,
            destination=spec.adapter.destination(spec.tool, arguments),
        )
        pending = await self.store.request_approval(request, facts)
        if isinstance(pending, Refused):
            refused = pending.refusal
            if refused.code == Code.RUN_WAITING:
                refused = await self._waiting_refusal(info, spec.name, refused)
            return CallResult.refused(refused, pending.action_id)
        if lapsed is not None:
            fresh = pending.approval
            check_after = isoformat(min(now + CHECK_BACK_S, fresh.decide_by))
            refusal = Refusal(
                Code.APPROVAL_EXPIRED,
                f"not executed: approval {lapsed.approval_id} for this exact payload lapsed before it was used; "
                f"a fresh approval {fresh.approval_id} is pending; "
                + approval_wait(spec.name, fresh.approval_id, isoformat(fresh.decide_by), check_after),
                approval_id=fresh.approval_id,
                expired_approval_id=lapsed.approval_id,
                payload_sha256=digest,
                expires_at=isoformat(fresh.decide_by),
                check_after=check_after,
                retry_after_s=CHECK_BACK_S,
            )
            return CallResult.refused(refusal)
        return _approval_required(pending.approval, now, pending.replaced)

    # -- steps 7 and 8 -----------------------------------------------------------------------
    async def _dispatch_and_settle(
        self, spec: ToolSpec, admitted: Admitted, arguments: Any, plan: RetryPlan | None = None
    ) -> CallResult:
        action = admitted.action
        # The dispatch runs in its own task: a client that goes away does not cancel a write in
        # flight (its outcome must be recorded); only a hard cancel of the run does.
        self.safeguards.hit("after_admit", spec.name)
        started: list[bool] = []
        task = asyncio.create_task(self._dispatch(spec, admitted, arguments, started, plan))
        # A hard cancel (or the shutdown) that came after this call's admit, and whose abort came
        # before the dispatch was in flight, aborts it now, before it starts.
        self.in_flight.track(action.run_id, task)
        try:
            if spec.is_write:
                return await asyncio.shield(task)
            return await task
        except asyncio.CancelledError:
            if not (task.cancelled() and not started and self.in_flight.abort_reason(task) is not None):
                raise
            reason = self.in_flight.aborted(task)
        # Aborted (a hard cancel, the shutdown) before the dispatch began: nothing was sent.
        outcome = Outcome(OutcomeKind.NOT_SENT, code=Code.UPSTREAM_UNAVAILABLE, message=f"{reason} before it was sent")
        return await self._settle(spec, admitted, outcome)

    async def _attempt(self, spec: ToolSpec, admitted: Admitted, request: CallRequest) -> Outcome:
        """One dispatch through the adapter within `request.timeout`; a timeout is `_uncertain`."""
        try:
            call = spec.adapter.call(request)
            if tracing.enabled():
                call = tracing.downstream(spec.name, spec.adapter.name, admitted.action, call)
            # asyncio.timeout, not wait_for: on 3.11 wait_for runs the call in a task of its own.
            async with asyncio.timeout(request.timeout):
                answered = await call
            return cap_result(answered, self.limits.max_tool_result)
        except TimeoutError:
            return _uncertain(spec, Code.UPSTREAM_UNAVAILABLE, f"no answer within {request.timeout:g} s")

    async def _retried(self, spec: ToolSpec, admitted: Admitted, request: CallRequest, plan: RetryPlan) -> Outcome:
        """Attempts under the tool's retry policy, all within the call's own timeout, each one with
        the same action id and idempotency key; every attempt tried again is an `action_retrying`
        entry, written only while the lease is current and the run live (docs/retries.md)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + spec.timeout
        policy, tried = plan.policy, plan.prior
        while True:
            tried += 1
            outcome = await self._attempt(
                spec, admitted, replace(request, timeout=max(deadline - loop.time(), MIN_ATTEMPT_S))
            )
            attempt = Attempt(outcome.kind.value, outcome.transient or outcome.code, spec.is_write, plan.keyed,
                              outcome.transient is not None)  # fmt: skip
            if tried >= policy.max_attempts or not retryable(policy, attempt):
                return _with_attempts(outcome, tried, policy.max_attempts)
            wait = delay(policy.backoff, tried, outcome.retry_after, backoff.JITTER.random)
            if loop.time() + wait + MIN_ATTEMPT_S > deadline:  # no time left for another attempt
                return _with_attempts(outcome, tried, policy.max_attempts)
            await backoff.sleep(wait)
            assert attempt.code is not None
            if not await self.store.record_retrying(
                admitted.action,
                attempt=tried,
                max_attempts=policy.max_attempts,
                code=attempt.code,
                reason=outcome.message,
                wait=wait,
                attempts_budget=plan.attempts_budget,
            ):
                return _with_attempts(outcome, tried, policy.max_attempts)

    async def _dispatch(
        self, spec: ToolSpec, admitted: Admitted, arguments: Any, started: list[bool], plan: RetryPlan | None = None
    ) -> CallResult:
        started.append(True)
        action = admitted.action
        request = CallRequest(
            tool=spec.tool,
            arguments=arguments,
            run_id=action.run_id,
            action_id=action.action_id,
            idempotency_key=action.idempotency_key,
            timeout=spec.timeout,
            write=spec.is_write,
            one_attempt=plan is not None,
        )
        try:
            if plan is None:
                outcome = await self._attempt(spec, admitted, request)
            else:
                outcome = await self._retried(spec, admitted, request, plan)
        except asyncio.CancelledError:
            # A hard cancel of the run (or shutdown): the request may have left.
            task = asyncio.current_task()
            reason = self.in_flight.abort_reason(task)
            outcome = _uncertain(spec, Code.UPSTREAM_UNAVAILABLE, ABORTED_BY_CANCEL if reason is None else reason)
            result = await self._settle(spec, admitted, outcome, plan)
            if task is not None and self.in_flight.abort_reason(task) is not None:
                # Our own abort, not the caller going away: the caller, still waiting, gets the
                # outcome as recorded instead of a CancelledError it never asked for.
                task.uncancel()
                return result
            raise
        except Exception:
            log.exception("adapter %s raised on %s", spec.adapter.name, spec.name)
            outcome = _uncertain(spec, Code.UPSTREAM_FAILED, "the adapter failed unexpectedly")
        self.safeguards.hit("after_dispatch", spec.name)
        return await self._settle(spec, admitted, outcome, plan)

    async def _settle(
        self, spec: ToolSpec, admitted: Admitted, outcome: Outcome, plan: RetryPlan | None = None
    ) -> CallResult:
        action = admitted.action
        settlement = _settlement(spec, outcome, admitted.currency)
        self.safeguards.hit("before_settle", spec.name)
        self.metrics.observe_call(spec.name, outcome.kind.value)
        account = None
        if plan is not None:
            account = RetryAccount(plan.policy.max_attempts, dead_letters=action.operation_id is not None)
        if spec.is_write:
            settled = await self.store.settle(action.action_id, settlement, admitted=action, retry=account)
            assert settled.run is not None
            remaining = budget_remaining(settled.run, self.clock.now())
        else:
            # A read's outcome replays nothing: answer now, commit with the store's next batch.
            self.store.settle_soon(action.action_id, settlement, admitted=action, retry=account)
            remaining = _wire(admitted.remaining, admitted.currency)
        meta: dict[str, Any] = {META_ACTION_ID: action.action_id, META_REPLAYED: False, META_BUDGET: remaining}
        if outcome.kind is OutcomeKind.SUCCEEDED and outcome.withheld is None:
            return CallResult(content=outcome.content, structured=outcome.structured, meta=meta)
        if outcome.kind is OutcomeKind.SUCCEEDED:
            error = Refusal(
                Code.PAYLOAD_TOO_LARGE,
                withheld_text(outcome.withheld or 0, self.limits.max_tool_result, write=spec.is_write),
                action_id=action.action_id,
                sent=True,
                performed=spec.is_write,
                result_bytes=outcome.withheld,
                max_bytes=self.limits.max_tool_result,
            )
        elif outcome.kind is OutcomeKind.UNKNOWN:
            error = Refusal(
                Code.OUTCOME_UNKNOWN,
                f"the outcome of action {action.action_id} could not be established ({outcome.message}); "
                "it is recorded as unknown and will be reconciled, never retried blindly",
                action_id=action.action_id,
            )
        else:
            error = Refusal(
                Code(outcome.code) if outcome.code in _FAILURE_CODES else Code.UPSTREAM_FAILED,
                outcome.message or "the tool reported a failure",
                action_id=action.action_id,
                sent=outcome.kind is not OutcomeKind.NOT_SENT,
            )
        result = CallResult.refused(error, action.action_id)
        return CallResult(result.content, result.structured, True, {**meta, **result.meta}, result.code)

    async def abort_run(self, run_id: str) -> int:
        """Hard cancel: abort this run's calls in flight; they settle as `unknown` (InFlight.abort_run)."""
        return await self.in_flight.abort_run(run_id)

    async def abort_all(self, reason: str) -> int:
        """Shutdown: abort every call in flight, and every dispatch admitted from now on (InFlight.abort_all)."""
        return await self.in_flight.abort_all(reason)

    def busy(self) -> bool:
        """Whether any call is admitting, dispatching or settling in this process."""
        return self.in_flight.busy()

    def in_flight_runs(self) -> list[str]:
        """The runs this process has calls in flight for (dispatching or settling)."""
        return self.in_flight.runs()

    # -- gateway tools -----------------------------------------------------------------------
    async def repeat(self, token: str | None, action_id: str, reason: str) -> CallResult:
        """`warrant_repeat`: a deliberate repeat of a succeeded write, under a fresh operation id."""
        info = await self.authenticate(token)
        reason = escape_nul(reason)
        dead = await self._live(info, "warrant_repeat", "0" * 64, None)
        if dead is not None:
            return dead
        if not reason or not reason.strip():
            return CallResult.refused(Refusal(Code.INVALID_ARGUMENTS, "a repeat needs a reason"))
        try:
            original = await self.store.get_action(info.run.tenant, action_id)
        except WarrantError:
            original = None
        if original is None or original.lineage_id != info.run.lineage_id or original.effect != "write":
            return CallResult.refused(Refusal(Code.INVALID_ARGUMENTS, f"no write {action_id} in this run's lineage"))
        if original.status is not ActionStatus.SUCCEEDED:
            code = Code.OUTCOME_UNKNOWN if original.status is ActionStatus.UNKNOWN else Code.INVALID_ARGUMENTS
            return CallResult.refused(
                Refusal(
                    code,
                    f"only a succeeded write can be repeated; {action_id} is {original.status.value}",
                    action_id=action_id,
                )
            )
        arguments = await self.store.get_blob(original.payload_sha256)
        if arguments is None:
            return CallResult.refused(Refusal(Code.INVALID_ARGUMENTS, f"the payload of {action_id} was purged"))
        operation_id = repeat_operation_id(info.run.lineage_id, action_id, reason)
        size = len(canonical_json(arguments))  # the stored body is canonical JSON already: it encodes
        return await self._call(
            info, original.tool, arguments, original.payload_sha256, operation_id, repeat_of=action_id, size=size
        )

    async def propose(
        self, token: str | None, tool: str, arguments: Any, evidence: Any = None, rationale: str | None = None
    ) -> CallResult:
        """`warrant_propose`: ask for approval of a payload, with evidence and rationale, without calling it.

        Answers with the approval's state; calling the tool later with the same arguments consumes it.
        """
        info = await self.authenticate(token)
        tool, rationale = escape_nul(tool), None if rationale is None else escape_nul(rationale)
        try:
            body = canonical_json(arguments)
        except ValueError:
            return CallResult.refused(Refusal(Code.INVALID_ARGUMENTS, "the arguments are not canonical JSON"))
        digest, size = sha256_hex(body), len(body)
        dead = await self._live(info, tool, digest, size)
        if dead is not None:
            return dead
        terms = self.terms_of(info.run)
        spec = await self._spec(tool)
        refusal = authority_refusal(tool, spec, terms, arguments)
        if refusal is not None or spec is None:
            assert refusal is not None
            return await self._reject(info, tool, digest, refusal, size)
        rule = approval_rule(tool, spec, terms, arguments)
        if rule is None:
            text = f"{tool} needs no approval for these arguments under this run's contract; call it directly"
            return CallResult([{"type": "text", "text": text}], {"approval": None, "payload_sha256": digest})
        facts = CallFacts(epoch=info.epoch, is_write=spec.is_write, reservation=spec.reservation())
        decided = await self._approval(info, spec, arguments, digest, rule, facts, evidence, rationale, size=size)
        if isinstance(decided, str):
            text = f"approval {decided} already covers this exact payload; call {tool} with the same arguments"
            return CallResult(
                [{"type": "text", "text": text}],
                {"approval": {"approval_id": decided, "status": "approved"}, "payload_sha256": digest},
            )
        if decided.code in (Code.APPROVAL_REQUIRED, Code.APPROVAL_EXPIRED) and decided.structured is not None:
            error = decided.structured["error"]
            text = (
                f"approval {error['approval_id']} is pending for this exact payload; "
                f"call {tool} with the same arguments once it is approved"
            )
            approval = {"approval_id": error["approval_id"], "status": "pending", "expires_at": error["expires_at"]}
            return CallResult([{"type": "text", "text": text}], {"approval": approval, "payload_sha256": digest})
        return decided

    async def refuse_dead(self, token: str | None, tool: str) -> CallResult | None:
        """A dead token's refusal, recorded, or None while the token may read its run.

        Asked before a gateway tool reads anything of the run, and again after: a takeover that
        commits while the run is being read leaves the old token with its refusal only.
        Raises: Unauthenticated for a missing or unknown token."""
        info = await self.authenticate(token)
        refusal = dead_refusal(info.run.snapshot(), info.epoch, self.clock.now())
        if refusal is None:
            return None
        return await self._recorded(info, tool, "0" * 64, refusal, None)

    async def dead(self, token: str | None) -> Refusal | None:
        """The refusal of a dead token, not recorded (tools/list). Raises: Unauthenticated."""
        info = await self.authenticate(token)
        return dead_refusal(info.run.snapshot(), info.epoch, self.clock.now())

    async def status(self, token: str | None) -> dict[str, Any]:
        """`warrant_status`: the run as its worker may see it."""
        info = await self.authenticate(token)
        # Reading the status is reading the contract: a revision is acknowledged here, and the cached
        # token carries the revised run, so the next call is decided under the new terms.
        acked = await self.store.acknowledge_spec(info.token_hash)
        if acked is not None:
            info = TokenInfo(
                run=acked, epoch=info.epoch, worker=info.worker, granted_by=info.granted_by, token_hash=info.token_hash
            )
            self._remember(info)
        run = info.run
        pending = await self.store.list_approvals(run.tenant, status=ApprovalStatus.PENDING, run_id=run.run_id)
        decided = await self._decided_for_model(run)
        refusal = lease_refusal(run.snapshot(), info.epoch, self.clock.now())
        letters = await self.store.list_dead_letters(run.tenant, run.run_id)
        return {
            "run_id": run.run_id,
            "status": run.status.value,
            "spec_version": run.spec_version,
            "lease": {
                "epoch": info.epoch,
                "current": info.epoch == run.epoch,
                "expires_at": isoformat(run.lease_expires_at),
                "refusal": refusal.code if refusal else None,
                "state": lease_rule(run.snapshot(), info.epoch, self.clock.now()).state.value,
            },
            "deadline": isoformat(run.deadline),
            "budget_remaining": budget_remaining(run, self.clock.now()),
            "pending_approvals": [
                {
                    "approval_id": a.approval_id,
                    "tool": a.tool,
                    "payload_sha256": a.payload_sha256,
                    "decide_by": isoformat(a.decide_by),
                    # The rule in force, combined from policy and contract (docs/policy.md): who must decide.
                    "role": a.role,
                    "valid_for": a.valid_for,
                }
                for a in pending.items
            ],
            # What a person answered that the model must act on: an edit to send, a denial's message.
            "decided_approvals": decided,
            # Operation ids given up after their retry policy's max_attempts (docs/retries.md): never
            # resend one; an operator retries, resolves or drops it.
            "dead_letters": [
                {k: v for k, v in d.view().items() if k not in ("run_id", "last_message")} for d in letters
            ],
        }

    async def _decided_for_model(self, run: RunRecord, most: int = 10) -> list[dict[str, Any]]:
        """The run's newest approvals a person edited (not yet used) or denied, as the model reads them:
        the approved arguments to send verbatim, the approver's message (gateway/gate/approval_edits.py)."""
        shown: list[dict[str, Any]] = []
        for status in (ApprovalStatus.APPROVED, ApprovalStatus.DENIED):
            listed = await self.store.list_approvals(run.tenant, status=status, run_id=run.run_id, limit=200)
            for a in listed.items[-most:]:
                if status is ApprovalStatus.APPROVED and a.proposed_sha256 is None:
                    continue
                arguments = await self.store.get_blob(a.payload_sha256) if a.proposed_sha256 else None
                answer = edited_refusal(a, arguments) if a.proposed_sha256 else denied_refusal(a)
                shown.append(
                    {
                        "approval_id": a.approval_id,
                        "tool": a.tool,
                        "decision": "edited" if a.proposed_sha256 else "denied",
                        "code": answer.code,
                        "proposed_sha256": a.proposed_sha256 or a.payload_sha256,
                        "payload_sha256": a.payload_sha256,
                        "arguments": arguments,
                        "message": answer.details.get("note"),
                        "valid_until": isoformat(a.valid_until),
                        "what_to_do": answer.message.removeprefix("not executed: "),
                    }
                )
        return shown

    async def checked_edit(self, approval: ApprovalRecord, arguments: Any) -> ApprovalEdit:
        """An approver's edited payload for `approval`, checked as the run's own call would be
        (gateway/gate/approval_edits.py). Raises: NotFound; InvalidRequest `edit_outside_authority`."""
        run = await self.store.get_run(approval.tenant, approval.run_id)
        return checked_edit(await self._spec(approval.tool), self.terms_of(run), approval, arguments)


def revised_refusal(spec_version: str) -> Refusal:
    """A call whose run was revised again while the gate decided it on the previous revision: it
    was decided twice and is not decided a third time (a revision a moment may land again); the
    same call again is decided on the revision of then."""
    return Refusal(
        Code.CONTRACT_REVISED,
        f"not executed: the run's contract was revised twice while this call was being decided (now "
        f"{spec_version}); nothing was done: call again with the same arguments",
        spec_version=spec_version,
    )


_FAILURE_CODES = frozenset(
    {
        Code.UPSTREAM_FAILED,
        Code.UPSTREAM_UNAUTHORIZED,
        Code.UPSTREAM_UNAVAILABLE,
        Code.TOOL_NOT_FOUND,
        Code.RATE_LIMITED,
        Code.PAYLOAD_TOO_LARGE,
        Code.INVALID_ARGUMENTS,
    }
)


def _approval_required(approval: ApprovalRecord, now: float, replaced: str | None = None) -> CallResult:
    details: dict[str, Any] = {"replaced_approval_id": replaced} if replaced else {}
    if not approval.blocks_run:  # the run goes on meanwhile: its other writes are admitted
        details["blocks_run"] = False
    check_after = isoformat(min(now + CHECK_BACK_S, approval.decide_by))
    decide_by = isoformat(approval.decide_by)
    refusal = Refusal(
        Code.APPROVAL_REQUIRED,
        f"not executed: {approval.tool} needs a person with role {approval.role} to approve this exact payload, "
        f"and approval {approval.approval_id} is pending; "
        + approval_wait(approval.tool, approval.approval_id, decide_by, check_after),
        approval_id=approval.approval_id,
        payload_sha256=approval.payload_sha256,
        expires_at=decide_by,
        role=approval.role,
        check_after=check_after,
        retry_after_s=CHECK_BACK_S,
        **details,
    )
    return CallResult.refused(refusal)


def replay_structured(action_id: str, note: str, structured: Any, content: list[dict[str, Any]]) -> dict[str, Any]:
    """A replay's structuredContent for a tool without an output schema: the recorded result's own keys
    with `replayed`, `action_id` (the original) and `not_executed_again` (the note) beside them. A
    result that has one of those keys itself, or is not an object, goes under `result` instead (a
    result with no structured part: its content under `content`), so nothing of it is overwritten."""
    marker: dict[str, Any] = {"replayed": True, "action_id": action_id, "not_executed_again": note}
    if isinstance(structured, dict) and not marker.keys() & structured.keys():
        return {**structured, **marker}
    if structured is not None:
        return {**marker, "result": structured}
    return {**marker, "content": content}


def _uncertain(spec: ToolSpec, read_code: str, message: str) -> Outcome:
    """A write whose request may have left is `unknown`; a read that failed is just failed."""
    if spec.is_write:
        return Outcome(OutcomeKind.UNKNOWN, code=Code.OUTCOME_UNKNOWN, message=message)
    return Outcome(OutcomeKind.FAILED, code=read_code, message=message)


def _settlement(spec: ToolSpec, outcome: Outcome, currency: str) -> Settlement:
    """The call's outcome as gateway/domain/settlement.py settles it."""
    return Settlement.dispatched(
        outcome.kind,
        write=spec.is_write,
        code=outcome.code,
        reason=outcome.message,
        receipt=outcome.receipt,
        content=outcome.content,
        structured=outcome.structured,
        withheld=outcome.withheld,
        actual_spend=outcome.spend(currency),
        estimate_spend=spec.cost_spend,
        max_spend=spec.cost_max,
    )


def budget_remaining(run: RunRecord, now: float) -> dict[str, Any]:
    """Every budget dimension's remainder as the wire shows it (spend as money)."""
    return _wire(run.snapshot().remaining(now), run.currency)


def _wire(remaining: dict[str, int], currency: str) -> dict[str, Any]:
    return {dim: (format_money(v, currency) if dim == "spend" else v) for dim, v in remaining.items()}


MIN_ATTEMPT_S = 0.05  # an attempt is not started with less than this of the call's timeout left


@dataclass(frozen=True)
class RetryPlan:
    """A call under a retry policy (gateway/domain/retries.py): the policy in force (the contract
    narrows it), the failed attempts its operation id had before this call, the contract's
    `attempts` budget, and whether the destination deduplicates on the idempotency key."""

    policy: RetryPolicy
    prior: int
    attempts_budget: int | None
    keyed: bool


def _with_attempts(outcome: Outcome, tried: int, max_attempts: int) -> Outcome:
    """The last attempt's outcome, its message naming how many attempts were made."""
    if outcome.kind is OutcomeKind.SUCCEEDED or tried <= 1:
        return outcome
    return replace(outcome, message=f"{outcome.message or 'failed'} (attempt {tried} of at most {max_attempts})")


def retry_refusal(
    tool: str, operation_id: str | None, policy: RetryPolicy | None, state: RetryState, attempts: int | None
) -> Refusal | None:
    """`retry_limit` for an operation id given up to a dead letter; `budget_exhausted` (dimension
    `attempts`) once the run's failed attempts used up the contract's `attempts` budget."""
    letter = state.dead_letter
    if letter is not None:
        return Refusal(
            Code.RETRY_LIMIT,
            f"not executed: operation {operation_id} of {tool} failed {letter.attempts} times (last: "
            f"{letter.last_code}), as many as its retry policy allows, and is dead letter {letter.dead_letter_id} "
            f"({letter.status.value}); do not send it again, under this or another operation id: an operator "
            "retries, resolves or drops it (warrant_status lists the run's dead letters); go on with other work",
            dead_letter_id=letter.dead_letter_id,
            operation_id=operation_id,
            attempts=letter.attempts,
            max_attempts=policy.max_attempts if policy is not None else letter.attempts,
            status=letter.status.value,
        )
    if attempts is not None and state.run_attempts_failed >= attempts:
        return Refusal(
            Code.BUDGET_EXHAUSTED,
            f"not executed: the run's budget of {attempts} failed attempts is used up; no call that could fail "
            "and be retried is admitted: ask an operator for a revised contract",
            dimension="attempts",
            limit=attempts,
            used=state.run_attempts_failed,
        )
    return None
