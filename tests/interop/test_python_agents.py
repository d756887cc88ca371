"""Python agent frameworks, as a user sets them up, through Warrant's /mcp with scripted models.

pydantic-ai (its `FunctionModel`), the OpenAI Agents SDK (its `Model` interface played by a
scripted class), langchain-mcp-adapters (under LangChain's `create_agent`, a scripted chat model)
and the fastmcp client, at the pins of tests/interop/python/*.txt, each in its own venv and
process (tests/interop/pyagents.py), on loopback, with no model service anywhere. Each plays
tests/interop/python/scenario.py: list tools, a read, a write, its replay, a constraint refusal,
an approval-gated write (asked twice), a wait on a person past the lease's TTL while an approver
decides through the API, then the approved write, all with the one client it was configured with.
What is asserted is what the framework handed its model, not the MCP result.

The wait past the TTL: the gateway's clock follows real time; while the agent waits, the test idles
2 s for real (past the server's keep-alive, 1 s here, so the agent's pooled connections are closed
under it), then moves the clock 30 s on, past the lease's 20 s TTL, and approves.
`WARRANT_INTEROP_REAL_WAIT=1` waits the 30 s for real instead (docs/testing.md).
"""

from __future__ import annotations

import asyncio
import os
import re
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from gateway.clock import ManualClock
from tests.api.conftest import CONTRACT, Api, serving_api
from tests.interop.pyagents import Framework, run_agent
from tests.interop.python.scenario import RECIPIENT

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

FRAMEWORKS = [
    pytest.param(Framework("pydantic_ai", "agents"), id="pydantic-ai"),
    pytest.param(Framework("openai_agents", "agents"), id="openai-agents"),
    pytest.param(Framework("langchain", "langchain"), id="langchain-mcp-adapters"),
    pytest.param(Framework("fastmcp", "agents"), id="fastmcp"),
]

LEASE_TTL = 20
PAST_TTL = LEASE_TTL + 10
KEEP_ALIVE = 1  # seconds uvicorn keeps an idle connection open (5 by default)
CONSTRAINT = "args.card in ['visa', 'mastercard']"
AGENT_CONTRACT = {
    **CONTRACT,
    "lease_ttl": f"{LEASE_TTL}s",
    "authority": {"allow": ["shop__*"], "constraints": {"shop__charge": CONSTRAINT}},
}
# How to wait for a decision without asking again at once: call warrant_status, or when to check back.
WAIT_HINT = r"warrant_status|check back|(retry|call again|try again) (in|after) \d"
REAL_WAIT = os.environ.get("WARRANT_INTEROP_REAL_WAIT") == "1"


class WallClock(ManualClock):
    """Real time, plus whatever the test moved it on by: the gateway's time flows as in production."""

    def __init__(self) -> None:
        super().__init__(0.0)

    def now(self) -> float:
        return time.time() + super().now()


@pytest.fixture
async def gateway(tmp_path: Path) -> AsyncIterator[Api]:
    """tests/api's server (adapter `shop`, its keys) on a wall clock, dropping idle connections after 1 s."""
    async with serving_api(tmp_path, clock=WallClock(), keep_alive=KEEP_ALIVE) as served:
        yield served


async def new_run(api: Api) -> tuple[str, str]:
    """A run of AGENT_CONTRACT and its lease, taken by the operator key: (run_id, lease token)."""
    async with api.client("op") as c:
        created = await c.post("/api/runs", json=AGENT_CONTRACT)
        assert created.status_code == 201, created.text
        run_id: str = created.json()["run_id"]
        grant = await c.post(f"/api/runs/{run_id}/lease", json={"worker": "agent"})
        assert grant.status_code in (200, 201), grant.text
    return run_id, grant.json()["token"]


