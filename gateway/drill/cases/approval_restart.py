"""Also drilled: pause for approval, restart the gateway, approve, resume: the call completes once."""

from __future__ import annotations

from gateway.canonical import payload_sha256
from gateway.drill.case import Findings, Mode, case
from gateway.drill.cases.common import actions_of, messages
from gateway.drill.world import World

SEND = "email__send"  # to an outside address: needs an approval (POLICY)


@case(
    "approval-across-restart",
    "Also drilled: pause for approval, restart, approve, resume",
    "approval_required and the run waits; across a SIGKILL the approval stays pending; approved (bound by "
    "its sha256), the call executes exactly once, a further call replays",
    depends_on=("approval", "idempotency"),
)
async def approval_across_restart(world: World, mode: Mode, f: Findings) -> None:
    await world.start_gateway()
    run_id, agent = await world.start_run()
    mail = {"to": f"held-{mode}@partner.example", "subject": f"Drill approval across restart {mode}", "body": "hi"}
    digest = payload_sha256(mail)

    asked = await agent.call(SEND, mail)
    f.equal(asked.code, "approval_required", "the send to an outside address")
    approval_id = asked.error.get("approval_id")
    f.equal(asked.error.get("payload_sha256"), digest, "the hash the approval binds")
    run = await world.run(run_id)
    f.equal(run["status"], "waiting", "the run while its approval is pending")
    f.equal([a["approval_id"] for a in run.get("approvals", [])], [approval_id], "the run's pending approvals")
    f.equal(len(messages(world, mail["to"])), 0, "messages before the approval")
    f.saw(f"{asked.code or 'executed at once'}; run {run['status']}")
    if not isinstance(approval_id, str):
        return

    if mode == "restart":
        await world.restart()  # SIGKILL while the run waits: nothing of the approval lives in memory
        run = await world.run(run_id)
        f.equal(run["status"], "waiting", "the run after the restart")
        again = await agent.call(SEND, mail)
        f.equal(again.code, "approval_required", "the send after the restart, still undecided")
        f.equal(again.error.get("approval_id"), approval_id, "the pending approval after the restart")
        f.saw("SIGKILL while waiting: still waiting, the same approval pending")

    # The approver decides on what was shown: a hash that is not the payload's is refused.
    shown = await world.ok("GET", f"/api/approvals/{approval_id}", "approver")
    f.equal(shown["payload"], mail, "the payload the approval shows")
    f.equal(shown["payload_sha256"], digest, "the hash the approval shows")
    wrong = await world.request(
        "POST", f"/api/approvals/{approval_id}/approve", "approver", json={"expected_sha256": "0" * 64}
    )
    f.equal(wrong.status_code, 409, "approving with another payload's hash")
    decided = await world.ok(
        "POST", f"/api/approvals/{approval_id}/approve", "approver", json={"note": "drill", "expected_sha256": digest}
    )
    f.equal(decided["status"], "approved", "the decision")
    run = await world.run(run_id)
    if run["status"] == "paused":
        await world.ok("POST", f"/api/runs/{run_id}/resume", json={"reason": "drill"})
        run = await world.run(run_id)
    f.equal(run["status"], "running", "the run once its approval is decided")

    if mode == "restart":
        await world.restart()  # and again between the approval and the call
        f.saw("SIGKILL between approval and call")
    done = await agent.call(SEND, mail)
    f.expect(done.ok and not done.replayed, f"the approved send did not execute ({done.code})")
    later = await agent.call(SEND, mail)
    f.expect(
        later.ok and later.replayed and later.action_id == done.action_id,
        f"a further call was {later.code or 'a result'} (replayed {later.replayed}), not a replay of {done.action_id}",
    )
    arrived = messages(world, mail["to"])
    f.equal(len(arrived), 1, "messages at the mail service")
    sends = [a["action_id"] for a in await actions_of(world, run_id, SEND, "succeeded")]
    f.equal(sends, [done.action_id], "succeeded sends in the ledger")
    used = await world.ok("GET", f"/api/approvals/{approval_id}", "approver")
    f.equal((used["status"], used["action_id"]), ("used", done.action_id), "the approval after the call")
    f.saw(f"approved, executed once ({len(arrived)} message), further call replayed: {later.replayed}")
