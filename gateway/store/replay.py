"""Replaying a run's chain against the state rows the gate decides from. Pure: fed by the rows.

The chain says what happened to each action and each approval of a run (`action_admitted`,
`action_settled`, `action_rejected`; `approval_requested`, `approval_<status>`,
`approval_restored`, and an admit naming the approval it used). The current `status` of every
`actions` and `approvals` row must be the one its last chained statement gives it, and every
action or approval the chain names must still have its row. One row may stand unchained: an
admitted read, whose one entry is written when it settles. From entry version 2 an action row's
`reason`, `created_at` and `settled_at` are the chain's too (the bundle check's rule; an action
only version-1 entries describe is exempt). Two edits behind the gateway's back change what the
gate does, and both are caught here: a succeeded write marked `failed` (the
identical write would be executed again) and a denied approval marked `approved` (the denied
payload would be executed). Every body the chain needs stored (an admitted write's payload; from
entry version 2 also results, approvals' payloads and contracts) is still stored, or a later
`bodies_purged` entry of the chain names it; every action row marked purged is named by one
(retention's purge writes one for every run it touches).

The run row: its status and spec_version as chained; its spent counters and epoch exactly what
the chain accounts for, so a reset of spend, a counter raised to starve the run, or an epoch moved
either way is named; its reserved counters exactly what the chain holds in flight (admitted and
unknown actions, children's carves; a read in flight is known by its row until it settles).
Whole-run deletion and a rollback to an older MAC'd head need an anchor kept outside the
database (anchor.py); docs/decisions/0020-ledger-and-state-rows.md.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Set
from dataclasses import dataclass, field
from typing import Any

from gateway.clock import isoformat
from gateway.domain.lifecycle import RunStatus
from gateway.domain.units import headroom, parse_money
from gateway.store.chain import BadEntry, EntryRow, entry_version

_RUN_STATUSES = frozenset(f"run_{status.value}" for status in RunStatus)

_APPROVAL_DECIDED = "approval_"
_IN_FLIGHT = frozenset({"admitted", "unknown"})


@dataclass
class ChainState:
    """What one run's chain says the status of the run and of each of its actions and approvals is now."""

    run: dict[str, str] = field(default_factory=dict)  # the run row's status and spec_version

    actions: dict[str, str] = field(default_factory=dict)
    approvals: dict[str, str] = field(default_factory=dict)
    # Bodies the chain needs stored -> the seq of the last version-2 entry naming one (0: named by
    # version-1 entries only, which any purge entry excuses, as before). Version 1: admitted writes'
    # payloads; version 2 also results, approvals' payloads and contracts (never a read's payload,
    # whose body is stored best-effort: KnownBodies).
    bodies: dict[str, int] = field(default_factory=dict)
    purged: dict[str, int] = field(default_factory=dict)  # body -> seq of the last `bodies_purged` naming it
    purged_actions: set[str] = field(default_factory=set)  # actions a `bodies_purged` entry names
    v1_actions: set[str] = field(default_factory=set)  # actions a version-1 entry describes
    # Action -> its row's `reason`, `created_at` and `settled_at` as version-2 entries state them
    # (times as the entries write them, RFC 3339); a version-1 entry states none of them.
    stated: dict[str, dict[str, Any]] = field(default_factory=dict)
    # The run row's counters, replayed: spent only grows (settles, usage, a child's return), the
    # reservation is what is in flight (admitted or unknown actions, children's carves).
    effects: dict[str, str] = field(default_factory=dict)  # action -> effect, from its admission
    spend: list[tuple[str, ...]] = field(default_factory=list)  # money added to spent, one tuple per add
    calls: int = 0  # charged calls: succeeded, or failed once sent
    writes: int = 0  # succeeded writes
    held: dict[str, dict[str, Any] | None] = field(
        default_factory=dict
    )  # in flight -> its reservation (None: unchained)
    carved: dict[str, dict[str, Any]] = field(default_factory=dict)  # live child -> its carve
    epoch: int = 0  # the newest lease granted, one more once cancelled
    cancelled: bool = False
    revoked: bool = False  # the newest lease's granting key was revoked since

    def feed(self, row: EntryRow) -> None:
        """Fold one entry (already verified as linked and unedited) into the state."""
        body = json.loads(row.body)
        data = body.get("data") or {}
        if not isinstance(data, dict):
            return
        v2 = entry_version(body) >= 2
        kind = row.type
        if kind == "run_created":
            self.run["status"] = RunStatus.RUNNING.value
            if isinstance(data.get("spec_version"), str):
                self.run["spec_version"] = data["spec_version"]
        elif kind in _RUN_STATUSES:  # every status move is chained as run_<status> (SqlBase._set_status)
            self.run["status"] = kind[len("run_") :]
            # A cancel and a fail each bump the epoch once (EndingOps._cancel, EndingOps._fail); a run
            # ends one way only, so one flag says whether the bump is counted already.
            if kind in ("run_cancelled", "run_failed") and not self.cancelled:
                self.cancelled, self.epoch = True, self.epoch + 1
        elif kind == "run_revised" and isinstance(data.get("to"), str):
            self.run["spec_version"] = data["to"]
        elif kind == "lease_granted" and type(data.get("epoch")) is int:
            self.epoch, self.revoked = max(self.epoch, data["epoch"]), False
        elif kind == "lease_revoked":
            self.revoked = True
        elif kind == "usage_reported" and isinstance(data.get("amount"), str):
            self.spend.append((data["amount"],))
        elif kind == "child_created" and isinstance(data.get("child_run_id"), str):
            self.carved[data["child_run_id"]] = _dims(data.get("carved"))
        elif kind == "child_ended" and isinstance(data.get("child_run_id"), str):
            self.carved.pop(data["child_run_id"], None)
            spent, held = _dims(data.get("spent")), _dims(data.get("reserved"))
            self.spend.append((str(spent.get("spend", "0")), str(held.get("spend", "0"))))
            self.calls += _count(spent, "tool_calls") + _count(held, "tool_calls")
            self.writes += _count(spent, "writes") + _count(held, "writes")
        if v2 and isinstance(data.get("contract_sha256"), str):
            self.bodies[data["contract_sha256"]] = row.seq
        action_id = data.get("action_id")
        if kind == "bodies_purged":
            self.purged.update((b, row.seq) for b in data.get("bodies") or () if isinstance(b, str))
            self.purged_actions.update(a for a in data.get("actions") or () if isinstance(a, str))
        if isinstance(action_id, str) and kind.startswith("action_") and not v2:
            self.v1_actions.add(action_id)
        if v2 and isinstance(action_id, str):
            self._state_row(kind, action_id, data, body.get("at"))
        if kind == "action_admitted" and isinstance(action_id, str):
            self.actions[action_id] = "admitted"
            self.effects[action_id] = str(data.get("effect"))
            self.held[action_id] = _dims(data.get("reserved"))
            if data.get("effect") == "write" and isinstance(data.get("payload_sha256"), str):
                self._needs(data["payload_sha256"], row.seq if v2 else 0)
            approval_id = data.get("approval_id")
            if isinstance(approval_id, str):
                self.approvals[approval_id] = "used"
        elif kind == "action_settled" and isinstance(action_id, str) and isinstance(data.get("status"), str):
            self._settled(action_id, data, row.seq if v2 else None)
        elif kind == "action_rejected" and isinstance(action_id, str):
            self.actions[action_id] = "rejected"
        elif kind == "action_compensated" and isinstance(action_id, str):
            self.actions[action_id] = "compensated"  # its compensating call succeeded (docs/compensation.md)
        approval_id = data.get("approval_id")
        if not kind.startswith(_APPROVAL_DECIDED) or not isinstance(approval_id, str):
            return
        if kind == "approval_requested":
            self.approvals[approval_id] = "pending"
            if v2 and isinstance(data.get("payload_sha256"), str):
                self._needs(data["payload_sha256"], row.seq)
        elif kind == "approval_restored" and isinstance(data.get("status"), str):
            self.approvals[approval_id] = data["status"]
        else:
            self.approvals[approval_id] = kind[len(_APPROVAL_DECIDED) :]

    def _state_row(self, kind: str, action_id: str, data: Mapping[str, Any], at: Any) -> None:
        """What a version-2 action entry says of its row's reason and times (the bundle check's
        rule, ledger_bundle.py `_Ledger.observe`)."""
        if kind == "action_admitted":
            self.stated.setdefault(action_id, {}).update(reason=None, created_at=at, settled_at=None)
        elif kind == "action_rejected":
            self.stated.setdefault(action_id, {}).update(reason=data.get("reason"), created_at=at, settled_at=at)
        elif kind == "action_settled":
            stated = self.stated.setdefault(action_id, {})
            stated.update(reason=data.get("reason"), settled_at=at)
            if "admitted_at" in data:  # a read's one entry
                stated["created_at"] = data["admitted_at"]

    def _needs(self, sha256: str, seq: int) -> None:
        self.bodies[sha256] = max(seq, self.bodies.get(sha256, 0))

    def _settled(self, action_id: str, data: Mapping[str, Any], v2_seq: int | None) -> None:
        status = data["status"]
        self.actions[action_id] = status
        if isinstance(data.get("effect"), str):  # a read's one entry states its intent
            self.effects.setdefault(action_id, data["effect"])
            if "reserved" in data:
                self.held.setdefault(action_id, _dims(data["reserved"]))
        if v2_seq is not None and isinstance(data.get("result_sha256"), str):
            self._needs(data["result_sha256"], v2_seq)
        if status == "unknown":  # its reservation stays held until it is reconciled
            self.held.setdefault(action_id, None)
            return
        held = self.held.pop(action_id, None)
        if status == "succeeded" or (status == "failed" and data.get("sent") is not False):
            # Every call holds one tool call (Reservation); a write also one write.
            self.calls += _count(held, "tool_calls") if held is not None else 1
            if status == "succeeded":
                write = self.effects.get(action_id, data.get("effect")) == "write"
                self.writes += _count(held, "writes") if held is not None else int(write)
        if isinstance(data.get("actual_spend"), str):
            self.spend.append((data["actual_spend"],))


