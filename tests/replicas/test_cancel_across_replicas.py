"""A hard cancel taken on one replica reaches the call in flight on the other (gateway/runtime/cancel_relay.py).

The write is held at the mail service by a `delay` fault, well inside the tool timeout, so nothing
but the cancel can end it early: B's agent must hear `outcome_unknown` long before the hold ends.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import Callable
from typing import Any

import anyio
import pytest

from gateway.drill import Reply
from tests.replicas.cluster import Cluster

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

HOLD = 4.0  # seconds the mail service holds the write: inside the cluster's 5 s tool timeout
AT_ONCE = 1.5  # seconds from the operator's cancel request on A to B's agent hearing of its write
BOUND = 30.0


async def until(what: str, check: Callable[[], bool]) -> None:
    """Poll ground truth kept by another process (the store's tables, a service's database), bounded."""
    with anyio.fail_after(BOUND):
        while True:
            if check():
                return
            await asyncio.sleep(0.02)


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

    await until("B's write admitted", lambda: bool(admitted()))
    key = admitted()[0]["idempotency_key"]

    def held() -> bool:
        """B's write claimed at the mail service (its idempotency key), and not yet done there."""
        return bool(cluster.mail.rows("idempotency_keys", "key = ? AND state = 'in_flight'", (key,)))

    await until("B's write held at the mail service", held)
    held_at = time.monotonic()
    await a.ok("POST", f"/api/runs/{run_id}/cancel", json={"reason": "stop everything now", "hard": True})
    with anyio.fail_after(BOUND):
        reply: Reply = await call
    heard = time.monotonic() - held_at

    assert reply.code == "outcome_unknown", reply
    assert heard < AT_ONCE, f"B's agent heard of its write {heard:.2f} s after the cancel on A (hold {HOLD} s)"
    (action,) = cluster.sql(
        "SELECT action_id, status, reason, process_id FROM actions WHERE run_id = %s AND tool = 'email__send'",
        (run_id,),
    )
    assert action["status"] == "unknown"
    assert "hard cancel" in action["reason"]
    assert action["process_id"] == await b.process_id()

    # B refuses the run's next calls, whatever they are.
    again = await agent.call("email__send", {"to": to, "subject": "Again", "body": "no"}, operation_id="held-2")
    read = await agent.call("crm__search_contacts", {"q": "acme"})
    assert (again.code, read.code) == ("run_cancelled", "run_cancelled")

    # Once the mail service has finished with the write, the lookup settles it to the service's truth.
    await until("the mail service done with the write", lambda: not held())
    await b.ok("POST", f"/api/runs/{run_id}/reconcile")
    (settled,) = cluster.sql("SELECT status FROM actions WHERE action_id = %s", (action["action_id"],))
    sent = cluster.mail.rows("messages", "to_address = ?", (to,))
    assert (settled["status"], len(sent)) in {("succeeded", 1), ("failed", 0)}, (settled, sent)
    if settled["status"] == "succeeded":
        flagged = cluster.sql("SELECT 1 FROM events WHERE run_id = %s AND type = 'effect_after_cancel'", (run_id,))
        assert len(flagged) == 1
