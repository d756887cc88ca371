"""Every route refuses a foreign `Host` on loopback (DNS rebinding), against a real server."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from gateway.api.host_guard import host_allowed
from gateway.app import create_app
from gateway.clock import ManualClock
from gateway.config import load_settings
from tests.harness import uvicorn_serving

pytestmark = pytest.mark.anyio

ROUTES = [("GET", "/healthz"), ("GET", "/metrics"), ("GET", "/api/runs"), ("GET", "/console"), ("POST", "/mcp")]


@pytest.fixture
async def url(tmp_path: Path) -> AsyncIterator[str]:
    (tmp_path / "warrant.yaml").write_text(
        f"database: sqlite:///{tmp_path}/w.db\nlisten: {{host: 127.0.0.1, allowed_hosts: ['10.0.0.7']}}\n"
        "api_keys:\n  - {name: ops, tenant: acme, roles: [admin], key_env: KEY}\nwatchdog: {enabled: false}\n"
    )
    settings = load_settings(tmp_path / "warrant.yaml", {"KEY": "key-ops", "WARRANT_LEDGER_KEY": "l"})
    async with uvicorn_serving(create_app(settings, clock=ManualClock())) as served:
        yield served


@pytest.mark.parametrize(("method", "path"), ROUTES)
async def test_a_foreign_host_is_refused_on_every_route(url: str, method: str, path: str) -> None:
    headers = {"Authorization": "Bearer key-ops", "Host": "evil.example"}
    async with httpx.AsyncClient(base_url=url, timeout=10) as c:
        r = await c.request(method, path, headers=headers)
    assert r.status_code == 421


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost:8700", "10.0.0.7", "10.0.0.7:80"])
async def test_loopback_names_and_the_configured_hosts_reach_the_gateway(url: str, host: str) -> None:
    async with httpx.AsyncClient(base_url=url, timeout=10) as c:
        r = await c.get("/healthz", headers={"Host": host})
    assert r.status_code == 200


@pytest.mark.parametrize(
    ("header", "allowed"),
    [
        ("127.0.0.1:8700", True),
        ("[::1]:8700", True),
        ("LOCALHOST", True),
        ("lb.internal:8700", True),
        ("lb.internal:9000", False),
        ("127.0.0.1.evil.example", False),
        ("evil.example", False),
        ("127.0.0.1:x", False),
        ("", False),
        (None, False),
    ],
)
def test_a_host_is_allowed_only_as_a_loopback_name_or_a_configured_entry(header: str | None, allowed: bool) -> None:
    assert host_allowed(header, frozenset({"lb.internal:8700"})) is allowed
