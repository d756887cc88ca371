"""The pilot report over runs and the drill history: GET /api/lineages/{id}/report, GET
/api/reports, GET /api/drills, and `warrant report` / `warrant drill history` against a real server."""

from __future__ import annotations

from typing import Any

import pytest

from gateway.drill.history import drill_run
from gateway.drill.runner import Result
from tests.api.conftest import Api
from tests.api.test_cli_keys import warrant
from tests.api.test_operator_api import create_run, lease
from tests.api.test_resolve import unknown_action

pytestmark = pytest.mark.anyio


async def get(api: Api, path: str, key: str = "aud", **params: str) -> Any:
    async with api.client(key) as c:
        return await c.get(path, params=params)


async def test_reports_over_runs_filter_by_tag_and_status_and_sum_cost_by_contract_tag(api: Api) -> None:
    tagged = await create_run(api, tags=["team:a", "pilot"])
    await create_run(api, tags=["team:b"])
    grant = await lease(api, tagged["run_id"])
    assert (await api.gateway.gate.call(grant["token"], "shop__charge", {"card": "ok"})).is_error is False
    r = await get(api, "/api/reports", tag="team:a")
    assert r.status_code == 200, r.text
    got = r.json()
    assert (got["runs"], got["truncated"], [i["run_id"] for i in got["items"]]) == (1, False, [tagged["run_id"]])
    assert got["cost"]["USD"]["by_contract_tag"] == {"pilot": "0.20", "team:a": "0.20"}
    assert got["query"]["tag"] == "team:a"
    both = (await get(api, "/api/reports", status="running,paused")).json()
    assert both["runs"] == 2 and both["by_status"]["running"] == 2
    assert (await get(api, "/api/reports", status="cancelled")).json()["runs"] == 0
    capped = (await get(api, "/api/reports", limit="1")).json()
    assert (capped["runs"], capped["truncated"]) == (1, True)


@pytest.mark.parametrize(
    "params",
    [
        {"tag": "Not A Tag"},
        {"status": "sleeping"},
        {"since": "yesterday"},
        {"until": "2026-01-01T00:00:00"},
        {"limit": "201"},
    ],
)
async def test_a_bad_report_query_is_422(api: Api, params: dict[str, str]) -> None:
    r = await get(api, "/api/reports", **params)
    assert (r.status_code, r.json()["error"]["code"]) == (422, "invalid_request")


async def test_reports_and_lineage_reports_stay_in_the_keys_tenant(api: Api) -> None:
    run = await create_run(api)
    assert (await get(api, "/api/reports", key="other")).json()["runs"] == 0
    mine = await get(api, f"/api/lineages/{run['lineage_id']}/report")
    assert mine.status_code == 200 and mine.json()["lineage_id"] == run["lineage_id"]
    assert [i["run_id"] for i in mine.json()["items"]] == [run["run_id"]]
    theirs = await get(api, f"/api/lineages/{run['lineage_id']}/report", key="other")
    assert (theirs.status_code, theirs.json()["error"]["code"]) == (404, "not_found")
    assert (await get(api, "/api/reports", key=None)).status_code == 401


async def test_a_lineages_report_sums_the_run_and_its_successor(api: Api) -> None:
    run = await create_run(api)
    async with api.client("op") as c:
        assert (await c.post(f"/api/runs/{run['run_id']}/cancel", json={"reason": "lost"})).status_code == 200
        successor = await c.post(f"/api/runs/{run['run_id']}/successor", json={"reason": "carry on"})
    assert successor.status_code == 201, successor.text
    got = (await get(api, f"/api/lineages/{run['lineage_id']}/report")).json()
    assert got["runs"] == 2 and got["by_status"]["cancelled"] == 1
    assert got["unusable_reasons"]["not_completed"] == 2


async def test_an_operator_records_a_duplicate_effect_when_resolving_and_not_with_failed(api: Api) -> None:
    run, _token, action_id = await unknown_action(api)
    async with api.client("op") as c:
        refused = await c.post(
            f"/api/actions/{action_id}/resolve", json={"status": "failed", "evidence": "x", "duplicate": True}
        )
        assert (refused.status_code, refused.json()["error"]["code"]) == (422, "invalid_request")
        ok = await c.post(
            f"/api/actions/{action_id}/resolve", json={"status": "succeeded", "evidence": "two", "duplicate": True}
        )
        assert ok.status_code == 200 and ok.json()["receipt"]["duplicate"] is True
    report = (await get(api, f"/api/runs/{run['run_id']}/report")).json()
    assert (report["duplicate_effects"], report["duplicates_found"]) == (1, 1)


def _results() -> list[Result]:
    return [
        Result("crash", "integrity", "active", "replayed", "replayed", 0, [], "pass", folder="/tmp/x"),
        Result("budget", "budget", "restart", "held", "held", 0, [], "skipped"),
    ]


async def test_recorded_drills_are_listed_newest_first_to_the_tenant_only(
    api: Api, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    info = {"passed": 1, "failed": 0, "skipped": 1, "failed_cases": []}
    for at in (100.0, 200.0):
        run = drill_run(
            _results(), info, started_at=at, seconds=3.0, profile="quick", modes="both", sabotage=None, by="me"
        )
        await api.gateway.store.record_drill("acme", run)
    r = await get(api, "/api/drills", limit="1")
    assert r.status_code == 200, r.text
    page = r.json()
    (newest,) = page["items"]
    assert (newest["started_at"], newest["ok"], newest["passed"]) == ("1970-01-01T00:03:20.000000Z", True, 1)
    assert "folder" not in newest["results"][0] and page["next_cursor"]
    assert (await get(api, "/api/drills", key="other")).json()["items"] == []
    monkeypatch.setenv("WARRANT_API_KEY", "key-aud")
    code, out, _err = await warrant(api, capsys, "drill", "history")
    assert code == 0 and out.count(" quick ") == 2


async def test_warrant_report_prints_a_run_a_lineage_and_runs_by_tag(
    api: Api, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    run = await create_run(api, tags=["team:a"])
    monkeypatch.setenv("WARRANT_API_KEY", "key-aud")
    code, out, _ = await warrant(api, capsys, "report", "run", run["run_id"])
    assert code == 0 and out.startswith(f"{run['run_id']}  running")
    # `warrant runs report` is the same command (gateway/cli/runs.py calls gateway/cli/reports.py).
    assert await warrant(api, capsys, "runs", "report", run["run_id"]) == (0, out, "")
    code, out, _ = await warrant(api, capsys, "report", "lineage", run["lineage_id"])
    assert code == 0 and out.startswith("1 run\n")
    code, out, _ = await warrant(api, capsys, "report", "runs", "--tag", "team:a", "--status", "running")
    assert code == 0 and "by contract tag: team:a 0.00" in out
    code, _, err = await warrant(api, capsys, "report", "runs", "--status", "asleep")
    assert code == 1 and "[invalid_request]" in err
