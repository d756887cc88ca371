"""Dead letters on the console's run page and from the CLI (docs/retries.md), server-rendered over
a served gateway: a tool whose retries are used up makes a dead letter the run page lists with its
three actions; a form needs the session's CSRF token, a reason and `actions.resolve`; the CLI
lists and decides them."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from gateway import backoff
from gateway.adapters.python import NotSent, PythonAdapter
from gateway.cli import main
from gateway.domain import OPERATION_ID_META
from tests.api.conftest import Api, serving_api
from tests.api.test_operator_api import create_run, lease
from tests.console.conftest import csrf_of, signed_in

pytestmark = pytest.mark.anyio

POLICY = "  box__put: {effect: write, retries: {max_attempts: 2, backoff: {initial: 0.01, max: 0.01}}}\n"


class Box:
    def __init__(self) -> None:
        self.down = True
        self.effects: list[dict[str, Any]] = []
        self.adapter = PythonAdapter("box")

        @self.adapter.tool(input_schema={"type": "object", "properties": {"v": {"type": "string"}}})
        async def put(args: dict[str, Any], call: Any) -> dict[str, Any]:
            if self.down:
                raise NotSent("the box is down")
            self.effects.append(args)
            return {"id": f"put-{len(self.effects)}"}


@pytest.fixture
async def boxed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[tuple[Api, Box]]:
    async def no_wait(_: float) -> None:
        return None

    monkeypatch.setattr(backoff, "sleep", no_wait)
    box = Box()
    async with serving_api(tmp_path, policy_extra=POLICY, adapters=[box.adapter]) as served:
        yield served, box


async def dead_letter(api: Api, value: str) -> tuple[str, str]:
    run = await create_run(api, authority={"allow": ["box__*"]})
    token = (await lease(api, run["run_id"]))["token"]
    failed = await api.gateway.gate.call(token, "box__put", {"v": value}, {OPERATION_ID_META: f"op-{value}"})
    assert failed.code == "upstream_unavailable"
    [letter] = await api.gateway.store.list_dead_letters("acme", run["run_id"])
    return run["run_id"], letter.dead_letter_id


async def test_the_run_page_lists_a_dead_letter_and_its_retry_succeeds(boxed: tuple[Api, Box]) -> None:
    api, box = boxed
    rid, did = await dead_letter(api, "a")
    async with signed_in(api, "key-op") as browser:
        page = await browser.get(f"/console/runs/{rid}")
        assert f'data-dead-letter-id="{did}"' in page.text
        for verb in ("retry", "resolve", "drop"):
            assert f'action="/console/dead-letters/{did}/{verb}"' in page.text
        csrf = csrf_of(page.text)
        no_reason = await browser.post(f"/console/dead-letters/{did}/retry", data={"csrf": csrf, "reason": " "})
        assert no_reason.status_code == 422
        forged = await browser.post(f"/console/dead-letters/{did}/retry", data={"csrf": "0" * len(csrf), "reason": "x"})
        assert forged.status_code == 403
        box.down = False
        r = await browser.post(f"/console/dead-letters/{did}/retry", data={"csrf": csrf, "reason": "box back"})
        assert (r.status_code, r.headers["location"]) == (303, f"/console/runs/{rid}")
        page = await browser.get(f"/console/runs/{rid}")
    assert box.effects == [{"v": "a"}]
    assert "retried" in page.text and f'action="/console/dead-letters/{did}/retry"' not in page.text


async def test_an_auditor_sees_dead_letters_but_may_not_decide(boxed: tuple[Api, Box]) -> None:
    api, _ = boxed
    rid, did = await dead_letter(api, "b")
    async with signed_in(api, "key-aud") as browser:
        page = await browser.get(f"/console/runs/{rid}")
        assert f'data-dead-letter-id="{did}"' in page.text
        assert f'action="/console/dead-letters/{did}/drop"' not in page.text
        r = await browser.post(f"/console/dead-letters/{did}/drop", data={"csrf": csrf_of(page.text), "reason": "x"})
    assert r.status_code == 403


async def test_the_cli_lists_and_drops(
    boxed: tuple[Api, Box], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    api, box = boxed
    rid, did = await dead_letter(api, "c")
    monkeypatch.setenv("WARRANT_API_KEY", "key-op")
    code = await anyio.to_thread.run_sync(main, ["runs", "dead-letters", rid, "--url", api.url])
    out, _ = capsys.readouterr()
    assert code == 0 and did in out and "open" in out and "2 attempts" in out
    argv = ["dead-letters", "drop", did, "--reason", "not needed", "--url", api.url]
    code = await anyio.to_thread.run_sync(main, argv)
    out, _ = capsys.readouterr()
    assert code == 0 and out.strip() == f"{did}: dropped"
    assert box.effects == []
