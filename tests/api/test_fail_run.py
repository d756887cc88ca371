"""`POST /api/runs/{id}/fail` against a real server on loopback (docs/decisions/0024-failed-end.md):
the run ends failed with the operator's reason as its cause; 404 for an unknown or another tenant's
run, 409 for one that is over already, 422 for a bad body, 403 for a role that may not control runs."""

from __future__ import annotations

from typing import Any

import pytest

from tests.api.conftest import Api
from tests.api.test_cli_keys import warrant

pytestmark = pytest.mark.anyio


async def fail(api: Api, run_id: str, body: Any, key: str = "op") -> Any:
    async with api.client(key) as c:
        return await c.post(f"/api/runs/{run_id}/fail", json=body)


async def test_an_operator_fails_a_run_and_its_token_meets_run_failed(api: Api) -> None:
    rid = await api.new_run()
    token = await api.lease_token(rid)
    answer = await fail(api, rid, {"reason": "the vendor pulled out"})
    assert answer.status_code == 200, answer.text
    run = answer.json()
    assert (run["status"], run["status_reason"]) == ("failed", "the vendor pulled out")
    assert run["status_cause"] == {"by": "op", "reason": "the vendor pulled out", "rule": None}
    refused = await api.gateway.gate.call(token, "shop__find", {"q": "x"})
    assert refused.structured is not None and refused.structured["error"]["code"] == "run_failed"
    async with api.client("aud") as c:
        shown = (await c.get(f"/api/runs/{rid}")).json()
        assert shown["status"] == "failed" and shown["status_cause"]["by"] == "op"
        types = [e["type"] for e in (await c.get(f"/api/runs/{rid}/events")).json()["items"]]
    assert types[types.index("run_failed") + 1] == "alert"  # the run_failed alert, in the same transaction


async def test_a_run_that_is_over_already_is_409_with_its_status_code(api: Api) -> None:
    rid = await api.new_run()
    assert (await fail(api, rid, {"reason": "first"})).status_code == 200
    again = await fail(api, rid, {"reason": "second"})
    assert (again.status_code, again.json()["error"]["code"]) == (409, "run_failed")
    other = await api.new_run()
    async with api.client("op") as c:
        assert (await c.post(f"/api/runs/{other}/cancel", json={})).status_code == 200
    cancelled = await fail(api, other, {"reason": "too late"})
    assert (cancelled.status_code, cancelled.json()["error"]["code"]) == (409, "run_cancelled")


@pytest.mark.parametrize("body", [{}, {"reason": ""}, {"reason": "x" * 2001}, {"reason": "x", "hard": True}])
async def test_a_bad_body_is_422_and_changes_nothing(api: Api, body: dict[str, Any]) -> None:
    rid = await api.new_run()
    answer = await fail(api, rid, body)
    assert answer.status_code == 422, answer.text
    async with api.client("aud") as c:
        assert (await c.get(f"/api/runs/{rid}")).json()["status"] == "running"


async def test_an_unknown_run_or_another_tenants_is_404_and_stays_running(api: Api) -> None:
    assert (await fail(api, "run_nope", {"reason": "x"})).status_code == 404
    rid = await api.new_run()
    answer = await fail(api, rid, {"reason": "not yours"}, key="other")
    assert (answer.status_code, answer.json()["error"]["code"]) == (404, "not_found")
    async with api.client("aud") as c:
        assert (await c.get(f"/api/runs/{rid}")).json()["status"] == "running"


@pytest.mark.parametrize("key", ["aud", "appr", "wrk"])
async def test_a_role_that_may_not_control_runs_is_403(api: Api, key: str) -> None:
    rid = await api.new_run()
    answer = await fail(api, rid, {"reason": "x"}, key=key)
    assert (answer.status_code, answer.json()["error"]["code"]) == (403, "forbidden")


async def test_a_failed_run_may_get_a_successor(api: Api) -> None:
    rid = await api.new_run()
    await fail(api, rid, {"reason": "wrong approach"})
    async with api.client("op") as c:
        answer = await c.post(f"/api/runs/{rid}/successor", json={"reason": "another way"})
    assert answer.status_code == 201, answer.text
    successor = answer.json()
    assert successor["status"] == "running" and successor["run_id"] != rid


async def test_warrant_runs_fail_prints_the_status_and_refuses_a_second_fail(
    api: Api, capsys: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WARRANT_API_KEY", "key-op")
    rid = await api.new_run()
    code, out, err = await warrant(api, capsys, "runs", "fail", rid, "--reason", "wrong data source")
    assert code == 0, err
    assert out.strip() == f"{rid}: failed (wrong data source)"
    code, _, err = await warrant(api, capsys, "runs", "fail", rid, "--reason", "again")
    assert code == 1 and err.startswith("warrant: [run_failed]")
