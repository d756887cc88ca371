"""A code redeemed and a refresh token rotated on both back ends, the same gateway over HTTP on
SQLite and on the real PostgreSQL (tests/harness_postgres.py): once each, replayed, and raced (ten
at once, the losers' second use revoking the grant: one winner, and a grant that ends)."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.api.conftest import Api, serving_api
from tests.harness import Backend
from tests.oauth.conftest import OAUTH, FormBrowser, write_templates
from tests.oauth.flow import Client, code_for, mcp_call, public_client, redeem, refresh, tokens_for

pytestmark = pytest.mark.anyio

RACERS = 10


@pytest.fixture
async def served(tmp_path: Path, backend: Backend) -> AsyncIterator[Api]:
    write_templates(tmp_path)
    database = getattr(backend, "url", None)  # PostgreSQL; SQLite: a file of the app's own
    async with serving_api(tmp_path, OAUTH, database=database) as api:
        yield api


async def revocations(api: Api, run_id: str) -> list[str]:
    async with api.client("op") as c:
        items: list[dict[str, Any]] = (await c.get(f"/api/runs/{run_id}/events", params={"limit": 1000})).json()[
            "items"
        ]
    return [e["data"]["reason"] for e in items if e["type"] == "oauth_revoked"]


def outcomes(answers: list[httpx.Response]) -> Counter[str]:
    return Counter("ok" if a.status_code == 200 else f"{a.status_code} {a.json().get('error')}" for a in answers)


async def start(api: Api) -> tuple[str, Client, FormBrowser]:
    return await api.new_run(), await public_client(api.url), FormBrowser(api.url, "key-op")


async def test_a_code_is_redeemed_once_and_its_replay_revokes_the_grant(served: Api) -> None:
    run_id, client, browser = await start(served)
    code, verifier = await code_for(served.url, browser, client, f"run:{run_id}")
    first = await redeem(served.url, client, code, verifier)
    assert first.status_code == 200, first.text
    access = first.json()["access_token"]
    assert (await mcp_call(f"{served.url}/mcp", access)).status_code == 200
    again = await redeem(served.url, client, code, verifier)
    assert again.status_code == 400 and again.json()["error"] == "invalid_grant"
    assert (await mcp_call(f"{served.url}/mcp", access)).status_code == 401
    assert await revocations(served, run_id) == ["authorization_code_replayed"]


async def test_refresh_rotates_and_a_reuse_revokes_the_family(served: Api) -> None:
    run_id, client, browser = await start(served)
    issued = await tokens_for(served.url, browser, client, f"run:{run_id}")
    chain = [issued]
    for _ in range(3):
        answer = await refresh(served.url, client, chain[-1]["refresh_token"])
        assert answer.status_code == 200, answer.text
        chain.append(answer.json())
    assert len({t["refresh_token"] for t in chain}) == len(chain)
    current = chain[-1]
    assert (await mcp_call(f"{served.url}/mcp", current["access_token"])).status_code == 200
    # An old access token of the same grant still works until its time (it was not leaked).
    assert (await mcp_call(f"{served.url}/mcp", chain[0]["access_token"])).status_code == 200

    reused = await refresh(served.url, client, chain[1]["refresh_token"])
    assert reused.status_code == 400 and reused.json()["error"] == "invalid_grant"
    assert (await refresh(served.url, client, current["refresh_token"])).json()["error"] == "invalid_grant"
    for tokens in chain:
        assert (await mcp_call(f"{served.url}/mcp", tokens["access_token"])).status_code == 401
    assert await revocations(served, run_id) == ["refresh_token_reused"]


async def test_ten_refreshes_at_once_have_one_winner_and_end_the_grant(served: Api) -> None:
    run_id, client, browser = await start(served)
    issued = await tokens_for(served.url, browser, client, f"run:{run_id}")
    answers = await asyncio.gather(*(refresh(served.url, client, issued["refresh_token"]) for _ in range(RACERS)))
    assert outcomes(answers) == {"ok": 1, "400 invalid_grant": RACERS - 1}, [a.text for a in answers]
    # The nine later uses are each a reuse: the grant is revoked, the winner's tokens with it.
    winner = next(a.json() for a in answers if a.status_code == 200)
    assert (await mcp_call(f"{served.url}/mcp", winner["access_token"])).status_code == 401
    assert (await refresh(served.url, client, winner["refresh_token"])).json()["error"] == "invalid_grant"
    assert await revocations(served, run_id) == ["refresh_token_reused"]


async def test_ten_redemptions_of_one_code_at_once_have_one_winner(served: Api) -> None:
    run_id, client, browser = await start(served)
    code, verifier = await code_for(served.url, browser, client, f"run:{run_id}")
    answers = await asyncio.gather(*(redeem(served.url, client, code, verifier) for _ in range(RACERS)))
    assert outcomes(answers) == {"ok": 1, "400 invalid_grant": RACERS - 1}, [a.text for a in answers]
    winner = next(a.json() for a in answers if a.status_code == 200)
    # A code presented again is a replay: the winner's tokens go with the grant.
    assert (await mcp_call(f"{served.url}/mcp", winner["access_token"])).status_code == 401
    assert await revocations(served, run_id) == ["authorization_code_replayed"]
