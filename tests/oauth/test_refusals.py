"""MCP authorization's refusals, from outside over HTTP: each with the OAuth error its RFC names
(RFC 6749 5.2 and 4.1.2.1, RFC 7009, RFC 8707 `invalid_target`, RFC 6750 `invalid_token`), and
none showing anything of a run (its id, goal or events) to whoever was refused."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from tests.api.conftest import Api
from tests.oauth.conftest import FormBrowser, location_query
from tests.oauth.flow import (
    Client,
    authorize_url,
    code_for,
    mcp_call,
    oauth_error,
    pkce,
    public_client,
    redeem,
    refresh,
    token,
    tokens_for,
)

pytestmark = pytest.mark.anyio

SECRET_GOAL = "Quarterly purchasing for acme-only-goal"


async def events(api: Api, run_id: str) -> list[dict[str, Any]]:
    async with api.client("op") as c:
        answer = await c.get(f"/api/runs/{run_id}/events", params={"limit": 1000})
    assert answer.status_code == 200, answer.text
    items: list[dict[str, Any]] = answer.json()["items"]
    return items


def of_type(items: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [e for e in items if e["type"] == kind]


def assert_unauthorized(answer: httpx.Response, base: str) -> None:
    """RFC 6750 3.1: 401, `invalid_token`, and the RFC 9728 metadata named (how a client finds
    where to sign in again)."""
    assert answer.status_code == 401, answer.text
    challenge = answer.headers["www-authenticate"]
    assert 'error="invalid_token"' in challenge
    assert f'resource_metadata="{base}/.well-known/oauth-protected-resource/mcp"' in challenge


async def flow(api: Api, key: str = "key-op") -> tuple[str, Client, FormBrowser, dict[str, Any]]:
    run_id = await api.new_run(goal=SECRET_GOAL)
    client = await public_client(api.url)
    browser = FormBrowser(api.url, key)
    issued = await tokens_for(api.url, browser, client, f"run:{run_id}")
    return run_id, client, browser, issued


# -- RFC 8707: one resource ----------------------------------------------------------------
async def test_an_authorization_for_another_resource_goes_back_to_the_client_as_invalid_target(
    oauth_api: Api,
) -> None:
    client = await public_client(oauth_api.url)
    _, challenge = pkce()
    url = authorize_url(oauth_api.url, client, challenge, resource="http://other.example/mcp")
    async with httpx.AsyncClient(timeout=10, follow_redirects=False) as http:
        answer = await http.get(url)
    # The client and its redirect URI are valid, so the error goes to it (RFC 6749 4.1.2.1).
    assert answer.status_code == 302, answer.text
    location = answer.headers["location"]
    assert location.startswith(client.redirect_uri + "?")
    query = location_query(answer)
    assert query["error"] == "invalid_target" and query["state"] == "st-1"
    assert "code" not in query


async def test_a_token_for_one_address_of_the_gateway_is_refused_at_another(oauth_api: Api) -> None:
    run_id, _, _, issued = await flow(oauth_api)
    here = await mcp_call(f"{oauth_api.url}/mcp", issued["access_token"])
    assert here.status_code == 200 and "result" in here.json(), here.text
    port = urlsplit(oauth_api.url).port
    elsewhere = f"http://localhost:{port}"
    answer = await mcp_call(f"{elsewhere}/mcp", issued["access_token"])
    assert_unauthorized(answer, elsewhere)
    assert "was issued for" in answer.json()["error"]["message"]  # the audience check, not another refusal
    assert run_id not in answer.text and SECRET_GOAL not in answer.text


async def test_a_token_asked_for_another_resource_is_invalid_target_at_token(oauth_api: Api) -> None:
    run_id = await oauth_api.new_run()
    client = await public_client(oauth_api.url)
    code, verifier = await code_for(oauth_api.url, FormBrowser(oauth_api.url, "key-op"), client, f"run:{run_id}")
    base = {"code": code, "redirect_uri": client.redirect_uri, "code_verifier": verifier}
    for resource in ("http://other.example/mcp", f"{oauth_api.url}/other"):
        answer = await token(oauth_api.url, client, grant_type="authorization_code", resource=resource, **base)
        assert oauth_error(answer) == "invalid_target"
    # Refused before the code was looked at: it still redeems, for this /mcp.
    answer = await redeem(oauth_api.url, client, code, verifier)
    assert answer.status_code == 200, answer.text
    issued = answer.json()
    refused = await token(
        oauth_api.url,
        client,
        grant_type="refresh_token",
        refresh_token=issued["refresh_token"],
        resource="http://other.example/mcp",
    )
    assert oauth_error(refused) == "invalid_target"
    assert (await refresh(oauth_api.url, client, issued["refresh_token"])).status_code == 200


# -- codes -----------------------------------------------------------------------------------
async def test_a_replayed_code_is_refused_and_revokes_the_grant(oauth_api: Api) -> None:
    run_id = await oauth_api.new_run(goal=SECRET_GOAL)
    client = await public_client(oauth_api.url)
    browser = FormBrowser(oauth_api.url, "key-op")
    code, verifier = await code_for(oauth_api.url, browser, client, f"run:{run_id}")
    first = await redeem(oauth_api.url, client, code, verifier)
    assert first.status_code == 200, first.text
    access = first.json()["access_token"]
    assert (await mcp_call(f"{oauth_api.url}/mcp", access)).status_code == 200

    again = await redeem(oauth_api.url, client, code, verifier)
    assert oauth_error(again) == "invalid_grant"
    assert run_id not in again.text and SECRET_GOAL not in again.text
    assert_unauthorized(await mcp_call(f"{oauth_api.url}/mcp", access), oauth_api.url)
    assert oauth_error(await refresh(oauth_api.url, client, first.json()["refresh_token"])) == "invalid_grant"
    # Presented again and again, the used code adds nothing more to the run's ledger.
    for _ in range(3):
        assert oauth_error(await redeem(oauth_api.url, client, code, verifier)) == "invalid_grant"
    revoked = of_type(await events(oauth_api, run_id), "oauth_revoked")
    assert [e["data"]["reason"] for e in revoked] == ["authorization_code_replayed"]


async def test_a_revoked_grant_keeps_its_first_revocation_when_its_code_is_replayed(oauth_api: Api) -> None:
    run_id = await oauth_api.new_run()
    client = await public_client(oauth_api.url)
    code, verifier = await code_for(oauth_api.url, FormBrowser(oauth_api.url, "key-op"), client, f"run:{run_id}")
    issued = (await redeem(oauth_api.url, client, code, verifier)).json()
    assert (await revoke(oauth_api, client, issued["refresh_token"])).status_code == 200
    assert oauth_error(await redeem(oauth_api.url, client, code, verifier)) == "invalid_grant"
    revoked = of_type(await events(oauth_api, run_id), "oauth_revoked")
    assert [(e["data"]["reason"], e["data"]["by"]) for e in revoked] == [("revoked_by_client", client.client_id)]
    grants = await oauth_api.gateway.store.list_oauth_grants("acme", run_id)
    assert [(g.revoked_reason, g.revoked_by) for g in grants] == [("revoked_by_client", client.client_id)]


async def test_a_wrong_pkce_verifier_is_invalid_grant(oauth_api: Api) -> None:
    run_id = await oauth_api.new_run()
    client = await public_client(oauth_api.url)
    code, _ = await code_for(oauth_api.url, FormBrowser(oauth_api.url, "key-op"), client, f"run:{run_id}")
    wrong, _ = pkce()
    answer = await redeem(oauth_api.url, client, code, wrong)
    assert oauth_error(answer) == "invalid_grant"
    assert run_id not in answer.text


async def test_a_code_past_its_time_is_invalid_grant_by_the_gateways_clock(oauth_api: Api) -> None:
    run_id = await oauth_api.new_run()
    client = await public_client(oauth_api.url)
    code, verifier = await code_for(oauth_api.url, FormBrowser(oauth_api.url, "key-op"), client, f"run:{run_id}")
    oauth_api.clock.advance(61)  # oauth.code_ttl: 60 s
    answer = await redeem(oauth_api.url, client, code, verifier)
    assert oauth_error(answer) == "invalid_grant"
    assert "expired" in answer.json()["error_description"]
    assert of_type(await events(oauth_api, run_id), "oauth_token_issued") == []


async def test_a_redirect_uri_not_registered_is_a_400_and_not_a_redirect(oauth_api: Api) -> None:
    client = await public_client(oauth_api.url)
    _, challenge = pkce()
    stranger = Client(client.client_id, "http://127.0.0.1:9/elsewhere")
    async with httpx.AsyncClient(timeout=10, follow_redirects=False) as http:
        answer = await http.get(authorize_url(oauth_api.url, stranger, challenge))
    assert answer.status_code == 400, answer.text
    assert "location" not in answer.headers
    assert answer.headers["content-type"].startswith("application/json")
    assert answer.json()["error"] == "invalid_request"


# -- tenants and roles -----------------------------------------------------------------------
async def test_a_key_of_another_tenant_sees_none_of_its_runs_and_cannot_consent_to_one(oauth_api: Api) -> None:
    acme_run = await oauth_api.new_run(goal=SECRET_GOAL)
    client = await public_client(oauth_api.url)
    browser = FormBrowser(oauth_api.url, "key-other")
    _, challenge = pkce()
    url = authorize_url(oauth_api.url, client, challenge)
    page = await browser.open(url)
    assert "/console/login" in str(page.url)  # signs in first; FormBrowser.consent does that
    answer = await browser.consent(url, f"run:{acme_run}")
    assert browser.pages and acme_run not in browser.pages[-1] and SECRET_GOAL not in browser.pages[-1]
    assert answer.status_code == 404, answer.text
    assert "location" not in answer.headers
    assert SECRET_GOAL not in answer.text
    # The same page as for a run that does not exist at all: nothing tells the two apart.
    missing = "run_" + "0" * (len(acme_run) - 4)
    nothing = await browser.consent(url, f"run:{missing}")
    assert nothing.status_code == 404
    assert nothing.text.replace(missing, "RUN") == answer.text.replace(acme_run, "RUN").replace(
        field_csrf(answer.text), field_csrf(nothing.text)
    )
    assert of_type(await events(oauth_api, acme_run), "oauth_consented") == []


def field_csrf(page: str) -> str:
    match = re.search(r'name="(?:csrf|request)" value="([^"]*)"', page)
    return match.group(1) if match else ""


async def test_a_worker_key_is_offered_only_the_runs_given_to_it(oauth_api: Api) -> None:
    given = await oauth_api.new_run(workers=["wrk"], goal="given to wrk")
    not_given = await oauth_api.new_run(workers=["someone-else"], goal=SECRET_GOAL)
    # A contract that names no workers restricts no worker key (docs/decisions/0003-leases.md, as at
    # POST /api/runs/{id}/lease): that run is offered too.
    unrestricted = await oauth_api.new_run(goal="names no workers")
    client = await public_client(oauth_api.url)
    browser = FormBrowser(oauth_api.url, "key-wrk")
    code, verifier = await code_for(oauth_api.url, browser, client, f"run:{given}")
    page = browser.pages[-1]
    assert given in page and unrestricted in page
    assert not_given not in page and SECRET_GOAL not in page
    # A worker key may not start runs: no template offered.
    assert 'value="new:' not in page
    assert (await redeem(oauth_api.url, client, code, verifier)).status_code == 200

    refused = await browser.consent(authorize_url(oauth_api.url, client, pkce()[1]), f"run:{not_given}")
    assert refused.status_code == 404 and "location" not in refused.headers
    assert SECRET_GOAL not in refused.text
    assert of_type(await events(oauth_api, not_given), "oauth_consented") == []


@pytest.mark.parametrize("key", ["key-appr", "key-aud"])
async def test_a_key_that_may_not_lease_is_refused_at_consent(oauth_api: Api, key: str) -> None:
    run_id = await oauth_api.new_run(goal=SECRET_GOAL)
    client = await public_client(oauth_api.url)
    browser = FormBrowser(oauth_api.url, key)
    answer = await browser.consent(authorize_url(oauth_api.url, client, pkce()[1]), f"run:{run_id}")
    assert answer.status_code == 403, answer.text
    assert "forbidden" in answer.text
    assert run_id not in answer.text and SECRET_GOAL not in answer.text
    assert "location" not in answer.headers
    assert of_type(await events(oauth_api, run_id), "oauth_consented") == []


# -- refresh tokens --------------------------------------------------------------------------
async def test_a_refresh_token_used_twice_revokes_the_whole_family(oauth_api: Api) -> None:
    run_id, client, _, issued = await flow(oauth_api)
    first = await refresh(oauth_api.url, client, issued["refresh_token"])
    assert first.status_code == 200, first.text
    newer = first.json()
    assert newer["refresh_token"] != issued["refresh_token"] and newer["access_token"] != issued["access_token"]
    assert (await mcp_call(f"{oauth_api.url}/mcp", newer["access_token"])).status_code == 200

    again = await refresh(oauth_api.url, client, issued["refresh_token"])
    assert oauth_error(again) == "invalid_grant"
    assert run_id not in again.text and SECRET_GOAL not in again.text
    # Every token of the grant ends: the newer refresh token and the current access token too.
    assert oauth_error(await refresh(oauth_api.url, client, newer["refresh_token"])) == "invalid_grant"
    assert_unauthorized(await mcp_call(f"{oauth_api.url}/mcp", newer["access_token"]), oauth_api.url)
    assert_unauthorized(await mcp_call(f"{oauth_api.url}/mcp", issued["access_token"]), oauth_api.url)
    revoked = of_type(await events(oauth_api, run_id), "oauth_revoked")
    assert [e["data"]["reason"] for e in revoked] == ["refresh_token_reused"]


async def test_a_refresh_token_is_only_its_own_clients(oauth_api: Api) -> None:
    _, client, _, issued = await flow(oauth_api)
    other = await public_client(oauth_api.url)
    assert oauth_error(await refresh(oauth_api.url, other, issued["refresh_token"])) == "invalid_grant"
    # Not a reuse: the owner's refresh still works.
    assert (await refresh(oauth_api.url, client, issued["refresh_token"])).status_code == 200


# -- RFC 7009 --------------------------------------------------------------------------------
async def revoke(api: Api, client: Client, value: str, hint: str | None = None) -> httpx.Response:
    data = {"client_id": client.client_id, "token": value}
    if hint:
        data["token_type_hint"] = hint
    async with httpx.AsyncClient(base_url=api.url, timeout=10) as http:
        return await http.post("/revoke", data=data)


async def test_a_revocation_is_one_event_and_revoking_again_changes_nothing(oauth_api: Api) -> None:
    """Either token ends the grant (tests/oauth/test_revoke.py); here: what the ledger keeps."""
    run_id, client, _, issued = await flow(oauth_api)
    assert (await revoke(oauth_api, client, issued["refresh_token"], "refresh_token")).status_code == 200
    assert_unauthorized(await mcp_call(f"{oauth_api.url}/mcp", issued["access_token"]), oauth_api.url)
    assert oauth_error(await refresh(oauth_api.url, client, issued["refresh_token"])) == "invalid_grant"
    # Revoking again (either token), or a token never issued, is still 200 (RFC 7009 2.2).
    for value in (issued["refresh_token"], issued["access_token"], "wat_" + "x" * 43, "not a token"):
        assert (await revoke(oauth_api, client, value)).status_code == 200
    revoked = of_type(await events(oauth_api, run_id), "oauth_revoked")
    assert [(e["data"]["reason"], e["data"]["by"]) for e in revoked] == [("revoked_by_client", client.client_id)]
    assert run_id not in (await revoke(oauth_api, client, issued["access_token"])).text


# -- the ledger ------------------------------------------------------------------------------
async def test_the_chain_verifies_after_a_consent_a_refresh_and_a_revocation(oauth_api: Api) -> None:
    run_id, client, _, issued = await flow(oauth_api)
    assert (await mcp_call(f"{oauth_api.url}/mcp", issued["access_token"])).status_code == 200
    rotated = (await refresh(oauth_api.url, client, issued["refresh_token"])).json()
    assert (await revoke(oauth_api, client, rotated["access_token"])).status_code == 200
    kinds = [e["type"] for e in await events(oauth_api, run_id)]
    wanted = ["oauth_consented", "oauth_token_issued", "oauth_refreshed", "oauth_revoked"]
    assert [k for k in kinds if k.startswith("oauth_")] == wanted
    async with oauth_api.client("aud") as c:  # an auditor verifies; an operator may not
        report = (await c.get("/api/ledger/verify")).json()
        export = await c.get(f"/api/runs/{run_id}/export")
    assert report["ok"] is True and report["first_bad"] is None, report
    assert report["entries"] >= len(kinds)
    assert export.status_code == 200
    for kind in wanted:
        assert kind in export.text
    # No token, secret or lease token is in the ledger: only grant ids and the client.
    for value in (issued["access_token"], issued["refresh_token"], rotated["access_token"], rotated["refresh_token"]):
        assert value not in export.text
    assert "wl_" not in export.text
