"""Also drilled: the watchdog raises its alerts, and a stopped watchdog shows in /healthz."""

from __future__ import annotations

import asyncio
import contextlib
import json
import sqlite3
import time
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import httpx

from gateway.drill.case import Findings, Mode, case
from gateway.drill.world import World
from gateway.runtime.webhooks import verify

# Each alert kind on the run made to raise it: (kind, run label).
EXPECTED = (
    ("lease_missed", "heartbeat"),
    ("stalled", "stalled"),
    ("approval_expiring", "approval"),
    ("unknown_action", "unknown"),
)
WATCHED = {kind for kind, _ in EXPECTED}
WAIT = 15.0  # seconds an alert may take to be raised and delivered, at most


@dataclass
class Receiver:
    """A webhook receiver on loopback: every delivery's body, and whether its signature verified."""

    secret: bytes
    bodies: list[dict[str, Any]] = field(default_factory=list)
    unsigned: int = 0
    url: str = ""

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(Exception):
            head = await reader.readuntil(b"\r\n\r\n")
            headers = {}
            for line in head.decode("latin-1").split("\r\n")[1:]:
                name, _, value = line.partition(":")
                headers[name.strip().lower()] = value.strip()
            body = await reader.readexactly(int(headers.get("content-length", "0")))
            if verify(self.secret, body, headers.get("warrant-signature", ""), time.time()):
                self.bodies.append(json.loads(body))
            else:
                self.unsigned += 1
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
            await writer.drain()
        writer.close()

    def alerts(self, run_id: str) -> Counter[str]:
        return Counter(b["kind"] for b in self.bodies if b.get("run_id") == run_id)


@contextlib.asynccontextmanager
async def receiving(world: World) -> AsyncIterator[Receiver]:
    receiver = Receiver(world.webhook_secret.encode())
    server = await asyncio.start_server(receiver.handle, "127.0.0.1", 0)
    receiver.url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/hooks"
    world.webhooks = [{"url": receiver.url, "name": "drill"}]
    try:
        yield receiver
    finally:
        server.close()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(server.wait_closed(), 2)


async def alert_entries(world: World, run_id: str) -> list[dict[str, Any]]:
    """The run's `alert` entries (GET /api/runs/{id}/events), oldest first."""
    return [e for e in await world.events(run_id) if e["type"] == "alert"]


async def alerts(world: World, run_id: str) -> Counter[str]:
    """The alert kinds in the run's history, counted."""
    return Counter(e["data"].get("kind") for e in await alert_entries(world, run_id))


