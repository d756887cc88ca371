"""Gated reads and writes through `warrant serve`: one on SQLite, one on PostgreSQL, two replicas on one PostgreSQL.

    .venv/bin/python bench/replicas.py [--seconds S | --calls N] [--concurrency C] [--load-procs P]
        [--only sqlite,postgres,replicas] [--rounds R] [--warmup W] [--postgres URL] [--tree DIR] [--smoke]

Three configurations, every one measured with the same load in the same run:

    sqlite     one `warrant serve`, its SQLite file in a temporary directory
    postgres   one `warrant serve` on a fresh PostgreSQL database (CREATE DATABASE here, DROP at the end)
    replicas   two `warrant serve` on one fresh PostgreSQL database; the clients spread evenly over both

The tools are in process and do nothing (`kind: python`, the factory `noop_adapter` below: a read
that answers "pong" and a write that answers "ok"), so a call costs the front (uvicorn, the MCP
fast path), the gate and the store, and no downstream: on 2 cores, a downstream process would take
CPU from the very processes measured, and its cost does not change with the store or the number
of replicas. `bench/mcp_proxy.py` measures the downstream path.

Every client is an agent of its own: its own run (budgets far above what the bench uses) and lease,
its own official MCP SDK client (`mcp.Client`, streamable HTTP, its own connection). Client i of a
two-replica configuration calls replica i mod 2. The clients run in `--load-procs` processes of
their own (this file, `--role load`), each holding a contiguous block of clients (so each has half
of its clients on each replica), so that the load generator's CPU is its own and is measured.

A phase is one kind of call (reads, then writes) for one configuration: every load process opens
its clients and makes `--warmup` calls on each, says it is ready, and on `go` calls until
`--seconds` have passed (or `--calls` are made, shared). Latency is measured around
`Client.call_tool`; every answer is checked (an error is counted by its code; any error makes the
run exit 1). Reads repeat one payload; every write has a distinct one, so none is replayed. The
configurations take turns within each of `--rounds` rounds (all gateways stay up), so drift in
the machine's load touches all alike; the table pools the rounds.

CPU per call, from /proc (user + system, all threads) over the phase: each gateway process (and the
part outside its event loop's thread: SQLite's threads, or the PostgreSQL pool's worker threads),
the configuration database's PostgreSQL backends (`pg_stat_activity`), the load processes (their
own count), and the whole machine (/proc/stat): `other` is what the machine did that none of these
did (PostgreSQL's shared processes such as the WAL writer, the idle configurations, other users).

The same file is the load generator (`--role load`) and the tools' factory, so its top-level
imports are the standard library's only.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import re
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CONFIGS = ("sqlite", "postgres", "replicas")
KINDS = ("read", "write")
TOOLS = {"read": "bench__ping", "write": "bench__put"}
EXPECTED = {"read": "pong", "write": "ok"}
ADMIN_KEY = "bench-admin-key"
CALL_TIMEOUT = 30.0
CLK_TCK = os.sysconf("SC_CLK_TCK")
DB_PREFIX = "warrant_bench_"
# `--smoke` (tests/bench/): every configuration, both kinds, with tiny numbers.
SMOKE = {"calls": 4, "concurrency": 2, "load_procs": 1, "rounds": 1, "warmup": 1}
REFERENCE = re.compile(r" \(reference [^)]*\)")  # the gateway's per-error reference in an internal error


# -- the tools (imported by `warrant serve` through `kind: python`) -----------------------------
def noop_adapter(name: str) -> Any:
    """Two tools that do nothing: `ping {}` (read) and `put {title}` (write)."""
    from gateway.adapters import CallRequest, PythonAdapter

    adapter = PythonAdapter(name)

    @adapter.tool(input_schema={"type": "object", "properties": {}}, description="Answer pong.")
    async def ping(args: dict[str, Any], call: CallRequest) -> str:
        return "pong"

    @adapter.tool(
        input_schema={"type": "object", "properties": {"title": {"type": "string"}}, "required": ["title"]},
        description="Accept a title and do nothing with it.",
    )
    async def put(args: dict[str, Any], call: CallRequest) -> str:
        return "ok"

    return adapter


# -- the load generator (`--role load`, a process of its own) -----------------------------------
async def load(plan: dict[str, Any]) -> None:
    """Open the plan's clients, warm up, print `ready`, wait for `go` on stdin, call, print the result."""
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    kind, tool, expected = plan["kind"], TOOLS[plan["kind"]], EXPECTED[plan["kind"]]
    latencies: list[float] = []
    errors: dict[str, int] = {}
    serial = 0

    async def call(client: Any) -> None:
        nonlocal serial
        serial += 1
        arguments = {"title": f"{plan['tag']}-{serial}"} if kind == "write" else {}
        started = time.perf_counter()
        try:
            result = await asyncio.wait_for(client.call_tool(tool, arguments), CALL_TIMEOUT)
        except Exception as exc:  # a transport failure is counted, not fatal: the table says how many
            # one key per kind of failure: without the gateway's per-error reference
            name = f"{type(exc).__name__}: {REFERENCE.sub('', str(exc))[:80]}"
            errors[name] = errors.get(name, 0) + 1
            return
        elapsed = (time.perf_counter() - started) * 1000
        text = result.content[0].text if result.content else None
        if result.is_error or text != expected:
            error = (result.structured_content or {}).get("error") or {}
            code = (error.get("code") if isinstance(error, dict) else None) or f"text {text!r}"[:80]
            errors[code] = errors.get(code, 0) + 1
            return
        latencies.append(elapsed)

    async with contextlib.AsyncExitStack() as stack:
        clients = []
        for spec in plan["clients"]:
            headers = {"Authorization": f"Bearer {spec['token']}"}
            http = await stack.enter_async_context(httpx2.AsyncClient(headers=headers, timeout=CALL_TIMEOUT))
            clients.append(
                await stack.enter_async_context(Client(streamable_http_client(spec["url"], http_client=http)))
            )
        for _ in range(plan["warmup"]):
            await asyncio.gather(*(call(client) for client in clients))
        warm_errors = dict(errors)
        latencies.clear()
        errors.clear()
        print("ready", flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)

        remaining = plan["calls"]
        deadline = time.monotonic() + plan["seconds"] if plan["seconds"] else None

        async def worker(client: Any) -> None:
            nonlocal remaining
            while (remaining > 0) if deadline is None else (time.monotonic() < deadline):
                remaining -= 1
                await call(client)

        cpu_before, started = sum(os.times()[:2]), time.monotonic()
        await asyncio.gather(*(worker(client) for client in clients))
        ended, cpu_after = time.monotonic(), sum(os.times()[:2])
    answer = {
        "started": started,
        "ended": ended,
        "latencies_ms": latencies,
        "errors": errors,
        "warmup_errors": warm_errors,
        "cpu_s": cpu_after - cpu_before,
    }
    print(json.dumps(answer), flush=True)


