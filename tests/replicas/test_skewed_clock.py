"""With replica B's clock ten minutes ahead, no lease or approval outlives its time, on either replica.

B runs with `drill: {clock_offset_s: 600}`. Every expiry is decided on the database's one clock, so
what B grants, renews or approves ends at the database's time plus its length (read here from the
database itself, on this same host), B refuses nothing early, and past that time it is over on both
replicas: an approval refuses, a lease has lapsed (re-established by its holder's next call, or
another worker's to take without a takeover, which fences the old token). Short lengths (a 6 s
lease, an 8 s approval) are waited out for real: the replicas are real processes on the real clock.
"""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator
from datetime import datetime
from pathlib import Path

import anyio
import pytest

from gateway.drill import Agent
from tests.replicas.cluster import Cluster, open_cluster

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

SKEW = 600.0  # seconds B's clock is ahead
TTL = 6.0  # seconds: the lease TTL let to lapse (every admitted call renews the lease)
VALID = 8.0  # seconds: the approvals' valid_for
HOUR = 3600.0
SLACK = 0.5  # seconds a time a replica wrote may lie outside the database's times read around it


@pytest.fixture(scope="module")
async def skewed(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Cluster]:
    folder: Path = tmp_path_factory.mktemp("skewed")
    async with open_cluster(folder, drill={"b": {"clock_offset_s": SKEW}}) as cluster:
        assert "DRILL MODE" in cluster.b.log.read_text()  # B does run with its clock wrong
        assert "DRILL MODE" not in cluster.a.log.read_text()
        yield cluster


def db_now(cluster: Cluster) -> float:
    return float(cluster.sql("SELECT extract(epoch FROM clock_timestamp()) AS now")[0]["now"])


def instant(text: str) -> float:
    return datetime.fromisoformat(text).timestamp()


def within(written: str, low: float, high: float) -> float:
    """`written` (a time a replica wrote) lies within the database's [low, high]; it as epoch seconds."""
    at = instant(written)
    assert low - SLACK <= at <= high + SLACK, f"{written}: {at - high:+.2f} s past the database's time + its length"
    return at


async def until(cluster: Cluster, at: float) -> None:
    """Wait until the database's time is past `at` (by 0.3 s); the wait is short and bounded."""
    assert at - db_now(cluster) < 30, "waiting this long is not what these tests do"
    for _ in range(10):
        left = at + 0.3 - db_now(cluster)
        if left <= 0:
            return
        await anyio.sleep(left)  # stays: these tests are about the database's time passing
    raise AssertionError("the database's clock did not reach the time")


