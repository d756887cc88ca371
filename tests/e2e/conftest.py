"""`warrant serve` as a real process for the end-to-end tests (see test_mcp_end_to_end.py)."""

from __future__ import annotations

import pytest


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
