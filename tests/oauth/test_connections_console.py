"""The run page's connected clients and the Disconnect confirmation page, over HTTP as a browser posts
them (tests/console's way: its sign-in, the page's own CSRF field), against a gateway with MCP
authorization on and clients signed in through the consent page."""

from __future__ import annotations

import html
import re

import pytest

from tests.api.conftest import Api
from tests.console.conftest import csrf_of, signed_in
from tests.oauth.conftest import connect_client, mcp_status, refresh

pytestmark = pytest.mark.anyio


def connections_section(page: str) -> str:
    start = page.index('id="connections"')
    return page[start : page.index("</section>", start)]


def refused_code(page: str) -> str:
    found = re.search(r'id="error"><span class="code">([^<]+)</span>', page)
    assert found, page[:2000]
    return found.group(1)


async def test_an_operator_disconnects_a_client_from_the_run_page(oauth_api: Api) -> None:
    run_id = await oauth_api.new_run()
    connected = await connect_client(oauth_api, run_id, name="Claude <on> Ana's laptop")
    link = f"/console/runs/{run_id}/connections/{connected.grant_id}/disconnect"
    async with signed_in(oauth_api, "key-op") as browser:
        page = await browser.get(f"/console/runs/{run_id}")
        assert page.status_code == 200, page.text
        listed = connections_section(page.text)
        assert "Claude &lt;on&gt; Ana&#39;s laptop" in listed  # escaped, as every value
        assert connected.client_id in listed and "<td>op</td>" in listed
        assert re.search(r'connection-status status-active">active', listed)
        assert f'href="{link}"' in listed

        confirm = await browser.get(link)
        assert confirm.status_code == 200, confirm.text
        assert "Claude &lt;on&gt; Ana&#39;s laptop" in confirm.text and "is freed" in confirm.text.replace("\n", " ")
        assert 'id="not-active"' not in confirm.text
        form = {"csrf": csrf_of(confirm.text), "reason": "laptop lost"}
        done = await browser.post(link, data=form)
        assert done.status_code == 303, done.text
        assert done.headers["location"] == f"/console/runs/{run_id}#connections"

        after = connections_section((await browser.get(f"/console/runs/{run_id}")).text)
        assert "status-revoked" in after and "laptop lost" in after and "by op" in after
        assert f'href="{link}"' not in after  # nothing left to disconnect
        assert "already" in (await browser.get(link)).text  # the page says so, if opened again

    assert (await mcp_status(oauth_api, connected.access_token)).status_code == 401
    refused = await refresh(oauth_api, connected)
    assert (refused.status_code, refused.json()["error"]) == (400, "invalid_grant")
    async with oauth_api.client("op") as c:
        taken = await c.post(f"/api/runs/{run_id}/lease", json={"worker": "next-worker"})
    assert taken.status_code == 201, taken.text  # no takeover needed
    events = await oauth_api.gateway.store.list_events("acme", run_id, limit=1000)
    [revoked] = [e.data for e in events if e.type == "oauth_revoked"]
    assert (revoked["by"], revoked["reason"]) == ("op", "laptop lost")


async def test_a_disconnect_without_its_csrf_token_or_a_reason_changes_nothing(oauth_api: Api) -> None:
    run_id = await oauth_api.new_run()
    connected = await connect_client(oauth_api, run_id)
    link = f"/console/runs/{run_id}/connections/{connected.grant_id}/disconnect"
    async with signed_in(oauth_api, "key-op") as browser:
        csrf = csrf_of((await browser.get(link)).text)
        for form, status, code in (
            ({"reason": "no token"}, 403, "csrf_failed"),
            ({"csrf": "forged", "reason": "bad token"}, 403, "csrf_failed"),
            ({"csrf": csrf, "reason": "   "}, 422, "invalid_request"),
            ({"csrf": csrf}, 422, "invalid_request"),
            ({"csrf": csrf, "reason": "x" * 2001}, 422, "invalid_request"),
        ):
            answer = await browser.post(link, data=form)
            assert (answer.status_code, refused_code(answer.text)) == (status, code), form
        other = await browser.post(link.replace("/disconnect", "/erase"), data={"csrf": csrf, "reason": "r"})
        assert other.status_code == 404
    async with oauth_api.client(None) as anonymous:  # no session at all
        answer = await anonymous.post(link, data={"reason": "r"})
    assert (answer.status_code, refused_code(answer.text)) == (401, "unauthenticated")
    assert (await mcp_status(oauth_api, connected.access_token)).status_code == 200
    [grant] = await oauth_api.gateway.store.list_oauth_grants("acme", run_id)
    assert grant.revoked_at is None


async def test_roles_other_tenants_and_other_runs_cannot_disconnect(oauth_api: Api) -> None:
    run_id = await oauth_api.new_run()
    other_run = await oauth_api.new_run()
    connected = await connect_client(oauth_api, run_id)
    link = f"/console/runs/{run_id}/connections/{connected.grant_id}/disconnect"
    async with signed_in(oauth_api, "key-aud") as browser:  # reads runs, may not control them
        page = await browser.get(f"/console/runs/{run_id}")
        assert "test client" in connections_section(page.text)
        confirm = await browser.get(link)
        assert (confirm.status_code, refused_code(confirm.text)) == (403, "forbidden")
        csrf = csrf_of(page.text)
        answer = await browser.post(link, data={"csrf": csrf, "reason": "auditing"})
        assert (answer.status_code, refused_code(answer.text)) == (403, "forbidden")
    async with signed_in(oauth_api, "key-other") as browser:  # an admin of globex
        assert (await browser.get(f"/console/runs/{run_id}")).status_code == 404
        assert (await browser.get(link)).status_code == 404
        csrf = csrf_of((await browser.get("/console/runs")).text)
        answer = await browser.post(link, data={"csrf": csrf, "reason": "not mine"})
        assert (answer.status_code, refused_code(answer.text)) == (404, "not_found")
    async with signed_in(oauth_api, "key-op") as browser:  # the grant under another run's address
        wrong = f"/console/runs/{other_run}/connections/{connected.grant_id}/disconnect"
        assert (await browser.get(wrong)).status_code == 404
        csrf = csrf_of((await browser.get(f"/console/runs/{other_run}")).text)
        answer = await browser.post(wrong, data={"csrf": csrf, "reason": "wrong run"})
        assert (answer.status_code, refused_code(answer.text)) == (404, "not_found")
        assert "no client has signed in" in connections_section((await browser.get(f"/console/runs/{other_run}")).text)
    assert (await mcp_status(oauth_api, connected.access_token)).status_code == 200


async def test_an_ended_connection_says_why_and_offers_no_disconnect(oauth_api: Api) -> None:
    run_id = await oauth_api.new_run()
    connected = await connect_client(oauth_api, run_id)
    async with oauth_api.client("op") as c:
        taken = await c.post(f"/api/runs/{run_id}/lease", json={"worker": "rescuer", "takeover": True})
    assert taken.status_code == 201
    async with signed_in(oauth_api, "key-op") as browser:
        listed = connections_section((await browser.get(f"/console/runs/{run_id}")).text)
    assert "status-ended" in listed and "lease_taken_over" in listed and "rescuer" in html.unescape(listed)
    assert f"/connections/{connected.grant_id}/disconnect" not in listed
