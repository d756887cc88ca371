"""A small world for store and gate tests: a store backend, a real Gate, tools that record every side effect.

The tests under `tests/store/` and `tests/integration/` reach the store only through the `Store`
interface and the `Backend` below, so a PostgreSQL backend can run the same suite by adding one
class here and one parameter to the `backend` fixtures.

Tools (adapter `t`; exposed as `t__<name>`), each appending to `Tools.calls` when invoked and to
`Tools.effects` when its side effect happens. `Tools.modes[name]` changes how a tool behaves:

    ok        the side effect happens; the tool answers {"id": ...}
    block     the side effect happens, then the tool waits for `Tools.release` (a call in flight)
    not_sent  nothing happens; the adapter reports "not sent" (NotSent)
    failed    nothing happens; the destination says no (ToolFailed)
    unauthorized  nothing happens; the destination refuses the gateway's credentials (upstream_unauthorized)
    crash     nothing happens; the adapter raises, so a write's outcome is unknown

`Tools.actual_spend[name]` makes a tool report its actual cost (minor units).
"""

from __future__ import annotations

import asyncio
import inspect
import json
import socket
import sqlite3
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeVar

import anyio

from gateway.adapters import CallRequest, NotSent, Outcome, OutcomeKind, PythonAdapter, ToolFailed
from gateway.canonical import canonical_json
from gateway.catalog import Catalog
from gateway.clock import ManualClock
from gateway.domain import OPERATION_ID_META, parse_contract
from gateway.domain.events import Outbox
from gateway.gate import META_ACTION_ID, CallResult, Gate
from gateway.policy import ToolPolicy
from gateway.policy.model import SharedLimit
from gateway.store import Store
from gateway.store.records import (
    NO_ALERT_ROUTES,
    ActionRecord,
    AlertRoutes,
    ApprovalRecord,
    EventRecord,
    Principal,
    RunRecord,
)
from gateway.store.sqlite import SQLiteStore
from tests.contracts import gate_contract

TENANT = "acme"
LEDGER_KEY = b"test-ledger-key-never-used-in-production"
WAIT = 10.0  # seconds: the bound on every wait in these tests
T = TypeVar("T")

OPS = Principal("ops", TENANT, frozenset({"operator"}))
APPROVER = Principal("ana", TENANT, frozenset({"approver"}))

TEXT = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
QUERY = {"type": "object", "properties": {"q": {"type": "string"}}}
ADDRESS = {"type": "object", "properties": {"to": {"type": "string"}}, "required": ["to"]}
NOTHING = {"type": "object"}

# Tool name -> (input schema, policy or None). `t__nopolicy` exists but no policy names it.
TOOLS: dict[str, tuple[dict[str, Any], dict[str, Any] | None]] = {
    "read": (QUERY, {"effect": "read"}),
    "write": (TEXT, {"effect": "write"}),
    "paid": (TEXT, {"effect": "write", "cost": {"spend": "0.05", "max": "0.10"}}),
    "approve": (TEXT, {"effect": "write", "approval": {"decide_within": "2m", "valid_for": "1m"}}),
    "constrained": (ADDRESS, {"effect": "write"}),
    "denied": (NOTHING, {"effect": "write"}),
    "nopolicy": (NOTHING, None),
}

# tests/contracts.py builds every test contract; the gate's, changed by keyword, is `contract` here too.
contract = gate_contract
CONTRACT: dict[str, Any] = gate_contract()


def eventually_sync(check: Callable[[], T], *, wait: float = WAIT, every: float = 0.05) -> T:
    """Call `check` every `every` seconds until it returns a true value without failing an
    assertion, and return that value; after `wait` seconds raise AssertionError carrying the last
    failure. For a condition another thread or process makes true: no event to wait on here."""
    deadline = time.monotonic() + wait
    while True:
        try:
            value = check()
            if value:
                return value
            failure = AssertionError(f"{_name(check)} still answered {value!r}")
        except AssertionError as error:
            failure = error
        if time.monotonic() >= deadline:
            raise AssertionError(f"not within {wait:g} s: {failure}") from failure
        time.sleep(every)