async def test_a_lease_the_skewed_replica_grants_and_renews_ends_on_the_database_clock_on_both(
    skewed: Cluster,
) -> None:
    cluster = skewed
    a, b = cluster.replicas
    tag = secrets.token_hex(4)
    before = db_now(cluster)
    run_id = await b.create_run(lease_ttl=f"{TTL:g}s", expires_in="1h")
    on_b, grant = await b.lease(run_id)
    after = db_now(cluster)
    run = await b.ok("GET", f"/api/runs/{run_id}", "auditor")
    within(run["deadline"], before + HOUR, after + HOUR)
    within(grant["expires_at"], before + TTL, after + TTL)
    assert run["lease"]["live"] is True  # B's view of the lease is on the database's time too
    on_a = a.agent(on_b.token)

    # Neither replica refuses early; each admitted call renews the lease by TTL from the database's now.
    for agent in (on_b, on_a):
        before = db_now(cluster)
        reply = await agent.call("crm__create_contact", {"email": f"live-{tag}-{agent is on_a}@acme.example"})
        after = db_now(cluster)
        assert reply.ok, reply
        (row,) = cluster.sql("SELECT lease_expires_at FROM runs WHERE run_id = %s", (run_id,))
        assert before + TTL - SLACK <= row["lease_expires_at"] <= after + TTL + SLACK
    before = db_now(cluster)
    renewed = await b.request("POST", "/api/leases/renew", headers={"Authorization": f"Bearer {on_b.token}"})
    after = db_now(cluster)
    assert renewed.status_code == 200, renewed.text
    expiry = within(renewed.json()["expires_at"], before + TTL, after + TTL)

    await until(cluster, expiry)
    # Past the lease's database time it has lapsed (nobody took it over): the holder's next write
    # through B re-establishes it, the lapse measured on the database's clock, not B's.
    before = db_now(cluster)
    late = {"email": f"late-{tag}@acme.example"}
    again = await on_b.call("crm__create_contact", late)
    after = db_now(cluster)
    assert again.ok and not again.replayed, again
    events = (await a.ok("GET", f"/api/runs/{run_id}/events?limit=1000", "auditor"))["items"]
    (lapse,) = [e["data"] for e in events if e["type"] == "lease_reestablished"]
    assert 0 <= lapse["lapsed_s"] < 30  # not 600 s and more
    (row,) = cluster.sql("SELECT lease_expires_at FROM runs WHERE run_id = %s", (run_id,))
    assert before + TTL - SLACK <= row["lease_expires_at"] <= after + TTL + SLACK

    # Lapsed again, another worker takes the run through B without a takeover (on the database's
    # time: a lease on B's clock would still hold), and the old token is dead on both replicas.
    await until(cluster, row["lease_expires_at"])
    await b.lease(run_id, "worker-2")
    fenced = {"email": f"fenced-{tag}@acme.example"}
    codes = [(await agent.call("crm__create_contact", fenced)).code for agent in (on_b, on_a)]
    assert codes == ["lease_superseded", "lease_superseded"]
    assert cluster.crm.rows("contacts", "email = ?", (fenced["email"],)) == []
    refused = cluster.sql("SELECT code FROM actions WHERE run_id = %s AND status = 'rejected'", (run_id,))
    assert [row["code"] for row in refused] == ["lease_superseded", "lease_superseded"]
    renewed = await b.request("POST", "/api/leases/renew", headers={"Authorization": f"Bearer {on_b.token}"})
    assert renewed.status_code >= 400 and renewed.json()["error"]["code"] == "lease_superseded", renewed.text


async def test_an_approval_the_skewed_replica_takes_is_valid_for_its_time_on_both(skewed: Cluster) -> None:
    cluster = skewed
    a, b = cluster.replicas
    tag = secrets.token_hex(4)
    rule = {"tool": "email__send", "role": "approver", "valid_for": f"{VALID:g}s"}
    mails: dict[str, dict[str, str]] = {}
    agents: dict[str, Agent] = {}
    ends: dict[str, float] = {}
    # One run per mail (a pending approval holds its run waiting), each approved through B.
    for name in ("now-a", "now-b", "late-a", "late-b"):
        run_id = await b.create_run(approvals=[rule])
        agent, _ = await b.lease(run_id)
        if name.endswith("-a"):
            agent = a.agent(agent.token)
        mails[name] = {"to": f"{name}-{tag}@partner.example", "subject": name, "body": "skewed"}
        asked = await agent.call("email__send", mails[name])
        assert asked.code == "approval_required", asked
        before = db_now(cluster)
        approved = await b.ok("POST", f"/api/approvals/{asked.error['approval_id']}/approve", "approver", json={})
        after = db_now(cluster)
        ends[name] = within(approved["valid_until"], before + VALID, after + VALID)
        agents[name] = agent
        if name.startswith("now-"):  # used at once: B's clock ahead does not expire it early
            now = await agent.call("email__send", mails[name])
            assert now.ok, (name, now)

    await until(cluster, max(ends["late-a"], ends["late-b"]))
    for name in ("late-a", "late-b"):
        late = await agents[name].call("email__send", mails[name])
        assert late.code == "approval_expired", (name, late)
    sent = {name: len(cluster.mail.rows("messages", "to_address = ?", (mail["to"],))) for name, mail in mails.items()}
    assert sent == {"now-a": 1, "now-b": 1, "late-a": 0, "late-b": 0}
