"""3. Expired authority: a lease, a deadline, an approval, an API key, the destination's own credential.

Each case lets one authority lapse and checks that the next call is refused (or failed) with that
authority's own code, that nothing reached the destination that should not have, and that
restoring it (a fresh approval, a new lease from a valid key, a successor, the right credential)
makes the same call pass once. A lease is the exception the lease table makes (docs/leases.md):
time never refuses its holder, so a lapsed lease is re-established by the holder's next call, and
what ends it is another worker's acquire, which fences the old token. The restart mode kills the
gateway (SIGKILL) while the authority still holds, lets it lapse while the gateway is down, and
shows the same on the store it left behind.

Only the approval and lease cases rest on safeguards the drill can sabotage. The others rest on
checks no switch turns off (the deadline, the key's revocation, the destination's own answer):
each fails if the gateway lacks the behaviour — the revoked key did, until revoking a key ended
the leases it granted.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx

from gateway.canonical import payload_sha256
from gateway.drill.case import Findings, Mode, case
from gateway.drill.cases.common import actions_of, contacts, messages
from gateway.drill.world import WAIT, Agent, Reply, World

CATEGORY = "3. Expired authority"
TOOL = "crm__create_contact"
# seconds: the lease TTL, approval validity and deadline these cases let lapse. Long enough that the
# first call (an MCP client's connect and call, on a loaded machine) lands well inside it.
SHORT = 4.0


def lead(case_name: str, mode: Mode, tag: str) -> dict[str, str]:
    return {"email": f"{case_name}-{mode}-{tag}@leads.example", "name": f"{case_name} {tag}"}


async def renew(world: World, agent: Agent) -> httpx.Response:
    return await world.request("POST", "/api/leases/renew", headers={"Authorization": f"Bearer {agent.token}"})


def refusal_code(answer: httpx.Response) -> str | None:
    """The code of an operator API error body; None for a success."""
    if answer.status_code < 300:
        return None
    try:
        code = answer.json()["error"]["code"]
    except (ValueError, KeyError, TypeError):
        return f"HTTP {answer.status_code}"
    return str(code)


async def recorded_payload(world: World, run_id: str, digest: str) -> Any:
    """The payload body the gateway recorded under this hash, from the run's evidence bundle."""
    bundle = await world.request("GET", f"/api/runs/{run_id}/export", "auditor")
    for line in bundle.text.splitlines():
        item = json.loads(line)
        if item.get("kind") == "blob" and item.get("sha256") == digest:
            body = item.get("body")
            return json.loads(body) if isinstance(body, str) else body
    return None


async def lapse(world: World, mode: Mode, seconds: float) -> None:
    """Let `seconds` pass: with the gateway killed (SIGKILL) in the restart mode, started again after."""
    if mode == "restart":
        await world.kill_gateway()
    await asyncio.sleep(seconds)
    if mode == "restart":
        await world.start_gateway()


async def refused_everywhere(
    world: World, f: Findings, agent: Agent, write: dict[str, Any], code: str, what: str
) -> Reply:
    """The lapsed authority refuses a write and a read with `code`, and the write reached nothing."""
    refused = await agent.call(TOOL, write, operation_id="the-call")
    f.equal(refused.code, code, f"the write after {what}")
    read = await agent.call("crm__search_contacts", {"email": write["email"]})
    f.equal(read.code, code, f"a read after {what}")
    f.equal(len(contacts(world, write["email"])), 0, f"contacts after the refused write ({what})")
    f.saw(f"{what}: write {refused.code}, read {read.code}")
    return refused


async def passes_once(world: World, f: Findings, agent: Agent, write: dict[str, Any], what: str) -> None:
    """The same call (same arguments, same operation id) passes, and the destination holds it once."""
    again = await agent.call(TOOL, write, operation_id="the-call")
    f.expect(again.ok and not again.replayed, f"the same call after {what} answered {again.code}")
    f.equal(len(contacts(world, write["email"])), 1, f"contacts after {what}")
    f.saw(f"after {what}: {again.code or 'ok'}")


