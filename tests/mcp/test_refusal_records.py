"""What is recorded is bounded: a refused call's record keeps a hash and a size, never its bulk."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from tests.api.conftest import Api
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
