"""Retry policies and dead letters end to end (docs/retries.md, docs/decisions/0030-retries.md).

A served gateway (uvicorn on loopback) fronts a flaky destination (a real uvicorn app on
loopback that answers 503 a given number of times, then does the work) through a `kind: http`
adapter; the official MCP SDK client is the worker; a loopback receiver takes the webhooks. The
destination counts its own side effects: whatever the gateway records, that count is what happened.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from gateway.app import create_app
from gateway.clock import ManualClock
from gateway.config import load_settings
from gateway.domain import OPERATION_ID_META
from tests.contracts import contract
from tests.harness import eventually, uvicorn_serving
from tests.integration.served_hooks import Receiver, Served, worker

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

SECRET = "retry-hook-secret"
RETRIES = "{max_attempts: 3, backoff: {initial: 0.05, max: 0.2, multiplier: 2, jitter: false}}"
POLICY = f"""currency: USD
tools:
  flaky__create: {{effect: write, retries: {RETRIES}}}
  flaky__create_unkeyed: {{effect: write, retries: {RETRIES}}}
  flaky__list: {{effect: read, retries: {RETRIES}}}
  flaky__reject: {{effect: write, retries: {RETRIES}}}
"""
ITEM_SCHEMA = "{type: object, properties: {name: {type: string}}, required: [name]}"
ADAPTER = """name: flaky
kind: http
base_url: {url}
timeout: 5
tools:
  create:
    description: a flaky demo call
    method: POST
    path: /items
    idempotency_header: Idempotency-Key
    receipt_id: id
    input_schema: {schema}
  create_unkeyed:
    description: a flaky demo call
    method: POST
    path: /items
    receipt_id: id
    input_schema: {schema}
  list:
    description: a flaky demo call
    method: GET
    path: /items
    read_only: true
    input_schema: {{type: object}}
  reject:
    description: a flaky demo call
    method: POST
    path: /reject
    input_schema: {schema}
