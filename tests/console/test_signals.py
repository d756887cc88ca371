"""The console's signal form and the run page's wait (docs/console.md): the page lists the open
warrant_wait (reason, until, wake_on) and the newest signals; the form (name, JSON payload, an
idempotency key prefilled fresh) needs the session's CSRF token and `runs.signal`, as POST
/api/runs/{id}/signal does, and the page shows its outcome. On SQLite and on PostgreSQL, served by
uvicorn on loopback."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from markupsafe import escape

from gateway.domain import RunStatus
from gateway.domain.waits import parse_wait
from gateway.store.wait_records import WaitRecord
from tests.api.conftest import Api, serving_api
from tests.api.test_operator_api import create_run, lease
from tests.console.conftest import csrf_of, signed_in
from tests.harness_postgres import fresh_database

pytestmark = pytest.mark.anyio

KEY = re.compile(r'name="idempotency_key" id="signal-key" value="([^"]*)"')


@pytest.fixture(params=["sqlite", "postgres"])
def database(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path}/w.db"
    else:
        with fresh_database() as url:
            yield url


@pytest.fixture
async def served(tmp_path: Path, database: str) -> AsyncIterator[Api]:
    async with serving_api(tmp_path, database=database) as api:
        yield api


async def waiting_run(api: Api) -> tuple[str, WaitRecord]:
    """A leased run in a warrant_wait for `quote.received`, an hour long."""
    rid = (await create_run(api))["run_id"]
    await lease(api, rid)
    now = api.gateway.clock.now()
    spec = parse_wait(
        {"reason": "quotes from three vendors", "until": "1h", "wake_on": ["quote.received"]}, now, now + 86400
    )
    started = await api.gateway.store.start_wait(rid, epoch=1, worker="w1", spec=spec)
    assert isinstance(started, WaitRecord), started
    return rid, started


def key_of(page: str) -> str:
    found = KEY.search(page)
    assert found is not None, "the signal form carries no idempotency key"
    return found.group(1)


async def test_the_run_page_lists_the_open_wait_and_a_signal_sent_from_it_wakes_the_run(served: Api) -> None:
    rid, wait = await waiting_run(served)
    async with signed_in(served, "key-op") as browser:
        page = await browser.get(f"/console/runs/{rid}")
        assert page.status_code == 200
        assert 'id="wait-reason">quotes from three vendors<' in page.text
        assert '<span class="code">quote.received</span>' in page.text and wait.wait_id in page.text
        assert 'id="no-signals"' in page.text and 'id="signal-form"' in page.text
        key = key_of(page.text)
        assert key.startswith("console-") and key != key_of((await browser.get(f"/console/runs/{rid}")).text)
        form = {"csrf": csrf_of(page.text), "name": "quote.received", "payload": '{"price": "12.50"}'}
        sent = await browser.post(f"/console/runs/{rid}/signal", data={**form, "idempotency_key": key})
        assert sent.status_code == 303 and "outcome=woke" in sent.headers["location"]
        after = await browser.get(sent.headers["location"])
        # The same key again (a second click, a reload of the form) answers the first signal.
        again = await browser.post(f"/console/runs/{rid}/signal", data={**form, "idempotency_key": key})
        assert "outcome=replayed" in again.headers["location"]
        replayed = await browser.get(again.headers["location"])
    assert (await served.gateway.store.get_run("acme", rid)).status is RunStatus.RUNNING
    [signal] = await served.gateway.store.list_signals(rid)
    assert (signal.name, signal.payload, signal.idempotency_key, signal.wait_id) == (
        "quote.received", {"price": "12.50"}, key, wait.wait_id
    )  # fmt: skip
    assert 'data-outcome="woke"' in after.text and signal.signal_id in after.text
    assert 'id="no-wait"' in after.text and 'id="status">running' in after.text
    assert str(escape('{"price": "12.50"}')) in after.text and f'data-signal-id="{signal.signal_id}"' in after.text
    assert 'data-outcome="replayed"' in replayed.text


async def test_a_signal_not_named_is_kept_and_a_bad_one_is_refused_with_the_apis_code(served: Api) -> None:
    rid, _ = await waiting_run(served)
    async with signed_in(served, "key-op") as browser:
        page = await browser.get(f"/console/runs/{rid}")
        form = {"csrf": csrf_of(page.text), "idempotency_key": key_of(page.text)}
        kept = await browser.post(f"/console/runs/{rid}/signal", data={**form, "name": "note", "payload": '"hello"'})
        assert "outcome=kept" in kept.headers["location"]
        not_json = await browser.post(
            f"/console/runs/{rid}/signal", data={**form, "name": "x", "payload": "{", "idempotency_key": "k2"}
        )
        bad_name = await browser.post(f"/console/runs/{rid}/signal", data={**form, "name": "Not A Name", "payload": ""})
    assert not_json.status_code == 422 and "signal_invalid" in not_json.text and "payload is not JSON" in not_json.text
    assert bad_name.status_code == 422 and "signal_invalid" in bad_name.text and "name must match" in bad_name.text
    assert [s.name for s in await served.gateway.store.list_signals(rid)] == ["note"]
    assert (await served.gateway.store.get_run("acme", rid)).status is RunStatus.WAITING


async def test_the_signal_form_needs_the_csrf_token_and_runs_signal(served: Api) -> None:
    rid, _ = await waiting_run(served)
    fields = {"name": "quote.received", "payload": "", "idempotency_key": "k1"}
    async with signed_in(served, "key-op") as browser:
        csrf = csrf_of((await browser.get(f"/console/runs/{rid}")).text)
        forged = await browser.post(f"/console/runs/{rid}/signal", data={**fields, "csrf": "0" * len(csrf)})
    assert forged.status_code == 403 and "csrf_failed" in forged.text
    async with signed_in(served, "key-aud") as browser:
        page = await browser.get(f"/console/runs/{rid}")
        assert 'id="no-signal"' in page.text and 'id="signal-form"' not in page.text
        refused = await browser.post(f"/console/runs/{rid}/signal", data={**fields, "csrf": csrf_of(page.text)})
    assert refused.status_code == 403 and "forbidden" in refused.text
    assert await served.gateway.store.list_signals(rid) == []
    assert (await served.gateway.store.get_run("acme", rid)).status is RunStatus.WAITING