async def eventually(check: Callable[[], T | Awaitable[T]], *, wait: float = WAIT, every: float = 0.05) -> T:
    """`eventually_sync` for the event loop: `check` may be a coroutine function (each call is
    bounded by the time left), and the loop sleeps between calls. Use it where a condition comes
    true in another process or through a store that signals nothing; wait on the event itself
    where there is one (`Tools.wait_for_effects`, a task, an `asyncio.Event`)."""
    deadline = time.monotonic() + wait
    while True:
        try:
            with anyio.fail_after(max(deadline - time.monotonic(), every)):
                value = check()
                if inspect.isawaitable(value):
                    value = await value
            if value:
                return value  # type: ignore[return-value]
            failure = AssertionError(f"{_name(check)} still answered {value!r}")
        except (AssertionError, TimeoutError) as error:
            failure = AssertionError(str(error) or f"{_name(check)} did not answer")
        if time.monotonic() >= deadline:
            raise AssertionError(f"not within {wait:g} s: {failure}") from failure
        await anyio.sleep(every)


def _name(check: Callable[..., Any]) -> str:
    return getattr(check, "__qualname__", repr(check))


def free_port() -> int:
    """A loopback port nobody listens on now (for a server a test is about to start)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


async def answer_lifespan(receive: Any, send: Any) -> None:
    """A raw ASGI test app's lifespan: start up, then wait for the shutdown and confirm it."""
    while (await receive())["type"] != "lifespan.shutdown":
        await send({"type": "lifespan.startup.complete"})
    await send({"type": "lifespan.shutdown.complete"})


@asynccontextmanager
async def uvicorn_serving(app: Any) -> AsyncIterator[str]:
    """Serve an ASGI app (lifespan included) with uvicorn on a free loopback port; its base URL."""
    import uvicorn

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on"))
    task = asyncio.create_task(server.serve())
    try:
        await eventually(lambda: server.started or task.done(), every=0.01)
        assert server.started, "uvicorn did not start"
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, WAIT)


def op(operation_id: str) -> dict[str, str]:
    """The `_meta` of a call that names its own operation id."""
    return {OPERATION_ID_META: operation_id}


class Tools:
    """The adapters' tools and the record of what they did."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.effects: list[tuple[str, dict[str, Any]]] = []
        self.keys: list[str | None] = []  # the idempotency key each call carried to the destination
        self.modes: dict[str, str] = {}
        self.actual_spend: dict[str, int] = {}
        self.release = asyncio.Event()
        self._entered: asyncio.Condition | None = None
        self.adapter = PythonAdapter("t")
        for name, (schema, _) in TOOLS.items():
            self.adapter.tool(input_schema=schema, name=name, description=f"test tool {name}")(self._tool(name))
        # An adapter whose tool has a policy but is outside every test contract's allow list.
        self.other = PythonAdapter("x")
        self.other.tool(input_schema=QUERY, name="read", description="outside the contract")(self._tool("x.read"))

    def catalog(self, shared_limits: list[SharedLimit] | None = None) -> Catalog:
        """The tools' catalog, with these limits shared by every run (none by default)."""
        policies = {
            f"t__{name}": ToolPolicy.model_validate(policy) for name, (_, policy) in TOOLS.items() if policy is not None
        }
        policies["x__read"] = ToolPolicy(effect="read")
        return Catalog([self.adapter, self.other], policies, shared_limits=shared_limits or ())

    def _tool(self, name: str) -> Any:
        async def tool(args: dict[str, Any], call: CallRequest) -> Any:
            self.calls.append((name, args))
            self.keys.append(call.idempotency_key)
            mode = self.modes.get(name, "ok")
            if mode == "not_sent":
                raise NotSent("the destination refused the connection")
            if mode == "failed":
                raise ToolFailed("the destination rejected the request")
            if mode == "unauthorized":  # the destination refused the gateway's own credentials
                raise ToolFailed("401 from the destination", code="upstream_unauthorized")
            if mode == "crash":
                raise RuntimeError("the adapter broke after it may have sent the request")
            self.effects.append((name, args))
            await self._notify()
            if mode == "block":
                await self.release.wait()
            body = {"id": f"obj-{len(self.effects)}", "tool": name}
            if name in self.actual_spend:
                return Outcome(
                    OutcomeKind.SUCCEEDED,
                    content=[{"type": "text", "text": json.dumps(body)}],
                    structured=body,
                    receipt={"id": body["id"]},
                    actual_spend=self.actual_spend[name],
                )
            return body

        return tool

    async def _notify(self) -> None:
        async with self._condition():
            self._condition().notify_all()

    def _condition(self) -> asyncio.Condition:
        if self._entered is None:
            self._entered = asyncio.Condition()
        return self._entered

    async def wait_for_effects(self, count: int) -> None:
        """Until at least `count` side effects happened (bounded)."""
        with anyio.fail_after(WAIT):
            async with self._condition():
                await self._condition().wait_for(lambda: len(self.effects) >= count)


