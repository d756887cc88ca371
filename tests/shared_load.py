"""The load of a shared-limit test: many runs' agents calling one slow tool at once, each calling
again after the `retry_after_s` a `shared_limit` refusal names, and the destination's own count of
the requests it held at once (the demo services' `/_admin/in-flight`). Used on SQLite
(tests/integration/test_shared_limits_process.py) and across two PostgreSQL replicas
(tests/replicas/test_shared_limits.py)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import anyio
import httpx

from gateway.drill import Agent
from gateway.drill.world import Reply

WAIT = 10.0  # seconds: the bound on one request


@dataclass
class Tally:
    """What the agents saw: each call's final reply and the shared_limit refusals met on the way."""

    replies: list[Reply]
    refusals: list[dict[str, Any]]


async def call_until_admitted(
    agent: Agent, tool: str, arguments: dict[str, Any], refusals: list[dict[str, Any]]
) -> Reply:
    """Call until the answer is not `shared_limit`, waiting what each refusal says (as a client should)."""
    while True:
        reply = await agent.call(tool, arguments, bound=WAIT)
        if reply.code != "shared_limit":
            return reply
        refusals.append(reply.error)
        await anyio.sleep(float(reply.error["retry_after_s"]))


async def hammer(agents: Sequence[Agent], tool: str, arguments: dict[str, Any], bound: float) -> Tally:
    """Every agent calls `tool` at once, until admitted; within `bound` seconds in all."""
    refusals: list[dict[str, Any]] = []
    with anyio.fail_after(bound):
        replies = await asyncio.gather(*(call_until_admitted(a, tool, arguments, refusals) for a in agents))
    return Tally(list(replies), refusals)


async def destination_load(url: str, *, reset: bool = False) -> dict[str, int]:
    """The service's requests in flight now and the most at once (reset to now first with `reset`)."""
    async with httpx.AsyncClient(base_url=url, timeout=WAIT) as http:
        answer = await (http.delete if reset else http.get)("/_admin/in-flight")
        answer.raise_for_status()
        body: dict[str, int] = answer.json()
        return body
