"""The checks every case shares, from ground truth: the destinations' own databases, the budgets,
the ledger, and every action's state.

    duplicates  rows with the same content at a destination: the drill never asks for the same
                object twice on purpose, so a second one is a duplicate side effect
    overspend   a budget dimension whose spent (or spent + reserved) passed its limit, in any run
    ledger      GET /api/ledger/verify answers ok (through every replica)
    actions     every action is succeeded, failed, unknown or rejected; all but succeeded carry a code
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from gateway.drill.world import World

# (service attribute, table, the columns that make two rows the same object)
IDENTITY = (
    ("crm", "contacts", ("email", "name", "company")),
    ("crm", "deals", ("contact_id", "title", "amount")),
    ("crm", "notes", ("contact_id", "text")),
    ("mail", "messages", ("to_address", "subject", "body")),
)
SETTLED = {"succeeded", "failed", "unknown", "rejected", "compensated"}


@dataclass
class Verdict:
    duplicates: int = 0
    duplicate_rows: list[str] = field(default_factory=list)
    overspend: list[str] = field(default_factory=list)
    ledger_ok: bool = False
    ledger: dict[str, Any] = field(default_factory=dict)
    action_problems: list[str] = field(default_factory=list)
    states: Counter[str] = field(default_factory=Counter)

    @property
    def problems(self) -> list[str]:
        out = [f"duplicate side effect: {row}" for row in self.duplicate_rows]
        out += [f"overspend: {item}" for item in self.overspend]
        if not self.ledger_ok:
            out.append(f"the ledger does not verify: {self.ledger.get('first_bad') or self.ledger}")
        return out + self.action_problems


def duplicates(world: World) -> list[str]:
    found = []
    for service_name, table, columns in IDENTITY:
        service = getattr(world, service_name)
        counts = Counter(tuple(row[c] for c in columns) for row in service.rows(table))
        for key, count in counts.items():
            if count > 1:
                found.append(f"{service_name}.{table} {dict(zip(columns, key, strict=True))} x{count}")
    return found


def _amount(value: Any) -> Decimal:
    return Decimal(str(value))


async def judge(world: World) -> Verdict:
    verdict = Verdict()
    verdict.duplicate_rows = duplicates(world)
    verdict.duplicates = len(verdict.duplicate_rows)
    for run in await world.runs():
        detail = await world.run(run["run_id"])
        for dim, budget in detail["budgets"].items():
            if dim == "active_seconds":
                continue
            limit, spent, reserved = (_amount(budget[k]) for k in ("limit", "spent", "reserved"))
            if spent > limit or spent + reserved > limit:
                verdict.overspend.append(
                    f"{run['run_id']} {dim}: spent {budget['spent']} + reserved {budget['reserved']} "
                    f"> limit {budget['limit']}"
                )
        for action in await world.actions(run["run_id"]):
            status = action["status"]
            verdict.states[status] += 1
            if status not in SETTLED:
                verdict.action_problems.append(f"action {action['action_id']} is left {status}")
            elif status not in ("succeeded", "compensated") and not action.get("code"):
                verdict.action_problems.append(f"action {action['action_id']} is {status} without a code")
    # Every replica verifies the one ledger they share.
    for i, replica in enumerate(world.replicas):
        ledger = await world.ok("GET", "/api/ledger/verify", "auditor", replica=i)
        if i == 0 or not ledger.get("ok"):
            verdict.ledger = ledger if len(world.replicas) == 1 else {**ledger, "replica": replica.name}
    verdict.ledger_ok = bool(verdict.ledger.get("ok"))
    return verdict
