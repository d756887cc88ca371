"""A model-based test of the gate and store (issue 26, "What must be shown"), on both back ends.

A Hypothesis `RuleBasedStateMachine` drives random sequences of create, lease (by the operator or
by an API key of its own), takeover, call (read, write, paid, approval-gated; by live, superseded
and dead tokens), approve, deny, a requester deciding its own approval, pause, resume, cancel,
hard cancel, key revocation, successor, child, revise, usage, clock ticks and gateway restart
(close the store, reopen it on the same SQLite file or PostgreSQL database) through the
in-process Gate and the Store interface, as the integration tests do. Before each step, what the
clock made due happens in transactions of its own (`_time_passes`), so that a refused step is
held to what it changed, not to what time did (docs/testing.md). The model keeps only what it
expects (runs, which token holds which epoch, pending approvals, reported usage, keys); every
invariant is asserted against the REAL store rows after every step:

- no lineage family spent more than its root contract on `spend`, `tool_calls` or `writes`: the sum
  of `spent` over the root lineage's runs (successors included; an ended child's spend is already
  folded into its parent) plus the `spent` of every live child, with `spend` counted net of the
  usage the model reported (a reported cost is recorded, never refused: Store.report_usage);
- no call was admitted with a dead epoch: every admitted call's token held the run's current epoch
  in the model and was not granted by a revoked key, and every action row's epoch is one the run
  granted;
- no approval was used twice (at most one action row names it) nor decided by its requester;
- every refused step changed nothing. "Nothing" is: every run row's status, epoch, spec version,
  limits, reserved and spent counters; every approval's status; the set of action rows that are not
  refusal records (status `rejected`); and the events, except entries of the refusal's own audit
  types (`action_rejected`, REFUSAL_EVENTS) which a refusal may append;
- `verify_ledger` says ok.

Fixed example counts keep it to seconds per back end; the negative controls (a sabotaged budget
check, sabotaged fencing) must find their bug at the same count; `WARRANT_MODEL_EXAMPLES=<n>` runs
`n` examples of longer sequences (the nightly run, docs/testing.md).

KNOWN_OPEN lists the rules that reach a bug another branch of issue 26 fixes; those rules are
skipped while listed, never the invariant checks. Remove an entry when its fix is merged.
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from gateway.clock import ManualClock
from gateway.domain import api_key_hash, merge_patch, mint_api_key, parse_contract, token_hash
from gateway.errors import WarrantError
from gateway.gate import Gate
from gateway.safeguards import ALL_ON, Safeguards
from gateway.store.records import ApprovalStatus, Principal, RunRecord
from tests.contracts import child_contract
from tests.harness import APPROVER, OPS, TENANT, Backend, SQLiteBackend, Tools, contract
from tests.harness_postgres import PostgresBackend

# Rules that hit a bug not fixed yet; each is skipped while listed here. Empty: the successor rule
# (several successors of one run overspent the lineage) runs since one successor per run landed.
KNOWN_OPEN: frozenset[str] = frozenset() - frozenset(os.environ.get("WARRANT_MODEL_RUN_OPEN", "").split(","))

EXAMPLES = int(os.environ.get("WARRANT_MODEL_EXAMPLES", "0"))
SETTINGS = settings(
    max_examples=EXAMPLES or 6,
    stateful_step_count=60 if EXAMPLES else 20,
    deadline=None,
    derandomize=not EXAMPLES,
    database=None,
)

# A refusal may append its own audit record and nothing else.
REFUSAL_EVENTS = frozenset({"action_rejected"})
DIMS = ("spend", "tool_calls", "writes")
ROOT_BUDGETS = {"spend": "0.50", "tool_calls": 8, "writes": 4, "active_seconds": 100000}
CHILD = child_contract(
    budgets={"spend": "0.10", "tool_calls": 3, "writes": 1},
    authority={"allow": ["t__paid", "t__write", "t__read", "t__approve"]},
)
KEY_ADMIN = Principal("root", TENANT, frozenset({"admin"}))  # makes and revokes the keys that grant leases
CALLS = {"read": {"q": "x"}, "write": {"text": "w"}, "paid": {"text": "p"}, "approve": {"text": "a"}}


@dataclass
class Token:
    token: str
    run_id: str
    epoch: int
    worker: str
    key_id: str | None = None  # the API key that granted the lease, when one did


@dataclass
class Model:
    roots: dict[str, dict[str, int]] = field(default_factory=dict)  # root lineage -> its root limits
    family: dict[str, str] = field(default_factory=dict)  # run id -> root lineage it is accounted to
    epochs: dict[str, int] = field(default_factory=dict)  # run id -> the epoch the model expects live
    tokens: list[Token] = field(default_factory=list)
    pending: list[str] = field(default_factory=list)  # approval ids nobody decided yet
    usage: dict[str, int] = field(default_factory=dict)  # root lineage -> reported usage (minor units)
    admitted: list[tuple[str, int]] = field(default_factory=list)  # (run id, epoch) of admitted calls
    runs: list[str] = field(default_factory=list)
    # run id -> what it may have spent at most, per dimension, once a revision narrowed it: the new
    # limit, or what it had spent and held when narrowed (a narrowing below that stops further
    # calls; it cannot undo the ones made). Runs never revised are held to their own limits.
    ceilings: dict[str, dict[str, int]] = field(default_factory=dict)
    keys: list[str] = field(default_factory=list)  # API keys made to grant leases, revoked or not
    revoked: set[str] = field(default_factory=set)  # of those, the revoked ones: their leases are dead


# The backend every example of the current test uses: a factory so each example starts empty.
_fresh_backend: Callable[[], Backend] | None = None


class GateModel(RuleBasedStateMachine):
    safeguards: Safeguards = ALL_ON  # the drill's switches the gate is built with (a control sabotages one)

    def __init__(self) -> None:
        super().__init__()
        assert _fresh_backend is not None
        self.loop = asyncio.new_event_loop()
        self.backend = _fresh_backend()
        self.clock = ManualClock()
        self.tools = Tools()
        self.model = Model()
        self.store = self.backend.store(self.clock, process_id="model-gateway")
        self._run(self.store.open())
        self.gate = Gate(self.store, self.tools.catalog(), self.clock, safeguards=self.safeguards)
        self.workers = 0

    def _run(self, coro: Any) -> Any:
        return self.loop.run_until_complete(asyncio.wait_for(coro, 30))

    def teardown(self) -> None:
        try:
            self._run(self.store.close())
        finally:
            self.loop.close()

    # -- reading the real rows -------------------------------------------------------------
    async def _runs(self) -> list[RunRecord]:
        return [await self.store.get_run(TENANT, run_id) for run_id in self.model.runs]

    async def _snapshot(self) -> dict[str, Any]:
        """What a refused step must leave unchanged (see the module docstring)."""
        runs = {
            r.run_id: (r.status, r.epoch, r.spec_version, r.limits, r.reserved, r.spent) for r in await self._runs()
        }
        actions: set[tuple[str, str]] = set()
        events: dict[str, list[tuple[int, str]]] = {}
        approvals: dict[str, ApprovalStatus] = {}
        for run_id in self.model.runs:
            page = await self.store.list_actions(TENANT, run_id, limit=1000)
            actions |= {(a.action_id, str(a.status)) for a in page.items if str(a.status) != "rejected"}
            listed = await self.store.list_events(TENANT, run_id, limit=1000)
            events[run_id] = [(e.seq, e.type) for e in listed if e.type not in REFUSAL_EVENTS]
            for approval in (await self.store.list_approvals(TENANT, run_id=run_id, limit=1000)).items:
                approvals[approval.approval_id] = approval.status
        return {"runs": runs, "actions": actions, "events": events, "approvals": approvals}

    def _time_passes(self) -> None:
        """What is due by the clock happens first, in transactions of its own (the watchdog's
        sweep): a run past its deadline expires, an approval past `decide_by` or `valid_until`
        expires and applies `on_expiry`. A step's own transaction would record the same expiry on
        its way (every transaction applies what is due), and that change is time's, not the step's:
        without this, a refused decision after `decide_by` "changed state" by recording the expiry."""
        self._run(self.store.sweep_expiries())
        self._forget_ended()

    def _refused_changes_nothing(self, step: Callable[[], Any]) -> Any:
        """Run a step; when it is refused (a WarrantError), the snapshot must be unchanged."""
        self._time_passes()
        before = self._run(self._snapshot())
        try:
            return self._run(step())
        except WarrantError:
            after = self._run(self._snapshot())
            assert after == before, "a refused step changed state"
            return None

    def _live(self) -> list[str]:
        return [run_id for run_id in self.model.runs if run_id in self.model.epochs]

    # -- rules -----------------------------------------------------------------------------
    @initialize()
    def first_run(self) -> None:
        """Every example starts with a leased run, so its steps act on something from the first one."""
        self.create()

    @rule()
    def create(self) -> None:
        run = self._run(self.store.create_run(OPS, parse_contract(contract(budgets=ROOT_BUDGETS))))
        self.model.runs.append(run.run_id)
        self.model.roots[run.lineage_id] = dict(run.limits)
        self.model.family[run.run_id] = run.lineage_id
        self._lease(run.run_id, takeover=False)

    def _lease(self, run_id: str, *, takeover: bool, by: Principal = OPS) -> None:
        self.workers += 1
        worker = f"worker-{self.workers}"
        grant = self._refused_changes_nothing(lambda: self.store.acquire_lease(by, run_id, worker, takeover=takeover))
        if grant is None:
            return
        run = self._run(self.store.get_run(TENANT, run_id))
        self.model.epochs[run_id] = run.epoch
        self.model.tokens.append(Token(grant.token, run_id, run.epoch, worker, by.key_id))

    @precondition(lambda self: self._live())
    @rule(data=st.data())
    def takeover(self, data: st.DataObject) -> None:
        self._lease(data.draw(st.sampled_from(self._live())), takeover=True)

    @precondition(lambda self: self._live())
    @rule(data=st.data())
    def lease_by_key(self, data: st.DataObject) -> None:
        """An API key of its own takes a live run's lease over (a key a later step may revoke)."""
        name = f"key-{len(self.model.keys) + 1}"
        key = self._run(
            self.store.create_api_key(
                KEY_ADMIN,
                name=name,
                roles=frozenset({"operator"}),
                key_sha256=api_key_hash(mint_api_key()),
                expires_in=None,
            )
        )
        self.model.keys.append(key.key_id)
        by = Principal(name, TENANT, frozenset({"operator"}), key_id=key.key_id)
        self._lease(data.draw(st.sampled_from(self._live())), takeover=True, by=by)

    @precondition(lambda self: self.model.keys)
    @rule(data=st.data())
    def revoke_key(self, data: st.DataObject) -> None:
        """Revoking a key kills every lease it granted that is still a run's current one."""
        key_id = data.draw(st.sampled_from(self.model.keys))
        self._time_passes()
        self._run(self.store.revoke_api_key(KEY_ADMIN, key_id, reason="compromised"))
        self.model.revoked.add(key_id)

    @precondition(lambda self: self._held())
    @rule(data=st.data(), tools=st.lists(st.sampled_from(sorted(CALLS)), min_size=1, max_size=5))
    def call(self, data: st.DataObject, tools: list[str]) -> None:
        """A burst of calls, each by a token the model holds live (dead ones: `call_dead`). Drawn
        from every token seen, most would be dead after a few takeovers, and few calls admitted."""
        for tool in tools:
            self._call(data.draw(st.sampled_from(self._held() or self.model.tokens)), tool)

    def _dead(self) -> list[Token]:
        return [
            t for t in self.model.tokens if self.model.epochs.get(t.run_id) != t.epoch or t.key_id in self.model.revoked
        ]

    def _superseded(self) -> list[Token]:
        """Tokens a takeover replaced, on runs whose current lease stands: fencing alone refuses them
        (where the current lease's key is revoked, `lease_revoked` would, and `call_dead` covers it)."""
        epochs = self.model.epochs
        holder_key = {t.run_id: t.key_id for t in self.model.tokens if epochs.get(t.run_id) == t.epoch}
        return [
            t
            for t in self.model.tokens
            if t.run_id in epochs and epochs[t.run_id] != t.epoch and holder_key.get(t.run_id) not in self.model.revoked
        ]

    @precondition(lambda self: self._superseded())
    @rule(data=st.data(), tool=st.sampled_from(sorted(CALLS)))
    def call_superseded(self, data: st.DataObject, tool: str) -> None:
        """The worker a takeover replaced calls on, its run still live: fencing's own case."""
        self._call(data.draw(st.sampled_from(self._superseded())), tool)

    def _held(self) -> list[Token]:
        dead = self._dead()
        return [t for t in self.model.tokens if t not in dead]

    @precondition(lambda self: self._dead())
    @rule(data=st.data(), tool=st.sampled_from(sorted(CALLS)))
    def call_dead(self, data: st.DataObject, tool: str) -> None:
        """A call by a token the model holds dead (superseded, its run ended, its key revoked)."""
        self._call(data.draw(st.sampled_from(self._dead())), tool)

    def _call(self, held: Token, tool: str) -> None:
        self._run(self.store.acknowledge_spec(token_hash(held.token)))
        self._time_passes()
        before = self._run(self._snapshot())
        result = self._run(self.gate.call(held.token, f"t__{tool}", CALLS[tool], None))
        if result.code is None:
            self.model.admitted.append((held.run_id, held.epoch))
            assert self.model.epochs.get(held.run_id) == held.epoch, "a call was admitted with a dead epoch"
            assert held.key_id not in self.model.revoked, "a call was admitted on a revoked key's lease"
            return
        if result.code == "approval_required" and result.structured is not None:
            approval_id = result.structured["error"].get("approval_id")
            if approval_id and approval_id not in self.model.pending:
                self.model.pending.append(approval_id)
            return
        if result.code in {"outcome_unknown", "tool_failed"}:
            return
        assert self._run(self._snapshot()) == before, f"a refused call ({result.code}) changed state"

    @precondition(lambda self: self.model.pending)
    @rule(data=st.data(), approve=st.booleans())
    def decide(self, data: st.DataObject, approve: bool) -> None:
        approval_id = data.draw(st.sampled_from(self.model.pending))
        self.model.pending.remove(approval_id)
        approval = self._run(self.store.get_approval(TENANT, approval_id))
        self._refused_changes_nothing(
            lambda: self.store.decide_approval(
                APPROVER, approval_id, approve=approve, note=None, expected_sha256=approval.payload_sha256
            )
        )

    @precondition(lambda self: self.model.pending)
    @rule(data=st.data(), approve=st.booleans())
    def decide_own(self, data: st.DataObject, approve: bool) -> None:
        """The principal that asked for an approval tries to decide it: refused, nothing changes."""
        approval_id = data.draw(st.sampled_from(self.model.pending))
        approval = self._run(self.store.get_approval(TENANT, approval_id))
        requester = Principal(approval.requested_by, TENANT, frozenset({"approver", "admin"}))
        decided = self._refused_changes_nothing(
            lambda: self.store.decide_approval(
                requester, approval_id, approve=approve, note=None, expected_sha256=approval.payload_sha256
            )
        )
        assert decided is None, "the requester decided its own approval"

    @precondition(lambda self: self.model.runs)
    @rule(data=st.data(), action=st.sampled_from(["pause", "resume", "cancel", "hard_cancel"]))
    def control(self, data: st.DataObject, action: str) -> None:
        run_id = data.draw(st.sampled_from(self.model.runs))
        if action == "pause":
            self._refused_changes_nothing(lambda: self.store.pause(OPS, run_id, "look"))
        elif action == "resume":
            self._refused_changes_nothing(lambda: self.store.resume(OPS, run_id, "go on"))
        else:
            hard = action == "hard_cancel"
            self._refused_changes_nothing(lambda: self.store.cancel(OPS, run_id, "stop", hard=hard))
            self._forget_ended()

    def _forget_ended(self) -> None:
        """A run that ended (its own cancel, or its parent's) has no live epoch any more."""
        for run in self._run(self._runs()):
            if run.status.terminal:
                self.model.epochs.pop(run.run_id, None)

    @precondition(lambda self: "successor" not in KNOWN_OPEN and self.model.runs)
    @rule(data=st.data())
    def successor(self, data: st.DataObject) -> None:
        run_id = data.draw(st.sampled_from(self.model.runs))
        made = self._refused_changes_nothing(
            lambda: self.store.create_successor(OPS, run_id, reason="carry on", extend_by=None)
        )
        if made is not None:
            self.model.runs.append(made.run_id)
            self.model.family[made.run_id] = self.model.family[run_id]
            self._lease(made.run_id, takeover=False)

    @precondition(lambda self: self._live())
    @rule(data=st.data())
    def child(self, data: st.DataObject) -> None:
        parent = data.draw(st.sampled_from(self._live()))
        made = self._refused_changes_nothing(lambda: self.store.create_child(OPS, parent, parse_contract(CHILD)))
        if made is not None:
            self.model.runs.append(made.run_id)
            self.model.family[made.run_id] = self.model.family[parent]
            self._lease(made.run_id, takeover=False)

    @precondition(lambda self: self.model.runs)
    @rule(data=st.data(), writes=st.integers(min_value=0, max_value=6))
    def revise(self, data: st.DataObject, writes: int) -> None:
        run_id = data.draw(st.sampled_from(self.model.runs))
        run = self._run(self.store.get_run(TENANT, run_id))
        body = merge_patch(run.contract, {"spec_version": f"{run.spec_version}+", "budgets": {"writes": writes}})
        revised = self._refused_changes_nothing(
            lambda: self.store.revise(
                OPS,
                run_id,
                contract=parse_contract(body),
                reason="scope",
                widening=False,
                base_spec_version=run.spec_version,
            )
        )
        if revised is not None:
            self.model.ceilings[run_id] = {
                dim: max(revised.limits[dim], revised.spent[dim] + revised.reserved[dim]) for dim in DIMS
            }

    @precondition(lambda self: self.model.runs)
    @rule(data=st.data(), amount=st.integers(min_value=1, max_value=30))
    def usage(self, data: st.DataObject, amount: int) -> None:
        run_id = data.draw(st.sampled_from(self.model.runs))
        done = self._refused_changes_nothing(
            lambda: self.store.report_usage(OPS, run_id, kind="model", amount=amount, note=None, ref=None)
        )
        if done is not None:
            root = self.model.family[run_id]
            self.model.usage[root] = self.model.usage.get(root, 0) + amount

    @rule(seconds=st.sampled_from([1, 30, 200]))
    def tick(self, seconds: int) -> None:
        self.clock.advance(seconds)

    @rule()
    def restart(self) -> None:
        """The gateway restarts: the store closed and reopened on the same file or database."""
        self._run(self.store.close())
        self.store = self.backend.store(self.clock, process_id="model-gateway")
        self._run(self.store.open())
        self.gate = Gate(self.store, self.tools.catalog(), self.clock, safeguards=self.safeguards)

    # -- invariants, against the real rows ---------------------------------------------------
    @invariant()
    def no_lineage_spent_more_than_its_contract(self) -> None:
        runs = self._run(self._runs())
        totals: dict[str, dict[str, int]] = {root: dict.fromkeys(DIMS, 0) for root in self.model.roots}
        for run in runs:
            root = self.model.family[run.run_id]
            # An ended child's spend is already folded into its parent's `spent`.
            if run.parent_run_id is not None and run.status.terminal:
                continue
            for dim in DIMS:
                totals[root][dim] += run.spent[dim]
            if run.parent_run_id is None or not run.status.terminal:
                for dim in ("tool_calls", "writes"):
                    ceiling = self.model.ceilings.get(run.run_id, run.limits)[dim]
                    assert run.spent[dim] <= ceiling, f"{run.run_id} spent more {dim} than its limit"
        for root, limits in self.model.roots.items():
            net = dict(totals[root], spend=totals[root]["spend"] - self.model.usage.get(root, 0))
            for dim in DIMS:
                assert net[dim] <= limits[dim], f"lineage {root} spent {net[dim]} {dim} of {limits[dim]}"

    @invariant()
    def no_call_was_admitted_with_a_dead_epoch(self) -> None:
        for run in self._run(self._runs()):
            for action in self._run(self.store.list_actions(TENANT, run.run_id, limit=1000)).items:
                if action.epoch is not None and str(action.status) != "rejected":
                    assert 1 <= action.epoch <= run.epoch

    @invariant()
    def no_approval_was_used_twice_or_by_its_requester(self) -> None:
        used: dict[str, int] = {}
        for run_id in self.model.runs:
            for action in self._run(self.store.list_actions(TENANT, run_id, limit=1000)).items:
                if action.approval_id is not None and str(action.status) != "rejected":
                    used[action.approval_id] = used.get(action.approval_id, 0) + 1
            for approval in self._run(self.store.list_approvals(TENANT, run_id=run_id, limit=1000)).items:
                assert approval.decided_by is None or approval.decided_by != approval.requested_by
        assert all(count == 1 for count in used.values()), used

    @invariant()
    def the_ledger_verifies(self) -> None:
        report = self._run(self.store.verify_ledger(TENANT))
        assert report.ok, report.as_dict()


