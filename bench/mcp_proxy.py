"""One trivial MCP read, four ways: direct, a minimal SDK proxy, FastMCP's proxy, and Warrant.

    .venv/bin/python bench/mcp_proxy.py [--calls N] [--clients C] [--concurrent-calls M] [--warmup W]
        [--rounds R] [--modes direct,minimal,fastmcp,warrant] [--transport http|stdio]
        [--warrant-transport http|stdio] [--base-tree DIR] [--core N] [--smoke]

One downstream MCP server program, `examples/mcp_files_server.py`, whose notebook holds one note;
the tool measured is its `read_note {title}` (read-only, microseconds of work). It runs once as
`--http PORT` (stateless streamable HTTP, JSON answers). The benchmark's client is the official SDK
client (`mcp.Client` over streamable HTTP, protocol 2026-07-28), and it calls that tool:

    direct    client -> downstream
    minimal   client -> a pass-through proxy written here on the low-level SDK `Server` (stateless,
              JSON answers, `get_tool_input_schema` set; one downstream client, reused, owned by one
              task): the floor for any proxy written on this SDK
    fastmcp   client -> FastMCP's proxy (`create_proxy` given an already-connected `fastmcp.Client`:
              one reused downstream session, its fastest configuration; stateless, JSON answers), run
              from its own virtualenv, bench/.venv-fastmcp (made here on first use; git-ignored)
    warrant   client -> `warrant serve` as a real process (temp config, SQLite file in a temp dir,
              the downstream as a `kind: mcp` adapter; a run and a lease made through the operator
              API; `files__read_note` allowed by policy and contract): every call admitted and
              recorded by the gate
    warrant-key  (not in the default set) client -> the same, on `/mcp/runs/{run_id}` with a stored
              worker API key instead of a lease token: the gateway holds the lease for the key
              (docs/sessions.md), so each request also authenticates the key, reads the run and
              finds the held lease before the same front and gate
    warrant-oauth  (not in the default set) client -> the same `/mcp` with an OAuth access token
              (docs/authorization.md): each request also looks the token up (one store read) and
              hands the front its grant's lease token

`--transport` says how the three proxies reach the downstream: `http` (default), the one HTTP
server above (`url:` for Warrant), or `stdio`, each proxy its own child running the same program
(`command:` for Warrant). `--warrant-transport` sets Warrant's alone.

Placement on this 2-core machine (`taskset`): the client (this process) and the downstream (or
the stdio children) on core 0, the proxy under test (with all its threads) alone on core 1. So
core 1 carries only the proxy's own work; for `direct` it is idle. When core 0 is saturated (the
table's `core 0` column), the 16-client throughput is the client's and downstream's limit, not the
proxy's: `cap/s` (1000 / the proxy's CPU ms per call) then compares the proxies.

Each round measures every mode in turn: `--warmup` calls, then its share of `--calls` calls one at
a time (one client), then its share of `--concurrent-calls` calls from `--clients` clients at once
(each its own SDK client and HTTP connection, 3 warm-up calls each). The calls are split evenly
over `--rounds` rounds, so that a change in the machine's load touches every mode alike; the table
pools the rounds. Latency is measured around `Client.call_tool`; every answer is checked (an error
or a wrong text stops the run). CPU per call is read from /proc: user + system time of each
process (and of the proxy's threads other than its event loop's) over the phase, divided by its
calls. `--base-tree DIR` adds a mode `warrant-base`: `warrant serve` run from another checkout
(e.g. `git worktree add --detach /tmp/base HEAD`), to measure a change against its base in the
same rounds. `--core N` puts every process (client, downstream, proxy) on core N, for a machine
that can spare one core only: CPU per call stays comparable, throughput and `core 0/1` do not.

The same file is also each proxy's program (`--role minimal-proxy|fastmcp-proxy`), so its
top-level imports are the standard library's only.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DOWNSTREAM = ROOT / "examples" / "mcp_files_server.py"
FASTMCP_VENV = ROOT / "bench" / ".venv-fastmcp"
FASTMCP_SPEC = "fastmcp==4.2.3"  # the latest release when this benchmark was written; it pulls mcp 2.3.0
CLIENT_CORE, DOWNSTREAM_CORE, PROXY_CORE = 0, 0, 1
MODES = ("direct", "minimal", "fastmcp", "warrant")
EXTRA_MODES = ("warrant-key", "warrant-oauth")  # measured only when named in --modes
# `--smoke` (tests/bench/): tiny counts, every mode but fastmcp (its virtualenv is installed from the
# package index on first use: not something a test run should do); `--modes` still chooses.
SMOKE = {"calls": 2, "concurrent_calls": 4, "clients": 2, "warmup": 1, "rounds": 1}
SMOKE_MODES = ("direct", "minimal", "warrant", "warrant-key", "warrant-oauth")
TOOL = "read_note"
WARRANT_TOOL = "files__read_note"
ARGUMENTS = {"title": "bench"}
EXPECTED = "bench: pong"
CALL_TIMEOUT = 30.0
CLK_TCK = os.sysconf("SC_CLK_TCK")


# -- the proxies (run as subprocesses of the benchmark) -----------------------------------------
def minimal_proxy(port: int, downstream: str) -> None:
    """A pass-through proxy on the low-level SDK server: the floor for any proxy on this SDK.

    `downstream`: a URL (streamable HTTP) or a JSON list, the command of a stdio server."""
    import httpx2
    import mcp.types as types
    import uvicorn
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.server import Server, ServerRequestContext
    from starlette.applications import Starlette
    from starlette.routing import Mount

    state: dict[str, Any] = {}

    async def list_tools(ctx: ServerRequestContext[Any, Any], params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=state["tools"])

    async def call_tool(ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams) -> Any:
        client: Client = state["client"]
        return await client.call_tool(params.name, params.arguments)

    def input_schema(name: str) -> Any:
        return state["schemas"].get(name)

    server: Server[Any] = Server(
        "bench-minimal-proxy", on_list_tools=list_tools, on_call_tool=call_tool, get_tool_input_schema=input_schema
    )

    async def own_downstream(ready: asyncio.Event, stop: asyncio.Event) -> None:
        # One task enters and exits the downstream client (the SDK's cancel scopes demand it).
        async with contextlib.AsyncExitStack() as stack:
            if downstream.startswith("http"):
                http = await stack.enter_async_context(httpx2.AsyncClient(timeout=CALL_TIMEOUT))
                transport: Any = streamable_http_client(downstream, http_client=http)
            else:
                command = json.loads(downstream)
                transport = stdio_client(StdioServerParameters(command=command[0], args=command[1:]))
            client = await stack.enter_async_context(Client(transport, cache=None))
            tools = (await client.list_tools()).tools
            state.update(client=client, tools=tools, schemas={t.name: t.input_schema for t in tools})
            ready.set()
            await stop.wait()

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        ready, stop = asyncio.Event(), asyncio.Event()
        async with server.session_manager.run():
            owner = asyncio.create_task(own_downstream(ready, stop))
            done, _ = await asyncio.wait({owner, asyncio.create_task(ready.wait())}, return_when="FIRST_COMPLETED")
            if owner in done:
                owner.result()  # the downstream could not be reached: raise
            try:
                yield
            finally:
                stop.set()
                await owner

    app = Starlette(
        routes=[Mount("/", server.streamable_http_app(stateless_http=True, json_response=True))], lifespan=lifespan
    )
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", access_log=False)


def fastmcp_proxy(port: int, downstream: str) -> None:
    """FastMCP's proxy over one reused, already-connected downstream session (its fastest set-up).

    `downstream`: a URL (streamable HTTP) or a JSON list, the command of a stdio server."""
    import fastmcp
    from fastmcp import Client
    from fastmcp.client.transports import StdioTransport
    from fastmcp.server import create_proxy

    async def serve() -> None:
        if downstream.startswith("http"):
            backend = Client(downstream)
        else:
            command = json.loads(downstream)
            backend = Client(StdioTransport(command[0], command[1:]))
        async with backend:  # connected: create_proxy reuses this session for every request
            proxy = create_proxy(backend, name="bench-fastmcp-proxy")
            await proxy.run_http_async(
                show_banner=False,
                transport="http",
                host="127.0.0.1",
                port=port,
                path="/mcp",
                log_level="warning",
                json_response=True,
                stateless_http=True,
                uvicorn_config={"access_log": False},
            )

    print(f"fastmcp {fastmcp.__version__}", file=sys.stderr, flush=True)
    asyncio.run(serve())


# -- processes ----------------------------------------------------------------------------------
def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass
class Proc:
    name: str
    popen: subprocess.Popen[bytes]
    log: Path

    def check(self) -> None:
        if self.popen.poll() is not None:
            raise RuntimeError(f"{self.name} exited {self.popen.returncode}:\n{self.tail()}")

    def tail(self) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-30:])
        except OSError:
            return ""

    def stop(self) -> None:
        if self.popen.poll() is None:
            self.popen.terminate()
            try:
                self.popen.wait(10)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait(10)


def cpu_seconds(pid: int, thread: int | None = None) -> float:
    """User + system time of a process (all its threads), or of one of its threads, so far."""
    stat = Path(f"/proc/{pid}/stat") if thread is None else Path(f"/proc/{pid}/task/{thread}/stat")
    fields = stat.read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def children(pid: int) -> list[int]:
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(OSError):
            found += [int(child) for child in (task / "children").read_text().split()]
    return found


def start(
    name: str, core: int, argv: Sequence[str], folder: Path, env: dict[str, str] | None = None, cwd: Path = ROOT
) -> Proc:
    log = folder / f"{name}.log"
    with log.open("wb") as out:
        popen = subprocess.Popen(
            ["taskset", "-c", str(core), *argv], stdout=out, stderr=subprocess.STDOUT, cwd=cwd, env=env
        )
    return Proc(name, popen, log)


def ensure_fastmcp_venv() -> Path:
    python = FASTMCP_VENV / "bin" / "python"
    if not python.exists():
        print(f"creating {FASTMCP_VENV.relative_to(ROOT)} with {FASTMCP_SPEC} (once) ...", flush=True)
        subprocess.run([sys.executable, "-m", "venv", str(FASTMCP_VENV)], check=True)
        pip = [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
        subprocess.run([*pip, FASTMCP_SPEC], check=True)
    return python


def package_version(python: Path | str, package: str) -> str:
    code = f"import importlib.metadata as m; print(m.version({package!r}))"
    answer = subprocess.run([str(python), "-c", code], capture_output=True, text=True)
    return answer.stdout.strip() or "?"


async def wait_for(what: str, probe: Callable[[], Any], procs: Sequence[Proc], within: float = 60.0) -> None:
    deadline = time.monotonic() + within
    while True:
        for proc in procs:
            proc.check()
        try:
            await probe()
            return
        except Exception as exc:
            if time.monotonic() > deadline:
                raise RuntimeError(f"{what} did not answer within {within:g} s: {exc!r}") from None
        await asyncio.sleep(0.1)


# -- the client side ----------------------------------------------------------------------------
@dataclass
class Target:
    mode: str
    url: str
    tool: str
    proc: Proc | None  # the proxy under test (None: direct)
    headers: dict[str, str] = field(default_factory=dict)
    downstream_pid: int | None = None  # the downstream this target reaches, when not the shared one
    transport: str = "http"  # how the proxy reaches the downstream


@contextlib.asynccontextmanager
async def mcp_client(target: Target) -> AsyncIterator[Any]:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    async with httpx2.AsyncClient(headers=target.headers, timeout=CALL_TIMEOUT) as http:
        async with Client(streamable_http_client(target.url, http_client=http)) as client:
            yield client


async def one_call(client: Any, target: Target) -> float:
    started = time.perf_counter()
    result = await asyncio.wait_for(client.call_tool(target.tool, ARGUMENTS), CALL_TIMEOUT)
    elapsed = (time.perf_counter() - started) * 1000
    text = result.content[0].text if result.content else None
    if result.is_error or text != EXPECTED:
        raise RuntimeError(f"{target.mode}: unexpected answer: is_error={result.is_error} text={text!r}")
    return elapsed


@dataclass
class Phase:
    mode: str
    clients: int
    calls: int
    seconds: float
    latencies_ms: list[float]
    cpu_s: dict[str, float]  # process -> CPU seconds over the phase

    @property
    def rate(self) -> float:
        return self.calls / self.seconds

    def cpu_ms(self, process: str) -> float | None:
        """CPU milliseconds per call of one process."""
        return self.cpu_s[process] * 1000 / self.calls if process in self.cpu_s else None

    @staticmethod
    def pooled(phases: list[Phase]) -> Phase:
        """The rounds of one measurement as one: calls, time, latencies and CPU added up."""
        first = phases[0]
        cpu = {name: sum(p.cpu_s[name] for p in phases) for name in first.cpu_s}
        latencies = [ms for p in phases for ms in p.latencies_ms]
        return Phase(
            first.mode, first.clients, sum(p.calls for p in phases), sum(p.seconds for p in phases), latencies, cpu
        )

    def percentile(self, q: float) -> float:
        ordered = sorted(self.latencies_ms)
        index = min(len(ordered) - 1, max(0, round(q / 100 * len(ordered)) - 1))
        return ordered[index]


def cpu_now(pids: dict[str, int | None]) -> dict[str, float]:
    times = os.times()
    now = {"client": times.user + times.system}
    for name, pid in pids.items():
        if pid is not None:
            now[name] = cpu_seconds(pid)
            if name == "proxy":
                now["proxy threads"] = now[name] - cpu_seconds(pid, pid)  # all but the event loop's thread
    return now


async def measure(target: Target, clients: int, calls: int, downstream: Proc, warmup: int) -> Phase:
    async with contextlib.AsyncExitStack() as stack:
        opened = [await stack.enter_async_context(mcp_client(target)) for _ in range(clients)]
        for client in opened:
            for _ in range(warmup):
                await one_call(client, target)
        latencies: list[float] = []
        remaining = calls

        async def worker(client: Any) -> None:
            nonlocal remaining
            while remaining > 0:
                remaining -= 1
                latencies.append(await one_call(client, target))

        procs = {
            "proxy": target.proc.popen.pid if target.proc is not None else None,
            "downstream": target.downstream_pid or downstream.popen.pid,
        }
        before = cpu_now(procs)
        started = time.perf_counter()
        await asyncio.gather(*(worker(c) for c in opened))
        seconds = time.perf_counter() - started
        after = cpu_now(procs)
    cpu = {name: after[name] - before[name] for name in before}
    if "proxy threads" in cpu:
        # Two counters read one after the other, each in clock ticks: over a short phase their difference
        # can shrink by a tick (a negative CPU time, seen with --smoke's few calls).
        cpu["proxy threads"] = max(0.0, cpu["proxy threads"])
    return Phase(target.mode, clients, calls, seconds, latencies, cpu)


# -- Warrant ------------------------------------------------------------------------------------
async def start_warrant(mode: str, tree: Path, folder: Path, downstream: str) -> tuple[Target, Proc]:
    """`warrant serve` from the checkout `tree` (this one, or `--base-tree`), a run and a lease; for
    `warrant-key`, a run and a stored worker key instead, the target `/mcp/runs/{run_id}`."""
    import httpx

    port = free_port()
    home = folder / mode
    home.mkdir()
    if downstream.startswith("http"):
        adapter = f"name: files\nkind: mcp\nurl: {downstream}\ntimeout: 30\n"
    else:  # a JSON list is a YAML flow sequence
        adapter = f"name: files\nkind: mcp\ncommand: {downstream}\ntimeout: 30\n"
    (home / "files.yaml").write_text(adapter)
    (home / "policy.yaml").write_text(f"tools:\n  {WARRANT_TOOL}: {{effect: read}}\n")
    (home / "warrant.yaml").write_text(
        f"database: sqlite:///{home}/warrant.db\n"
        f"listen: {{host: 127.0.0.1, port: {port}}}\n"
        "api_keys:\n  - {name: bench, tenant: bench, roles: [admin], key_env: BENCH_ADMIN_KEY}\n"
        "adapters: [files.yaml]\npolicies: [policy.yaml]\n"
    )
    env = {**os.environ, "BENCH_ADMIN_KEY": "bench-admin-key", "WARRANT_LEDGER_KEY": "bench-ledger-key-not-a-secret"}
    env["PYTHONPATH"] = str(tree)  # `-m gateway.cli` from `tree`, ahead of the editable install
    argv = [sys.executable, "-m", "gateway.cli", "serve", "--config", str(home / "warrant.yaml")]
    proc = start(mode, PROXY_CORE, [*argv, "--log-level", "warning"], folder, env, cwd=tree)
    base = f"http://127.0.0.1:{port}"
    async with httpx.AsyncClient(base_url=base, timeout=10) as api:

        async def healthy() -> None:
            (await api.get("/healthz")).raise_for_status()

        await wait_for("warrant serve", healthy, [proc])
        api.headers["Authorization"] = "Bearer bench-admin-key"
        big = 1_000_000_000
        contract = {
            "goal": "benchmark the MCP proxy path",
            "spec_version": "v1",
            "owner": "bench@example.com",
            "expires_in": "72h",
            "lease_ttl": "1h",
            "budgets": {"spend": "1000.00", "tool_calls": big, "writes": big, "active_seconds": big},
            "authority": {"allow": [WARRANT_TOOL]},
        }
        run = await api.post("/api/runs", json=contract)
        run.raise_for_status()
        run_id = run.json()["run_id"]
        if mode == "warrant-key":
            # a stored key (`warrant keys create`), not a bootstrap one: its lookup is a store read
            key = await api.post("/api/keys", json={"name": "bench-worker", "roles": ["worker"]})
            key.raise_for_status()
            headers = {"Authorization": f"Bearer {key.json()['key']}"}
            return Target(mode, f"{base}/mcp/runs/{run_id}", WARRANT_TOOL, proc, headers), proc
        if mode == "warrant-oauth":
            # a client signed in by MCP authorization: an access token looked up on every request
            from oauth_flow import access_token  # bench/oauth_flow.py, beside this script

            headers = {"Authorization": f"Bearer {await access_token(base, 'bench-admin-key', run_id)}"}
            return Target(mode, f"{base}/mcp", WARRANT_TOOL, proc, headers), proc
        grant = await api.post(f"/api/runs/{run_id}/lease", json={"worker": "bench"})
        grant.raise_for_status()
    token = grant.json()["token"]
    headers = {"Authorization": f"Bearer {token}"}
    return Target(mode, f"{base}/mcp", WARRANT_TOOL, proc, headers), proc


# -- the run ------------------------------------------------------------------------------------
def machine() -> str:
    model = "unknown CPU"
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    return f"{os.cpu_count()} CPUs ({model}), Python {platform.python_version()}"


def report(results: dict[tuple[str, int], list[Phase]], rounds: int) -> dict[tuple[str, int], Phase]:
    header = (
        f"{'mode':<13} {'clients':>7} {'calls':>6} {'calls/s':>8} {'p50 ms':>7} {'p99 ms':>7} "
        f"{'proxy cpu':>9} {'threads':>7} {'down cpu':>8} {'client cpu':>10} {'core 0':>6} {'core 1':>6} {'cap/s':>6}"
    )
    print(header)
    print("-" * len(header))
    table: dict[tuple[str, int], Phase] = {}
    for key, phases in results.items():
        mode, clients = key
        p = table[key] = Phase.pooled(phases)
        proxy_ms, down_ms, client_ms = p.cpu_ms("proxy"), p.cpu_ms("downstream") or 0.0, p.cpu_ms("client") or 0.0
        threads_ms = p.cpu_ms("proxy threads")
        proxy = f"{proxy_ms:>9.2f}" if proxy_ms is not None else f"{'-':>9}"
        threads = f"{threads_ms:>7.2f}" if threads_ms is not None else f"{'-':>7}"
        capacity = f"{1000 / proxy_ms:>6,.0f}" if proxy_ms else f"{'-':>6}"
        core0 = (p.cpu_s["client"] + p.cpu_s["downstream"]) / p.seconds * 100
        core1 = p.cpu_s.get("proxy", 0.0) / p.seconds * 100
        print(
            f"{mode:<13} {clients:>7} {p.calls:>6} {p.rate:>8,.0f} {p.percentile(50):>7.2f} {p.percentile(99):>7.2f} "
            f"{proxy} {threads} {down_ms:>8.2f} {client_ms:>10.2f} {core0:>5.0f}% {core1:>5.0f}% {capacity}"
        )
    print(
        "cpu: CPU ms per call of each process (user + system, all threads); threads: the part of the proxy's that"
        " ran outside its event loop's thread (Warrant: SQLite); core 0 / core 1: how busy each core was"
        " (client + downstream on core 0, the proxy on core 1); cap/s: 1000 / proxy cpu, the calls/s the proxy's"
        " core could serve at that CPU per call" + (f"; {rounds} rounds pooled" if rounds > 1 else "")
    )
    for (mode, clients), p in table.items():
        core0 = (p.cpu_s["client"] + p.cpu_s["downstream"]) / p.seconds
        if clients > 1 and mode != "direct" and core0 >= 0.9:
            print(f"note: {mode} with {clients} clients was bounded by core 0 ({core0:.0%} busy), not by the proxy")
    return table


def goals(table: dict[tuple[str, int], Phase], clients: int) -> None:
    def get(mode: str, n: int, what: str) -> float | None:
        phase = table.get((mode, n))
        if phase is None:
            return None
        if what == "cpu":
            return phase.cpu_ms("proxy")
        return phase.rate if what == "rate" else phase.percentile(50)

    checks = [
        ("Warrant p50 / minimal proxy p50 (1 client)", get("warrant", 1, "p50"), get("minimal", 1, "p50"), "<=", 1.15),
        ("Warrant p50 / FastMCP p50 (1 client)", get("warrant", 1, "p50"), get("fastmcp", 1, "p50"), "<=", 0.7),
        (
            f"Warrant calls/s / FastMCP calls/s ({clients} clients)",
            get("warrant", clients, "rate"),
            get("fastmcp", clients, "rate"),
            ">=",
            1.2,
        ),
    ]
    print("\ngoals (issue 3):")
    for label, mine, theirs, op, goal in checks:
        if mine is None or theirs is None:
            print(f"  {label}: not measured")
            continue
        ratio = mine / theirs
        met = ratio <= goal if op == "<=" else ratio >= goal
        print(f"  {label}: {ratio:.2f} (goal {op} {goal}) {'met' if met else 'NOT MET'}")
    mine, theirs = get("warrant", clients, "cpu"), get("fastmcp", clients, "cpu")
    if mine and theirs:
        print(f"  (capacity) FastMCP CPU per call / Warrant's ({clients} clients): {theirs / mine:.2f}")
    extra = [
        ("Warrant p50 / minimal proxy p50", "p50", "minimal"),
        ("Warrant calls/s / minimal proxy calls/s", "rate", "minimal"),
        ("Warrant p50 / FastMCP p50", "p50", "fastmcp"),
    ]
    for label, what, other in extra:
        mine, theirs = get("warrant", clients, what), get(other, clients, what)
        if mine is not None and theirs is not None:
            print(f"  (for scale) {label} ({clients} clients): {mine / theirs:.2f}")


async def main(options: argparse.Namespace) -> int:
    modes = [m for m in options.modes.split(",") if m]
    unknown = set(modes) - {*MODES, *EXTRA_MODES, *(["warrant-base"] if options.base_tree else [])}
    if unknown:
        print(f"unknown modes: {sorted(unknown)}", file=sys.stderr)
        return 2
    fastmcp_python = ensure_fastmcp_venv() if "fastmcp" in modes else None
    os.sched_setaffinity(0, {CLIENT_CORE})
    procs: list[Proc] = []
    with tempfile.TemporaryDirectory(prefix="warrant-bench-mcp-") as tmp:
        folder = Path(tmp)
        effects = folder / "effects.log"
        note = {"id": "note-1", "tool": "write_note", "title": "bench", "body": "pong", "key": None, "pid": 0}
        effects.write_text(json.dumps(note, sort_keys=True) + "\n")
        try:
            port = free_port()
            downstream = start(
                "downstream",
                DOWNSTREAM_CORE,
                [sys.executable, str(DOWNSTREAM), "--effects", str(effects), "--http", str(port)],
                folder,
            )
            procs.append(downstream)
            down_url = f"http://127.0.0.1:{port}/mcp"
            await wait_for("the downstream", _probe(Target("direct", down_url, TOOL, None)), [downstream])
            # stdio: each proxy starts its own copy of the server (same program, same notebook) on core 0
            command = [
                "taskset",
                "-c",
                str(DOWNSTREAM_CORE),
                sys.executable,
                str(DOWNSTREAM),
                "--effects",
                str(effects),
            ]
            reach = {"http": down_url, "stdio": json.dumps(command)}
            targets: list[Target] = []
            for mode in modes:
                how = options.warrant_transport if mode.startswith("warrant") else options.transport
                if mode == "direct":
                    targets.append(Target("direct", down_url, TOOL, None))
                elif mode in ("minimal", "fastmcp"):
                    proxy_port = free_port()
                    python = sys.executable if mode == "minimal" else str(fastmcp_python)
                    argv = [python, __file__, "--role", f"{mode}-proxy", "--port", str(proxy_port)]
                    proc = start(mode, PROXY_CORE, [*argv, "--downstream", reach[how]], folder)
                    procs.append(proc)
                    targets.append(Target(mode, f"http://127.0.0.1:{proxy_port}/mcp", TOOL, proc))
                else:
                    tree = options.base_tree if mode == "warrant-base" else ROOT
                    target, proc = await start_warrant(mode, tree, folder, reach[how])
                    procs.append(proc)
                    targets.append(target)
                targets[-1].transport = how if mode != "direct" else "http"
            for target in targets:
                await wait_for(target.mode, _probe(target), procs)
                if target.transport == "stdio" and target.proc is not None:
                    # the proxy's child (taskset execs the server): the downstream whose CPU is counted
                    target.downstream_pid = children(target.proc.popen.pid)[0]

            results: dict[tuple[str, int], list[Phase]] = {}
            started = time.monotonic()
            for round_number in range(options.rounds):
                for target in targets:
                    async with mcp_client(target) as client:
                        for _ in range(options.warmup):
                            await one_call(client, target)
                    for clients, total in ((1, options.calls), (options.clients, options.concurrent_calls)):
                        calls = total // options.rounds + (round_number < total % options.rounds)
                        phase = await measure(target, clients, calls, downstream, warmup=3)
                        results.setdefault((target.mode, clients), []).append(phase)
                        print(
                            f"  round {round_number + 1} {target.mode:<13} {clients:>2} client(s): "
                            f"{phase.rate:7,.0f} calls/s  p50 {phase.percentile(50):6.2f} ms  "
                            f"p99 {phase.percentile(99):6.2f} ms",
                            flush=True,
                        )
            measured_for = time.monotonic() - started
        except BaseException:
            for proc in procs:
                if proc.popen.poll() is not None or proc.name != "downstream":
                    print(f"--- {proc.name} log:\n{proc.tail()}", file=sys.stderr)
            raise
        finally:
            for proc in reversed(procs):
                proc.stop()

    print()
    print(f"MCP proxy benchmark, {date.today().isoformat()}: {machine()}")
    versions = f"mcp {package_version(sys.executable, 'mcp')}"
    if fastmcp_python is not None:
        versions += f", fastmcp {package_version(fastmcp_python, 'fastmcp')}"
    reached = ", ".join(f"{t.mode} over {t.transport}" for t in targets if t.mode != "direct")
    print(f"{versions}; proxies reach the downstream: {reached}")
    print(
        f"cores: client {CLIENT_CORE}, downstream {DOWNSTREAM_CORE}, proxy {PROXY_CORE}; "
        f"per mode: {options.calls} sequential calls and {options.concurrent_calls} calls from {options.clients} "
        f"clients, split over {options.rounds} round(s), each after {options.warmup} warm-up calls; "
        f"{measured_for:.0f} s measuring"
    )
    print()
    table = report(results, options.rounds)
    goals(table, options.clients)
    return 0


def _probe(target: Target) -> Callable[[], Any]:
    async def probe() -> None:
        async with mcp_client(target) as client:
            await one_call(client, target)

    return probe


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--calls", type=int, default=500, help="sequential calls per mode (default 500)")
    parser.add_argument("--clients", type=int, default=16, help="concurrent clients (default 16)")
    parser.add_argument(
        "--concurrent-calls", type=int, default=1600, help="calls shared by the concurrent clients (default 1600)"
    )
    parser.add_argument("--warmup", type=int, default=50, help="warm-up calls per mode and round (default 50)")
    parser.add_argument("--rounds", type=int, default=2, help="rounds the calls are split over (default 2)")
    parser.add_argument(
        "--modes", help=f"comma-separated subset of {','.join(MODES + EXTRA_MODES)} (default {','.join(MODES)})"
    )
    parser.add_argument(
        "--transport",
        choices=["http", "stdio"],
        default="http",
        help="how the proxies reach the downstream: the shared HTTP server (default) or each its own stdio child",
    )
    parser.add_argument(
        "--warrant-transport", choices=["http", "stdio"], help="Warrant's alone (default: --transport's)"
    )
    parser.add_argument(
        "--base-tree",
        metavar="DIR",
        help="another checkout (e.g. a `git worktree` of the commit before a change): adds mode warrant-base, "
        "`warrant serve` run from DIR, measured in the same rounds",
    )
    parser.add_argument(
        "--core",
        type=int,
        metavar="N",
        help="every process on core N (default: client and downstream on core 0, the proxy on core 1)",
    )
    parser.add_argument(
        "--smoke", action="store_true", help=f"tiny counts ({SMOKE}), modes {','.join(SMOKE_MODES)} unless --modes"
    )
    parser.add_argument("--role", choices=["minimal-proxy", "fastmcp-proxy"], help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--downstream", help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.role == "minimal-proxy":
        minimal_proxy(options.port, options.downstream)
    elif options.role == "fastmcp-proxy":
        fastmcp_proxy(options.port, options.downstream)
    else:
        if options.smoke:
            for name, value in SMOKE.items():
                setattr(options, name, value)
        options.modes = options.modes or ",".join(SMOKE_MODES if options.smoke else MODES)
        if min(options.clients, options.rounds) < 1 or options.warmup < 0:
            parser.error("--clients and --rounds must be at least 1, --warmup at least 0")
        if min(options.calls, options.concurrent_calls) < options.rounds:
            parser.error("--calls and --concurrent-calls must be at least --rounds")
        if options.base_tree:
            options.base_tree = Path(options.base_tree).resolve()
        options.warrant_transport = options.warrant_transport or options.transport
        if options.core is not None:
            CLIENT_CORE = DOWNSTREAM_CORE = PROXY_CORE = options.core
        sys.exit(asyncio.run(main(options)))
