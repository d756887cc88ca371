"""Also drilled: the agent claims completion while a milestone's evidence is missing or its
artifact changed: `warrant_complete` refuses and names what is missing."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from gateway.drill.case import Findings, Mode, case
from gateway.drill.world import Agent, World

MILESTONES = [
    {"id": "report", "checks": [{"artifact": "report"}]},
    {"id": "sources", "checks": [{"artifact": "sources"}]},
]


def artifact(world: World, artifact_id: str, name: str, content: bytes) -> dict[str, Any]:
    """Write the file under the gateway's artifact root; the reference the agent cites for it."""
    path = world.artifacts / name
    path.write_bytes(content)
    return {"id": artifact_id, "uri": path.resolve().as_uri(), "sha256": hashlib.sha256(content).hexdigest()}


async def milestone(agent: Agent, f: Findings, milestone_id: str, ref: dict[str, Any]) -> None:
    reply = await agent.call("warrant_milestone", {"milestone_id": milestone_id, "evidence": {"artifacts": [ref]}})
    status = ((reply.structured or {}).get("milestone") or {}).get("status")
    f.equal((reply.code, status), (None, "verified"), f"milestone {milestone_id} with its artifact as cited")


def refused(reply: Any) -> dict[str, dict[str, Any]]:
    """The milestones a completion_refused names, by id."""
    return {m["milestone_id"]: m for m in reply.error.get("milestones") or []}


@case(
    "completion-evidence",
    "Also drilled: completion while a milestone's evidence is missing or its artifact changed",
    "warrant_complete is refused completion_refused naming the milestone never submitted, then also the "
    "milestone whose artifact changed after it was verified (with both checksums); verified again, it completes",
    depends_on=("checks",),
)
async def completion_evidence(world: World, mode: Mode, f: Findings) -> None:
    await world.start_gateway()
    run_id, agent = await world.start_run(milestones=MILESTONES)
    report = artifact(world, "report", f"report-{mode}.json", json.dumps({"leads": 3, "mode": mode}).encode())
    await milestone(agent, f, "report", report)

    # One milestone was never submitted: the claim is refused naming it, and only it.
    claim = await agent.call("warrant_complete", {"summary": "all done (sources never submitted)"})
    named = refused(claim)
    f.saw(f"claim without sources: {claim.code} naming {sorted(named)}")
    f.equal(claim.code, "completion_refused", "a completion with a milestone never submitted")
    f.equal(sorted(named), ["sources"], "the milestones the first refusal names")
    f.equal((named.get("sources") or {}).get("status"), "pending", "the never-submitted milestone's status")

    # The verified report's file changes under the gateway (while it is down, in the restart mode).
    changed = json.dumps({"leads": 2, "mode": mode, "edited": True}).encode()
    now = hashlib.sha256(changed).hexdigest()
    if mode == "restart":
        await world.kill_gateway()
        (world.artifacts / f"report-{mode}.json").write_bytes(changed)
        await world.start_gateway()
        f.saw("SIGKILL; the report changed; restarted")
    else:
        (world.artifacts / f"report-{mode}.json").write_bytes(changed)

    claim = await agent.call("warrant_complete", {"summary": "all done (the report changed since)"})
    named = refused(claim)
    reasons = " ".join((named.get("report") or {}).get("reasons") or [])
    f.saw(f"claim after the change: {claim.code} naming {sorted(named)}")
    f.equal(claim.code, "completion_refused", "a completion whose artifact changed after it was verified")
    f.equal(sorted(named), ["report", "sources"], "the milestones the second refusal names")
    f.equal((named.get("report") or {}).get("status"), "invalidated", "the changed milestone's status")
    f.expect(report["sha256"] in reasons and now in reasons, f"the refusal does not give both checksums: {reasons!r}")
    run = await world.run(run_id)
    f.equal(run["status"], "running", "the run after the refused claims")

    # Both verified on the files as they are now: the same claim completes the run.
    sources = artifact(world, "sources", f"sources-{mode}.csv", b"source,url\ncrm,http://crm.example\n")
    await milestone(agent, f, "sources", sources)
    await milestone(agent, f, "report", {**report, "sha256": now})
    done = await agent.call("warrant_complete", {"summary": "all done, evidence current"})
    f.equal(done.code, None, "a completion with every milestone verified on current evidence")
    run = await world.run(run_id)
    f.saw(f"verified again: {done.code or 'completed'}")
    f.equal(run["status"], "completed", "the run after the last claim")