def _dims(value: Any) -> dict[str, Any]:
    return dict(value) if isinstance(value, dict) else {}


def _count(dims: Mapping[str, Any] | None, dim: str) -> int:
    value = (dims or {}).get(dim)
    return value if type(value) is int else 0


def check_rows(
    run_id: str, state: ChainState, actions: Mapping[str, str], approvals: Mapping[str, str]
) -> BadEntry | None:
    """The first row (`actions`/`approvals`: id -> current status) the chain contradicts, if any."""
    for noun, derived, rows in (("action", state.actions, actions), ("approval", state.approvals, approvals)):
        for row_id, status in sorted(rows.items()):
            chained = derived.get(row_id)
            if chained is None and noun == "action" and status == "admitted":
                continue  # a read in flight: its one entry is chained when it settles
            if chained is None:
                return BadEntry(run_id, None, f"{noun}_unchained", f"{noun} {row_id} has a row the chain never names")
            if chained != status:
                return BadEntry(
                    run_id, None, f"{noun}_row_edited", f"{noun} {row_id} is {status}, the chain says {chained}"
                )
        for row_id in sorted(set(derived) - set(rows)):
            return BadEntry(run_id, None, f"{noun}_row_missing", f"{noun} {row_id} is in the chain, its row is gone")
    return None