# -- processes and CPU --------------------------------------------------------------------------
def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def cpu_seconds(pid: int, thread: int | None = None) -> float:
    """User + system time of a process (all its threads), or of one of its threads, so far; 0 when gone."""
    stat = Path(f"/proc/{pid}/stat") if thread is None else Path(f"/proc/{pid}/task/{thread}/stat")
    try:
        fields = stat.read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return 0.0
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def machine_busy() -> float:
    """CPU seconds the whole machine has been busy (all cores; not idle, not waiting for I/O)."""
    values = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    user, nice, system, _idle, _iowait, irq, softirq, steal = values[:8]
    return (user + nice + system + irq + softirq + steal) / CLK_TCK


def machine() -> str:
    model = "unknown CPU"
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    return f"nproc {os.cpu_count()}, {model}, Python {platform.python_version()}"


@dataclass
class Gateway:
    name: str
    url: str
    popen: subprocess.Popen[bytes]
    log: Path

    def check(self) -> None:
        if self.popen.poll() is not None:
            tail = "\n".join(self.log.read_text(errors="replace").splitlines()[-30:])
            raise RuntimeError(f"{self.name} exited {self.popen.returncode}:\n{tail}")

    def stop(self) -> None:
        if self.popen.poll() is None:
            self.popen.terminate()
            try:
                self.popen.wait(20)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait(10)


