"""Shared inputs for the pure-core unit tests."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.contracts import design_contract

# The contract DESIGN.md shows as the body of `POST /api/runs`.
DESIGN_CONTRACT: dict[str, Any] = design_contract()


@pytest.fixture
def contract() -> dict[str, Any]:
    """A fresh, mutable copy of the DESIGN.md example contract."""
    return copy.deepcopy(DESIGN_CONTRACT)
