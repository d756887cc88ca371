"""The demo services in process: each app over its own SQLite file, behind an httpx client on the
ASGI transport, with hooks that hold a delayed request in flight and survive die_after_commit."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

import anyio
import httpx
import pytest
from starlette.applications import Starlette

from examples.services import crm, mail
from examples.services.service import Hooks
from gateway.clock import ManualClock

TOKEN = "test-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
WAIT = 10.0  # seconds: the bound on every wait in these tests


class Died(BaseException):
    """What die_after_commit raises in process instead of ending the test run."""

    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


@dataclass
class Sleeper:
    """The delay fault's sleep: records each delay; with `hold`, waits until `release` is set."""

    hold: bool = False
    delays: list[float] = field(default_factory=list)
    entered: anyio.Event = field(default_factory=anyio.Event)
    release: anyio.Event = field(default_factory=anyio.Event)

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)
        self.entered.set()
        if self.hold:
            await self.release.wait()


def die(code: int) -> NoReturn:
    raise Died(code)


@dataclass
class Svc:
    """One service under test: its client (authorised), its database, its clock and sleeper."""

    client: httpx.AsyncClient
    db: Path
    clock: ManualClock
    sleeper: Sleeper

    def rows(self, sql: str, *args: Any) -> list[tuple[Any, ...]]:
        """Ground truth: run `sql` on the service's SQLite file directly (committed)."""
        with sqlite3.connect(self.db) as conn:
            result = conn.execute(sql, args).fetchall()
        conn.close()
        return result

    def count(self, table: str) -> int:
        (n,) = self.rows(f"SELECT COUNT(*) FROM {table}")[0]
        return int(n)

    async def fault(self, **spec: Any) -> dict[str, Any]:
        response = await self.client.post("/_admin/faults", json=spec)
        assert response.status_code == 201, response.text
        fault: dict[str, Any] = response.json()
        return fault


async def open_service(create_app: Callable[..., Starlette], db: Path, token: str | None = TOKEN) -> Svc:
    clock, sleeper = ManualClock(), Sleeper()
    app = create_app(db, token, Hooks(clock=clock.now, sleep=sleeper, exit_process=die))
    headers = AUTH if token else {}
    client = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://svc", headers=headers)
    return Svc(client, db, clock, sleeper)


@pytest.fixture
async def crm_svc(tmp_path: Path) -> AsyncIterator[Svc]:
    svc = await open_service(crm.create_app, tmp_path / "crm.db")
    async with svc.client:
        yield svc


@pytest.fixture
async def mail_svc(tmp_path: Path) -> AsyncIterator[Svc]:
    svc = await open_service(mail.create_app, tmp_path / "mail.db")
    async with svc.client:
        yield svc