async def approve_past_ttl(api: Api, run_id: str, decided: list[str]) -> None:
    """A person takes longer than the lease's TTL, then approves the pending order through the API."""
    if REAL_WAIT:
        await asyncio.sleep(PAST_TTL)  # stays: WARRANT_INTEROP_REAL_WAIT asks for the lease's TTL to pass for real
    else:
        await asyncio.sleep(KEEP_ALIVE + 1)  # stays, idle for real: the server closes the agent's connections
        api.clock.advance(PAST_TTL)
    async with api.client("appr") as c:
        pending = await c.get("/api/approvals", params={"run_id": run_id, "status": "pending"})
        assert pending.status_code == 200, pending.text
        items = pending.json()["items"]
        assert [a["tool"] for a in items] == ["shop__order"], items
        approval_id = items[0]["approval_id"]
        approved = await c.post(f"/api/approvals/{approval_id}/approve", json={"note": "checked the recipient"})
        assert approved.status_code == 200, approved.text
    decided.append(approval_id)


@pytest.mark.parametrize("framework", FRAMEWORKS)
async def test_a_framework_lives_through_an_approval_past_the_lease_ttl(gateway: Api, framework: Framework) -> None:
    run_id, token = await new_run(gateway)
    decided: list[str] = []
    transcript = await run_agent(
        framework, f"{gateway.url}/mcp", token, lambda: approve_past_ttl(gateway, run_id, decided)
    )
    async with gateway.client("op") as c:
        actions = (await c.get(f"/api/runs/{run_id}/actions")).json()["items"]
        approvals = (await c.get("/api/approvals", params={"run_id": run_id})).json()["items"]
    charged = [a["action_id"] for a in actions if a["tool"] == "shop__charge" and a["status"] == "succeeded"]
    assert len(charged) == 1, actions
    assert [a["tool"] for a in approvals] == ["shop__order"], approvals
    approval, decide_by = approvals[0]["approval_id"], approvals[0]["decide_by"]
    views = {v["step"]: v["view"] or "" for v in transcript["views"]}

    # Every expectation is checked, and all that fail are reported together: (step, pattern, why).
    pending = ("approval", "approval_again")
    expected = [
        ("read", "hits", "the read's result"),
        ("write", "charge-1", "the write's result"),
        # The replay is no new charge, and the model is told so, with the action it repeats.
        ("replay", "not executed again", "a replay says it was not executed again"),
        ("replay", re.escape(charged[0]), "a replay names the action it repeats"),
        # The refusal names the rule that failed, so the model can see what to change.
        ("constraint", "constraint_violated", "the refusal's code"),
        ("constraint", re.escape(CONSTRAINT), "the constraint that failed, in words"),
        # Pending, asked twice before a decision: each time the model sees what it waits on, and how.
        *[(step, "approval_required", "the refusal's code") for step in pending],
        *[(step, re.escape(approval), "the pending approval's id") for step in pending],
        # Its expiry: the time a person must decide by, to the minute (however it is written out).
        *[(step, re.escape(decide_by[:16]), "when the approval expires") for step in pending],
        *[(step, WAIT_HINT, "how to wait for the decision") for step in pending],
        # After the wait, the same client and token go on.
        ("approved", "order-", "the approved write's result"),
    ]
    problems = [
        f"{step}: {why} (/{pattern}/) not in {views.get(step)!r}"
        for step, pattern, why in expected
        if re.search(pattern, views.get(step, "")) is None
    ]
    if transcript["error"] is not None:
        problems.insert(0, f"{framework.name} stopped the run: {transcript['error']}")
    if not decided:
        problems.append("the agent never waited on the person")
    problems += [
        f"{step}: a lease refusal after the wait: {views[step]!r}"
        for step in ("status", "approved")
        if re.search("lease_expired|lease_superseded", views.get(step, ""))
    ]
    tools = set(transcript["tools"] or [])
    if not {"shop__find", "shop__charge", "shop__order", "warrant_status"} <= tools:
        problems.append(f"tools offered to the model: {sorted(tools)}")
    if gateway.effects != [{"card": "visa"}, {"to": RECIPIENT}]:
        problems.append(f"side effects: {gateway.effects}")
    assert not problems, f"{framework.name}:\n- " + "\n- ".join(problems)