"""
RUN = contract(
    goal="Create items at a flaky destination",
    lease_ttl="1h",
    budgets={"writes": 50, "tool_calls": 100},
    authority={"allow": ["flaky__*"]},
)


@dataclass
class Destination:
    """Answers 503 to the next `fail[path]` requests, then does the work: a POST /items creates one
    item, once per Idempotency-Key. `always`: every request is answered 429 (rate limited: not
    done, says the destination; a 503 to a write may have acted and ends `unknown`, reconciled)."""

    fail: Counter[str] = field(default_factory=Counter)
    always: bool = False
    requests: Counter[str] = field(default_factory=Counter)
    items: dict[str, dict[str, Any]] = field(default_factory=dict)  # by key (or a fresh one)

    async def items_route(self, request: Request) -> Response:
        path = request.url.path
        self.requests[path] += 1
        if self.always:
            return JSONResponse({"error": "slow down"}, status_code=429, headers={"Retry-After": "0"})
        if self.fail[path] > 0:
            self.fail[path] -= 1
            return JSONResponse({"error": "busy"}, status_code=503, headers={"Retry-After": "0"})
        if request.method == "GET":
            return JSONResponse({"items": list(self.items.values())})
        key = request.headers.get("Idempotency-Key") or f"unkeyed-{len(self.items)}"
        if key not in self.items:
            body = json.loads(await request.body())
            self.items[key] = {"id": f"it{len(self.items) + 1}", "name": body["name"]}
        return JSONResponse(self.items[key], status_code=201)

    async def reject(self, request: Request) -> Response:
        self.requests[request.url.path] += 1
        return JSONResponse({"error": "bad input"}, status_code=400)


@dataclass
class World:
    served: Served
    destination: Destination

    @property
    def receiver(self) -> Receiver:
        return self.served.receiver


@asynccontextmanager
async def flaky_world(tmp_path: Path) -> AsyncIterator[World]:
    clock = ManualClock()
    receiver = Receiver(SECRET, clock)
    destination = Destination()
    hooks = Starlette(routes=[Route("/hooks/{hook}", receiver.receive, methods=["POST"])])
    dest_app = Starlette(
        routes=[
            Route("/items", destination.items_route, methods=["GET", "POST"]),
            Route("/reject", destination.reject, methods=["POST"]),
        ]
    )
    async with uvicorn_serving(hooks) as hooks_url, uvicorn_serving(dest_app) as dest_url:
        (tmp_path / "flaky.yaml").write_text(ADAPTER.format(url=dest_url, schema=ITEM_SCHEMA))
        (tmp_path / "policy.yaml").write_text(POLICY)
        (tmp_path / "warrant.yaml").write_text(
            f"database: sqlite:///{tmp_path}/w.db\napi_keys:\n"
            "  - {name: op, tenant: acme, roles: [operator], key_env: KEY_OP}\n"
            "  - {name: agent, tenant: acme, roles: [worker], key_env: KEY_AGENT}\n"
            "  - {name: rival, tenant: globex, roles: [operator], key_env: KEY_RIVAL}\n"
            f"adapters: [{tmp_path}/flaky.yaml]\npolicies: [{tmp_path}/policy.yaml]\n"
            "watchdog: {tick: 1s, heartbeat: 1h}\nwebhooks:\n"
            f"  - {{name: ops, url: '{hooks_url}/hooks/ops', secret_env: HOOK_SECRET, events: [dead_letter]}}\n"
        )
        env = {"KEY_OP": "key-op", "KEY_AGENT": "key-agent", "KEY_RIVAL": "key-rival"}
        env |= {"WARRANT_LEDGER_KEY": "test-ledger-key", "HOOK_SECRET": SECRET}
        app = create_app(load_settings(tmp_path / "warrant.yaml", env), clock=clock)
        async with uvicorn_serving(app) as url:
            yield World(Served(url, receiver), destination)


async def _events(world: World, run_id: str) -> list[dict[str, Any]]:
    async with world.served.client("op") as c:
        r = await c.get(f"/api/runs/{run_id}/events", params={"limit": 500})
        assert r.status_code == 200, r.text
        return r.json()["items"]  # type: ignore[no-any-return]


def _typed(events: list[dict[str, Any]], type_: str) -> list[dict[str, Any]]:
    return [e for e in events if e["type"] == type_]


async def _actions(world: World, run_id: str) -> list[dict[str, Any]]:
    async with world.served.client("op") as c:
        r = await c.get(f"/api/runs/{run_id}/actions")
        assert r.status_code == 200, r.text
        return r.json()["items"]  # type: ignore[no-any-return]


async def test_two_503s_then_success_is_one_action_three_attempts_one_effect(tmp_path: Path) -> None:
    async with flaky_world(tmp_path) as world:
        world.destination.fail["/items"] = 2
        run_id, token = await world.served.start(RUN)
        async with worker(world.served, token) as mcp:
            result = await mcp.call_tool("flaky__create", {"name": "ana"})
        assert not result.is_error, result
        assert world.destination.requests["/items"] == 3  # three attempts reached it
        assert len(world.destination.items) == 1  # one side effect
        actions = [a for a in await _actions(world, run_id) if a["tool"] == "flaky__create"]
        assert len(actions) == 1 and actions[0]["status"] == "succeeded"
        events = await _events(world, run_id)
        retrying = _typed(events, "action_retrying")
        assert [e["data"]["attempts"] for e in retrying] == [1, 2]
        assert {e["data"]["action_id"] for e in retrying} == {actions[0]["action_id"]}
        assert {e["data"]["code"] for e in retrying} == {"upstream_unavailable"}
        assert _typed(events, "dead_lettered") == []


async def test_always_failing_is_a_dead_letter_with_an_alert_and_an_operator_retry_succeeds(tmp_path: Path) -> None:
    async with flaky_world(tmp_path) as world:
        world.destination.always = True
        run_id, token = await world.served.start(RUN)
        meta = {OPERATION_ID_META: "item-ana"}
        async with worker(world.served, token) as mcp:
            first = await mcp.call_tool("flaky__create", {"name": "ana"}, meta=meta)
            assert first.is_error
            again = await mcp.call_tool("flaky__create", {"name": "ana"}, meta=meta)
            assert again.is_error
            assert again.meta is not None and again.meta["warrant/code"] == "retry_limit", again
            status = await mcp.call_tool("warrant_status", {})
        assert world.destination.requests["/items"] == 3  # max_attempts, and not one more
        assert world.destination.items == {}
        letters_seen = status.structured_content["dead_letters"]  # type: ignore[index]
        assert [d["status"] for d in letters_seen] == ["open"]
        async with world.served.client("op") as c:
            listed = (await c.get(f"/api/runs/{run_id}/dead-letters")).json()["items"]
            assert len(listed) == 1 and listed[0]["attempts"] == 3 and listed[0]["last_code"] == "rate_limited"
            async with world.served.client("rival") as rival:  # another tenant sees none of it
                assert (await rival.get(f"/api/runs/{run_id}/dead-letters")).status_code == 404
                assert (
                    await rival.post(f"/api/dead-letters/{listed[0]['dead_letter_id']}/drop", json={"reason": "x"})
                ).status_code == 404
        await eventually(lambda: world.receiver.kinds("ops") == ["dead_letter"])
        alert = world.receiver.delivered("ops")[0]
        assert alert.signed and alert.body["data"]["dead_letter_id"] == listed[0]["dead_letter_id"]

        world.destination.always = False  # the destination is back: the operator retries
        async with world.served.client("op") as c:
            r = await c.post(f"/api/dead-letters/{listed[0]['dead_letter_id']}/retry", json={"reason": "CRM back up"})
            assert r.status_code == 200, r.text
            body = r.json()
            assert body["dead_letter"]["status"] == "retried"
            assert body["result"]["is_error"] is False
            again = await c.post(f"/api/dead-letters/{listed[0]['dead_letter_id']}/drop", json={"reason": "late"})
            assert again.status_code == 409
        assert len(world.destination.items) == 1
        events = await _events(world, run_id)
        assert len(_typed(events, "dead_lettered")) == 1
        assert [e["data"]["status"] for e in _typed(events, "dead_letter_decided")] == ["retried"]


async def test_an_unkeyed_write_that_may_have_acted_is_not_retried(tmp_path: Path) -> None:
    async with flaky_world(tmp_path) as world:
        world.destination.fail["/items"] = 1
        run_id, token = await world.served.start(RUN)
        async with worker(world.served, token) as mcp:
            result = await mcp.call_tool("flaky__create_unkeyed", {"name": "bo"})
        assert result.is_error and result.meta is not None and result.meta["warrant/code"] == "outcome_unknown"
        assert world.destination.requests["/items"] == 1
        assert _typed(await _events(world, run_id), "action_retrying") == []


async def test_invalid_input_is_never_retried_and_a_read_is(tmp_path: Path) -> None:
    async with flaky_world(tmp_path) as world:
        world.destination.fail["/items"] = 1
        run_id, token = await world.served.start(RUN)
        async with worker(world.served, token) as mcp:
            rejected = await mcp.call_tool("flaky__reject", {"name": "x"})
            listed = await mcp.call_tool("flaky__list", {})
        assert rejected.is_error and rejected.meta is not None and rejected.meta["warrant/code"] == "upstream_failed"
        assert world.destination.requests["/reject"] == 1
        assert not listed.is_error and world.destination.requests["/items"] == 2
        retrying = _typed(await _events(world, run_id), "action_retrying")
        assert len(retrying) == 1 and retrying[0]["data"]["tool"] == "flaky__list"


async def test_a_contract_may_not_retry_more_than_the_policy(tmp_path: Path) -> None:
    async with flaky_world(tmp_path) as world:
        looser = {**RUN, "retries": {"flaky__create": {"max_attempts": 5}}}
        async with world.served.client("op") as c:
            r = await c.post("/api/runs", json=looser)
            assert r.status_code == 422, r.text
            assert r.json()["error"]["code"] == "retries_looser_than_policy"
            narrower = {**RUN, "retries": {"flaky__create": {"max_attempts": 1}}}
            assert (await c.post("/api/runs", json=narrower)).status_code == 201


async def test_a_policy_may_not_retry_a_non_transient_code(tmp_path: Path) -> None:
    from gateway.policy.model import PolicyDocument

    with pytest.raises(ValueError, match="only transient codes"):
        PolicyDocument.model_validate(
            {"tools": {"t": {"effect": "read", "retries": {"max_attempts": 2, "retry_on": ["invalid_arguments"]}}}}
        )
    _ = httpx  # the client type the served world hands out