async def arrived(world: World, receiver: Receiver, run_id: str, kind: str, wait: float = WAIT) -> bool:
    """Wait until `kind` is in the run's history and was delivered to the webhook."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + wait
    while loop.time() < deadline:
        if (await alerts(world, run_id))[kind] and receiver.alerts(run_id)[kind]:
            return True
        await asyncio.sleep(0.2)
    return False


async def healthz(world: World) -> tuple[int, dict[str, Any]]:
    async with httpx.AsyncClient(timeout=10) as http:
        answer = await http.get(f"{world.url}/healthz")
    return answer.status_code, answer.json().get("checks", {}).get("watchdog", {})


async def stopped_watchdog(world: World, f: Findings) -> None:
    """Another process holds the store's write lock: the watchdog's ticks stop completing and
    /healthz says so; released, the watchdog ticks again and /healthz is ok."""
    tick = 1.0
    conn = sqlite3.connect(world.folder / "warrant.db", isolation_level=None, timeout=10)
    try:
        conn.execute("BEGIN IMMEDIATE")
        await asyncio.sleep(2.5)  # with /healthz's own 2 s wait for the store: past three ticks
        status, check = await healthz(world)
    finally:
        conn.execute("ROLLBACK")
        conn.close()
    f.saw(f"watchdog stopped: /healthz {status} {check.get('code')}")
    f.equal((status, check.get("status"), check.get("code")), (503, "down", "watchdog_stalled"), "/healthz stalled")
    f.expect(float(check.get("last_tick_age", 0)) > 3 * tick, f"the stalled watchdog's last tick: {check}")
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 10
    while loop.time() < deadline:
        status, check = await healthz(world)
        if status == 200:
            break
        await asyncio.sleep(0.2)
    f.equal((status, check.get("status")), (200, "ok"), "/healthz once the watchdog ticks again")


@case(
    "watchdog-alerts",
    "Also drilled: the watchdog",
    "a missed heartbeat (lease_missed), a stalled run, an approval about to expire and an unknown action each "
    "raise their alert once, in the run's history and at the webhook, also across a SIGKILL; a healthy run "
    "raises none; a watchdog whose ticks stop shows in /healthz (503 watchdog_stalled) and recovers",
    depends_on=("approval",),  # approval_expiring needs the approval the policy asks for
)
async def watchdog_alerts(world: World, mode: Mode, f: Findings) -> None:
    # The approval warning opens at half of decide_within, so that a 1 s tick cannot miss it.
    world.watchdog = {**world.watchdog, "tick": "1s", "approval_warning_share": 0.5, "reconcile_every": "1h"}
    async with receiving(world) as receiver:
        crash = {"after_dispatch": {"tool": "crm__create_contact"}} if mode == "restart" else {}
        await world.start_gateway(crash)
        runs: dict[str, str] = {}
        runs["healthy"], healthy = await world.start_run(worker="healthy")
        runs["heartbeat"], _silent = await world.start_run(worker="silent", lease_ttl="2s")
        # In the restart mode both come due after the kill: the restarted gateway raises them.
        expectation, decide_within = ("3s", "6s") if mode == "active" else ("8s", "16s")
        runs["stalled"], _idle = await world.start_run(worker="idle", progress_expectation=expectation)
        approval_rule = {"tool": "crm__add_note", "role": "approver", "decide_within": decide_within}
        approval_rule["on_expiry"] = "resume"
        runs["approval"], waiting = await world.start_run(worker="waiting", approvals=[approval_rule])
        runs["unknown"], lost = await world.start_run(worker="lost")

        ok = await healthy.call("crm__search_contacts", {"q": "watchdog"})
        f.expect(ok.ok, f"the healthy run's read failed ({ok.code})")
        note = await waiting.call("crm__add_note", {"contact_id": "ct_watchdog", "text": f"watchdog {mode}"})
        f.equal(note.code, "approval_required", "the note that waits for its approval")

        # The silent worker never renews its 2 s lease: lease_missed, raised by this process.
        got = await arrived(world, receiver, runs["heartbeat"], "lease_missed")
        f.expect(got, "no lease_missed alert for the worker that stopped renewing")

        lead = {"email": f"watchdog-{mode}@leads.example", "name": "Watchdog Lead"}
        killed_at = None
        if mode == "active":
            await world.crm.fault(method="POST", path="/contacts", mode="error_after_commit", times=1)
            reply = await lost.call("crm__create_contact", lead, operation_id="watchdog-lead")
            f.equal(reply.code, "outcome_unknown", "the write answered 500 after commit")
        else:
            # Killed with the write's outcome only in memory; what is still to be raised is raised
            # by the next process from the store, and what was raised is not raised again.
            await lost.call("crm__create_contact", lead, operation_id="watchdog-lead")
            died = await world.died_at("after_dispatch")
            killed_at = time.time()  # the store's clock is this machine's: whatever is later, the next process raised
            f.expect(died, "the gateway did not die at the after_dispatch failpoint")
            await world.start_gateway()

        for kind, label in EXPECTED:
            got = await arrived(world, receiver, runs[label], kind)
            f.expect(got, f"no {kind} alert for the {label} run (history and webhook)")
        await asyncio.sleep(1.5)  # a few more ticks: nothing is raised twice
        entries = {label: await alert_entries(world, run_id) for label, run_id in runs.items()}
        seen = {label: Counter(e["data"].get("kind") for e in items) for label, items in entries.items()}
        for kind, label in EXPECTED:
            f.equal(seen[label][kind], 1, f"{kind} alerts in the {label} run's history")
            f.equal(receiver.alerts(runs[label])[kind], 1, f"{kind} deliveries for the {label} run")
        watched = {label: sorted(k for k in counts if k in WATCHED) for label, counts in seen.items()}
        f.equal(watched["healthy"], [], "alerts of the healthy run")
        f.equal(watched["heartbeat"], ["lease_missed"], "alerts of the silent worker's run")
        f.equal(watched["stalled"], ["stalled"], "alerts of the stalled run")
        f.equal(receiver.unsigned, 0, "deliveries whose signature did not verify")
        f.saw("alerts: " + ", ".join(f"{label} {kinds}" for label, kinds in watched.items()))
        if killed_at is not None:
            after = sorted(
                e["data"]["kind"]
                for items in entries.values()
                for e in items
                if e["data"].get("kind") in WATCHED and parse_at(e["at"]) >= killed_at
            )
            f.saw(f"SIGKILL after dispatch; raised after the restart: {after}")
            for kind in ("stalled", "approval_expiring", "unknown_action"):
                f.expect(kind in after, f"{kind} was not raised by the restarted gateway")
            f.expect("lease_missed" not in after, "lease_missed was raised again after the restart")

        await stopped_watchdog(world, f)


def parse_at(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