# -- PostgreSQL ---------------------------------------------------------------------------------
@contextlib.contextmanager
def fresh_database(server: str) -> Iterator[tuple[str, str]]:
    """A new database (its URL and name), dropped at the end, with any a dead bench run left."""
    import psycopg

    name = f"{DB_PREFIX}{os.getpid()}_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(f"{server}/postgres", autocommit=True, connect_timeout=5) as conn:
        for (stale,) in conn.execute("SELECT datname FROM pg_database WHERE datname LIKE 'warrant\\_bench\\_%'"):
            pid = stale[len(DB_PREFIX) :].split("_")[0]
            if pid.isdigit() and not Path(f"/proc/{pid}").exists():
                conn.execute(f'DROP DATABASE IF EXISTS "{stale}" WITH (FORCE)')
        conn.execute(f"CREATE DATABASE \"{name}\" TEMPLATE template0 ENCODING 'UTF8'")
    try:
        yield f"{server}/{name}", name
    finally:
        with psycopg.connect(f"{server}/postgres", autocommit=True, connect_timeout=5) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


class Backends:
    """The PostgreSQL server's processes and counters, as seen from a connection to its `postgres` database."""

    STATS_DELAY = 1.2  # s: a backend reports its transaction counts at most once a second (PostgreSQL 15)

    def __init__(self, server: str) -> None:
        import psycopg

        self._conn = psycopg.connect(f"{server}/postgres", autocommit=True, connect_timeout=5)

    def pids(self, database: str) -> list[int]:
        """The backends connected to one database."""
        rows = self._conn.execute("SELECT pid FROM pg_stat_activity WHERE datname = %s", (database,)).fetchall()
        return [int(row[0]) for row in rows]

    def shared(self) -> list[int]:
        """The server's own processes (WAL writer, checkpointer, ...): shared by every database."""
        rows = self._conn.execute(
            "SELECT pid FROM pg_stat_activity WHERE backend_type NOT IN ('client backend', 'autovacuum worker')"
        ).fetchall()
        return [int(row[0]) for row in rows]

    def transactions(self, database: str) -> tuple[int, int]:
        """Committed and rolled-back transactions in one database so far (a serialization failure rolls back)."""
        self._conn.execute("SELECT pg_stat_clear_snapshot()")
        row = self._conn.execute(
            "SELECT xact_commit, xact_rollback FROM pg_stat_database WHERE datname = %s", (database,)
        ).fetchone()
        return (int(row[0]), int(row[1])) if row else (0, 0)

    def close(self) -> None:
        self._conn.close()


# -- one configuration --------------------------------------------------------------------------
@dataclass
class Config:
    name: str
    gateways: list[Gateway] = field(default_factory=list)
    database: str | None = None  # the PostgreSQL database's name
    tokens: list[tuple[str, str]] = field(default_factory=list)  # (MCP URL, lease token) per client


def start_gateway(name: str, tree: Path, home: Path, database_url: str) -> Gateway:
    port = free_port()
    home.mkdir(parents=True, exist_ok=True)
    (home / "bench.yaml").write_text("name: bench\nkind: python\nfactory: replicas:noop_adapter\n")
    (home / "policy.yaml").write_text(
        f"tools:\n  {TOOLS['read']}: {{effect: read}}\n  {TOOLS['write']}: {{effect: write}}\n"
    )
    config = home / f"{name}.yaml"
    config.write_text(
        f"database: {database_url}\n"
        f"listen: {{host: 127.0.0.1, port: {port}}}\n"
        "api_keys:\n  - {name: bench, tenant: bench, roles: [admin], key_env: BENCH_ADMIN_KEY}\n"
        "adapters: [bench.yaml]\npolicies: [policy.yaml]\n"
    )
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("WARRANT_", "OTEL_"))}
    environ |= {"BENCH_ADMIN_KEY": ADMIN_KEY, "WARRANT_LEDGER_KEY": "bench-ledger-key-not-a-secret"}
    environ["PYTHONPATH"] = os.pathsep.join([str(tree), str(Path(__file__).resolve().parent)])
    log = home / f"{name}.log"
    argv = [sys.executable, "-m", "gateway.cli", "serve", "--config", str(config), "--log-level", "warning"]
    with log.open("wb") as out:
        popen = subprocess.Popen(
            argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=tree, env=environ
        )
    return Gateway(name, f"http://127.0.0.1:{port}", popen, log)


def wait_healthy(gateway: Gateway, within: float = 60.0) -> None:
    import httpx

    deadline = time.monotonic() + within
    while True:
        gateway.check()
        with contextlib.suppress(httpx.TransportError):
            if httpx.get(f"{gateway.url}/healthz", timeout=2).status_code == 200:
                return
        if time.monotonic() > deadline:
            raise RuntimeError(f"{gateway.name} did not answer /healthz within {within:g} s")
        time.sleep(0.1)