# The negative controls: the suite's example count, longer sequences, no shrinking (see `_finds`).
CONTROL_SETTINGS = settings(SETTINGS, stateful_step_count=50, phases=[Phase.generate], report_multiple_bugs=False)


def _examples(make: Callable[[], Backend]) -> None:
    global _fresh_backend
    _fresh_backend = make
    try:
        run_state_machine_as_test(GateModel, settings=SETTINGS)
    finally:
        _fresh_backend = None


@pytest.fixture
def sqlite_files(tmp_path: Path) -> Iterator[Callable[[], Backend]]:
    def make() -> Backend:
        return SQLiteBackend(Path(tempfile.mkdtemp(dir=tmp_path)) / "warrant.db")

    yield make


def test_random_sequences_keep_every_invariant_on_sqlite(sqlite_files: Callable[[], Backend]) -> None:
    _examples(sqlite_files)


def test_random_sequences_keep_every_invariant_on_postgres(postgres_session: PostgresBackend) -> None:
    def make() -> Backend:
        postgres_session.clear()
        return postgres_session

    _examples(make)


def _finds(make: Callable[[], Backend], bug: str) -> None:
    """A negative control: the state machine, at the suite's own example count, must fail naming `bug`.

    Without shrinking (the failure is the point, not its smallest form), and with longer sequences
    than the suite's (CONTROL_SETTINGS): a control that needs a lucky sequence stops finding its bug
    whenever a new rule reshuffles the derandomized examples, which is how the budget control went
    blind once. Measured with random seeds at 6 examples: 20 steps found each bug in 7 of 10 seeds,
    50 steps in 10 of 10.
    """
    global _fresh_backend
    _fresh_backend = make
    try:
        with pytest.raises(AssertionError, match=bug):
            run_state_machine_as_test(GateModel, settings=CONTROL_SETTINGS)
    finally:
        _fresh_backend = None


