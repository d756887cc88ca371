"""3. Expired authority, across two replicas, one of them with a clock ten minutes ahead.

Replica B runs with `drill: {clock_offset_s: 600}`: its process clock is ten minutes wrong. Every
expiry is decided on the database's one clock, so a lease B grants or renews, an approval B takes,
and a deadline B writes carry the database's time (measured against it, read by the drill
itself), a clock that is ahead refuses nothing early, and after the database's time passes them
they are over on both replicas: the lapsed lease is another worker's to take without a takeover
(which fences the old token), the approvals admit nothing.

Restart mode: B is SIGKILLed right after it admitted an approved mail (which renewed the lease
and used the approval), and started again, with the same wrong clock, while the lease and the
other approvals lapse; A serves meanwhile.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import datetime

from gateway.drill import postgres as pg
from gateway.drill.case import Findings, Mode, case
from gateway.drill.cases.authority import refusal_code
from gateway.drill.cases.common import contacts, messages
from gateway.drill.world import Agent, World

TOOL = "crm__create_contact"
SKEW = 600.0  # seconds: how far ahead B's clock is
# seconds: the lease TTL the case lets lapse. Every admitted call renews it, and the lease must
# outlast one call (5 s at load 10 on two cores).
SHORT = 8.0
VALID = 10.0  # seconds: the approvals' validity, granted before the lease part of the case
DEADLINE = 3600.0  # seconds: the run's deadline
SLACK = 0.5  # seconds: a time the gateway wrote may lie this far outside the database's times around it


def lead(mode: Mode, tag: str) -> dict[str, str]:
    return {"email": f"skewed-{mode}-{tag}@leads.example", "name": f"Skewed {tag}"}


def mail(mode: Mode, tag: str) -> dict[str, str]:
    return {"to": f"skewed-{mode}-{tag}@partner.example", "subject": f"Skewed {tag}", "body": f"drill {mode}"}


def instant(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


class DatabaseTime:
    """The database's clock, read by the drill (the replicas' one clock): brackets what a replica writes."""

    def __init__(self, world: World) -> None:
        self.url = world.database

    async def now(self) -> float:
        return await asyncio.to_thread(pg.now, self.url)

    async def until(self, at: float) -> None:
        """Wait until the database's time has passed `at` (by a little)."""
        for _ in range(10):
            left = at - await self.now()
            if left < -0.2:
                return
            await asyncio.sleep(left + 0.3)


def within(f: Findings, written: str | None, low: float, high: float, what: str) -> float:
    """`written` (a time a replica wrote) lies in [low, high] of the database's time; it, as epoch seconds."""
    at = instant(written) if written else 0.0
    f.expect(
        low - SLACK <= at <= high + SLACK,
        f"{what}: {written}, {at - high:+.1f} s past the database's time + its length"
        if at > high
        else f"{what}: {written}, outside the database's time + its length",
    )
    return at


@case(
    "skewed-clock",
    "3. Expired authority (a replica's clock 10 minutes ahead)",
    "with replica B's clock 10 minutes ahead, the lease, renewals, approvals and deadline B grants end on the "
    "database's time; nothing is refused early; past it the lease has lapsed (another worker acquires it "
    "through B without a takeover and the old worker's writes through A and B are refused lease_superseded), "
    "approvals are refused approval_expired, and nothing reaches a destination; the new worker's renewal "
    "through B or a fresh approval makes the same call pass once",
    depends_on=("approval", "fencing"),
    replicas=2,
)
async def skewed_clock(world: World, mode: Mode, f: Findings) -> None:
    a, b = 0, 1
    world.replicas[b].clock_offset_s = SKEW
    # restart: B dies right after it admitted an approved mail (the approval used, the lease renewed).
    await world.start_replicas({b: {"after_admit": {"tool": "email__send"}}} if mode == "restart" else None)
    db = DatabaseTime(world)
    approvals = await approved_through_b(world, f, db, mode)
    expiry = await lease_through_b(world, f, db, mode)
    f.saw(f"B (clock +{SKEW:g} s) granted a lease, renewals, {len(approvals)} approvals, a deadline: database time")

    # Past every expiry, by the database's clock. The lease lapsed on the database's time: another
    # worker takes the run through B without a takeover (a lease written on B's clock would hold ten
    # minutes more: lease_held), and from then on the old token is dead through A and through B.
    # (A lease or approval written on a wrong clock would end ten minutes later: not waited for, its
    # brackets failed above and the calls below show it still held or admitted.)
    latest = max([expiry.at, *(at for _, _, at in approvals.values())])
    await db.until(min(latest, await db.now() + VALID + 1))
    late = lead(mode, "late")
    taken = await world.request(
        "POST", f"/api/runs/{expiry.run_id}/lease", replica=b, json={"worker": "worker-2", "takeover": False}
    )
    f.equal(refusal_code(taken), None, "another worker's acquire through B past the lease's database time")
    for name, agent in (("B", expiry.on_b), ("A", expiry.on_a)):
        refused = await agent.call(TOOL, late, operation_id="late")
        f.equal(refused.code, "lease_superseded", f"the old worker's write through {name} after the lapse")
    f.equal(len(contacts(world, late["email"])), 0, "contacts after the old worker's writes")
    fresh: dict[str, str] = {}
    for tag, (agent, _, _) in approvals.items():
        if tag == "used":
            continue
        reply = await agent.call("email__send", mail(mode, tag), operation_id=tag)
        f.equal(reply.code, "approval_expired", f"the {tag} mail past its approval's time")
        f.equal(len(messages(world, mail(mode, tag)["to"])), 0, f"messages after the {tag} mail")
        if reply.error.get("approval_id"):
            fresh[tag] = reply.error["approval_id"]
    f.saw("past the database's time: the lease lapsed (taken without takeover, old writes lease_superseded) "
          "and mails approval_expired, through A and through B")  # fmt: skip

    # The new worker's renewal through B (on the database's time again) and a fresh approval make the
    # same calls pass, once.
    if taken.status_code >= 300:
        return
    new = Agent(world.urls[b], taken.json()["token"])
    before = await db.now()
    renewed = await world.request("POST", "/api/leases/renew", replica=b, headers=new.bearer)
    after = await db.now()
    f.equal(refusal_code(renewed), None, "the new worker's renewal through B")
    if renewed.status_code < 300:
        within(f, renewed.json().get("expires_at"), before + SHORT, after + SHORT, "the lease B renewed on request")
    again = await new.via(world.urls[a]).call(TOOL, late, operation_id="late")
    f.expect(again.ok and not again.replayed, f"the new worker's write through A answered {again.code}")
    f.equal(len(contacts(world, late["email"])), 1, "contacts after the new worker's write")
    if "late-b" in fresh:
        await world.approve(fresh["late-b"], replica=a)
        sent = await approvals["late-b"][0].call("email__send", mail(mode, "late-b"), operation_id="late-b")
        f.expect(sent.ok, f"the mail after a fresh approval answered {sent.code}")
    f.equal(len(messages(world, mail(mode, "late-b")["to"])), 1, "messages after the fresh approval")
    f.saw(f"the new worker renewed through B, its write: {again.code or 'ok'}; freshly approved, the mail: sent")


