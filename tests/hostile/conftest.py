"""One real `warrant serve` app per module and store (tests/api/conftest.py's, on a thread of its
own under uvicorn; on SQLite, then on PostgreSQL), its log watched, and a world of recorded runs
and actions for the fuzzers not to harm."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import pytest

from tests.api.conftest import KEYS, ThreadedApi, make_app, threaded_serving
from tests.contracts import contract
from tests.harness_postgres import fresh_database
from tests.hostile.checks import LogWatch, Record, record_of

LEDGER_KEY = "test-ledger-key"  # tests/api/conftest.py's WARRANT_LEDGER_KEY
API_KEYS = [f"key-{name}" for name in KEYS]
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}

# Budgets no fuzzer exhausts, so that every example reaches the gate's later steps.
FUZZ_CONTRACT = contract(
    budgets={"spend": "100000.00", "tool_calls": 1_000_000, "writes": 1_000_000, "active_seconds": 10**9}
)


@dataclass
class World:
    api: ThreadedApi
    ops: httpx.Client  # the admin's client of the operator API
    http: httpx.Client  # for /mcp: no default headers, one connection kept open
    log: LogWatch
    token: str  # a live lease of a run the fuzzers call tools through
    tokens: list[str]  # every lease token granted (secrets no answer may carry)
    before: Record

    @property
    def secrets(self) -> list[str]:
        return [LEDGER_KEY, *API_KEYS, *self.tokens]

    def grant(self, contract: dict[str, object] | None = None) -> tuple[str, str]:
        run = self.ops.post("/api/runs", json=contract or FUZZ_CONTRACT).json()
        token = self.ops.post(f"/api/runs/{run['run_id']}/lease", json={"worker": "fuzz"}).json()["token"]
        self.tokens.append(token)
        return run["run_id"], token

    def call(self, token: str, tool: str, arguments: dict[str, object]) -> httpx.Response:
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}
        headers = {**MCP_HEADERS, "Authorization": f"Bearer {token}"}
        return self.http.post(f"{self.api.url}/mcp", json=body, headers=headers)


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def served(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ThreadedApi]:
    """The app on each store: PostgreSQL refuses what SQLite takes (a NUL in a text column)."""
    with contextlib.ExitStack() as stack:
        database = stack.enter_context(fresh_database()) if request.param == "postgres" else None
        app, _, _ = make_app(tmp_path_factory.mktemp("hostile"), database=database)
        yield stack.enter_context(threaded_serving(app))


@pytest.fixture(scope="module")
def world(served: ThreadedApi) -> Iterator[World]:
    """Recorded before any fuzzing: a succeeded read and write, a refusal, a pending approval and
    an `unknown` write (the `lost` card), in a run of their own; then a run for the fuzzers."""
    log = LogWatch()
    with (
        log.watching(),
        httpx.Client(base_url=served.url, headers={"Authorization": "Bearer key-ops"}, timeout=30) as ops,
        httpx.Client(timeout=30) as http,
    ):
        world = World(served, ops, http, log, "", [], Record())
        _, seeded = world.grant()
        for tool, arguments in [
            ("shop__find", {"q": "a"}),
            ("shop__charge", {"card": "ok"}),
            ("shop__nope", {}),
            ("shop__charge", {"card": "lost"}),
            ("shop__order", {"to": "bob@example.com"}),
        ]:
            assert world.call(seeded, tool, arguments).status_code == 200
        _, world.token = world.grant()
        world.before = record_of(ops)
        assert any(a["status"] == "unknown" for a in world.before.actions.values())
        yield world