TIGHT = {"spend": "0.10", "tool_calls": 2, "writes": 1, "active_seconds": 100000}


def test_the_model_finds_a_store_that_skips_the_budget_check(
    sqlite_files: Callable[[], Backend], monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the store's budget check sabotaged, the state machine must fail. The root budget is tight
    (two calls, one write), so a lineage passes it within a few admitted calls."""
    import gateway.store.sql.gate

    monkeypatch.setattr(gateway.store.sql.gate, "call_refusal", lambda run, facts, now: None)
    monkeypatch.setattr(sys.modules[__name__], "ROOT_BUDGETS", TIGHT)
    _finds(sqlite_files, "spent")


def test_the_model_finds_a_gate_that_admits_a_stale_epoch(
    sqlite_files: Callable[[], Backend], monkeypatch: pytest.MonkeyPatch
) -> None:
    """With fencing sabotaged (the drill's switch: any token's epoch passes as the run's current one,
    at the gate and in the store's admit), a superseded token's call is admitted: the model names it."""
    monkeypatch.setattr(GateModel, "safeguards", Safeguards(sabotage=["fencing"]))
    _finds(sqlite_files, "dead epoch|revoked key")


class _Pick:
    """A stand-in for `st.data()` that draws one given value: a rule driven by hand."""

    def __init__(self, value: Any) -> None:
        self.value = value

    def draw(self, strategy: Any) -> Any:
        return self.value


@pytest.mark.parametrize("time_first", [True, False])
def test_a_decision_refused_after_its_deadline_changed_nothing_time_did(
    sqlite_files: Callable[[], Backend], monkeypatch: pytest.MonkeyPatch, time_first: bool
) -> None:
    """The long run's finding (WARRANT_MODEL_EXAMPLES=40, seed 2317...1218): an approval past
    `decide_within`, then a decision. The decision is refused `approval_expired`, and its transaction
    records the expiry and applies `on_expiry` (a pause): a change of time, due whoever comes next,
    not of the call. The model applies what is due first, in its own transaction (`_time_passes`),
    so the refused step is compared with the state after it; without that it reports the expiry as
    the refused step's change (the control case)."""
    global _fresh_backend
    _fresh_backend = sqlite_files
    if not time_first:
        monkeypatch.setattr(GateModel, "_time_passes", lambda self: None)
    machine = GateModel()
    try:
        machine.first_run()
        machine._call(machine.model.tokens[0], "approve")
        (approval_id,) = machine.model.pending
        machine.tick(200)  # decide_within is 2m
        if time_first:
            machine.decide(data=_Pick(approval_id), approve=True)
            approval = machine._run(machine.store.get_approval(TENANT, approval_id))
            assert approval.status is ApprovalStatus.EXPIRED
        else:
            with pytest.raises(AssertionError, match="a refused step changed state"):
                machine.decide(data=_Pick(approval_id), approve=True)
    finally:
        machine.teardown()
        _fresh_backend = None
