"""Shared inputs for the pure-core unit tests."""

from __future__ import annotations

import copy
from typing import Any

import pytest

# The contract DESIGN.md shows as the body of `POST /api/runs`.
DESIGN_CONTRACT: dict[str, Any] = {
    "goal": "Prepare a source-linked vendor comparison",
    "spec_version": "v1",
    "owner": "ana@acme",
    "expires_in": "72h",
    "lease_ttl": "5m",
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


@pytest.fixture
def contract() -> dict[str, Any]:
    """A fresh, mutable copy of the DESIGN.md example contract."""
    return copy.deepcopy(DESIGN_CONTRACT)
