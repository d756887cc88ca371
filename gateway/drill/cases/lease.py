"""2. Duplicate start / superseded worker: on one gateway, and across two replicas (the takeover
through A, the old worker on B)."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Mapping
from datetime import datetime
from typing import Any

import httpx

from gateway.canonical import payload_sha256
from gateway.drill.case import Findings, Mode, case
from gateway.drill.cases.common import actions_of, contacts, messages
from gateway.drill.world import WAIT, Agent, DrillError, Reply, World

TOOL = "crm__create_contact"
# The case's own write timeout and the CRM's hold on the old worker's in-flight write inside it: the
# takeover must land in the hold also when the drill shares two cores with other cases.
TOOL_TIMEOUT = 5.0
DELAY = 3.0


@case(
    "superseded-worker",
    "2. Duplicate start / superseded worker",
    "after a takeover every call of the old worker (one in transit across it, later ones, its approved write) "
    "is refused lease_superseded and reaches no destination; its write in flight keeps its real outcome; "
    "the new worker's calls pass; the same after a SIGKILL",
    depends_on=("fencing",),
)
async def superseded_worker(world: World, mode: Mode, f: Findings) -> None:
    def lead(tag: str) -> dict[str, str]:
        return {"email": f"superseded-{mode}-{tag}@leads.example", "name": f"Superseded {tag}"}

    mail = {"to": f"superseded-{mode}@partner.example", "subject": "Superseded", "body": f"drill {mode}"}
    # restart: SIGKILL once the CRM answers the old worker's in-flight write, after the takeover
    # (the first hit of the tool is the old worker's opening call, which passes).
    world.tool_timeout = TOOL_TIMEOUT
    await world.start_gateway({"after_dispatch": {"tool": TOOL, "skip": 1}} if mode == "restart" else None)
    run_id, old = await world.start_run("worker-1")

    first = await old.call(TOOL, lead("before"), operation_id="before")
    f.expect(first.ok, f"the old worker's call before the takeover was refused ({first.code})")
    # A write a human approved for the old worker, which it has not sent yet when the lease changes
    # hands (the approval gate itself is the business of other cases: without it the mail simply
    # went out before the takeover).
    asked = await old.call("email__send", mail, operation_id="mail")
    f.expect(asked.code in ("approval_required", None), f"the old worker's mail answered {asked.code}")
    if asked.code == "approval_required":
        await world.approve(asked.error["approval_id"])
    sent_before = len(messages(world, mail["to"]))

    # The old worker's next write is on the wire before the takeover: the gateway has its headers
    # (the lease token) and half of its body; the rest arrives after the takeover.
    release = asyncio.Event()
    async with _held_call(world.url, old, TOOL, lead("delayed"), "delayed", release) as delayed:
        # And a write of the old worker in flight: the CRM sits on it while the lease changes hands.
        await world.crm.fault(method="POST", path="/contacts", mode="delay", times=1, delay=DELAY)
        in_flight = asyncio.create_task(old.call(TOOL, lead("inflight"), operation_id="inflight"))
        await _fault_taken(world)
        new = await world.lease(run_id, "worker-2", takeover=True)
        release.set()
        late = await delayed
    f.saw(f"call in transit across the takeover: {late.code}")
    f.equal(late.code, "lease_superseded", "the old worker's call that arrived after the takeover")

    if mode == "restart":
        died = await world.died_at("after_dispatch")
        landed = await in_flight
        f.expect(died, f"the gateway did not die at after_dispatch ({landed.code})")
        f.saw("SIGKILL after the in-flight write's dispatch" if died else "no SIGKILL at after_dispatch")
        await world.start_gateway()
    else:
        landed = await in_flight
    f.saw(f"write in flight across the takeover: {landed.code or 'succeeded'}")

    # Every later call of the old worker: a new write, its in-flight write again, a read, its mail.
    refused = {
        "write": await old.call(TOOL, lead("after"), operation_id="after"),
        "retry": await old.call(TOOL, lead("inflight"), operation_id="inflight"),
        "read": await old.call("crm__search_contacts", {"email": lead("before")["email"]}),
    }
    refused["approved mail"] = await old.call("email__send", mail, operation_id="mail")
    for what, reply in refused.items():
        f.equal(reply.code, "lease_superseded", f"the old worker's {what} after the takeover")
    renewed = await world.request("POST", "/api/leases/renew", headers={"Authorization": f"Bearer {old.token}"})
    f.expect(
        renewed.status_code >= 400 and "lease_superseded" in renewed.text,
        f"the old lease was renewed after the takeover ({renewed.status_code} {renewed.text[:200]})",
    )
    f.saw("old worker after: " + ", ".join(f"{k} {v.code}" for k, v in refused.items()))

    # Ground truth: nothing the old worker sent after the takeover reached a destination.
    for tag in ("delayed", "after"):
        f.equal(len(contacts(world, lead(tag)["email"])), 0, f"contacts for the old worker's {tag} write")
    f.equal(len(messages(world, mail["to"])), sent_before, "messages after the old worker's approved mail")

    await _kept_its_outcome(world, f, run_id, lead("inflight"))

    # The new worker's calls pass, its approved mail too (the refused call did not use the approval).
    mine = await new.call(TOOL, lead("new"), operation_id="new")
    f.expect(mine.ok, f"the new worker's write was refused ({mine.code})")
    f.equal(len(contacts(world, lead("new")["email"])), 1, "contacts for the new worker's write")
    theirs = await new.call("email__send", mail, operation_id="mail")
    f.expect(theirs.ok, f"the new worker's approved mail was refused ({theirs.code})")
    f.equal(len(messages(world, mail["to"])), 1, "messages after the new worker's mail")
    f.equal(theirs.replayed, bool(sent_before), "the new worker's mail was a replay")
    f.saw(f"new worker: write {mine.code or 'ok'}, mail {theirs.code or 'ok'}")


@case(
    "takeover-across-replicas",
    "2. Duplicate start / superseded worker",
    "a takeover through replica A fences the old worker on replica B: its call in transit across the takeover, "
    "its later write, retry and read (through B and through A) and its renewal are refused lease_superseded and "
    "reach no destination; its write in flight on B keeps its real outcome; the new worker's calls pass through "
    "B; the same with B SIGKILLed after that write's dispatch and restarted while A serves",
    depends_on=("fencing",),
    replicas=2,
)
async def takeover_across_replicas(world: World, mode: Mode, f: Findings) -> None:
    a, b = 0, 1

    def lead(tag: str) -> dict[str, str]:
        return {"email": f"across-{mode}-{tag}@leads.example", "name": f"Across {tag}"}

    world.tool_timeout = TOOL_TIMEOUT
    # restart: B dies once the CRM answers the old worker's in-flight write, after the takeover.
    await world.start_replicas({b: {"after_dispatch": {"tool": TOOL, "skip": 1}}} if mode == "restart" else None)
    run_id, old = await world.start_run("worker-1", replica=b)  # the old worker calls through B
    first = await old.call(TOOL, lead("before"), operation_id="before")
    f.expect(first.ok, f"the old worker's call through B before the takeover was refused ({first.code})")

    release = asyncio.Event()
    async with _held_call(world.urls[b], old, TOOL, lead("delayed"), "delayed", release) as delayed:
        await world.crm.fault(method="POST", path="/contacts", mode="delay", times=1, delay=DELAY)
        in_flight = asyncio.create_task(old.call(TOOL, lead("inflight"), operation_id="inflight"))
        await _fault_taken(world)
        new = await world.lease(run_id, "worker-2", takeover=True, replica=a)  # the takeover, through A
        release.set()
        late = await delayed
    f.equal(late.code, "lease_superseded", "the old worker's call in transit on B across the takeover through A")

    if mode == "restart":
        died = await world.died_at("after_dispatch", replica=b)
        landed = await in_flight
        f.expect(died, f"replica B did not die at after_dispatch ({landed.code})")
        # A serves while B is down: the old worker is fenced there too, the new one passes.
        on_a = await old.via(world.urls[a]).call(TOOL, lead("while-down"), operation_id="while-down")
        f.equal(on_a.code, "lease_superseded", "the old worker's write through A while B is down")
        mine = await new.call(TOOL, lead("new-a"), operation_id="new-a")
        f.expect(mine.ok, f"the new worker's write through A while B is down answered {mine.code}")
        f.saw(f"B SIGKILLed after the in-flight write's dispatch: {died}; through A meanwhile: old {on_a.code}")
        await world.start_gateway(replica=b)
    else:
        landed = await in_flight
    f.saw(f"in transit on B across the takeover on A: {late.code}; in flight on B: {landed.code or 'succeeded'}")

    refused = {
        "write through B": await old.call(TOOL, lead("after"), operation_id="after"),
        "retry through B": await old.call(TOOL, lead("inflight"), operation_id="inflight"),
        "read through B": await old.call("crm__search_contacts", {"email": lead("before")["email"]}),
        "write through A": await old.via(world.urls[a]).call(TOOL, lead("after-a"), operation_id="after-a"),
    }
    for what, reply in refused.items():
        f.equal(reply.code, "lease_superseded", f"the old worker's {what} after the takeover")
    renewed = await world.request("POST", "/api/leases/renew", replica=b, headers=old.bearer)
    f.expect(
        renewed.status_code >= 400 and "lease_superseded" in renewed.text,
        f"the old lease was renewed through B after the takeover ({renewed.status_code} {renewed.text[:200]})",
    )
    for tag in ("delayed", "after", "after-a", "while-down"):
        f.equal(len(contacts(world, lead(tag)["email"])), 0, f"contacts for the old worker's {tag} write")

    await _kept_its_outcome(world, f, run_id, lead("inflight"))

    theirs = await new.via(world.urls[b]).call(TOOL, lead("new-b"), operation_id="new-b")
    f.expect(theirs.ok, f"the new worker's write through B was refused ({theirs.code})")
    f.equal(len(contacts(world, lead("new-b")["email"])), 1, "contacts for the new worker's write through B")
    f.saw("old worker after: " + ", ".join(f"{k} {v.code}" for k, v in refused.items()))
    f.saw(f"new worker through B: {theirs.code or 'ok'}")


async def _kept_its_outcome(world: World, f: Findings, run_id: str, arguments: dict[str, str]) -> None:
    """The old worker's write in flight across the takeover keeps its real outcome: it was sent under
    the lease that admitted it and landed, once, after the takeover. Succeeded, or unknown where its
    answer was lost (a SIGKILL; a slow machine past the tool timeout) until reconciled (the watchdog
    may have looked it up already; reconciling is category 1's case): never failed, never refused."""
    digest = payload_sha256(arguments)
    records = [
        a
        for a in await actions_of(world, run_id, TOOL)
        if a["payload_sha256"] == digest and a["status"] != "rejected"  # not its refused retry
    ]
    found = [a["status"] for a in records]
    f.expect(
        len(found) == 1 and found[0] in ("succeeded", "unknown"), f"the write admitted before the takeover: {found}"
    )
    f.saw(f"that write is now {found[0] if found else 'missing'}")
    f.equal(len(contacts(world, arguments["email"])), 1, "contacts for the write in flight")
    # Admitted before the takeover, settled after it (unknown ones are not settled at all).
    taken_over = await _takeover_at(world, run_id)
    admitted, settled = (records[0]["created_at"], records[0]["settled_at"]) if len(records) == 1 else (None, None)
    f.expect(
        admitted is not None
        and taken_over is not None
        and _instant(admitted) < taken_over
        and (settled is None or taken_over < _instant(settled)),
        "the old worker's write was not in flight at the takeover (the drill could not set up the race)",
    )


async def _takeover_at(world: World, run_id: str) -> datetime | None:
    """When the store granted the lease over (the run's history)."""
    grants = [e["at"] for e in await world.events(run_id) if e["type"] == "lease_granted" and e["data"].get("takeover")]
    return _instant(grants[0]) if grants else None


def _instant(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


async def _fault_taken(world: World) -> None:
    """Wait until the CRM has taken the delay fault: the old worker's write is at the destination."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + WAIT
    async with httpx.AsyncClient(base_url=world.crm.url, timeout=WAIT) as http:
        while (await http.get("/_admin/faults")).json()["items"]:
            if loop.time() > deadline:
                raise DrillError("the old worker's write never reached the CRM")
            await asyncio.sleep(0.02)


@contextlib.asynccontextmanager
async def _held_call(
    url: str, agent: Agent, tool: str, arguments: Mapping[str, Any], operation_id: str, release: asyncio.Event
) -> AsyncIterator[asyncio.Task[Reply]]:
    """A tools/call to the gateway at `url` whose request is on the wire but held in transit: it has received its
    headers (the lease token) and the first half of its body when this yields; the rest follows
    once `release` is set. The task answers the call as the agent saw it (a JSON-RPC POST, the
    2025-11-25 stateless transport)."""
    message = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": tool, "arguments": dict(arguments), "_meta": {"warrant/operation_id": operation_id}},
    }
    data = json.dumps(message).encode()
    on_wire = asyncio.Event()

    async def body() -> AsyncIterator[bytes]:
        yield data[: len(data) // 2]
        on_wire.set()
        await release.wait()
        yield data[len(data) // 2 :]

    async def send() -> Reply:
        headers = {
            "Authorization": f"Bearer {agent.token}",
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": "2025-11-25",
        }
        try:
            async with httpx.AsyncClient(timeout=WAIT) as http:
                answer = await http.post(f"{url}/mcp", content=body(), headers=headers)
        except httpx.HTTPError as exc:
            return Reply("transport", text=f"{type(exc).__name__}: {exc}"[:300])
        return _reply(answer)

    task = asyncio.create_task(send())
    try:
        await asyncio.wait_for(on_wire.wait(), WAIT)
        await asyncio.sleep(0.1)  # the first half is written: let the gateway read it
        yield task
    finally:
        release.set()
        if not task.done():
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(task, WAIT)


def _reply(answer: httpx.Response) -> Reply:
    if answer.status_code != 200:
        return Reply("transport", text=f"HTTP {answer.status_code}: {answer.text[:200]}")
    text = answer.text
    if answer.headers.get("content-type", "").startswith("text/event-stream"):
        text = next((line[5:] for line in text.splitlines() if line.startswith("data:")), "{}")
    result = json.loads(text).get("result") or {}
    structured = result.get("structuredContent")
    code = None
    if result.get("isError"):
        error = (structured or {}).get("error")
        code = error.get("code") if isinstance(error, dict) else "error"
    words = " ".join(c.get("text", "") for c in result.get("content", []))
    return Reply(code, structured, dict(result.get("_meta") or {}), words)
