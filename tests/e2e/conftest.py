"""Fixtures of the end-to-end tests: the demo CRM as a real process (tests/e2e/crm_gateway.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.harness import free_port
from tests.integration.test_http_services import Service


@pytest.fixture
async def crm(tmp_path: Path) -> AsyncIterator[Service]:
    service = Service("crm", "CRM_TOKEN", tmp_path / "crm.db", free_port(), tmp_path / "crm.log")
    await service.start()
    try:
        yield service
    finally:
        await service.stop()