class Backend(Protocol):
    """One store implementation, and the raw access a test needs to tamper with its ledger."""

    name: str

    def store(
        self,
        clock: ManualClock,
        *,
        process_id: str | None = None,
        ledger_key: bytes = LEDGER_KEY,
        alert_routes: AlertRoutes = NO_ALERT_ROUTES,
        outbox: Outbox | None = None,
    ) -> Store: ...

    def events(self, run_id: str) -> list[dict[str, Any]]: ...

    def set_event(self, run_id: str, seq: int, **columns: Any) -> None: ...

    def delete_events(self, run_id: str, *seqs: int) -> None: ...

    def swap_events(self, run_id: str, a: int, b: int) -> None: ...

    def set_head(self, run_id: str, *, seq: int, hash: str) -> None: ...

    def set_row(self, table: str, key: str, value: str, **columns: Any) -> None: ...

    def delete_row(self, table: str, key: str, value: str) -> None: ...


class Tampering:
    """What a test does to the ledger behind the store's back, over the back end's own `_execute`
    (a list of statements with `?` placeholders run in one transaction, the last one's rows)."""

    def _execute(self, *statements: tuple[str, tuple[Any, ...]]) -> Any:
        raise NotImplementedError

    def events(self, run_id: str) -> list[dict[str, Any]]:
        rows = self._execute(("SELECT * FROM events WHERE run_id = ? ORDER BY seq", (run_id,)))
        return [dict(row) for row in rows]

    def set_event(self, run_id: str, seq: int, **columns: Any) -> None:
        assignments = ", ".join(f"{column} = ?" for column in columns)
        sql = f"UPDATE events SET {assignments} WHERE run_id = ? AND seq = ?"
        self._execute((sql, (*columns.values(), run_id, seq)))

    def delete_events(self, run_id: str, *seqs: int) -> None:
        self._execute(*(("DELETE FROM events WHERE run_id = ? AND seq = ?", (run_id, seq)) for seq in seqs))

    def swap_events(self, run_id: str, a: int, b: int) -> None:
        move = "UPDATE events SET seq = ? WHERE run_id = ? AND seq = ?"
        self._execute((move, (-1, run_id, a)), (move, (a, run_id, b)), (move, (b, run_id, -1)))

    def set_row(self, table: str, key: str, value: str, **columns: Any) -> None:
        """Edit a state row (`actions`, `approvals`, `runs`) where `key` = `value`."""
        assignments = ", ".join(f"{column} = ?" for column in columns)
        self._execute((f"UPDATE {table} SET {assignments} WHERE {key} = ?", (*columns.values(), value)))

    def delete_row(self, table: str, key: str, value: str) -> None:
        self._execute((f"DELETE FROM {table} WHERE {key} = ?", (value,)))

    def set_head(self, run_id: str, *, seq: int, hash: str) -> None:
        self._execute(("UPDATE chain_heads SET seq = ?, hash = ? WHERE run_id = ?", (seq, hash, run_id)))


class SQLiteBackend(Tampering):
    """The SQLite store on a file; tampering goes through plain sqlite3, outside the store."""

    name = "sqlite"

    def __init__(self, path: Path) -> None:
        self.path = path

    def store(
        self,
        clock: ManualClock,
        *,
        process_id: str | None = None,
        ledger_key: bytes = LEDGER_KEY,
        alert_routes: AlertRoutes = NO_ALERT_ROUTES,
        outbox: Outbox | None = None,
    ) -> Store:
        return SQLiteStore(
            str(self.path),
            clock=clock,
            ledger_key=ledger_key,
            process_id=process_id,
            alert_routes=alert_routes,
            outbox=outbox,
        )

    def _execute(self, *statements: tuple[str, tuple[Any, ...]]) -> list[sqlite3.Row]:
        conn = sqlite3.connect(self.path, isolation_level=None)
        conn.row_factory = sqlite3.Row
        try:
            conn.execute("BEGIN IMMEDIATE")
            rows: list[sqlite3.Row] = []
            for sql, params in statements:
                rows = conn.execute(sql, params).fetchall()
            conn.execute("COMMIT")
            return rows
        finally:
            conn.close()


def edited_body(body: str, **data: Any) -> str:
    """An event body with some of its data changed, still canonical JSON."""
    entry = json.loads(body)
    entry["data"].update(data)
    return canonical_json(entry).decode("utf-8")


@dataclass
class Run:
    run_id: str
    token: str
    lineage_id: str


