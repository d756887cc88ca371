"""Every contract the tests use, built here and nowhere else (issue 22).

`contract(**changes)` is the base a test changes what it is about in: a run over the API tests'
`shop` adapter, a person (ana) as its owner, budgets a short test does not exhaust. A change to
`budgets` or `authority` is merged into the base's (so `budgets={"writes": 1}` keeps the other
budgets); any other key replaces the base's value, and `DROP` as a value removes the key.

The named variants are shapes several folders share:

    gate_contract    the store and gate tests' contract (tests/harness.py's tools, `t__*`)
    child_contract   a small child carved out of a `gate_contract` parent (spec `c1`)
    design_contract  the example contract DESIGN.md shows as the body of `POST /api/runs`

A contract literal (a dict with both "goal" and "budgets") anywhere else under tests/ fails
tests/unit/test_contract_literals.py, unless the line above it says `# contract literal:` and why
(a test of contract parsing itself, which has to spell the input out).
"""

from __future__ import annotations

import copy
from typing import Any, Final

DROP: Final = object()  # a change's value that removes the key from the contract

_MERGED = ("budgets", "authority")

_BASE: dict[str, Any] = {
    "goal": "Test the operator API",
    "spec_version": "v1",
    "owner": "ana@acme.example",
    "expires_in": "72h",
    "lease_ttl": "5m",
    "budgets": {"spend": "1.00", "tool_calls": 100, "writes": 10, "active_seconds": 7200},
    "authority": {"allow": ["shop__*"]},
}

_GATE: dict[str, Any] = {
    "goal": "exercise the gate",
    "owner": "ops@acme.example",
    "budgets": {"spend": "100.00", "tool_calls": 1000, "writes": 100, "active_seconds": 100000},
    "authority": {
        "allow": ["t__*"],
        "deny": ["t__denied"],
        "constraints": {"t__constrained": "args.to.endsWith('@acme.example')"},
    },
}

_CHILD: dict[str, Any] = {
    "goal": "a part of the job",
    "spec_version": "c1",
    "owner": "ops@acme.example",
    "expires_in": "1h",
    "lease_ttl": DROP,
    "budgets": {"spend": "0.20", "tool_calls": 10, "writes": 2, "active_seconds": 3600},
    "authority": {"allow": ["t__paid", "t__write", "t__read"]},
}

_DESIGN: dict[str, Any] = {
    "goal": "Prepare a source-linked vendor comparison",
    "owner": "ana@acme",
    "progress_expectation": "2h",
    "budgets": {"spend": "20.00", "tool_calls": 500, "writes": 20, "active_seconds": 7200, "count_waiting": False},
    "authority": {
        "allow": ["crm__*", "email__send"],
        "deny": ["crm__delete_*"],
        "constraints": {"email__send": "args.to.endsWith('@acme.example')"},
    },
    "approvals": [
        {
            "tool": "crm__create_contact",
            "role": "approver",
            "decide_within": "4h",
            "valid_for": "1h",
            "on_expiry": "pause",
        }
    ],
    "milestones": [{"id": "inventory", "checks": [{"artifact": "inventory.json", "schema": {}}]}],
}


def _changed(body: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    for key, change in changes.items():
        if change is DROP:
            body.pop(key, None)
            continue
        value = copy.deepcopy(change)
        if key in _MERGED and isinstance(value, dict) and isinstance(body.get(key), dict):
            body[key].update(value)
        else:
            body[key] = value
    return body


def contract(**changes: Any) -> dict[str, Any]:
    """The base test contract with `changes` (budgets and authority merged, `DROP` removes)."""
    return _changed(copy.deepcopy(_BASE), changes)


def gate_contract(**changes: Any) -> dict[str, Any]:
    """The gate's tests' contract: every `t__` tool but `t__denied`, `t__constrained` held to
    @acme.example addresses, budgets no gate test exhausts unless it narrows them."""
    return _changed(contract(**_GATE), changes)


def child_contract(**changes: Any) -> dict[str, Any]:
    """A small child of a `gate_contract` run: spec `c1`, one hour, two writes, 0.20 to spend."""
    return _changed(contract(**_CHILD), changes)


def design_contract(**changes: Any) -> dict[str, Any]:
    """The contract DESIGN.md shows as the body of `POST /api/runs`."""
    return _changed(contract(**_DESIGN), changes)