# -- the lease -----------------------------------------------------------------------------------
@case(
    "expired-lease",
    CATEGORY,
    "a lapsed lease nobody took over is re-established by the holder's next write (same epoch, one "
    "lease_reestablished entry), which reaches the CRM once; lapsed again, another worker acquires it without a "
    "takeover and the old worker's write, read and renewal are refused lease_superseded and nothing reaches the "
    "CRM; the new worker's same call passes once",
    depends_on=("fencing",),
)
async def expired_lease(world: World, mode: Mode, f: Findings) -> None:
    await world.start_gateway()
    run_id, agent = await world.start_run(lease_ttl=f"{SHORT:g}s")
    first = await agent.call(TOOL, lead("expired-lease", mode, "first"))
    f.expect(first.ok, f"the call under a live lease answered {first.code}")
    await lapse(world, mode, SHORT + 0.5)  # every request renews the lease: counted from the last
    late = lead("expired-lease", mode, "late")
    again = await agent.call(TOOL, late, operation_id="late")
    f.expect(again.ok and not again.replayed, f"the holder's write after the lapse answered {again.code}")
    f.equal(len(contacts(world, late["email"])), 1, "contacts after the holder's write past its lease's time")
    entries = [e["data"] for e in await world.events(run_id) if e["type"] == "lease_reestablished"]
    f.equal([e.get("epoch") for e in entries], [1], "lease_reestablished entries (their epochs) after the lapse")
    f.saw(f"after the lapse: the holder's write {again.code or 'ok'}, re-established {len(entries)}x")

    # Fencing is as strong as ever: lapsed again, the run is another worker's to take without a
    # takeover, and nothing about time brings the old token back.
    await lapse(world, mode, SHORT + 0.5)
    new = await world.lease(run_id, "worker-2")
    write = lead("expired-lease", mode, "fenced")
    await refused_everywhere(world, f, agent, write, "lease_superseded", "another worker's acquire")
    renewed = await renew(world, agent)
    f.equal(refusal_code(renewed), "lease_superseded", "the old worker's renewal after the acquire")
    await passes_once(world, f, new, write, "the new worker's acquire")


# -- the deadline --------------------------------------------------------------------------------
@case(
    "passed-deadline",
    CATEGORY,
    "past the run's deadline the next write and read are refused run_expired (renewal too) and nothing reaches "
    "the CRM; an admin's successor with an extended deadline makes the same call pass once",
)
async def passed_deadline(world: World, mode: Mode, f: Findings) -> None:
    await world.start_gateway()
    deadline = SHORT
    run_id, agent = await world.start_run(expires_in=f"{deadline:g}s", lease_ttl="1h")
    first = await agent.call(TOOL, lead("passed-deadline", mode, "first"))
    f.expect(first.ok, f"the call before the deadline answered {first.code}")
    await lapse(world, mode, deadline + 0.5)
    write = lead("passed-deadline", mode, "late")
    await refused_everywhere(world, f, agent, write, "run_expired", "the deadline passed")
    renewed = await renew(world, agent)
    f.equal(refusal_code(renewed), "run_expired", "the renewal after the deadline")
    run = await world.run(run_id)
    f.equal(run["status"], "expired", "the run's status after its deadline")

    # Silence is no extension: a successor, authorized by an admin who extends the deadline.
    authorization = {"reason": "drill: the deadline passed", "extend_by": "1h"}
    successor = await world.ok("POST", f"/api/runs/{run_id}/successor", "admin", json=authorization)
    heir = await world.lease(successor["run_id"], "worker-1")
    await passes_once(world, f, heir, write, "a successor with an extended deadline")


# -- the approval --------------------------------------------------------------------------------
@case(
    "expired-approval",
    CATEGORY,
    "an approved payload not used within valid_for is refused approval_expired (a fresh approval pending) and "
    "nothing is sent; approving the fresh one makes the same call pass once",
    depends_on=("approval",),
)
async def expired_approval(world: World, mode: Mode, f: Findings) -> None:
    await world.start_gateway()
    mail = {"to": f"expired-approval-{mode}@partner.example", "subject": "Expired approval", "body": f"drill {mode}"}
    rule = {"tool": "email__send", "role": "approver", "valid_for": f"{SHORT:g}s", "on_expiry": "pause"}
    run_id, agent = await world.start_run(approvals=[rule])
    asked = await agent.call("email__send", mail, operation_id="the-mail")
    f.equal(asked.code, "approval_required", "the mail before any approval")
    first_id = asked.error.get("approval_id")
    if first_id:
        await world.approve(first_id)
    await lapse(world, mode, SHORT + 0.5)

    late = await agent.call("email__send", mail, operation_id="the-mail")
    f.equal(late.code, "approval_expired", "the mail after its approval expired")
    f.equal(len(messages(world, mail["to"])), 0, "messages after the expired approval")
    fresh_id = late.error.get("approval_id")
    f.expect(bool(fresh_id) and fresh_id != first_id, f"no fresh approval was offered ({late.error})")
    f.equal(late.error.get("expired_approval_id"), first_id, "the approval named as expired")
    pending = [a["approval_id"] for a in await world.approvals(run_id, "pending")]
    f.equal(pending, [fresh_id] if fresh_id else [], "the approvals pending after the expiry")
    f.saw(f"approved, then {SHORT:g}s later: {late.code}")

    if fresh_id:
        await world.approve(fresh_id)
    sent = await agent.call("email__send", mail, operation_id="the-mail")
    f.expect(sent.ok, f"the mail after a fresh approval answered {sent.code}")
    f.equal(len(messages(world, mail["to"])), 1, "messages after the fresh approval")
    f.saw(f"fresh approval: {sent.code or 'sent'}")


