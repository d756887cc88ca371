"""A lease is one truth across replicas: a takeover through one replica fences the old worker on the other."""

from __future__ import annotations

import secrets

import pytest

from tests.replicas.cluster import Cluster, seqs

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


async def test_a_run_made_on_one_replica_is_led_by_the_other_and_a_takeover_there_fences_the_first(
    shared_cluster: Cluster,
) -> None:
    cluster = shared_cluster
    a, b = cluster.replicas
    run_id = await a.create_run()
    _, first = await a.lease(run_id, "w1")

    seen = await b.ok("GET", f"/api/runs/{run_id}", "auditor")
    assert seen["lease"]["epoch"] == first["epoch"]

    _, taken = await b.lease(run_id, "w2", takeover=True)
    assert taken["epoch"] > first["epoch"]
    renew = await a.request("POST", "/api/leases/renew", headers={"Authorization": f"Bearer {first['token']}"})
    assert renew.status_code == 409, renew.text
    assert renew.json()["error"]["code"] == "lease_superseded"
    history = await cluster.ledger(run_id, via=a)  # B's grant, in the ledger A reads: after A's, fencing it
    granted = seqs(history, "lease_granted")
    assert granted == seqs(history, "lease_granted", worker="w1") + seqs(history, "lease_granted", worker="w2")
    assert [entry["data"]["epoch"] for entry in history if entry["seq"] in granted] == [first["epoch"], taken["epoch"]]


async def test_a_takeover_through_a_refuses_the_old_workers_next_call_on_b_and_nothing_reaches_the_crm(
    shared_cluster: Cluster,
) -> None:
    cluster = shared_cluster
    a, b = cluster.replicas
    run_id, token = await cluster.start_run(via=b, worker="w1")
    fenced_email = f"fenced-{secrets.token_hex(4)}@acme.example"
    old = b.agent(token)
    before = await old.call("crm__create_contact", {"email": f"first-{secrets.token_hex(4)}@acme.example"})
    assert before.ok, before

    _, grant = await a.lease(run_id, "w2", takeover=True)

    write = await old.call("crm__create_contact", {"email": fenced_email})
    read = await old.call("crm__search_contacts", {"q": "acme"})
    assert (write.code, read.code) == ("lease_superseded", "lease_superseded")
    assert cluster.crm.rows("contacts", "email = ?", (fenced_email,)) == []
    fenced = cluster.sql(
        "SELECT status FROM actions WHERE run_id = %s AND status <> 'rejected' AND tool = 'crm__create_contact'",
        (run_id,),
    )
    assert [row["status"] for row in fenced] == ["succeeded"]  # the first write only

    new = b.agent(grant["token"])
    after = await new.call("crm__create_contact", {"email": fenced_email})
    assert after.ok, after
    assert len(cluster.crm.rows("contacts", "email = ?", (fenced_email,))) == 1

    # The ledger's order, the one both replicas write to: the takeover's grant comes after the old
    # worker's admission and before its refusals and the new worker's admission.
    history = await cluster.ledger(run_id, via=b)
    (took_over,) = seqs(history, "lease_granted", takeover=True, worker="w2", epoch=grant["epoch"])
    (old_admitted,) = seqs(history, "action_admitted", worker="w1")
    (new_admitted,) = seqs(history, "action_admitted", worker="w2")
    old_refused = seqs(history, "action_rejected", worker="w1", code="lease_superseded")
    assert len(old_refused) == 2
    assert old_admitted < took_over < min(old_refused) and max(old_refused) < new_admitted
