"""A hard cancel taken on one replica reaches the call in flight on the other (gateway/runtime/cancel_relay.py).

The write is held at the mail service by a `delay` fault, well inside the tool timeout, so nothing
but the cancel can end it early: B's agent must hear `outcome_unknown` while the mail service still
holds the write, and the run's ledger must show the cancel before the write's settlement and no
admission after it. Those are orderings, not durations: no clock of the test's is asserted on.
"""

from __future__ import annotations

import asyncio
import secrets
from typing import Any

import anyio
import pytest

from gateway.drill import Reply
from tests.harness import eventually
from tests.replicas.cluster import Cluster, seqs

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

HOLD = 4.0  # seconds the mail service holds the write: inside the cluster's 5 s tool timeout
BOUND = 30.0


async def test_a_hard_cancel_on_a_aborts_the_write_in_flight_on_b_and_reconciliation_finds_the_truth(
    cluster: Cluster,
) -> None:
    a, b = cluster.replicas
    run_id, token = await cluster.start_run(via=a)
    agent = b.agent(token)
    to = f"held-{secrets.token_hex(4)}@acme.example"  # inside @acme.example: no approval needed
    await cluster.mail.fault(method="POST", path="/messages", mode="delay", times=1, delay=HOLD)

    call = asyncio.create_task(
        agent.call("email__send", {"to": to, "subject": "Held", "body": "in flight"}, operation_id="held-1")
    )

    def admitted() -> list[dict[str, Any]]:
        return cluster.sql(
            "SELECT action_id, idempotency_key FROM actions WHERE run_id = %s AND status = 'admitted'", (run_id,)
        )

    # Ground truth kept by other processes (the store's tables, the mail service's): polled, bounded.
    key = (await eventually(admitted, wait=BOUND, every=0.02))[0]["idempotency_key"]

    def held() -> bool:
        """B's write claimed at the mail service (its idempotency key), and not yet done there."""
        return bool(cluster.mail.rows("idempotency_keys", "key = ? AND state = 'in_flight'", (key,)))

    await eventually(held, wait=BOUND, every=0.02)
    await a.ok("POST", f"/api/runs/{run_id}/cancel", json={"reason": "stop everything now", "hard": True})
    with anyio.fail_after(BOUND):
        reply: Reply = await call
    # The agent heard before the mail service let the write go: the cancel ended it, not the hold.
    assert held(), "B's agent heard of its write only once the mail service had finished with it"

    assert reply.code == "outcome_unknown", reply
    (action,) = cluster.sql(
        "SELECT action_id, status, reason, process_id FROM actions WHERE run_id = %s AND tool = 'email__send'",
        (run_id,),
    )
    assert action["status"] == "unknown"
    assert "hard cancel" in action["reason"]
    assert action["process_id"] == await b.process_id()
    history = await cluster.ledger(run_id)
    (cancelled,) = seqs(history, "run_cancelled", hard=True)
    (admission,) = seqs(history, "action_admitted", action_id=action["action_id"])
    (settled,) = seqs(history, "action_settled", action_id=action["action_id"], status="unknown")
    assert admission < cancelled < settled  # in flight when A's cancel committed, aborted after it

    # B refuses the run's next calls, whatever they are.
    again = await agent.call("email__send", {"to": to, "subject": "Again", "body": "no"}, operation_id="held-2")
    read = await agent.call("crm__search_contacts", {"q": "acme"})
    assert (again.code, read.code) == ("run_cancelled", "run_cancelled")
    history = await cluster.ledger(run_id, via=b)
    assert [seq for seq in seqs(history, "action_admitted") if seq > cancelled] == []
    assert len([seq for seq in seqs(history, "action_rejected", code="run_cancelled") if seq > cancelled]) == 2

    # Once the mail service has finished with the write, the lookup settles it to the service's truth.
    await eventually(lambda: not held(), wait=BOUND, every=0.02)  # the hold's end, bounded
    await b.ok("POST", f"/api/runs/{run_id}/reconcile")
    (final,) = cluster.sql("SELECT status FROM actions WHERE action_id = %s", (action["action_id"],))
    sent = cluster.mail.rows("messages", "to_address = ?", (to,))
    assert (final["status"], len(sent)) in {("succeeded", 1), ("failed", 0)}, (final, sent)
    if final["status"] == "succeeded":
        flagged = cluster.sql("SELECT 1 FROM events WHERE run_id = %s AND type = 'effect_after_cancel'", (run_id,))
        assert len(flagged) == 1
