"""Graceful shutdown of a real `warrant serve` (gateway/runtime/shutdown.py, docs/operations.md): an agent's
write to the demo CRM is held in flight by the CRM's `delay` fault when SIGTERM arrives.

While draining, `/healthz` answers 503 draining, an API write is refused 503 `draining` with
Retry-After, reads of the API still answer, a new tool call is refused `draining` (a tool
result); the write in flight settles with its real outcome within `shutdown_grace`, or, slower
than that, is recorded `unknown` with the reason "gateway shut down" — never lost, never left
`admitted`; the process exits 0 within the bound and the ledger verifies. A second Ctrl-C exits
at once.
"""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp import Client, types

from gateway.runtime import CLOSE_WAIT_S, FORCED_EXIT
from gateway.runtime.shutdown import SHUT_DOWN_REASON
from tests.e2e.crm_gateway import WAIT, Gateway, exited, gateway
from tests.e2e.serving import code_of, mcp_agent
from tests.harness import eventually
from tests.integration.test_http_services import Service

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

CONTACT = {"email": "lee@prospect.example", "name": "Lee"}


async def draining_health(url: str) -> httpx.Response:
    """`/healthz` once it no longer answers 200 (bounded)."""
    async with httpx.AsyncClient(base_url=url, timeout=WAIT) as http:

        async def draining() -> httpx.Response | None:
            health = await http.get("/healthz")
            return health if health.status_code != 200 else None

        return await eventually(draining, wait=WAIT, every=0.02)


async def slow_write_then(
    gw: Gateway, proc: subprocess.Popen[bytes], sig: int, during: Any = None
) -> tuple[types.CallToolResult, str]:
    """An agent's crm__create_contact held at the CRM; `sig` sent while it is in flight, then
    `during(gw, client)` run while the gateway drains. Returns the agent's result and the action id."""
    run_id, token = await gw.lease()
    results: list[types.CallToolResult] = []
    with anyio.fail_after(WAIT):
        async with mcp_agent(gw.url, token) as client, anyio.create_task_group() as group:

            async def write() -> None:
                results.append(await client.call_tool("crm__create_contact", CONTACT))

            group.start_soon(write)
            action_id = await gw.wait_admitted(run_id)
            proc.send_signal(sig)
            if during is not None:
                await during(gw, client)
    [result] = results
    return result, action_id


async def refused_while_draining(gw: Gateway, client: Client) -> None:
    health = await draining_health(gw.url)
    assert health.status_code == 503 and health.json()["status"] == "draining"
    new_call = await client.call_tool("crm__create_contact", {"email": "new@prospect.example"})
    assert code_of(new_call) == "draining"
    assert new_call.structured_content is not None and new_call.structured_content["error"]["retryable"] is True
    async with gw.api() as api:
        api_write = await api.post("/api/runs", json={})
        api_read = await api.get("/api/runs")
    assert api_write.status_code == 503, api_write.text
    assert api_write.json()["error"]["code"] == "draining" and api_write.json()["error"]["retryable"] is True
    assert int(api_write.headers["Retry-After"]) > 0
    assert api_read.status_code == 200


async def test_sigterm_during_a_slow_write_drains_and_the_write_settles_with_its_real_outcome(
    tmp_path: Path, crm: Service
) -> None:
    gw = gateway(tmp_path / "gw", crm, grace=15)
    with gw.serve() as proc:
        await crm.fault(method="POST", path="/contacts", mode="delay", delay=4)  # outlasts the checks below
        result, action_id = await slow_write_then(gw, proc, signal.SIGTERM, refused_while_draining)
        assert await exited(proc, 15 + CLOSE_WAIT_S + 5) == 0
    assert code_of(result) is None, result
    assert gw.actions()[action_id][0] == "succeeded"
    assert crm.rows("SELECT email FROM contacts") == [(CONTACT["email"],)]
    assert (await gw.verify())["ok"] is True


async def test_a_write_slower_than_the_grace_ends_unknown_with_the_reason_and_the_gateway_exits_in_time(
    tmp_path: Path, crm: Service
) -> None:
    gw = gateway(tmp_path / "gw", crm, grace=1)
    with gw.serve() as proc:
        await crm.fault(method="POST", path="/contacts", mode="delay", delay=10)
        signalled = anyio.current_time()
        result, action_id = await slow_write_then(gw, proc, signal.SIGTERM)
        assert await exited(proc, 1 + CLOSE_WAIT_S + 5) == 0
        assert anyio.current_time() - signalled < 1 + CLOSE_WAIT_S + 5
    assert code_of(result) == "outcome_unknown"
    assert gw.actions()[action_id] == ("unknown", SHUT_DOWN_REASON)
    assert (await gw.verify())["ok"] is True


async def test_a_second_ctrl_c_while_draining_exits_at_once_and_the_write_is_not_lost(
    tmp_path: Path, crm: Service
) -> None:
    gw = gateway(tmp_path / "gw", crm, grace=30)
    with gw.serve() as proc:
        await crm.fault(method="POST", path="/contacts", mode="delay", delay=10)
        run_id, token = await gw.lease()
        with anyio.fail_after(WAIT):
            async with mcp_agent(gw.url, token) as client, anyio.create_task_group() as group:

                async def write() -> None:
                    with pytest.raises(Exception):  # noqa: B017 - the connection goes with the process
                        await client.call_tool("crm__create_contact", CONTACT)

                group.start_soon(write)
                action_id = await gw.wait_admitted(run_id)
                proc.send_signal(signal.SIGINT)
                await draining_health(gw.url)
                proc.send_signal(signal.SIGINT)
                assert await exited(proc, 10) == FORCED_EXIT
    # Still admitted, or recorded unknown on the way out: the next start marks it unknown either way.
    assert gw.actions()[action_id][0] in ("admitted", "unknown")
    assert (await gw.verify())["ok"] is True