def check_row_fields(run_id: str, state: ChainState, rows: Mapping[str, Mapping[str, Any]]) -> BadEntry | None:
    """The first `reason`, `created_at` or `settled_at` of an action row (`rows`: id -> those
    columns, times as the store keeps them) that a version-2 entry states otherwise. Only what
    version-2 entries state is compared: an action only version-1 entries describe is exempt."""
    for action_id, stated in sorted(state.stated.items()):
        row = rows.get(action_id)
        if row is None:
            continue  # a row gone is check_rows' to name
        for column in ("reason", "created_at", "settled_at"):
            if column not in stated:
                continue
            value = row.get(column)
            if isinstance(value, int | float) and not isinstance(value, bool):
                value = isoformat(value)
            if value != stated[column]:
                return BadEntry(
                    run_id,
                    None,
                    "action_row_edited",
                    f"action {action_id}'s {column} is {value}, the chain says {stated[column]}",
                    field=column,
                )
    return None


def check_run(
    run_id: str, state: ChainState, row: Mapping[str, Any], held_rows: Mapping[str, Mapping[str, int]] | None = None
) -> BadEntry | None:
    """The first column of the run row the chain contradicts, if any: `status` and `spec_version`
    as chained; `spend_spent`, `tool_calls_spent`, `writes_spent` and `epoch` exactly what the
    chain accounts for (a counter reset, or one raised to starve the run, is named); the reserved
    counters exactly what the chain holds in flight (admitted and unknown actions, live children's
    carves), where `held_rows` (action id -> the row's reservation, of the run's admitted and
    unknown actions) gives what the chain does not state: a read in flight, whose one entry is
    written when it settles, or a version-1 read marked unknown; `lease_revoked_at` set while the
    newest lease's key is revoked."""
    for column, chained in sorted(state.run.items()):
        if row.get(column) != chained:
            return BadEntry(
                run_id, None, "run_row_edited", f"the run's {column} is {row.get(column)}, the chain says {chained}"
            )
    if not row:
        return None
    currency = row["currency"]
    spent = 0
    for add in state.spend:
        spent += headroom(spent, sum(_money(m, currency) for m in add))
    expected = {
        "spend_spent": spent,
        "tool_calls_spent": state.calls,
        "writes_spent": state.writes,
        "epoch": state.epoch,
    }
    if held_rows is not None:
        # Each reservation in minor units: the chain's are wire money, the rows' integers already.
        held = [_minor(c, currency) for c in state.carved.values()]
        for action_id, status in state.actions.items():
            if status in _IN_FLIGHT:
                wire = state.held.get(action_id)
                held.append(_minor(wire, currency) if wire is not None else dict(held_rows.get(action_id, {})))
        held += [dict(r) for a, r in held_rows.items() if a not in state.actions]  # reads in flight
        for dim in ("spend", "tool_calls", "writes"):
            expected[f"{dim}_reserved"] = sum(_count(h, dim) for h in held)
    for column, value in expected.items():
        if not isinstance(row.get(column), int) or row[column] != value:
            return BadEntry(
                run_id,
                None,
                "run_row_edited",
                f"the run's {column} is {row.get(column)}, the chain accounts for {value}",
            )
    if state.revoked and row.get("lease_revoked_at") is None:
        return BadEntry(run_id, None, "run_row_edited", "the run's lease is not revoked, the chain says it was")
    return None