@dataclass
class World:
    """A store, a gate over it, the tools and a clock that only moves when told to."""

    store: Store
    gate: Gate
    tools: Tools
    clock: ManualClock
    backend: Backend
    _tasks: list[asyncio.Task[Any]] = field(default_factory=list)

    def regate(self, **options: Any) -> Gate:
        """The world's gate built again with these constructor options (`limits`, `idempotency_for`,
        ...), as the app builds it from warrant.yaml; nothing of the old one is kept."""
        self.gate = Gate(self.store, self.tools.catalog(), self.clock, **options)
        return self.gate

    async def new_run(self, **changes: Any) -> Run:
        run = await self.store.create_run(OPS, parse_contract(contract(**changes)))
        grant = await self.store.acquire_lease(OPS, run.run_id, "worker-1", takeover=False)
        return Run(run.run_id, grant.token, run.lineage_id)

    async def takeover(self, run: Run, worker: str = "worker-2") -> str:
        grant = await self.store.acquire_lease(OPS, run.run_id, worker, takeover=True)
        return grant.token

    async def call(
        self, token: str | None, tool: str, arguments: Any, meta: dict[str, Any] | None = None
    ) -> CallResult:
        with anyio.fail_after(WAIT):
            return await self.gate.call(token, tool, arguments, meta)

    def spawn(self, call: Coroutine[Any, Any, CallResult]) -> asyncio.Task[CallResult]:
        """Start a call in the background (torn down with the world)."""
        task = asyncio.create_task(call)
        self._tasks.append(task)
        return task

    async def settled(self, task: Awaitable[CallResult]) -> CallResult:
        with anyio.fail_after(WAIT):
            return await task

    async def run(self, run_id: str) -> RunRecord:
        return await self.store.get_run(TENANT, run_id)

    async def action(self, result_or_id: CallResult | str) -> ActionRecord:
        action_id = result_or_id if isinstance(result_or_id, str) else result_or_id.meta[META_ACTION_ID]
        return await self.store.get_action(TENANT, action_id)

    async def actions(self, run_id: str) -> list[ActionRecord]:
        page = await self.store.list_actions(TENANT, run_id, limit=1000)
        return page.items

    async def events(self, run_id: str) -> list[EventRecord]:
        return await self.store.list_events(TENANT, run_id, limit=1000)

    async def event_types(self, run_id: str) -> list[str]:
        return [event.type for event in await self.events(run_id)]

    async def approval(self, result_or_id: CallResult | str) -> ApprovalRecord:
        if isinstance(result_or_id, CallResult):
            assert result_or_id.structured is not None
            result_or_id = result_or_id.structured["error"]["approval_id"]
        return await self.store.get_approval(TENANT, result_or_id)

    async def decide(self, result_or_id: CallResult | str, *, approve: bool = True) -> ApprovalRecord:
        approval = await self.approval(result_or_id)
        return await self.store.decide_approval(
            APPROVER, approval.approval_id, approve=approve, note=None, expected_sha256=approval.payload_sha256
        )

    async def edit(
        self,
        result_or_id: CallResult | str,
        arguments: Any,
        *,
        note: str | None = None,
        principal: Principal = APPROVER,
        expected_sha256: str | None = None,
    ) -> ApprovalRecord:
        """Approve an edited payload as the service does: checked by the gate, decided by the store."""
        approval = await self.approval(result_or_id)
        edit = await self.gate.checked_edit(approval, arguments)
        return await self.store.decide_approval(
            principal,
            approval.approval_id,
            approve=True,
            note=note,
            expected_sha256=expected_sha256 or approval.payload_sha256,
            edit=edit,
        )

    async def teardown(self) -> None:
        self.tools.release.set()
        with anyio.fail_after(WAIT):
            for task in self._tasks:
                try:
                    await task
                except Exception:  # the test that spawned it has already checked or failed on it
                    pass
        await self.store.close()


async def open_world(
    backend: Backend, clock: ManualClock, *, outbox: Outbox | None = None, alert_routes: AlertRoutes = NO_ALERT_ROUTES
) -> World:
    """`outbox`: the webhooks the store queues ledger entries for (gateway/store/sql/outbox.py);
    `alert_routes`: those it queues its own alerts for."""
    store = backend.store(clock, process_id="test-gateway", outbox=outbox, alert_routes=alert_routes)
    await store.open()
    tools = Tools()
    return World(store=store, gate=Gate(store, tools.catalog(), clock), tools=tools, clock=clock, backend=backend)


def code_of(result: CallResult) -> str | None:
    """The refusal or failure code of a call result (None for a success). A waiting answer
    (approval_required, run_waiting) is not an error result, and still has its code."""
    return result.code


def text_of(result: CallResult) -> str:
    return "".join(block.get("text", "") for block in result.content if block.get("type") == "text")
