"""One budget across replicas: concurrent writes through both admit exactly what the budget allows."""

from __future__ import annotations

import secrets

import anyio
import pytest

from gateway.drill import Reply
from tests.replicas.cluster import CONTRACT, Cluster, seqs

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

CALLS = 50
ADMITS = 10
BOUND = 90.0  # seconds for the whole burst: 50 MCP sessions on two cores, beside other suites


async def test_fifty_concurrent_writes_across_both_replicas_against_a_budget_of_ten_admit_exactly_ten(
    shared_cluster: Cluster,
) -> None:
    cluster = shared_cluster
    budgets = {**CONTRACT["budgets"], "writes": ADMITS}
    run_id, token = await cluster.start_run(budgets=budgets)
    tag = secrets.token_hex(4)
    emails = [f"lead-{tag}-{i}@acme.example" for i in range(CALLS)]
    replies: dict[str, Reply] = {}

    async def call(i: int) -> None:
        replica = cluster.replicas[i % 2]  # 25 through each
        reply = await replica.agent(token).call("crm__create_contact", {"email": emails[i]}, bound=BOUND)
        replies[emails[i]] = reply

    with anyio.fail_after(BOUND):
        async with anyio.create_task_group() as group:
            for i in range(CALLS):
                group.start_soon(call, i)

    admitted = {email for email, reply in replies.items() if reply.ok}
    refused = {email: reply.error for email, reply in replies.items() if not reply.ok}
    assert len(admitted) == ADMITS, {email: reply.code for email, reply in replies.items()}
    assert {error.get("code") for error in refused.values()} == {"budget_exhausted"}
    assert {error.get("dimension") for error in refused.values()} == {"writes"}

    # Ground truth: the CRM holds exactly the admitted ten, each once.
    at_crm = [row["email"] for row in cluster.crm.rows("contacts", "email LIKE ?", (f"lead-{tag}-%",))]
    assert sorted(at_crm) == sorted(admitted)
    # The store: ten writes spent, nothing left reserved, no dimension past its limit.
    (run,) = cluster.sql("SELECT * FROM runs WHERE run_id = %s", (run_id,))
    for dim in ("spend", "tool_calls", "writes"):
        assert run[f"{dim}_reserved"] == 0, dim
        assert run[f"{dim}_spent"] <= run[f"{dim}_limit"], dim
    assert (run["writes_spent"], run["tool_calls_spent"]) == (ADMITS, ADMITS)
    statuses = cluster.sql(
        "SELECT status, code, count(*) AS n FROM actions WHERE run_id = %s GROUP BY status, code ORDER BY status",
        (run_id,),
    )
    assert [(row["status"], row["code"], row["n"]) for row in statuses] == [
        ("rejected", "budget_exhausted", CALLS - ADMITS),
        ("succeeded", None, ADMITS),
    ]
    # In the ledger both replicas write to, every refusal comes after the tenth admission: a write
    # was refused only once ten were admitted, whichever replica admitted them.
    history = await cluster.ledger(run_id)
    admissions = seqs(history, "action_admitted", tool="crm__create_contact")
    refusals = seqs(history, "action_rejected", code="budget_exhausted")
    assert (len(admissions), len(refusals)) == (ADMITS, CALLS - ADMITS)
    assert max(admissions) < min(refusals), (admissions, refusals)
    # Both replicas dispatched some of them (25 calls each: the first ten are not all on one).
    dispatchers = cluster.sql(
        "SELECT count(DISTINCT process_id) AS n FROM actions WHERE run_id = %s AND status = 'succeeded'", (run_id,)
    )
    print(f"{CALLS} writes through two replicas; dispatched by {dispatchers[0]['n']} process(es)")
