"""What is recorded is bounded: a refused call's record keeps a hash and a size, never its bulk."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from tests.api.conftest import Api, serving_api
from tests.mcp.test_mcp_front import mcp_client, start

pytestmark = pytest.mark.anyio

KiB = 1024


def _store_bytes(tmp_path: Path) -> int:
    """The store's size as its file holds it, once the write-ahead log is folded in."""
    with sqlite3.connect(tmp_path / "w.db") as conn:
        conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
    return (tmp_path / "w.db").stat().st_size


async def test_twenty_512_kib_refused_calls_grow_the_store_by_well_under_a_megabyte(api: Api, tmp_path: Path) -> None:
    run_id, token = await start(api, authority={"allow": ["shop__find"]})
    async with mcp_client(api, token, "auto") as c:
        await c.call_tool("shop__find", {"q": "warm"})  # the store's pages for a call exist
        before = _store_bytes(tmp_path)
        for i in range(10):
            long_name = f"shop__{i}" + "x" * (512 * KiB)
            result = await c.call_tool(long_name, {})
            assert result.is_error is True
        for i in range(10):
            result = await c.call_tool("shop__order", {"to": f"{i}" + "y" * (512 * KiB)})  # forbidden
            assert result.is_error is True
    grown = _store_bytes(tmp_path) - before
    assert grown < 256 * KiB, grown
    async with api.client("aud") as c:
        actions = (await c.get(f"/api/runs/{run_id}/actions", params={"limit": "100"})).json()["items"]
    rejected = [a for a in actions if a["status"] == "rejected"]
    assert len(rejected) == 20  # each refusal is still in the audit, with its code and hash
    assert all(len(a["tool"]) <= 120 and a["code"] and a["payload_sha256"] for a in rejected)
    async with api.client("aud") as c:
        events = (await c.get(f"/api/runs/{run_id}/events", params={"limit": "100"})).json()["items"]
    sizes = [e["data"].get("payload_bytes") for e in events if e["type"] == "action_rejected"]
    assert sizes == [2] * 10 + [len(f'{{"to":"{i}{"y" * (512 * KiB)}"}}') for i in range(10)]  # size beside hash


async def test_twenty_512_kib_refused_calls_past_max_per_run_grow_the_store_little_and_the_dropped_are_counted(
    tmp_path: Path,
) -> None:
    async with serving_api(tmp_path, "limits:\n  refusals: {rate: null, max_per_run: 15}\n") as api:
        run_id, token = await start(api, authority={"allow": ["shop__find"]})
        async with mcp_client(api, token, "auto") as c:
            await c.call_tool("shop__find", {"q": "warm"})
            before = _store_bytes(tmp_path)
            for i in range(20):
                result = await c.call_tool("shop__order", {"to": f"{i}" + "y" * (512 * KiB)})  # forbidden
                assert result.is_error is True
        grown = _store_bytes(tmp_path) - before
        async with api.client("aud") as c:
            run = (await c.get(f"/api/runs/{run_id}")).json()
            actions = (await c.get(f"/api/runs/{run_id}/actions", params={"limit": "100"})).json()
            metrics = (await c.get("/metrics")).text
    assert grown < 256 * KiB, grown
    assert len([a for a in actions["items"] if a["status"] == "rejected"]) == 15
    expected = {"rate": 0, "max_per_run": 5, "by_epoch": [{"epoch": 1, "rate": 0, "max_per_run": 5}]}
    assert run["refusals_dropped"] == expected  # the five not recorded are counted, not lost
    assert actions["refusals_dropped"] == expected
    assert 'warrant_refusals_dropped{limit="max_per_run"} 5.0' in metrics


async def test_a_dead_tokens_refusals_are_rate_limited_and_recorded_again_after_the_window(tmp_path: Path) -> None:
    async with serving_api(tmp_path, "limits:\n  refusals: {rate: 60/m}\n") as api:
        await _rate_limited_then_recorded_again(api)


async def _rate_limited_then_recorded_again(api: Api) -> None:
    run_id, token = await start(api)
    async with api.client("op") as c:
        await c.post(f"/api/runs/{run_id}/cancel", json={"reason": "stop"})
    codes: list[str] = []
    async with mcp_client(api, token, "auto") as c:
        for _ in range(70):
            result = await c.call_tool("shop__find", {"q": "x"})
            assert result.structured_content is not None
            codes.append(result.structured_content["error"]["code"])
        last = result.structured_content["error"]
        api.clock.advance(61)
        again = await c.call_tool("shop__find", {"q": "x"})
    assert codes[:60] == ["run_cancelled"] * 60  # 60 a minute per token, as configured
    assert set(codes[60:]) == {"rate_limited"}
    assert last["refused_code"] == "run_cancelled" and last["retry_after_s"] > 0
    assert again.structured_content is not None and again.structured_content["error"]["code"] == "run_cancelled"
    async with api.client("aud") as c:
        actions = (await c.get(f"/api/runs/{run_id}/actions", params={"limit": "200"})).json()["items"]
    assert len([a for a in actions if a["status"] == "rejected"]) == 61
    async with api.client("aud") as c:
        dropped = (await c.get(f"/api/runs/{run_id}")).json()["refusals_dropped"]
    assert (dropped["rate"], dropped["max_per_run"]) == (10, 0)  # the ten rate_limited, counted


async def test_a_run_keeps_at_most_max_per_run_refusals(tmp_path: Path) -> None:
    extra = "limits:\n  refusals: {rate: null, max_per_run: 5}\n"
    async with serving_api(tmp_path, extra) as served:
        run_id, token = await start(served, authority={"allow": ["shop__find"]})
        async with mcp_client(served, token, "auto") as c:
            results = [await c.call_tool("shop__order", {"to": "x"}) for _ in range(8)]
        async with served.client("aud") as c:
            actions = (await c.get(f"/api/runs/{run_id}/actions", params={"limit": "100"})).json()["items"]
    errors = [r.structured_content["error"] for r in results if r.structured_content is not None]
    assert [e["code"] for e in errors] == ["forbidden"] * 8
    assert [e.get("recorded", True) for e in errors] == [True] * 5 + [False] * 3
    assert len([a for a in actions if a["status"] == "rejected"]) == 5