async def approved_through_b(
    world: World, f: Findings, db: DatabaseTime, mode: Mode
) -> dict[str, tuple[Agent, str, float]]:
    """Three mails, each in a run of its own (a pending approval holds its run waiting), approved
    through B: `used` is sent through B at once; `late-a` and `late-b` are left to lapse, to be
    sent through A and B. Per mail: the agent that will send it, its run, the approval's end."""
    a, b = 0, 1
    rule = {"tool": "email__send", "role": "approver", "valid_for": f"{VALID:g}s", "on_expiry": "pause"}
    out: dict[str, tuple[Agent, str, float]] = {}
    for tag, replica in (("late-a", a), ("late-b", b), ("used", b)):  # `used` last: sent right after
        run_id, agent = await world.start_run(replica=b, approvals=[rule])
        asked = await agent.call("email__send", mail(mode, tag), operation_id=tag)
        f.equal(asked.code, "approval_required", f"the {tag} mail before its approval")
        if not asked.error.get("approval_id"):
            continue
        before = await db.now()
        approved = await world.approve(asked.error["approval_id"], replica=b)
        after = await db.now()
        at = within(f, approved.get("valid_until"), before + VALID, after + VALID, "an approval B took")
        out[tag] = (agent.via(world.urls[replica]), run_id, at)
    if "used" not in out:
        return out
    # Through B at once: its clock ahead does not expire the approval early. restart: B dies once it
    # admitted the mail; A serves while B is down; B comes back with the same wrong clock.
    agent, _, _ = out["used"]
    used = await agent.call("email__send", mail(mode, "used"), operation_id="used")
    if mode == "restart":
        died = await world.died_at("after_admit", replica=b)
        f.expect(died, f"replica B did not die at after_admit ({used.code})")
        read = await agent.via(world.urls[a]).call("crm__search_contacts", {"email": mail(mode, "used")["to"]})
        f.expect(read.ok, f"a read through A while B is down answered {read.code}")
        f.saw(f"B SIGKILLed after admitting an approved mail: {died}; A served a read meanwhile: {read.code or 'ok'}")
        await world.start_gateway(replica=b)
    else:
        f.expect(used.ok, f"an approved mail through B inside its validity answered {used.code}")
    # Admitted through B: sent once (active); never sent, B died before dispatching it (restart).
    f.equal(len(messages(world, mail(mode, "used")["to"])), 1 if mode == "active" else 0, "messages of the used mail")
    return out


@dataclass
class Lease:
    """A lease B granted: the worker through B and through A, and when the lease ends."""

    run_id: str
    on_b: Agent
    on_a: Agent
    at: float


async def lease_through_b(world: World, f: Findings, db: DatabaseTime, mode: Mode) -> Lease:
    """A run B creates and leases, a write through A and one through B (which renews the lease):
    the deadline, the grant and the renewal on the database's time, neither write refused early."""
    a, b = 0, 1
    before = await db.now()
    run_id = await world.create_run(replica=b, lease_ttl=f"{SHORT:g}s", expires_in=f"{DEADLINE:g}s")
    grant = await world.ok("POST", f"/api/runs/{run_id}/lease", json={"worker": "worker-1"}, replica=b)
    after = await db.now()
    run = await world.run(run_id, replica=a)
    within(f, run["deadline"], before + DEADLINE, after + DEADLINE, "the deadline of the run B created")
    at = within(f, grant["expires_at"], before + SHORT, after + SHORT, "the lease B granted")
    on_b = Agent(world.urls[b], grant["token"])
    on_a = on_b.via(world.urls[a])
    first = await on_a.call(TOOL, lead(mode, "first"), operation_id="first")
    f.expect(first.ok, f"a write through A under B's lease answered {first.code}")
    # B's write comes last: every admitted call renews the lease, so B's renewal is the one that counts.
    before = await db.now()
    second = await on_b.call(TOOL, lead(mode, "second"), operation_id="second")
    after = await db.now()
    f.expect(second.ok, f"a write through B under a live lease answered {second.code}")
    lease = (await world.run(run_id, replica=a))["lease"]
    if second.ok:
        at = within(f, lease.get("expires_at"), before + SHORT, after + SHORT, "the lease B renewed by a write")
    else:
        at = instant(lease["expires_at"])
    return Lease(run_id, on_b, on_a, at)