def _minor(wire: Mapping[str, Any], currency: str) -> dict[str, int]:
    """A reservation as chained (spend as a money string) in minor units."""
    spend = wire.get("spend")
    return {**wire, "spend": _money(spend, currency) if isinstance(spend, str) else 0}


def _money(text: str, currency: str) -> int:
    try:
        return parse_money(text, currency)
    except ValueError:
        return 0  # not money the gateway wrote; the entry's own hash already vouches for it


def check_bodies(run_id: str, state: ChainState, present: Set[str]) -> BadEntry | None:
    """The first body the chain needs stored that is gone with no purge entry for it (for a body a
    version-2 entry names, a purge entry after that entry: a body named again was stored again)."""
    for sha256 in sorted(set(state.bodies) - present):
        if state.purged.get(sha256, -1) < state.bodies[sha256]:
            return BadEntry(run_id, None, "body_missing", f"body {sha256} is gone and no purge entry names it")
    return None


def check_purge_marks(run_id: str, state: ChainState, marked: Iterable[str]) -> BadEntry | None:
    """The first action row marked purged (`bodies_purged_at`) that no `bodies_purged` entry of its
    chain names. An action only version-1 entries describe is not held to it: before version 2 a
    purge that deleted none of a run's bodies wrote that run no entry."""
    for action_id in sorted(marked):
        if action_id not in state.purged_actions and action_id not in state.v1_actions:
            return BadEntry(
                run_id, None, "purge_unrecorded", f"action {action_id} is marked purged and no purge entry names it"
            )
    return None


def replayed(rows: Iterable[EntryRow], state: ChainState) -> Iterable[EntryRow]:
    """`rows`, passed through while each is folded into `state` (one read of the chain serves both)."""
    for row in rows:
        yield row
        state.feed(row)