# -- the API key ---------------------------------------------------------------------------------
@case(
    "revoked-key",
    CATEGORY,
    "revoking the worker key that granted the lease refuses the next write and read lease_revoked (renewal too) "
    "and nothing reaches the CRM; a lease from a valid key makes the same call pass once",
)
async def revoked_key(world: World, mode: Mode, f: Findings) -> None:
    await world.start_gateway()
    run_id = await world.create_run()
    key = await world.ok("POST", "/api/keys", "admin", json={"name": f"drill-worker-{mode}", "roles": ["worker"]})
    async with httpx.AsyncClient(base_url=world.url, timeout=WAIT) as http:
        answer = await http.post(
            f"/api/runs/{run_id}/lease",
            json={"worker": "worker-1", "takeover": False},
            headers={"Authorization": f"Bearer {key['key']}"},
        )
    f.expect(answer.status_code == 201, f"the worker key could not lease the run ({answer.status_code})")
    agent = Agent(world.url, answer.json().get("token", ""))
    first = await agent.call(TOOL, lead("revoked-key", mode, "first"))
    f.expect(first.ok, f"the call under the worker key's lease answered {first.code}")

    if mode == "restart":  # killed while the key holds: the lease must remember its key across a restart
        await world.restart()
    await world.ok("POST", f"/api/keys/{key['key_id']}/revoke", "admin", json={"reason": "drill: leaked"})
    if mode == "restart":  # and the revocation is in the store, not in the process that took it
        await world.restart()
    write = lead("revoked-key", mode, "late")
    await refused_everywhere(world, f, agent, write, "lease_revoked", "the key was revoked")
    renewed = await renew(world, agent)
    f.equal(refusal_code(renewed), "lease_revoked", "the renewal after the revocation")

    fresh = await world.lease(run_id, "worker-1")  # a valid key: no takeover needed
    await passes_once(world, f, fresh, write, "a lease from a valid key")


# -- the destination's credential ----------------------------------------------------------------
@case(
    "upstream-401",
    CATEGORY,
    "a CRM that now refuses the gateway's token fails the next write upstream_unauthorized, recorded failed with "
    "its payload, and holds nothing new; the right token again makes the same call pass once",
)
async def upstream_unauthorized(world: World, mode: Mode, f: Findings) -> None:
    await world.start_gateway()
    run_id, agent = await world.start_run()
    first = await agent.call(TOOL, lead("upstream-401", mode, "first"))
    f.expect(first.ok, f"the call while the CRM takes the gateway's token answered {first.code}")
    before = len(world.crm.rows("contacts"))

    if mode == "restart":
        await world.kill_gateway()
    await world.crm.stop()
    await world.crm.start(token="drill-another-token")  # same port and data, another credential
    if mode == "restart":
        await world.start_gateway()
    write = lead("upstream-401", mode, "late")
    failed = await agent.call(TOOL, write, operation_id="the-call")
    f.equal(failed.code, "upstream_unauthorized", "the write to a CRM that refuses the token")
    f.equal(len(world.crm.rows("contacts")), before, "contacts at the CRM after the refused token")
    digest = payload_sha256(write)
    recorded = [a for a in await actions_of(world, run_id, TOOL) if a["payload_sha256"] == digest]
    states = [(a["status"], a["code"]) for a in recorded]
    f.equal(states, [("failed", "upstream_unauthorized")], "the write's record (status, code)")
    f.equal(await recorded_payload(world, run_id, digest), write, "the payload recorded for the failed write")
    f.saw(f"CRM with another token: {failed.code}, recorded {states}")

    await world.crm.stop()
    await world.crm.start()  # the gateway's token again
    await passes_once(world, f, agent, write, "the CRM took the token again")
