"""Limits through a real server (uvicorn on loopback, the official MCP client): each limit refuses
with its code, status and Retry-After, and admits again once the clock has moved past it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp import MCPError

from gateway.adapters import PythonAdapter
from tests.api.conftest import CONTRACT, Api, serving_api
from tests.e2e.serving import code_of
from tests.mcp.test_mcp_front import MODES, mcp_client

pytestmark = pytest.mark.anyio

LIMITS = """\
limits:
  max_request_body: 4KiB
  max_tool_result: 2KiB
  run_concurrency: 2
  rate: {per_tenant: 12/m, per_key: 4/m}
"""
POLICY = "  slow__wait: {effect: read}\n  slow__bulk: {effect: write}\n"


class Slow:
    """A tool that waits until released (calls in flight), and a write whose answer is 5 KB."""

    def __init__(self) -> None:
        self.entered = 0
        self.two_in = asyncio.Event()  # two calls are waiting inside the tool
        self.release = asyncio.Event()
        self.bulk_done: list[str] = []
        self.adapter = PythonAdapter("slow")

        @self.adapter.tool(input_schema={"type": "object", "properties": {"n": {"type": "integer"}}})
        async def wait(args: dict[str, Any], call: Any) -> dict[str, Any]:
            self.entered += 1
            if self.entered == 2:
                self.two_in.set()
            await self.release.wait()
            return {"n": args.get("n")}

        @self.adapter.tool(input_schema={"type": "object", "properties": {"to": {"type": "string"}}})
        async def bulk(args: dict[str, Any], call: Any) -> dict[str, Any]:
            self.bulk_done.append(args["to"])
            return {"id": f"bulk-{len(self.bulk_done)}", "report": "x" * 5000}


@pytest.fixture
def slow() -> Slow:
    return Slow()


@pytest.fixture
async def limited(tmp_path: Path, slow: Slow) -> AsyncIterator[Api]:
    async with serving_api(tmp_path, LIMITS, policy_extra=POLICY, adapters=[slow.adapter]) as served:
        yield served
    slow.release.set()


async def start(api: Api) -> tuple[str, str]:
    async with api.client("op") as c:
        response = await c.post("/api/runs", json={**CONTRACT, "authority": {"allow": ["shop__*", "slow__*"]}})
        run = response.json()
        grant = (await c.post(f"/api/runs/{run['run_id']}/lease", json={"worker": "agent"})).json()
    return run["run_id"], grant["token"]


def error(result: Any) -> dict[str, Any]:
    assert result.structured_content is not None
    found: dict[str, Any] = result.structured_content["error"]
    return found


# -- the API ----------------------------------------------------------------------------------------
async def test_an_api_key_over_its_rate_is_answered_429_with_retry_after_until_the_clock_moves(
    limited: Api,
) -> None:
    async with limited.client("aud") as aud, limited.client("appr") as appr:
        for _ in range(4):
            assert (await aud.get("/api/runs")).status_code == 200
        over = await aud.get("/api/runs")
        assert (over.status_code, over.headers["Retry-After"]) == (429, "15")
        body = over.json()["error"]
        assert (body["code"], body["limit"], body["retry_after_s"]) == ("rate_limited", "key", 15.0)
        assert (await appr.get("/api/approvals")).status_code == 200  # another key of the tenant
        limited.clock.advance(15)
        assert (await aud.get("/api/runs")).status_code == 200


async def test_a_tenant_over_its_rate_is_refused_whichever_key_asks(limited: Api) -> None:
    for key in ["aud", "op", "ops"]:
        async with limited.client(key) as c:
            for _ in range(4):
                assert (await c.get("/api/runs")).status_code == 200
    async with limited.client("appr") as appr, limited.client("other") as globex:
        over = await appr.get("/api/approvals")
        assert (over.status_code, over.json()["error"]["limit"], over.headers["Retry-After"]) == (429, "tenant", "5")
        assert (await globex.get("/api/runs")).status_code == 200  # another tenant
        limited.clock.advance(5)
        assert (await appr.get("/api/approvals")).status_code == 200


async def test_an_api_body_over_the_cap_is_413_whether_it_declares_its_length_or_not(limited: Api) -> None:
    big = {**CONTRACT, "goal": "x" * 5000}
    async with limited.client("op") as c:
        declared = await c.post("/api/runs", json=big)
        assert (declared.status_code, declared.json()["error"]["code"]) == (413, "payload_too_large")
        assert declared.json()["error"]["max_bytes"] == 4096
        huge = await c.post("/api/runs", json={**CONTRACT, "goal": "x" * 3_000_000})  # answered, not reset
        assert (huge.status_code, huge.json()["error"]["code"]) == (413, "payload_too_large")

        async def chunks() -> AsyncIterator[bytes]:
            for _ in range(3000):  # 3 MB: the rest is read and dropped, so the 413 is answered, not reset
                yield b" " * 1000

        streamed = await c.post("/api/runs", content=chunks(), headers={"Content-Type": "application/json"})
        assert (streamed.status_code, streamed.json()["error"]["code"]) == (413, "payload_too_large")
        assert (await c.post("/api/runs", json=CONTRACT)).status_code == 201
    async with limited.client("aud") as aud:
        assert len((await aud.get("/api/runs")).json()["items"]) == 1  # nothing of the refused bodies


async def test_the_openapi_document_names_the_configured_cap_and_the_429(limited: Api) -> None:
    async with limited.client(None) as c:
        doc = (await c.get("/api/openapi.json")).json()
    assert "4096 bytes" in doc["components"]["responses"]["413"]["description"]
    assert "Retry-After" in doc["components"]["responses"]["429"]["headers"]
    assert "429" in doc["paths"]["/api/runs"]["get"]["responses"]


# -- /mcp ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", MODES)
async def test_an_mcp_body_over_the_cap_is_a_json_rpc_error_the_client_reads(limited: Api, mode: str) -> None:
    run_id, token = await start(limited)
    async with mcp_client(limited, token, mode) as c:
        with pytest.raises(MCPError) as refused:
            await c.call_tool("shop__find", {"q": "x" * 5000})
        assert "payload_too_large" in refused.value.error.message
        result = await c.call_tool("shop__find", {"q": "small"})  # the same client carries on
    assert code_of(result) is None
    async with limited.client("aud") as aud:
        actions = (await aud.get(f"/api/runs/{run_id}/actions")).json()["items"]
    assert len(actions) == 1  # the refused body never reached the gate


async def test_an_mcp_body_without_a_length_is_cut_at_the_cap(limited: Api) -> None:
    _, token = await start(limited)

    async def chunks() -> AsyncIterator[bytes]:
        for _ in range(100):
            yield b" " * 1000

    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json", "Accept": "application/json"}
    async with httpx.AsyncClient(timeout=10) as http:
        response = await http.post(f"{limited.url}/mcp", content=chunks(), headers=headers)
    assert response.status_code == 413
    body = response.json()
    assert (body["jsonrpc"], body["id"], body["error"]["data"]["code"]) == ("2.0", None, "payload_too_large")


async def test_a_run_over_its_rate_of_tool_calls_is_refused_until_the_clock_moves(limited: Api) -> None:
    _, token = await start(limited)
    async with mcp_client(limited, token, "auto") as c:
        for n in range(4):
            assert code_of(await c.call_tool("shop__find", {"q": str(n)})) is None
        over = await c.call_tool("shop__find", {"q": "5"})
        assert code_of(over) == "rate_limited"
        assert (error(over)["limit"], error(over)["retry_after_s"], error(over)["retryable"]) == ("run", 15.0, True)
        limited.clock.advance(15)
        assert code_of(await c.call_tool("shop__find", {"q": "6"})) is None


async def test_a_run_at_its_cap_of_calls_in_flight_is_refused_until_one_settles(limited: Api, slow: Slow) -> None:
    _, token = await start(limited)
    async with mcp_client(limited, token, "auto") as c:
        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                results: list[Any] = []

                async def call(n: int) -> None:
                    results.append(await c.call_tool("slow__wait", {"n": n}))

                tg.start_soon(call, 1)
                tg.start_soon(call, 2)
                await slow.two_in.wait()
                refused = await asyncio.gather(*(c.call_tool("slow__wait", {"n": n}) for n in range(3, 6)))
                assert [code_of(r) for r in refused] == ["rate_limited"] * 3
                assert {error(r)["limit"] for r in refused} == {"run_concurrency"}
                assert slow.entered == 2  # none of them reached the tool
                slow.release.set()
            assert [code_of(r) for r in results] == [None, None]
            assert code_of(await c.call_tool("slow__wait", {"n": 6})) is None


async def test_a_write_whose_answer_is_over_the_cap_is_recorded_as_performed_and_withheld(
    limited: Api, slow: Slow
) -> None:
    run_id, token = await start(limited)
    async with mcp_client(limited, token, "auto") as c:
        result = await c.call_tool("slow__bulk", {"to": "a"})
        again = await c.call_tool("slow__bulk", {"to": "a"})  # the same operation: not performed twice
    assert code_of(result) == "payload_too_large"
    assert (error(result)["performed"], error(result)["max_bytes"]) == (True, 2048)
    assert "x" * 100 not in str(result.content)
    assert again.meta is not None and again.meta["warrant/replayed"] is True
    assert slow.bulk_done == ["a"]
    async with limited.client("aud") as aud:
        actions = (await aud.get(f"/api/runs/{run_id}/actions")).json()["items"]
    (action,) = actions
    assert action["status"] == "succeeded"
    assert action["receipt"]["withheld"] is True and action["receipt"]["result_bytes"] > 5000


async def test_an_mcp_body_cap_above_the_sdks_own_is_the_one_that_holds(tmp_path: Path) -> None:
    # The SDK refuses bodies over 4 MiB by default; a gateway configured for more serves them.
    async with serving_api(tmp_path, "limits: {max_request_body: 6MiB}\n") as api:
        _, token = await start(api)
        async with mcp_client(api, token, "auto") as c:
            result = await c.call_tool("shop__find", {"q": "x" * 5_000_000})
            assert code_of(result) is None
            with pytest.raises(MCPError) as refused:
                await c.call_tool("shop__find", {"q": "x" * 7_000_000})
            assert "payload_too_large" in refused.value.error.message
