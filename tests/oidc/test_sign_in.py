"""The console's sign-in through a real OpenID Connect provider (node-oidc-provider), as plain HTTP:
who gets in and as what, and each way a sign-in must be refused (tests/oidc/conftest.py)."""

from __future__ import annotations

import base64
import html
import json
import re
from urllib.parse import parse_qs, urlencode, urljoin, urlsplit, urlunsplit

import pytest

from tests.api.conftest import serving_api
from tests.oauth.conftest import write_templates
from tests.oidc.conftest import CLIENT_SECRET, HttpBrowser, World, oidc_world, sign_in_config

pytestmark = pytest.mark.anyio
CALLBACK = "/console/login/oidc/callback"


def refusal(page: str) -> str:
    found = re.search(r'<span class="code">([a-z_]+)</span>', page)
    assert found, page[:2000]
    return found.group(1)


def who(page: str) -> str:
    found = re.search(r'<span class="who">([^<]+)', page)
    assert found, page[:2000]
    return " ".join(found.group(1).split())


async def test_a_mapped_person_signs_in_as_the_configured_principal(world: World) -> None:
    browser = HttpBrowser(world.api.url)
    page = await browser.provider_sign_in("ana")  # the provider spells it Ana@Acme.example
    assert page.status_code == 200, page.text[:2000]
    assert str(page.url).startswith(f"{world.api.url}{CALLBACK}?")
    assert 'http-equiv="refresh" content="0; url=/console/runs"' in page.text
    runs = await browser.get("/console/runs")
    assert runs.status_code == 200
    assert who(runs.text) == "ana · tenant acme · operator"
    # The session names a digest of the identity, not the address.
    cookie = browser.cookies.get("warrant_console", domain="127.0.0.1")
    assert cookie is not None
    body = json.loads(base64.urlsafe_b64decode(cookie.split(".")[0] + "=="))
    assert body["d"].startswith("oidc:") and "acme" not in cookie.lower()
    # The flow's cookie is used up.
    assert browser.cookies.get("warrant_console_oidc", domain="127.0.0.1") is None


async def test_the_sign_in_page_offers_the_provider_and_keeps_the_key_form(world: World) -> None:
    browser = HttpBrowser(world.api.url)
    page = await browser.get("/console/login?next=/console/approvals")
    assert "Sign in with Acme SSO" in page.text
    assert 'href="/console/login/oidc?next=%2Fconsole%2Fapprovals"' in page.text
    assert 'name="api_key"' in page.text
    # A next that leaves the console is dropped at the start, not carried to the provider.
    start = await browser.get("/console/login/oidc?next=https://evil.example/", stop_at=world.provider.issuer)
    assert start.status_code == 303
    query = parse_qs(urlsplit(start.headers["location"]).query)
    assert query["code_challenge_method"] == ["S256"] and query["code_challenge"][0]
    assert query["nonce"][0] and query["state"][0] and query["scope"] == ["openid email"]
    page = await browser.sign_in_from(start.headers["location"], "ana")
    assert 'content="0; url=/console/runs"' in page.text


async def test_an_identity_nobody_mapped_is_refused(world: World) -> None:
    browser = HttpBrowser(world.api.url)
    page = await browser.provider_sign_in("mallory")
    assert page.status_code == 403
    assert refusal(page.text) == "oidc_not_allowed"
    assert "mallory@evil.example" in page.text and "console_sign_in.oidc.users" in page.text
    assert browser.cookies.get("warrant_console", domain="127.0.0.1") is None
    runs = await browser.get("/console/runs", stop_at=f"{world.api.url}/console/login")
    assert runs.status_code == 303 and runs.headers["location"] == "/console/login"


async def test_an_address_the_provider_has_not_verified_is_refused(world: World) -> None:
    """bo@acme.example is mapped (an admin), but the provider says it has not verified it."""
    page = await HttpBrowser(world.api.url).provider_sign_in("unverified")
    assert page.status_code == 401
    assert refusal(page.text) == "oidc_claim_missing"


def users_of(match: str, name: str, role: str) -> str:
    return f"    users:\n      - {{match: {match}, name: {name}, tenant: acme, roles: [{role}]}}\n"


def with_state(url: str, state: str) -> str:
    parts = urlsplit(url)
    query = {k: v[0] for k, v in parse_qs(parts.query).items()} | {"state": state}
    return urlunsplit(parts._replace(query=urlencode(query)))


