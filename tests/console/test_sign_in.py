"""Signing in to the console with an API key: the API's own key check, the session cookie's flags."""

from __future__ import annotations

import httpx
import pytest

from tests.api.conftest import Api
from tests.api.test_keys import create_key
from tests.console.conftest import csrf_of, sign_in

pytestmark = pytest.mark.anyio


def set_cookies(response: httpx.Response) -> dict[str, str]:
    return {h.split("=", 1)[0]: h for h in response.headers.get_list("set-cookie")}


async def test_a_configured_key_signs_in_with_an_http_only_strict_cookie(api: Api, browser: httpx.AsyncClient) -> None:
    r = await sign_in(browser, "key-ops")
    assert (r.status_code, r.headers["location"]) == (303, "/console/runs")
    cookie = set_cookies(r)["warrant_console"]
    flags = {part.strip().lower() for part in cookie.split(";")[1:]}
    assert {"httponly", "samesite=strict", "path=/"} <= flags
    assert "secure" not in flags  # plain http on loopback; https requests get Secure
    assert "key-ops" not in cookie  # the cookie names the key by its hash, never the key
    page = await browser.get("/console/runs")
    assert page.status_code == 200 and "tenant acme" in page.text


async def test_an_unknown_key_is_refused_and_gets_no_session(api: Api, browser: httpx.AsyncClient) -> None:
    r = await sign_in(browser, "key-nobody")
    assert r.status_code == 401 and "unauthenticated" in r.text
    assert "warrant_console" not in set_cookies(r)
    assert (await browser.get("/console/runs")).status_code == 303  # still signed out: to the sign-in form


async def test_sign_in_without_the_form_token_is_refused(api: Api, browser: httpx.AsyncClient) -> None:
    await browser.get("/console/login")
    r = await browser.post("/console/login", data={"csrf": "0" * 64, "api_key": "key-ops"})
    assert r.status_code == 403 and "csrf_failed" in r.text
    assert "warrant_console" not in set_cookies(r)


async def test_a_forged_session_cookie_is_signed_out(api: Api, browser: httpx.AsyncClient) -> None:
    await sign_in(browser, "key-ops")
    value = browser.cookies["warrant_console"]
    browser.cookies.set("warrant_console", value[:-4] + ("0000" if not value.endswith("0000") else "1111"))
    assert (await browser.get("/console/runs")).status_code == 303


async def test_a_revoked_store_key_ends_its_session_on_the_next_request(api: Api, browser: httpx.AsyncClient) -> None:
    created = await create_key(api, "console-op", ["operator"])
    assert (await sign_in(browser, created["key"])).status_code == 303
    assert (await browser.get("/console/runs")).status_code == 200
    async with api.client("ops") as c:
        r = await c.post(f"/api/keys/{created['key_id']}/revoke", json={"reason": "left the team"})
    assert r.status_code == 200, r.text
    r = await browser.get("/console/runs")
    assert (r.status_code, r.headers["location"]) == (303, "/console/login")


async def test_sign_out_forgets_the_session(api: Api, browser: httpx.AsyncClient) -> None:
    await sign_in(browser, "key-ops")
    page = await browser.get("/console/runs")
    r = await browser.post("/console/logout", data={"csrf": csrf_of(page.text)})
    assert (r.status_code, r.headers["location"]) == (303, "/console/login")
    assert (await browser.get("/console/runs")).status_code == 303


async def test_the_root_leads_to_the_runs(api: Api, browser: httpx.AsyncClient) -> None:
    r = await browser.get("/")
    assert (r.status_code, r.headers["location"]) == (303, "/console/runs")


async def test_behind_an_https_proxy_the_session_cookie_is_secure(api: Api, browser: httpx.AsyncClient) -> None:
    # uvicorn takes X-Forwarded-Proto from loopback (its default forwarded_allow_ips): the request is https.
    https = {"X-Forwarded-Proto": "https"}
    form = await browser.get("/console/login", headers=https)
    login_cookie = set_cookies(form)["warrant_console_login"]
    assert "secure" in login_cookie.lower()
    # A client keeps a Secure cookie from plain http: this one sends it by hand, as a browser would over https.
    nonce = login_cookie.split(";")[0]
    data = {"csrf": csrf_of(form.text), "api_key": "key-ops"}
    r = await browser.post("/console/login", data=data, headers=https | {"Cookie": nonce})
    assert r.status_code == 303
    flags = {part.strip().lower() for part in set_cookies(r)["warrant_console"].split(";")[1:]}
    assert {"secure", "httponly", "samesite=strict", "path=/"} <= flags
