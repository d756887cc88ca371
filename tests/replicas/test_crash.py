"""A replica killed with a write in flight: on its restart only its own orphan becomes unknown.

Both replicas hold a write at the CRM (a `delay` fault). A is SIGKILLed while its write is held and
started again while B's write is still held: A's orphan (dispatched by A's dead process) becomes
`unknown`, B's write stays admitted, settles with its real outcome, and its agent hears it. Then A's
orphan is reconciled to what the CRM did, the CRM's own rows being the truth. What the test asserts
is ordering: B's write still held at the CRM after A's restart, and in the run's ledger A's orphan
settled `unknown` before B's write settled, both after both admissions.
"""

from __future__ import annotations

import asyncio
import secrets
from pathlib import Path
from typing import Any

import pytest

from tests.harness import eventually
from tests.replicas.cluster import Cluster, open_cluster, seqs

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

HOLD = 15.0  # seconds the CRM holds each write: longer than A's kill and restart take under load
TOOL_TIMEOUT = HOLD + 10  # the writes are held, never timed out
WAIT = 30.0


async def test_a_replica_killed_mid_write_marks_only_its_own_orphan_unknown_on_restart(tmp_path: Path) -> None:
    async with open_cluster(tmp_path, tool_timeout=TOOL_TIMEOUT) as cluster:
        await only_its_own_orphan(cluster)


async def only_its_own_orphan(cluster: Cluster) -> None:
    a, b = cluster.replicas
    run_id, token = await cluster.start_run(via=b)
    tag = secrets.token_hex(4)
    emails = {name: f"held-{name}-{tag}@acme.example" for name in ("a", "b")}
    await cluster.crm.fault(method="POST", path="/contacts", mode="delay", times=2, delay=HOLD)
    process = {"a": await a.process_id(), "b": await b.process_id()}

    calls = {
        name: asyncio.create_task(replica.agent(token).call("crm__create_contact", {"email": emails[name]}, bound=WAIT))
        for name, replica in (("a", a), ("b", b))
    }

    def actions() -> dict[str, dict[str, Any]]:
        rows = cluster.sql("SELECT * FROM actions WHERE run_id = %s AND tool = 'crm__create_contact'", (run_id,))
        return {row["process_id"]: row for row in rows}

    async def both_held() -> bool:
        """Both writes admitted, each by its own replica, and both claimed at the CRM, not done there."""
        found = actions()
        if set(found) != set(process.values()):
            return False
        keys = tuple(row["idempotency_key"] for row in found.values())
        return len(cluster.crm.rows("idempotency_keys", "key IN (?, ?) AND state = 'in_flight'", keys)) == 2

    await eventually(both_held, wait=WAIT, every=0.2)
    await a.kill()
    await a.start()

    found = actions()
    # B's write is still held at the CRM after A's restart (else A's start could not have left an
    # in-flight write alone: the precondition of everything below).
    b_key = found[process["b"]]["idempotency_key"]
    assert cluster.crm.rows("idempotency_keys", "key = ? AND state = 'in_flight'", (b_key,)), "B's write ended first"
    orphan, survivor = found[process["a"]], found[process["b"]]
    assert orphan["status"] == "unknown"  # A's dead process dispatched it; A's restart marked it
    assert survivor["status"] == "admitted"  # in flight on B, untouched by A's start
    assert await a.process_id() != process["a"]

    answered = {name: await call for name, call in calls.items()}
    assert answered["a"].code == "transport"  # its replica died under it
    assert answered["b"].ok, answered["b"]  # B's write settled with its real outcome
    settled = actions()[process["b"]]
    assert settled["status"] == "succeeded"
    (contact,) = cluster.crm.rows("contacts", "email = ?", (emails["b"],))
    assert contact["id"] in settled["receipt"]
    history = await cluster.ledger(run_id, via=b)
    (orphaned,) = seqs(history, "action_settled", action_id=orphan["action_id"], status="unknown")
    (survived,) = seqs(history, "action_settled", action_id=survivor["action_id"], status="succeeded")
    admissions = seqs(history, "action_admitted", tool="crm__create_contact")
    assert len(admissions) == 2 and max(admissions) < orphaned < survived

    # A's orphan, reconciled (through A, once the CRM has finished with it): the CRM's truth.
    async def reconciled() -> bool:
        await a.ok("POST", f"/api/runs/{run_id}/reconcile")
        return bool(actions()[process["a"]]["status"] != "unknown")

    await eventually(reconciled, wait=WAIT, every=1.0)
    at_crm = cluster.crm.rows("contacts", "email = ?", (emails["a"],))
    final = actions()[process["a"]]
    if at_crm:
        assert (final["status"], len(at_crm)) == ("succeeded", 1)
        assert at_crm[0]["id"] in final["receipt"]
    else:
        assert final["status"] == "failed"
    print(f"A's orphan reconciled {final['status']}")
