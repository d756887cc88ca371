"""A lease is one truth across replicas: a takeover through one replica fences the old worker on the other."""

from __future__ import annotations

import secrets

import pytest

from tests.replicas.cluster import Cluster

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