def lease_clients(config: Config, clients: int) -> None:
    """A run and a lease per client (made through the first gateway); client i calls gateway i mod n."""
    import httpx

    big = 1_000_000_000
    contract = {
        "goal": "benchmark gated calls across replicas",
        "spec_version": "v1",
        "owner": "bench@example.com",
        "expires_in": "72h",
        "lease_ttl": "4h",
        "budgets": {"spend": "1000.00", "tool_calls": big, "writes": big, "active_seconds": big},
        "authority": {"allow": list(TOOLS.values())},
    }
    first = config.gateways[0]
    with httpx.Client(base_url=first.url, timeout=30, headers={"Authorization": f"Bearer {ADMIN_KEY}"}) as api:
        for i in range(clients):
            run = api.post("/api/runs", json=contract)
            run.raise_for_status()
            grant = api.post(f"/api/runs/{run.json()['run_id']}/lease", json={"worker": f"agent-{i}"})
            grant.raise_for_status()
            gateway = config.gateways[i % len(config.gateways)]
            config.tokens.append((f"{gateway.url}/mcp", grant.json()["token"]))


# -- a phase ------------------------------------------------------------------------------------
@dataclass
class Phase:
    config: str
    kind: str
    seconds: float
    latencies_ms: list[float]
    errors: dict[str, int]
    cpu_s: dict[str, float]  # gateway, threads (of the gateway), postgres, pg shared, load, machine
    transactions: dict[str, float]  # commit, rollback: in the configuration's PostgreSQL database

    @property
    def calls(self) -> int:
        return len(self.latencies_ms)

    @property
    def rate(self) -> float:
        return self.calls / self.seconds if self.seconds else 0.0

    def percentile(self, q: float) -> float:
        if not self.latencies_ms:
            return float("nan")
        ordered = sorted(self.latencies_ms)
        return ordered[min(len(ordered) - 1, max(0, round(q / 100 * len(ordered)) - 1))]

    def summary(self) -> str:
        busy = self.cpu_s["machine"] / self.seconds
        return (
            f"{self.config:<9} {self.kind:<5}: {self.rate:7,.0f} calls/s  p50 {self.percentile(50):6.2f} ms"
            f"  p99 {self.percentile(99):6.2f} ms  errors {sum(self.errors.values())}  cores busy {busy:.2f}"
        )

    def cpu_ms(self, part: str) -> float:
        """CPU milliseconds per call of one part."""
        return self.cpu_s.get(part, 0.0) * 1000 / self.calls if self.calls else float("nan")

    @staticmethod
    def pooled(phases: list[Phase]) -> Phase:
        first = phases[0]
        errors: dict[str, int] = {}
        for p in phases:
            for code, n in p.errors.items():
                errors[code] = errors.get(code, 0) + n
        return Phase(
            first.config,
            first.kind,
            sum(p.seconds for p in phases),
            [ms for p in phases for ms in p.latencies_ms],
            errors,
            {part: sum(p.cpu_s.get(part, 0.0) for p in phases) for part in first.cpu_s},
            {what: sum(p.transactions[what] for p in phases) for what in first.transactions},
        )


def gateway_cpu(config: Config) -> tuple[float, float]:
    """CPU seconds so far of the configuration's gateways: all threads, and all but the event loop's."""
    total = loop = 0.0
    for gateway in config.gateways:
        pid = gateway.popen.pid
        total += cpu_seconds(pid)
        loop += cpu_seconds(pid, pid)
    return total, total - loop


