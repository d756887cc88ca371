"""GET /metrics against a real server: the gate's counters and histogram, the store's gauges for the
scraping key's tenant, and who may scrape."""

from __future__ import annotations

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.api.conftest import Api
from tests.api.test_operator_api import create_run, lease

pytestmark = pytest.mark.anyio

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


async def scrape(api: Api, key: str = "aud") -> Samples:
    async with api.client(key) as c:
        r = await c.get("/metrics")
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("text/plain; version=0.0.4")
    return parse(r.text)


def parse(text: str) -> Samples:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


async def test_calls_refusals_and_admits_are_counted(api: Api) -> None:
    before = await scrape(api)
    run = await create_run(api)
    token = (await lease(api, run["run_id"]))["token"]
    gate = api.gateway.gate
    assert (await gate.call(token, "shop__find", {"q": "a"})).code is None
    assert (await gate.call(token, "shop__charge", {"card": "4242"})).code is None
    assert (await gate.call(token, "shop__charge", {"card": "4242"})).meta["warrant/replayed"] is True
    assert (await gate.call(token, "shop__charge", {"card": "lost"})).code == "outcome_unknown"
    assert (await gate.call(token, "shop__charge", {"card": "revoked"})).code == "upstream_unauthorized"
    assert (await gate.call(token, "shop__order", {"to": "bob@example.com"})).code == "approval_required"
    assert (await gate.call(token, "shop__invented", {})).code == "tool_not_found"
    after = await scrape(api)

    def delta(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    calls = "warrant_calls_total"
    assert delta(calls, tool="shop__find", outcome="succeeded") == 1
    assert delta(calls, tool="shop__charge", outcome="succeeded") == 1
    assert delta(calls, tool="shop__charge", outcome="replayed") == 1
    assert delta(calls, tool="shop__charge", outcome="unknown") == 1
    assert delta(calls, tool="shop__charge", outcome="failed") == 1
    assert delta(calls, tool="shop__order", outcome="refused") == 1
    assert delta(calls, tool="other", outcome="refused") == 1  # a name the catalog does not know
    assert delta("warrant_refusals_total", code="approval_required") == 1
    assert delta("warrant_refusals_total", code="tool_not_found") == 1
    assert not [k for k in after if k[0] == calls and ("tool", "shop__invented") in k[1]]
    # find, both charges (the repeat is answered by the admit: the operation is held), lost, revoked;
    # the approval and the unknown tool were decided before any admit.
    assert delta("warrant_admit_seconds_count") == 5
    assert delta("warrant_admit_seconds_bucket", le="+Inf") == 5


async def test_gauges_show_pending_approvals_unknown_actions_and_budgets(api: Api) -> None:
    run = await create_run(api)
    token = (await lease(api, run["run_id"]))["token"]
    gate = api.gateway.gate
    assert (await gate.call(token, "shop__charge", {"card": "lost"})).code == "outcome_unknown"
    assert (await gate.call(token, "shop__order", {"to": "bob@example.com"})).code == "approval_required"
    api.clock.advance(90)
    samples = await scrape(api)
    assert value(samples, "warrant_approvals_pending") == 1
    assert value(samples, "warrant_approval_oldest_pending_seconds") == 90
    assert value(samples, "warrant_actions_unknown") == 1
    assert value(samples, "warrant_active_runs") == 1
    run_id = run["run_id"]
    # The unknown charge keeps its full reservation: 0.20 of 1.00, one call of 100, one write of 10.
    assert value(samples, "warrant_budget_remaining", run_id=run_id, dimension="spend") == pytest.approx(0.80)
    assert value(samples, "warrant_budget_remaining", run_id=run_id, dimension="tool_calls") == 99
    assert value(samples, "warrant_budget_remaining", run_id=run_id, dimension="writes") == 9
    async with api.client("ops") as c:
        assert (await c.post(f"/api/runs/{run_id}/cancel", json={"reason": "done"})).status_code == 200
    samples = await scrape(api)
    assert value(samples, "warrant_active_runs") == 0
    assert not [k for k in samples if k[0] == "warrant_budget_remaining"]  # active runs only


async def test_another_tenants_scrape_names_none_of_this_tenants_runs(api: Api) -> None:
    run = await create_run(api)
    await lease(api, run["run_id"])
    async with api.client("other") as c:
        r = await c.get("/metrics")
    assert r.status_code == 200
    assert run["run_id"] not in r.text
    assert parse(r.text)[("warrant_active_runs", ())] == 0


async def test_metrics_need_a_key_that_may_read_them(api: Api) -> None:
    async with api.client(None) as c:
        r = await c.get("/metrics")
    assert (r.status_code, r.json()["error"]["code"]) == (401, "unauthenticated")
    for key in ("op", "appr", "wrk"):
        async with api.client(key) as c:
            r = await c.get("/metrics")
        assert (r.status_code, r.json()["error"]["code"]) == (403, "forbidden"), key
    await scrape(api, "ops")  # admin
