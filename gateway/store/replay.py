"""Replaying a run's chain against the state rows the gate decides from. Pure: fed by the rows.

The chain says what happened to each action and each approval of a run (`action_admitted`,
`action_settled`, `action_rejected`; `approval_requested`, `approval_<status>`,
`approval_restored`, and an admit naming the approval it used). The current `status` of every
`actions` and `approvals` row must be the one its last chained statement gives it, and every
action or approval the chain names must still have its row. One row may stand unchained: an
admitted read, whose one entry is written when it settles. Two edits behind the gateway's back
change what the gate does, and both are caught here: a succeeded write marked `failed` (the
identical write would be executed again) and a denied approval marked `approved` (the denied
payload would be executed). And every admitted write's payload body is still stored, or a
`bodies_purged` entry of the chain names it (retention's purge writes one).

The run row: its status and spec_version as chained, and its spent counters and epoch never
below what the chain shows (they only grow), so a reset of spend or a wound-back epoch is named.
Whole-run deletion and a rollback to an older MAC'd head need an anchor kept outside the
database (anchor.py); docs/decisions.md, "The ledger and the state rows".
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Set
from dataclasses import dataclass, field
from typing import Any

from gateway.domain.lifecycle import RunStatus
from gateway.domain.units import MAX_MONEY, parse_money
from gateway.store.chain import BadEntry, EntryRow

_RUN_STATUSES = frozenset(f"run_{status.value}" for status in RunStatus)

_APPROVAL_DECIDED = "approval_"


@dataclass
class ChainState:
    """What one run's chain says the status of the run and of each of its actions and approvals is now."""

    run: dict[str, str] = field(default_factory=dict)  # the run row's status and spec_version

    actions: dict[str, str] = field(default_factory=dict)
    approvals: dict[str, str] = field(default_factory=dict)
    bodies: set[str] = field(default_factory=set)  # the payloads of admitted writes: stored before dispatch
    purged: set[str] = field(default_factory=set)  # bodies a `bodies_purged` entry names
    # Floors of the run row's counters: what the chain shows spent can only have grown since (spent
    # never goes down: settles, usage and a child's return only add), so a counter reset is named.
    effects: dict[str, str] = field(default_factory=dict)  # action -> effect, from its admission
    spend: list[str] = field(default_factory=list)  # money strings: succeeded actions' costs, usage reported
    calls: int = 0  # succeeded actions
    writes: int = 0  # succeeded writes
    epoch: int = 0  # the newest lease granted
    revoked: bool = False  # the newest lease's granting key was revoked since

    def feed(self, row: EntryRow) -> None:
        """Fold one entry (already verified as linked and unedited) into the state."""
        data = json.loads(row.body).get("data") or {}
        if not isinstance(data, dict):
            return
        kind = row.type
        if kind == "run_created":
            self.run["status"] = RunStatus.RUNNING.value
            if isinstance(data.get("spec_version"), str):
                self.run["spec_version"] = data["spec_version"]
        elif kind in _RUN_STATUSES:  # every status move is chained as run_<status> (SQLiteBase._set_status)
            self.run["status"] = kind[len("run_") :]
        elif kind == "run_revised" and isinstance(data.get("to"), str):
            self.run["spec_version"] = data["to"]
        elif kind == "lease_granted" and type(data.get("epoch")) is int:
            self.epoch, self.revoked = max(self.epoch, data["epoch"]), False
        elif kind == "lease_revoked":
            self.revoked = True
        elif kind == "usage_reported" and isinstance(data.get("amount"), str):
            self.spend.append(data["amount"])
        action_id = data.get("action_id")
        if kind == "bodies_purged":
            self.purged.update(b for b in data.get("bodies") or () if isinstance(b, str))
        if kind == "action_admitted" and isinstance(action_id, str):
            self.actions[action_id] = "admitted"
            self.effects[action_id] = str(data.get("effect"))
            if data.get("effect") == "write" and isinstance(data.get("payload_sha256"), str):
                self.bodies.add(data["payload_sha256"])
            approval_id = data.get("approval_id")
            if isinstance(approval_id, str):
                self.approvals[approval_id] = "used"
        elif kind == "action_settled" and isinstance(action_id, str) and isinstance(data.get("status"), str):
            self.actions[action_id] = data["status"]
            if data["status"] == "succeeded":
                self.calls += 1
                self.writes += int(self.effects.get(action_id, data.get("effect")) == "write")
                if isinstance(data.get("actual_spend"), str):
                    self.spend.append(data["actual_spend"])
        elif kind == "action_rejected" and isinstance(action_id, str):
            self.actions[action_id] = "rejected"
        approval_id = data.get("approval_id")
        if not kind.startswith(_APPROVAL_DECIDED) or not isinstance(approval_id, str):
            return
        if kind == "approval_requested":
            self.approvals[approval_id] = "pending"
        elif kind == "approval_restored" and isinstance(data.get("status"), str):
            self.approvals[approval_id] = data["status"]
        else:
            self.approvals[approval_id] = kind[len(_APPROVAL_DECIDED) :]


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


def check_run(run_id: str, state: ChainState, row: Mapping[str, Any]) -> BadEntry | None:
    """The first column of the run row the chain contradicts, if any: `status` and `spec_version`
    as chained; `spend_spent`, `tool_calls_spent`, `writes_spent` and `epoch` at least what the
    chain shows (they only grow); `lease_revoked_at` set while the newest lease's key is revoked."""
    for column, chained in sorted(state.run.items()):
        if row.get(column) != chained:
            return BadEntry(
                run_id, None, "run_row_edited", f"the run's {column} is {row.get(column)}, the chain says {chained}"
            )
    if not row:
        return None
    floors = {
        "spend_spent": min(MAX_MONEY, sum(_money(m, row["currency"]) for m in state.spend)),
        "tool_calls_spent": state.calls,
        "writes_spent": state.writes,
        "epoch": state.epoch,
    }
    for column, floor in floors.items():
        if not isinstance(row.get(column), int) or row[column] < floor:
            return BadEntry(
                run_id, None, "run_row_edited", f"the run's {column} is {row.get(column)}, the chain shows {floor}"
            )
    if state.revoked and row.get("lease_revoked_at") is None:
        return BadEntry(run_id, None, "run_row_edited", "the run's lease is not revoked, the chain says it was")
    return None


def _money(text: str, currency: str) -> int:
    try:
        return parse_money(text, currency)
    except ValueError:
        return 0  # not money the gateway wrote; the entry's own hash already vouches for it


def check_bodies(run_id: str, state: ChainState, present: Set[str]) -> BadEntry | None:
    """The first write payload the chain names whose body is gone with no purge entry for it."""
    for sha256 in sorted(state.bodies - state.purged - present):
        return BadEntry(run_id, None, "body_missing", f"body {sha256} is gone and no purge entry names it")
    return None


def replayed(rows: Iterable[EntryRow], state: ChainState) -> Iterable[EntryRow]:
    """`rows`, passed through while each is folded into `state` (one read of the chain serves both)."""
    for row in rows:
        yield row
        state.feed(row)
