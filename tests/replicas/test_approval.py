"""An approval is used once across replicas: consumed through one, it admits nothing through the other."""

from __future__ import annotations

import secrets

import anyio
import pytest

from tests.replicas.cluster import Cluster

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


async def test_an_approval_consumed_on_a_cannot_be_used_on_b(shared_cluster: Cluster) -> None:
    cluster = shared_cluster
    a, b = cluster.replicas
    run_id, token = await cluster.start_run()
    to = f"buyer-{secrets.token_hex(4)}@outside.example"  # outside @acme.example: email__send needs approval
    mail = {"to": to, "subject": "Quote", "body": "As agreed."}

    asked = await a.agent(token).call("email__send", mail)
    assert asked.code == "approval_required", asked
    first_approval = asked.error["approval_id"]
    await b.ok("POST", f"/api/approvals/{first_approval}/approve", "approver", json={"note": "ok"})

    sent = await a.agent(token).call("email__send", mail)
    assert sent.ok, sent
    # The same payload through B: its operation is done, so B answers with A's result and sends nothing.
    again = await b.agent(token).call("email__send", mail)
    assert again.ok and again.replayed and again.action_id == sent.action_id, again
    # A deliberate repeat through B (a fresh operation id) needs an approval of its own.
    repeat = await b.agent(token).call("email__send", mail, operation_id=f"op-{secrets.token_hex(6)}")
    assert repeat.code == "approval_required", repeat
    assert repeat.error["approval_id"] != first_approval
    assert len(cluster.mail.rows("messages", "to_address = ?", (to,))) == 1

    (used,) = cluster.sql("SELECT status FROM approvals WHERE approval_id = %s", (first_approval,))
    assert used["status"] == "used"
    admitted = cluster.sql(
        "SELECT count(*) AS n FROM actions WHERE run_id = %s AND approval_id = %s AND status <> 'rejected'",
        (run_id, first_approval),
    )
    assert admitted[0]["n"] == 1


async def test_one_approval_raced_through_both_replicas_admits_one_send(shared_cluster: Cluster) -> None:
    cluster = shared_cluster
    a = cluster.a
    _, token = await cluster.start_run()
    to = f"buyer-{secrets.token_hex(4)}@outside.example"
    mail = {"to": to, "subject": "Quote", "body": "As agreed."}
    asked = await a.agent(token).call("email__send", mail, operation_id="op-first")
    assert asked.code == "approval_required", asked
    await a.ok("POST", f"/api/approvals/{asked.error['approval_id']}/approve", "approver", json={"note": "ok"})

    # Two operations of the same payload at once, one through each replica: the approval covers one.
    codes: dict[str, str | None] = {}

    async def send(replica_index: int, operation_id: str) -> None:
        reply = await cluster.replicas[replica_index].agent(token).call("email__send", mail, operation_id=operation_id)
        codes[operation_id] = reply.code

    with anyio.fail_after(60):
        async with anyio.create_task_group() as group:
            group.start_soon(send, 0, "op-first")
            group.start_soon(send, 1, "op-second")
    assert sorted(codes.values(), key=str) == sorted([None, "approval_required"], key=str), codes
    assert len(cluster.mail.rows("messages", "to_address = ?", (to,))) == 1
