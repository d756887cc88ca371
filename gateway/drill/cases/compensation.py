"""Also drilled: a compensation after a cancel (docs/compensation.md,
docs/decisions/0031-compensation.md).

A run creates two contacts and is cancelled. Its recovery package lists both as compensable with
the policy's compensating tool; the cancelled run's agent can no longer compensate (its lease is
dead), an operator can: POST /api/actions/{id}/compensate deletes exactly the first contact at the
CRM (the second stays), the original reads `compensated`, and asking again answers the same
compensation. In restart mode the CRM holds the delete past the tool's timeout, so the
compensation is `unknown`; the gateway is SIGKILLed while it is, and the new process reconciles it
by the CRM's lookup, which moves the original.
"""

from __future__ import annotations

import asyncio
from typing import Any

from gateway.drill.case import Findings, Mode, case
from gateway.drill.cases.common import actions_of, contacts
from gateway.drill.world import TOOL_TIMEOUT, World

TOOL = "crm__create_contact"
UNDO = "crm__delete_contact"
BOUND = 20.0  # seconds a reconciliation may take to prove the held delete


async def compensate(world: World, action_id: str) -> tuple[int, dict[str, Any]]:
    answer = await world.request("POST", f"/api/actions/{action_id}/compensate", json={"reason": "drill: undo"})
    return answer.status_code, answer.json()


@case(
    "compensation-after-cancel",
    "Also drilled: a compensation after cancel ([0031](decisions/0031-compensation.md))",
    "after a cancel the recovery package lists the run's confirmed contacts as compensable with "
    "crm__delete_contact; the cancelled run's agent is refused run_cancelled; an operator's compensation "
    "deletes exactly that contact at the CRM (the other stays), the original reads compensated with one "
    "action_compensated entry, and asking again answers the same compensation (one delete); restart: the "
    "delete is held past the tool's timeout (unknown), the gateway SIGKILLed, the new process reconciles it "
    "by lookup and the original moves",
)
async def compensation_after_cancel(world: World, mode: Mode, f: Findings) -> None:
    await world.start_gateway()
    run_id, agent = await world.start_run()
    first, second = f"undo-{mode}@leads.example", f"keep-{mode}@leads.example"
    made = await agent.call(TOOL, {"email": first, "name": "Undo"})
    kept = await agent.call(TOOL, {"email": second, "name": "Keep"})
    f.expect(made.ok and kept.ok, f"the creates answered {made.code}, {kept.code}")
    original = made.action_id or "?"
    await world.ok("POST", f"/api/runs/{run_id}/cancel", json={"reason": "drill: wrong leads"})

    recovery = await world.ok("GET", f"/api/runs/{run_id}/recovery")
    listed = {c["action_id"]: c["compensate_with"] for c in recovery.get("compensable", [])}
    f.equal(len(listed), 2, "compensable effects in the recovery package")
    f.equal(listed.get(original), UNDO, "the compensating tool named")
    refused = await agent.call("warrant_compensate", {"action_id": original, "reason": "drill"})
    f.equal(refused.code, "run_cancelled", "the cancelled run's agent compensating")
    f.saw(f"cancelled; {len(listed)} compensable; the agent {refused.code}")

    if mode == "restart":
        contact_id = contacts(world, first)[0]["id"] if contacts(world, first) else "?"
        await world.crm.fault(
            method="DELETE", path=f"/contacts/{contact_id}", mode="delay", delay=TOOL_TIMEOUT + 2, times=1
        )
        status, body = await compensate(world, original)
        f.equal((status, body.get("code")), (200, "outcome_unknown"), "the held compensation")
        f.equal(body.get("original", {}).get("status"), "succeeded", "the original while it is unknown")
        await world.kill_gateway()
        await asyncio.sleep(TOOL_TIMEOUT + 2)  # the CRM finishes the held delete meanwhile
        await world.start_gateway()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + BOUND
        while loop.time() < deadline:
            settled = await world.ok("POST", f"/api/runs/{run_id}/reconcile")
            if settled["settled"]:
                break
            await asyncio.sleep(0.5)
        f.saw("the compensation unknown; SIGKILL; the new process reconciled it by lookup")
    else:
        status, body = await compensate(world, original)
        f.equal((status, body.get("code")), (200, None), "the operator's compensation")

    f.equal(len(contacts(world, first)), 0, "the compensated contact at the CRM")
    f.equal(len(contacts(world, second)), 1, "the other contact at the CRM")
    undone = [a for a in await actions_of(world, run_id) if a["action_id"] == original]
    f.equal([a["status"] for a in undone], ["compensated"], "the original")
    history = await world.events(run_id)
    moved = [e for e in history if e["type"] == "action_compensated"]
    f.equal([e["data"].get("action_id") for e in moved], [original], "action_compensated entries")
    status, again = await compensate(world, original)
    f.equal((status, again.get("replayed")), (200, True), "the second request")
    deletes = await actions_of(world, run_id, UNDO)
    f.equal(len(deletes), 1, "compensating calls")
    recovery = await world.ok("GET", f"/api/runs/{run_id}/recovery")
    f.equal(len(recovery.get("compensable", [])), 1, "compensable effects left")
    f.saw(f"one delete; the original {[a['status'] for a in undone]}; the second request replayed")