def run_phase(config: Config, kind: str, options: argparse.Namespace, folder: Path, backends: Backends | None) -> Phase:
    procs = max(1, min(options.load_procs, len(config.tokens)))
    blocks = [
        config.tokens[len(config.tokens) * i // procs : len(config.tokens) * (i + 1) // procs] for i in range(procs)
    ]
    loaders: list[subprocess.Popen[str]] = []
    try:
        for i, block in enumerate(blocks):
            plan = {
                "kind": kind,
                "tag": f"{config.name}-{i}-{uuid.uuid4().hex[:8]}",
                "clients": [{"url": url, "token": token} for url, token in block],
                "warmup": options.warmup,
                "seconds": options.seconds,
                "calls": (options.calls * (i + 1) // procs - options.calls * i // procs) if options.calls else 0,
            }
            path = folder / f"plan-{config.name}-{kind}-{i}.json"
            path.write_text(json.dumps(plan))
            argv = [sys.executable, __file__, "--role", "load", "--plan", str(path)]
            loaders.append(subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=ROOT))
        for loader in loaders:
            assert loader.stdout is not None
            line = loader.stdout.readline().strip()
            if line != "ready":
                raise RuntimeError(f"a load process did not start ({config.name}, {kind}): {line!r}")
        for gateway in config.gateways:
            gateway.check()
        database = config.database if backends else None
        if backends and database:
            time.sleep(backends.STATS_DELAY)  # the warm-up's transactions reported before the count starts
            tx_before = backends.transactions(database)
            pg_before = {pid: cpu_seconds(pid) for pid in backends.pids(database)}
            shared = backends.shared()
        else:
            shared = []
        shared_before = sum(cpu_seconds(pid) for pid in shared)
        gw_before, threads_before = gateway_cpu(config)
        busy_before = machine_busy()
        for loader in loaders:
            assert loader.stdin is not None
            loader.stdin.write("go\n")
            loader.stdin.flush()
        answers = []
        for loader in loaders:
            assert loader.stdout is not None
            line = loader.stdout.readline()
            if not line:
                raise RuntimeError(f"a load process ended without a result ({config.name}, {kind})")
            answers.append(json.loads(line))
        busy_after = machine_busy()
        gw_after, threads_after = gateway_cpu(config)
        shared_after = sum(cpu_seconds(pid) for pid in shared)
        pg = committed = rolled_back = 0.0
        if backends and database:
            # A backend that started during the phase counts from 0; one that ended is lost (the pools keep theirs).
            pg = sum(cpu_seconds(pid) - pg_before.get(pid, 0.0) for pid in backends.pids(database))
            time.sleep(backends.STATS_DELAY)
            tx_after = backends.transactions(database)
            committed, rolled_back = tx_after[0] - tx_before[0], tx_after[1] - tx_before[1]
    finally:
        for loader in loaders:
            if loader.poll() is None:
                with contextlib.suppress(OSError):
                    assert loader.stdin is not None
                    loader.stdin.close()
                try:
                    loader.wait(30)
                except subprocess.TimeoutExpired:
                    loader.kill()
                    loader.wait(10)
    errors: dict[str, int] = {}
    for answer in answers:
        for code, n in {**answer["warmup_errors"], **answer["errors"]}.items():
            errors[code] = errors.get(code, 0) + n
    cpu = {
        "gateway": gw_after - gw_before,
        "threads": threads_after - threads_before,
        "postgres": pg,
        "pg shared": shared_after - shared_before,
        "load": sum(answer["cpu_s"] for answer in answers),
        "machine": busy_after - busy_before,
    }
    seconds = max(a["ended"] for a in answers) - min(a["started"] for a in answers)
    latencies = [ms for answer in answers for ms in answer["latencies_ms"]]
    return Phase(config.name, kind, seconds, latencies, errors, cpu, {"commit": committed, "rollback": rolled_back})


# -- the report ---------------------------------------------------------------------------------
def report(table: dict[tuple[str, str], Phase]) -> None:
    header = (
        f"{'config':<9} {'kind':<5} {'calls':>6} {'calls/s':>8} {'p50 ms':>7} {'p99 ms':>7} {'errors':>6} | "
        f"{'gateway':>7} {'off loop':>8} {'pg':>5} {'pg shrd':>7} {'load':>5} {'other':>5} {'total':>5} | "
        f"{'tx':>5} {'rb':>5} | {'cores':>5}"
    )
    print(header)
    print("-" * len(header))
    for (name, kind), p in table.items():
        ours = sum(p.cpu_s[part] for part in ("gateway", "postgres", "pg shared", "load"))
        other = max(0.0, p.cpu_s["machine"] - ours) * 1000 / p.calls if p.calls else float("nan")
        tx = f"{p.transactions['commit'] / p.calls:>5.2f} {p.transactions['rollback'] / p.calls:>5.2f}"
        if p.config == "sqlite":
            tx = f"{'-':>5} {'-':>5}"
        print(
            f"{name:<9} {kind:<5} {p.calls:>6} {p.rate:>8,.0f} {p.percentile(50):>7.2f} {p.percentile(99):>7.2f} "
            f"{sum(p.errors.values()):>6} | {p.cpu_ms('gateway'):>7.2f} {max(0.0, p.cpu_ms('threads')):>8.2f} "
            f"{p.cpu_ms('postgres'):>5.2f} {p.cpu_ms('pg shared'):>7.2f} {p.cpu_ms('load'):>5.2f} {other:>5.2f} "
            f"{p.cpu_ms('machine'):>5.2f} | {tx} | "
            f"{p.cpu_s['machine'] / p.seconds:>5.2f}"
        )
    print(
        "CPU ms per call (user + system): gateway = the configuration's `warrant serve` process(es), all threads;"
        " off loop = the part of it outside each event loop's thread (SQLite's threads, the PostgreSQL pool's);"
        " pg = the backends of the configuration's database; pg shrd = PostgreSQL's own processes (WAL writer,"
        " checkpointer, ...; shared with every database on the server); load = the load processes (the MCP SDK"
        " clients); other = the rest of the machine (idle configurations, other users); total = the whole"
        " machine. tx, rb: transactions committed and rolled back (serialization failures, retried) per call in"
        " the configuration's database. cores = the whole machine's busy CPU seconds per second."
    )
    for (name, kind), p in table.items():
        if p.errors:
            print(f"errors, {name} {kind}: {p.errors}")
    print()
    cores = os.cpu_count() or 1
    for kind in KINDS:
        lite, one, two = (table.get((name, kind)) for name in CONFIGS)
        if one and two and one.rate:
            ratio = two.rate / one.rate
            verdict = "met" if ratio >= 1.6 else "NOT MET"
            print(f"{kind}s: two replicas / one on PostgreSQL: {ratio:.2f}x (goal >= 1.6x: {verdict})", end="")
            print(f"; one on PostgreSQL / one on SQLite: {one.rate / lite.rate:.2f}x" if lite and lite.rate else "")
        for phase in (lite, one, two):
            if phase is None or not phase.calls:
                continue
            # What the machine could serve if the configuration's own processes had it to themselves.
            serve_ms = phase.cpu_ms("gateway") + phase.cpu_ms("postgres") + phase.cpu_ms("pg shared")
            with_load = serve_ms + phase.cpu_ms("load")
            gateway_ms = phase.cpu_ms("gateway")
            print(
                f"  {phase.config:<9} {kind}s: {with_load:.2f} ms of CPU per call in its own processes and the load"
                f" generator ({calls_per_s(cores, with_load)} calls/s on {cores} cores), {serve_ms:.2f} without the"
                f" load generator ({calls_per_s(cores, serve_ms)} calls/s); a gateway process, at"
                f" {gateway_ms:.2f} ms per call it serves, serves {calls_per_s(1, gateway_ms)} calls/s"
                " per core it gets"
            )


def calls_per_s(cores: int, cpu_ms: float) -> str:
    """The calls per second `cores` serve at `cpu_ms` per call; "-" when no CPU was counted (a phase of a
    few calls can fall within one clock tick of /proc's counters, and 1000 / 0 would end the report)."""
    return f"{cores * 1000 / cpu_ms:,.0f}" if cpu_ms > 0 else "-"


def main(options: argparse.Namespace) -> int:
    names = [name for name in options.only.split(",") if name]
    unknown = set(names) - set(CONFIGS)
    if unknown:
        print(f"unknown configurations: {sorted(unknown)} (known: {', '.join(CONFIGS)})", file=sys.stderr)
        return 2
    commit = (
        subprocess.run(
            ["git", "-C", str(options.tree), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
        ).stdout.strip()
        or f"unknown (--tree {options.tree} is not a git checkout)"
    )
    dirty = subprocess.run(
        ["git", "-C", str(options.tree), "status", "--porcelain", "--untracked-files=no", "gateway"],
        capture_output=True,
        text=True,
    ).stdout.strip()
    results: dict[tuple[str, str], list[Phase]] = {}
    configs: list[Config] = []
    loads: list[str] = []
    with contextlib.ExitStack() as stack:
        folder = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="warrant-bench-replicas-")))
        backends: Backends | None = None
        if any(name != "sqlite" for name in names):
            backends = Backends(options.postgres)
            stack.callback(backends.close)
        try:
            for name in names:
                config = Config(name)
                configs.append(config)
                home = folder / name
                if name == "sqlite":
                    url = f"sqlite:///{home}/warrant.db"
                else:
                    url, config.database = stack.enter_context(fresh_database(options.postgres))
                for i in range(2 if name == "replicas" else 1):
                    gateway = start_gateway(f"{name}-{'ab'[i]}", options.tree, home, url)
                    config.gateways.append(gateway)
                    stack.callback(gateway.stop)
                    wait_healthy(gateway)  # one at a time: the first migrates the database
                lease_clients(config, options.concurrency)
            started = time.monotonic()
            loads.append(f"{os.getloadavg()[0]:.2f}")
            for round_number in range(options.rounds):
                for config in configs:
                    for kind in KINDS:
                        phase = run_phase(config, kind, options, folder, backends)
                        results.setdefault((config.name, kind), []).append(phase)
                        print(f"  round {round_number + 1} {phase.summary()}", flush=True)
                loads.append(f"{os.getloadavg()[0]:.2f}")
            measured_for = time.monotonic() - started
            if any(phase.errors for phases in results.values() for phase in phases):
                for gateway in (g for config in configs for g in config.gateways):
                    logged = [line for line in gateway.log.read_text(errors="replace").splitlines() if line.strip()]
                    if logged:  # a gateway logs at warning and above only: what it says here is about the errors
                        print(f"--- {gateway.name} log (last 40 lines):", *logged[-40:], sep="\n", file=sys.stderr)
        except BaseException:
            for config in configs:
                for gateway in config.gateways:
                    print(
                        f"--- {gateway.name} log:\n{gateway.log.read_text(errors='replace')[-3000:]}", file=sys.stderr
                    )
            raise

    print()
    print(
        f"Replicas benchmark, {datetime.now().isoformat(timespec='minutes')}, commit {commit}"
        + (" (gateway/ has uncommitted changes)" if dirty else "")
        + f": {machine()}"
    )
    amount = f"{options.seconds:g} s" if options.seconds else f"{options.calls} calls"
    print(
        f"per configuration and kind: {options.concurrency} clients (each its own run, lease and MCP SDK client) in"
        f" {options.load_procs} load process(es), {amount} per round after {options.warmup} warm-up calls per client,"
        f" {options.rounds} round(s) pooled; {measured_for:.0f} s measuring; 1-minute load average at the start and"
        f" after each round: {' -> '.join(loads)}"
    )
    print()
    table = {key: Phase.pooled(phases) for key, phases in results.items()}
    report(table)
    if options.smoke:
        print("--smoke: tiny counts, and tx / rb not waited for (PostgreSQL's statistics lag): no figure here is one")
    return 1 if any(p.errors for p in table.values()) else 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    amount = parser.add_mutually_exclusive_group()
    amount.add_argument("--seconds", type=float, help="seconds per phase and round (default 10)")
    amount.add_argument("--calls", type=int, help="calls per phase and round, shared by the clients")
    parser.add_argument("--concurrency", type=int, default=16, help="clients at once (default 16)")
    parser.add_argument("--load-procs", type=int, default=2, help="load generator processes (default 2)")
    parser.add_argument("--only", default=",".join(CONFIGS), help=f"comma-separated subset of {','.join(CONFIGS)}")
    parser.add_argument("--rounds", type=int, default=2, help="rounds the configurations take turns in (default 2)")
    parser.add_argument("--warmup", type=int, default=20, help="warm-up calls per client and phase (default 20)")
    parser.add_argument(
        "--postgres",
        default="postgresql://postgres@127.0.0.1:5432",
        help="the PostgreSQL server (a database is created per configuration and dropped at the end)",
    )
    parser.add_argument("--tree", default=str(ROOT), help="the checkout `warrant serve` runs from (default: this one)")
    parser.add_argument("--smoke", action="store_true", help=f"tiny counts ({SMOKE}), the same code")
    parser.add_argument("--role", choices=["load"], help=argparse.SUPPRESS)
    parser.add_argument("--plan", help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.role == "load":
        asyncio.run(load(json.loads(Path(options.plan).read_text())))
        sys.exit(0)
    if options.smoke:
        options.seconds = None
        for name, value in SMOKE.items():
            setattr(options, name, value)
        # The wait for PostgreSQL's statistics (4 s a configuration) is left out: tx and rb are then not counted.
        Backends.STATS_DELAY = 0.0
    if options.seconds is None and options.calls is None:
        options.seconds = 10.0
    if min(options.concurrency, options.load_procs, options.rounds) < 1 or options.warmup < 0:
        parser.error("--concurrency, --load-procs and --rounds must be at least 1, --warmup at least 0")
    options.tree = Path(options.tree).resolve()
    options.postgres = options.postgres.rstrip("/")
    sys.exit(main(options))
