"""What a refusal tells the model, through the official MCP SDK client against a real server.

The text and `structuredContent.error` both name what to change (docs/refusals.md); a call that
waits on a person is answered as a non-error result so that a framework's retry limit is not spent
on waiting; a replay says so in `structuredContent` where the tool declares no output schema, and
leaves the tool's own structuredContent as it was where it does (the SDK client validates it).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
import jsonschema
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from gateway.adapters import PythonAdapter
from gateway.gate.pipeline import replay_structured
from tests.api.conftest import CONTRACT, Api, serving_api

pytestmark = pytest.mark.anyio

RECEIPT = {
    "type": "object",
    "properties": {"id": {"type": "string"}, "amount": {"type": "integer"}},
    "required": ["id", "amount"],
    "additionalProperties": False,
}
AMOUNT = {"type": "object", "properties": {"amount": {"type": "integer"}}, "required": ["amount"]}
POLICY = (
    "  ledger__post: {effect: write}\n  ledger__hold: {effect: write, approval: {role: approver, decide_within: 4h}}\n"
)
TERMS: dict[str, Any] = {
    **CONTRACT,
    "budgets": {**CONTRACT["budgets"], "spend": "0.25"},
    "authority": {
        "allow": ["shop__*", "ledger__*"],
        "deny": ["shop__find"],
        "constraints": {"shop__charge": "args.card.startsWith('tok_')"},
    },
}


def ledger(posted: list[int]) -> PythonAdapter:
    """Tools that declare an output schema: their structured results are validated by the client."""
    adapter = PythonAdapter("ledger")

    @adapter.tool(input_schema=AMOUNT, output_schema=RECEIPT, description="Post an amount.")
    async def post(args: dict[str, Any], call: Any) -> dict[str, Any]:
        posted.append(args["amount"])
        return {"id": f"p{len(posted)}", "amount": args["amount"]}

    @adapter.tool(input_schema=AMOUNT, output_schema=RECEIPT, description="Hold an amount (approved).")
    async def hold(args: dict[str, Any], call: Any) -> dict[str, Any]:
        posted.append(-args["amount"])
        return {"id": f"h{len(posted)}", "amount": args["amount"]}

    return adapter


@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[tuple[Api, list[int]]]:
    posted: list[int] = []
    async with serving_api(tmp_path, policy_extra=POLICY, adapters=[ledger(posted)]) as api:
        yield api, posted


async def start(api: Api) -> tuple[str, str]:
    async with api.client("op") as c:
        run = (await c.post("/api/runs", json=TERMS)).json()
        grant = (await c.post(f"/api/runs/{run['run_id']}/lease", json={"worker": "agent"})).json()
    return run["run_id"], grant["token"]


@asynccontextmanager
async def mcp_client(api: Api, token: str) -> AsyncIterator[Client]:
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=10) as http:
        async with Client(streamable_http_client(f"{api.url}/mcp", http_client=http), cache=None) as client:
            await client.list_tools()  # the SDK client learns the output schemas it validates against
            yield client


def text(result: Any) -> str:
    return str(result.content[0].text)


async def test_a_constraint_refusal_names_the_expression_the_argument_and_its_value(
    served: tuple[Api, list[int]],
) -> None:
    api, _ = served
    run_id, token = await start(api)
    async with mcp_client(api, token) as client:
        result = await client.call_tool("shop__charge", {"card": "4111-1111"})
    assert result.is_error is True and result.structured_content is not None
    error = result.structured_content["error"]
    assert error["code"] == "constraint_violated"
    assert (error["constraint"], error["arguments"]) == ("args.card.startsWith('tok_')", ["card"])
    for said in (text(result), error["message"]):
        assert "args.card.startsWith('tok_')" in said and "`card`" in said and '"4111-1111"' in said
    assert text(result).startswith("[constraint_violated] not executed:")
    # The value is answered, never recorded: a purged payload leaves nothing of itself in the ledger.
    async with api.client("aud") as c:
        actions = (await c.get(f"/api/runs/{run_id}/actions")).json()["items"]
    [rejected] = [a for a in actions if a["code"] == "constraint_violated"]
    assert "args.card.startsWith('tok_')" in rejected["reason"] and "4111" not in rejected["reason"]
    assert api.effects == []


async def test_an_exhausted_budget_names_the_dimension_and_what_is_left(served: tuple[Api, list[int]]) -> None:
    api, _ = served
    _, token = await start(api)
    async with mcp_client(api, token) as client:
        first = await client.call_tool("shop__charge", {"card": "tok_1"})
        second = await client.call_tool("shop__charge", {"card": "tok_2"})
    assert first.is_error is False
    assert second.is_error is True and second.structured_content is not None
    error = second.structured_content["error"]
    assert (error["code"], error["dimension"], error["left"], error["needed"]) == (
        "budget_exhausted",
        "spend",
        "0.05",
        "0.20",
    )
    for said in (text(second), error["message"]):
        assert "spend budget" in said and "it needs 0.20, 0.05 of 0.25 is left" in said


async def test_approval_required_is_a_non_error_answer_that_says_how_to_wait(served: tuple[Api, list[int]]) -> None:
    api, _ = served
    _, token = await start(api)
    async with mcp_client(api, token) as client:
        asked = await client.call_tool("shop__order", {"to": "bob@example.com"})
        again = await client.call_tool("shop__order", {"to": "bob@example.com"})
        other = await client.call_tool("shop__charge", {"card": "tok_1"})
    for result in (asked, again):
        # Not an error result: pydantic-ai's default retry limit (one per tool) is not spent on waiting.
        assert result.is_error is False and result.structured_content is not None
        assert result.meta is not None and result.meta["warrant/code"] == "approval_required"
        error = result.structured_content["error"]
        assert error["code"] == "approval_required" and error["approval_id"].startswith("apr_")
        for said in (text(result), error["message"]):
            assert said.startswith("[approval_required] not executed:") or said.startswith("not executed:")
            assert error["approval_id"] in said and "warrant_status" in said
            assert error["check_after"] in said and error["expires_at"] in said
    assert again.structured_content is not None and asked.structured_content is not None
    assert again.structured_content["error"]["approval_id"] == asked.structured_content["error"]["approval_id"]
    # Another write while the run waits: not executed either, naming the approval it waits on.
    assert other.is_error is False and other.structured_content is not None
    waiting = other.structured_content["error"]
    assert waiting["code"] == "run_waiting"
    assert waiting["pending_approvals"] == [asked.structured_content["error"]["approval_id"]]
    assert asked.structured_content["error"]["approval_id"] in text(other) and "warrant_status" in text(other)
    assert api.effects == []


async def test_a_replay_says_so_in_its_text_and_its_structured_content(served: tuple[Api, list[int]]) -> None:
    api, _ = served
    _, token = await start(api)
    async with mcp_client(api, token) as client:
        first = await client.call_tool("shop__charge", {"card": "tok_1"})
        replay = await client.call_tool("shop__charge", {"card": "tok_1"})
    assert first.meta is not None and replay.meta is not None
    action_id = first.meta["warrant/action_id"]
    assert replay.is_error is False and replay.meta["warrant/replayed"] is True
    assert text(replay).startswith(f"not executed again: identical to action {action_id}")
    assert replay.structured_content == {
        **(first.structured_content or {}),
        "replayed": True,
        "action_id": action_id,
        "not_executed_again": text(replay),
    }
    assert len(api.effects) == 1


async def test_a_tool_with_an_output_schema_keeps_its_structured_content_valid(
    served: tuple[Api, list[int]],
) -> None:
    api, posted = served
    _, token = await start(api)
    async with mcp_client(api, token) as client:
        listed = {t.name: t for t in (await client.list_tools()).tools}
        # The SDK client validates each non-error result against the output schema (it raises if not).
        first = await client.call_tool("ledger__post", {"amount": 5})
        replay = await client.call_tool("ledger__post", {"amount": 5})
        asked = await client.call_tool("ledger__hold", {"amount": 7})
    assert listed["ledger__post"].output_schema == RECEIPT
    assert first.structured_content == {"id": "p1", "amount": 5}
    assert replay.structured_content == first.structured_content  # exactly the tool's own
    assert replay.meta is not None and first.meta is not None
    assert replay.meta["warrant/replayed"] is True
    assert replay.meta["warrant/action_id"] == first.meta["warrant/action_id"]
    assert text(replay).startswith("not executed again: identical to action")
    # A waiting answer cannot be a valid non-error result of such a tool: it stays an error result.
    assert asked.is_error is True and asked.structured_content is not None
    assert asked.structured_content["error"]["code"] == "approval_required"
    assert posted == [5]
    # What the schema would refuse: the replay marker merged into the tool's own result.
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(replay_structured("act_x", "not executed again", first.structured_content, []), RECEIPT)