async def test_a_tampered_state_is_refused_and_the_real_answer_still_signs_in(world: World) -> None:
    browser = HttpBrowser(world.api.url)
    back = await browser.provider_sign_in("ana", stop_at=f"{world.api.url}{CALLBACK}")
    assert back.status_code in (302, 303)
    callback = back.headers["location"]
    tampered = await browser.get(with_state(callback, "x" + parse_qs(urlsplit(callback).query)["state"][0]))
    assert tampered.status_code == 400 and refusal(tampered.text) == "oidc_state_mismatch"
    # Another browser (no flow cookie of this sign-in) cannot use the callback either: nobody is
    # signed in as ana by following a link ana's sign-in produced.
    elsewhere = await HttpBrowser(world.api.url).get(callback)
    assert elsewhere.status_code == 400 and refusal(elsewhere.text) == "oidc_state_mismatch"
    page = await browser.get(callback)
    assert page.status_code == 200, page.text[:2000]
    assert who((await browser.get("/console/runs")).text) == "ana · tenant acme · operator"
    # The code was used once; its callback is refused the second time (the flow cookie is gone).
    again = await browser.get(callback)
    assert again.status_code == 400 and refusal(again.text) == "oidc_state_mismatch"


@pytest.mark.parametrize(
    ("claims", "problem"),
    [
        ({"aud": "another-client"}, "aud"),
        ({"nonce": "another-sign-in"}, "nonce"),
        ({"iss": "http://localhost:1"}, "iss"),
        ({"exp": 1_000_000_000}, "expired"),
        ({"foreign_key": True}, "signature"),
    ],
    ids=["audience", "nonce", "issuer", "expired", "forged-signature"],
)
async def test_an_id_token_that_is_not_for_this_sign_in_is_refused(
    world: World, claims: dict[str, object], problem: str
) -> None:
    """The provider's token endpoint answers with the ID token changed, re-signed with its own
    published key (or, forged, with a key it never published)."""
    await world.provider.tamper(**claims)
    try:
        page = await HttpBrowser(world.api.url).provider_sign_in("ana")
    finally:
        await world.provider.tamper()
    assert page.status_code == 401, page.text[:2000]
    assert refusal(page.text) == "oidc_token_invalid"
    assert problem in page.text.lower()
    assert (await HttpBrowser(world.api.url).provider_sign_in("ana")).status_code == 200


async def test_a_sign_in_the_person_cancels_at_the_provider_is_refused(world: World) -> None:
    browser = HttpBrowser(world.api.url)
    page = await browser.get("/console/login")
    link = re.search(r'<a id="oidc"[^>]*href="([^"]+)"', page.text)
    assert link
    at_provider = await browser.get(link.group(1))
    abort = re.search(r'href="([^"]*/abort)"', at_provider.text)
    assert abort, at_provider.text[:3000]
    page = await browser.get(urljoin(str(at_provider.url), html.unescape(abort.group(1))))
    assert page.status_code == 401 and refusal(page.text) == "oidc_denied"
    assert "access_denied" in page.text


async def test_the_configuration_decides_on_every_request(
    world: World, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """The cookie names the identity; its principal is the configuration's now: other roles in
    another gateway's configuration (same ledger key), none once the person is taken out."""
    browser = HttpBrowser(world.api.url)
    assert (await browser.provider_sign_in("ana")).status_code == 200
    promoted = sign_in_config(
        world.provider.issuer,
        users="    users:\n      - {match: ana@acme.example, name: ana, tenant: acme, roles: [admin]}\n",
    )
    tmp_path = tmp_path_factory.mktemp("again")
    (tmp_path / "b").mkdir()
    write_templates(tmp_path / "b")
    async with serving_api(tmp_path / "b", promoted, environ={"OIDC_SECRET": CLIENT_SECRET}) as other:
        runs = await HttpBrowser(other.url, browser.cookies).get("/console/runs")
        assert runs.status_code == 200 and who(runs.text) == "ana · tenant acme · admin"
    removed = sign_in_config(
        world.provider.issuer,
        users="    users:\n      - {match: bo@acme.example, name: bo, tenant: acme, roles: [admin]}\n",
    )
    (tmp_path / "c").mkdir()
    write_templates(tmp_path / "c")
    async with serving_api(tmp_path / "c", removed, environ={"OIDC_SECRET": CLIENT_SECRET}) as other:
        runs = await HttpBrowser(other.url, browser.cookies).get("/console/runs", stop_at=f"{other.url}/console/login")
        assert runs.status_code == 303 and runs.headers["location"] == "/console/login"


async def test_the_provider_unreachable_is_said_on_the_sign_in_page(tmp_path_factory: pytest.TempPathFactory) -> None:
    async with oidc_world(tmp_path_factory.mktemp("gone")) as world:
        world.provider.process.terminate()
        await world.provider.process.wait()
        page = await HttpBrowser(world.api.url).get("/console/login/oidc")
        assert page.status_code == 502 and refusal(page.text) == "oidc_unavailable"
        assert 'name="api_key"' in page.text  # the key still signs in
