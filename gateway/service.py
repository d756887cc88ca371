"""The gateway as one object: store, catalog, gate, keys and the operator controls over them.

Built once in the app's lifespan (resources live there, not in modules) and handed to the
HTTP routes and, later, the MCP front.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from gateway.adapters.base import Adapter
from gateway.catalog.catalog import Catalog
from gateway.catalog.pins import Pins
from gateway.clock import Clock
from gateway.domain.approvals import policy_problems
from gateway.domain.contract import ApprovalRule, Contract, parse_contract
from gateway.domain.keys import ApiKey
from gateway.domain.lifecycle import ActionStatus, RunEvent, transition
from gateway.domain.retries import narrowing_problems
from gateway.domain.revision import Change, Effect, classify, merge_patch, require_narrowing
from gateway.domain.roles import permits
from gateway.domain.settlement import SettleKind, Settlement
from gateway.domain.units import parse_money
from gateway.errors import Code, Conflict, InvalidRequest
from gateway.gate.operator_calls import call_as_lease_holder, retry_operation_id
from gateway.gate.pipeline import META_BUDGET, META_REPLAYED, CallResult, Gate
from gateway.gate.reconcile import reconcile_run
from gateway.runtime.watchdog import Watchdog
from gateway.store.ports import Store
from gateway.store.records import ActionRecord, ApprovalRecord, Principal, RunRecord
from gateway.store.retry_records import DeadLetterRecord, DeadLetterStatus
from gateway.tools.progress import Progress, recheck_view

log = logging.getLogger("warrant.service")


@dataclass
class Gateway:
    store: Store
    catalog: Catalog
    gate: Gate
    clock: Clock
    adapters: Sequence[Adapter]
    api_keys: Sequence[ApiKey]
    pins: Pins | None = None  # downstream tool pins (gateway/catalog/pins.py)
    watchdog: Watchdog | None = None  # time enforcement and alerts (gateway/runtime/watchdog.py)
    progress: Progress | None = None  # checkpoints, milestones, re-checks (gateway/tools/progress.py)

    def principal_for_key(self, key_sha256: str) -> Principal | None:
        for key in self.api_keys:
            if hmac.compare_digest(key.key_sha256, key_sha256):
                return Principal(name=key.name, tenant=key.tenant, roles=key.roles)
        return None

    def check_against_policy(self, contract: Contract, accepted: Sequence[ApprovalRule] = ()) -> None:
        """A contract never loosens the gateway's policy (gateway/domain/approvals.py): refused, not trimmed,
        so its author never believes a looser rule is in force. Rules in `accepted` (the run's contract
        before a revision) are not checked again; the gate's combination holds them to the policy anyway.

        Raises: InvalidRequest `invalid_contract` (another currency than the policies'),
        `approval_looser_than_policy` (422, every looser field in `problems`).
        """
        if contract.currency != self.catalog.currency:
            raise InvalidRequest(
                f"this gateway's policies are in {self.catalog.currency}, the contract in {contract.currency}",
                code=Code.INVALID_CONTRACT,
                problems=[{"field": "currency", "problem": f"must be {self.catalog.currency}"}],
            )
        problems = policy_problems(contract.approvals, self.catalog.approval_floor(), accepted=accepted)
        if problems:
            raise InvalidRequest(
                f"the contract's approval rules ask less than the gateway's policy ({len(problems)} field(s))",
                code=Code.APPROVAL_LOOSER_THAN_POLICY,
                problems=problems,
            )
        looser = narrowing_problems(contract.retries, self.catalog.retry_floor())
        if looser:
            raise InvalidRequest(
                f"the contract's retries ask more than the gateway's policy ({len(looser)} field(s))",
                code=Code.RETRIES_LOOSER_THAN_POLICY,
                problems=looser,
            )

    def decides_for_every_tenant(self, principal: Principal) -> bool:
        """Whether `principal` may make a gateway-wide decision (accept a tool pin every tenant's
        agents will see): a configured key marked `gateway_admin`, or any admin while every
        configured key belongs to the principal's own tenant (then there is no other tenant)."""
        configured = principal.key_id is None  # a key created through the API is never gateway-wide
        if configured and any(
            k.gateway_admin and k.name == principal.name and k.tenant == principal.tenant for k in self.api_keys
        ):
            return True
        return "admin" in principal.roles and all(k.tenant == principal.tenant for k in self.api_keys)

    async def decide_approval(
        self,
        principal: Principal,
        approval_id: str,
        *,
        approve: bool,
        note: str | None,
        expected_sha256: str | None,
        arguments: dict[str, Any] | None = None,
    ) -> ApprovalRecord:
        """Approve or deny; approving with `arguments` approves that edited payload instead of the
        proposal, checked first as the run's own call would be (docs/decisions/0032-approve-edited.md).

        Raises: what the store's `decide_approval` raises; InvalidRequest `edit_outside_authority`.
        """
        edit = None
        if arguments is not None:
            if not approve:
                raise InvalidRequest("a denial carries a message, not arguments", code=Code.INVALID_REQUEST)
            approval = await self.store.get_approval(principal.tenant, approval_id)
            edit = await self.gate.checked_edit(approval, arguments)
        return await self.store.decide_approval(
            principal, approval_id, approve=approve, note=note, expected_sha256=expected_sha256, edit=edit
        )

    async def retry_dead_letter(
        self, principal: Principal, dead_letter_id: str, reason: str
    ) -> tuple[DeadLetterRecord, CallResult]:
        """An operator's retry of a dead letter: its original call through the gate under a fresh
        operation id (gateway/gate/operator_calls.py). A call the gate admitted marks the dead letter
        `retried`, linked to the new action, whatever its outcome; a refused one (a paused run, an
        approval asked for) leaves it open. Raises: NotFound; Conflict `invalid_transition`."""
        letter = await self.store.get_dead_letter(principal.tenant, dead_letter_id)
        if letter.status is not DeadLetterStatus.OPEN:
            raise Conflict(
                f"dead letter {dead_letter_id} was already decided ({letter.status.value})",
                code=Code.INVALID_TRANSITION,
                status=letter.status.value,
            )
        arguments = await self.store.get_blob(letter.payload_sha256)
        if arguments is None:
            raise Conflict(f"the payload of dead letter {dead_letter_id} was purged", code=Code.INVALID_TRANSITION)
        result = await call_as_lease_holder(
            self.gate, letter.run_id, letter.tool, arguments, retry_operation_id(dead_letter_id)
        )
        action_id = result.meta.get("warrant/action_id")
        # Dispatched (it carries the budget left) or the replay of an earlier retry; not a refusal.
        admitted = META_BUDGET in result.meta or result.meta.get(META_REPLAYED) is True
        if admitted and isinstance(action_id, str):
            letter = await self.store.decide_dead_letter(
                principal, dead_letter_id, DeadLetterStatus.RETRIED, reason, retried_action_id=action_id
            )
        return letter, result

    async def pause(self, principal: Principal, run_id: str, reason: str | None) -> RunRecord:
        return await self.store.pause(principal, run_id, reason)

    async def resume(self, principal: Principal, run_id: str, reason: str | None) -> RunRecord:
        return (await self.resume_reconciled(principal, run_id, reason))[0]

    async def resume_reconciled(
        self, principal: Principal, run_id: str, reason: str | None
    ) -> tuple[RunRecord, dict[str, Any]]:
        """Resume reconciles reality first: `unknown` actions are looked up, artifacts and sources
        read again (a changed one invalidates the milestones that used it), then the run goes on.
        Returns the run and what the reconciliation found.

        Raises: NotFound, Conflict `invalid_transition` or Refusal `run_<status>` when the run cannot
        resume, before anything is looked up or invalidated: a refused control changes nothing.
        """
        run = await self.store.get_run(principal.tenant, run_id)
        if self.clock.now() >= run.deadline:
            # Past its deadline the store records the expiry and refuses, before any re-check.
            return await self.store.resume(principal, run_id, reason), {}
        transition(run.status, RunEvent.RESUME)  # the store checks it again in its transaction
        found = await self.reconcile_reality(principal, run_id)
        return await self.store.resume(principal, run_id, reason), found

    async def reconcile_reality(self, principal: Principal, run_id: str) -> dict[str, Any]:
        """Look up `unknown` actions and re-check artifacts and sources, in any status."""
        run = await self.store.get_run(principal.tenant, run_id)  # NotFound before any lookup
        settled = await reconcile_run(
            self.store, self.catalog, principal.tenant, run_id, self.clock.now(), safeguards=self.gate.safeguards
        )
        found: dict[str, Any] = {"actions": [{"action_id": a.action_id, "status": a.status.value} for a in settled]}
        if self.progress is not None:
            found.update(recheck_view(await self.progress.recheck(run, by=principal.name)))
        return found

    async def cancel(self, principal: Principal, run_id: str, reason: str | None, *, hard: bool) -> RunRecord:
        run = await self.store.cancel(principal, run_id, reason, hard=hard)
        if hard:
            # This run and the children its cancel reached. Other processes sharing the store
            # (PostgreSQL replicas) abort theirs on the store's notice (gateway/runtime/cancel_relay.py).
            hit = await self.store.hard_cancelled_among(self.gate.in_flight_runs())
            await asyncio.gather(*(self.gate.abort_run(r) for r in {run_id, *hit}))
        for adapter in self.adapters:
            try:
                await adapter.revoke(run_id)
            except Exception:
                log.exception("adapter %s failed to revoke credentials of run %s", adapter.name, run_id)
        return run

    async def fail(self, principal: Principal, run_id: str, reason: str) -> RunRecord:
        """End the run `failed` by an operator (`Store.fail_run`: its cause, the `run_failed` entry and
        alert, every token dead). Its calls in flight settle with their real outcome, as after a
        soft cancel; the adapters drop the run's credentials.

        Raises: NotFound (also another tenant's run); Refusal `run_<status>` when it is over already."""
        run = await self.store.fail_run(run_id, reason, principal.name, tenant=principal.tenant)
        for adapter in self.adapters:
            try:
                await adapter.revoke(run_id)
            except Exception:
                log.exception("adapter %s failed to revoke credentials of run %s", adapter.name, run_id)
        return run

    async def resolve(
        self,
        principal: Principal,
        action_id: str,
        status: str,
        evidence: str,
        *,
        receipt_id: str | None = None,
        actual_spend: str | None = None,
        duplicate: bool = False,
    ) -> ActionRecord:
        """An operator settles an `unknown` action that no lookup can, with the evidence recorded.

        `succeeded`: it happened (a later retry of its operation answers the recorded result);
        `failed`: it did not happen (the reservation is released; the operation may be tried again).
        `duplicate` (with `succeeded` only): it happened more than once; the receipt says so, and the
        pilot report counts it in `duplicate_effects`.
        The evidence and who gave it are the action's receipt and reason, so they enter the ledger.

        Raises: NotFound (another tenant's action too), Conflict `invalid_transition` when the
        action is not `unknown`, InvalidRequest for a bad amount or `duplicate` with `failed`.
        """
        if duplicate and status != "succeeded":
            raise InvalidRequest(
                "duplicate: an effect that did not happen cannot have happened twice",
                code=Code.INVALID_REQUEST,
                problems=[{"field": "duplicate", "problem": "only with status succeeded"}],
            )
        action = await self.store.get_action(principal.tenant, action_id)
        kind = SettleKind.SUCCEEDED if status == "succeeded" else SettleKind.FAILED
        if action.status is not ActionStatus.UNKNOWN:
            # Only an unknown outcome is an operator's to settle: an action in flight settles
            # with its real outcome, and a settled one stays as recorded.
            raise Conflict(
                f"action {action_id} is {action.status.value}; only an unknown action can be resolved",
                code=Code.INVALID_TRANSITION,
                status=action.status.value,
                target=kind.value,
            )
        run = await self.store.get_run(principal.tenant, action.run_id)
        spec = self.catalog.get(action.tool)
        spend: int | None = None
        if actual_spend is not None:
            try:
                spend = parse_money(actual_spend, run.currency)
            except ValueError as exc:
                raise InvalidRequest(f"actual_spend: {exc}", code=Code.INVALID_REQUEST) from None
        settlement = Settlement.resolved(
            kind,
            by=principal.name,
            evidence=evidence,
            receipt_id=receipt_id,
            actual_spend=spend,
            estimate_spend=spec.cost_spend if spec is not None else action.reserved.get("spend", 0),
            duplicate=duplicate,
        )
        log.info("action %s resolved %s by %s", action_id, kind.value, principal.name)
        return (await self.store.settle(action_id, settlement)).action

    # -- revisions, successors and sub-runs (docs/progress.md) -----------------------------------
    async def revise(
        self, principal: Principal, run_id: str, *, spec_version: str, patch: dict[str, Any], reason: str | None
    ) -> tuple[RunRecord, list[Change]]:
        """Apply an RFC 7396 merge patch to the run's contract under a new spec_version. An operator
        may narrow; a widening change needs `runs.widen` (admin). The store classifies again
        against the contract it updates, in its transaction.

        Raises: NotFound; Conflict `spec_version_unchanged`, `revision_conflict`; Forbidden
        `widening_requires_admin` (naming the widening changes); InvalidRequest `invalid_contract`
        (every problem of the patched contract), `approval_looser_than_policy` (a new or changed
        approval rule asks less than the policy: refused for an admin too); Refusal `run_<terminal>`.
        """
        run = await self.store.get_run(principal.tenant, run_id)
        if spec_version == run.spec_version:
            raise Conflict(
                f"the run is already at {spec_version}; a revision names a new spec_version",
                code=Code.SPEC_VERSION_UNCHANGED,
            )
        patched = merge_patch(run.contract, patch)
        named = patch.get("spec_version")
        if named is not None and named != spec_version:
            raise InvalidRequest(
                "the patch names another spec_version than the request",
                code=Code.INVALID_CONTRACT,
                problems=[{"field": "spec_version", "problem": f"the request names {spec_version}"}],
            )
        contract = parse_contract(patched | {"spec_version": spec_version})
        before = Contract.model_validate(run.contract)
        self.check_against_policy(contract, accepted=before.approvals)
        changes = classify(before, contract)
        widening = permits(principal, "runs.widen")
        require_narrowing(changes, may_widen=widening)
        after = await self.store.revise(
            principal, run_id, contract=contract, reason=reason, widening=widening, base_spec_version=run.spec_version
        )
        return after, changes

    async def successor(self, principal: Principal, run_id: str, *, reason: str, extend_by: int | None) -> RunRecord:
        """A terminal run's only successor; extending its deadline needs `runs.widen` (admin).

        Raises: NotFound; InvalidRequest `invalid_request` (no reason); Conflict `run_not_terminal`,
        `deadline_passed`, `successor_exists`, `successor_of_child`; Forbidden `widening_requires_admin`.
        """
        if extend_by is not None:
            extension = Change("deadline", Effect.WIDENS, None, f"+{extend_by}s")
            require_narrowing([extension], may_widen=permits(principal, "runs.widen"))
        return await self.store.create_successor(principal, run_id, reason=reason, extend_by=extend_by)

    async def create_child(self, principal: Principal, parent_id: str, contract: Contract) -> RunRecord:
        """A delegated sub-run carved out of a live parent (gateway/domain/revision.py, narrow_child).

        Raises: NotFound; Refusal `run_<terminal>`, `budget_exhausted`; InvalidRequest `invalid_contract`,
        `approval_looser_than_policy`.
        """
        self.check_against_policy(contract)
        return await self.store.create_child(principal, parent_id, contract)
