"""The issue's headline: the official MCP Python SDK's OAuth client, configured with nothing but the
gateway's URL, against a fresh `warrant serve` process, a person consenting in headless Chromium.

The SDK discovers the server (401 -> protected resource metadata -> authorization server metadata),
registers itself, opens the authorization URL (here: Playwright drives Chromium through sign-in and
the consent page, tests/oauth/browser.py), takes the code from its own loopback listener, and from
then on refreshes by itself. The gateway's access tokens live 5 s, so the test waits one out.
"""

from __future__ import annotations

import json
import socket
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import anyio
import httpx
import httpx2
import mcp.types as types
import pytest
from mcp import ClientSession
from mcp.client.auth import AuthorizationCodeResult, OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthToken
from playwright.async_api import Browser
from pydantic import AnyUrl

from tests.browser.console import chromium_executable, serve
from tests.contracts import contract
from tests.e2e.serving import code_of, mcp_agent
from tests.oauth.browser import CallbackServer, Choice, Consented, ConsentRefused, chromium, consent

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

WAIT = 20.0  # seconds: the bound on every call and every sign-in
START_WAIT = 60.0  # seconds the gateway gets to answer /healthz (imports are slow on a busy machine)
ACCESS_TTL = 5  # seconds an access token lives (oauth.access_token_ttl): the calls after a cancel or
# a takeover must come within it, or the SDK would refresh, be refused and ask a person again
CONTRACT: dict[str, Any] = contract(
    goal="Collect vendor notes for the quarterly review",
    authority={"allow": ["notes__*"]},
    approvals=[{"tool": "notes__send", "role": "approver", "valid_for": "30m"}],
)


@dataclass
class Gateway:
    url: str

    def api(self, key: str = "op") -> httpx.AsyncClient:
        return httpx.AsyncClient(base_url=self.url, headers={"Authorization": f"Bearer key-{key}"}, timeout=WAIT)

    async def get(self, path: str) -> Any:
        async with self.api() as api:
            answer = await api.get(path)
        assert answer.status_code == 200, answer.text
        return answer.json()

    async def post(self, path: str, body: dict[str, Any], status: int = 200) -> Any:
        async with self.api() as api:
            answer = await api.post(path, json=body)
        assert answer.status_code == status, answer.text
        return answer.json()

    async def event_types(self, run_id: str) -> list[str]:
        page = await self.get(f"/api/runs/{run_id}/events?limit=1000")
        return [event["type"] for event in page["items"]]


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    """Module-wide, so that one gateway and one Chromium serve both tests."""
    return "asyncio"


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    chromium_executable()  # fails (or skips, WARRANT_SKIP_BROWSER=1) before a gateway is started for nothing
    tmp = tmp_path_factory.mktemp("oauth-sdk")
    (tmp / "templates").mkdir()
    (tmp / "templates" / "notes.json").write_text(json.dumps({**CONTRACT, "goal": "Take notes for a new job"}))
    oauth = f"oauth: {{access_token_ttl: {ACCESS_TTL}s, contract_templates: [templates]}}\n"
    with serve(tmp, extra=oauth, wait=START_WAIT) as served:  # tests/browser/console.py
        yield Gateway(served.url)


@pytest.fixture(scope="module")
async def browser(gateway: Gateway) -> AsyncIterator[Browser]:
    async with chromium() as browser:
        yield browser


@dataclass
class Memory:
    """The SDK's TokenStorage, in memory: what a client keeps between calls."""

    tokens: OAuthToken | None = None
    client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


@dataclass
class Person:
    """Who the SDK's redirect handler hands the authorization URL to: a person in Chromium who signs in
    with `key` and picks `choice`. Each sign-in is recorded: the test says how many it expects."""

    browser: Browser
    key: str
    choice: Choice
    consents: list[Consented] = field(default_factory=list)

    async def open(self, authorization_url: str) -> None:
        assert not self.consents, f"the client asked a person to sign in again: {authorization_url}"
        self.consents.append(await consent(self.browser, authorization_url, self.key, self.choice))


class Declined(Exception):
    """The browser came back to the client's listener with an OAuth error instead of a code."""

    def __init__(self, query: dict[str, str]) -> None:
        super().__init__(query)
        self.query = query


def caused_by(error: BaseException, kind: type[BaseException]) -> BaseException | None:
    """`error` or what it wraps (an exception group, a cause) that is a `kind`."""
    if isinstance(error, kind):
        return error
    inner: list[BaseException] = list(error.exceptions) if isinstance(error, BaseExceptionGroup) else []
    inner += [e for e in (error.__cause__, error.__context__) if e is not None]
    return next((found for e in inner if (found := caused_by(e, kind)) is not None), None)


@asynccontextmanager
async def sdk_client(
    gateway: Gateway,
    person: Person,
    storage: Memory,
    opens: Callable[[str], Awaitable[None]] | None = None,
    loopback: str = "127.0.0.1",
) -> AsyncIterator[ClientSession]:
    """The SDK's OAuth client, as an application configures it: the server URL, its name and its
    loopback redirect URI (on `loopback`); its redirect handler is `person.open` (or `opens`), its
    callback handler reads the code its own listener received."""
    with CallbackServer(host=loopback) as callback:

        async def code() -> AuthorizationCodeResult:
            with anyio.fail_after(WAIT):
                query = await callback.next()
            if "error" in query:
                raise Declined(query)
            assert "code" in query, query
            return AuthorizationCodeResult(code=query["code"], state=query.get("state"), iss=query.get("iss"))

        auth = OAuthClientProvider(
            f"{gateway.url}/mcp",
            OAuthClientMetadata(client_name="Notes agent", redirect_uris=[AnyUrl(callback.redirect_uri)]),
            storage,
            redirect_handler=opens or person.open,
            callback_handler=code,
        )
        async with (
            httpx2.AsyncClient(auth=auth, timeout=WAIT) as http,
            streamable_http_client(f"{gateway.url}/mcp", http_client=http) as (read, write, *_),
            ClientSession(read, write) as session,
        ):
            with anyio.fail_after(WAIT):
                await session.initialize()
            yield session


async def call(session: ClientSession, tool: str, arguments: dict[str, Any]) -> types.CallToolResult:
    with anyio.fail_after(WAIT):
        return await session.call_tool(tool, arguments)


def action_of(result: types.CallToolResult) -> str:
    action_id: str | None = (result.meta or {}).get("warrant/action_id")
    assert action_id, result
    return action_id


async def landed_in(gateway: Gateway, run_id: str, result: types.CallToolResult) -> bool:
    """Whether the gateway recorded this admitted call under run `run_id`."""
    page = await gateway.get(f"/api/runs/{run_id}/actions?limit=100")
    return action_of(result) in {action["action_id"] for action in page["items"]}


async def refresh(gateway: Gateway, storage: Memory) -> httpx.Response:
    """POST /token with the refresh token the client's storage holds, authenticated as the SDK
    registered it (client_secret_basic, client_secret_post or none)."""
    assert storage.tokens is not None and storage.tokens.refresh_token and storage.client is not None
    client = storage.client
    data = {"grant_type": "refresh_token", "refresh_token": storage.tokens.refresh_token, "client_id": client.client_id}
    auth: httpx.Auth = httpx.Auth()  # none: the client_id in the form is all a public client sends
    if client.token_endpoint_auth_method == "client_secret_basic" and client.client_secret:
        auth = httpx.BasicAuth(quote(client.client_id or "", safe=""), quote(client.client_secret, safe=""))
    elif client.token_endpoint_auth_method == "client_secret_post" and client.client_secret:
        data["client_secret"] = client.client_secret
    async with httpx.AsyncClient(timeout=WAIT) as http:
        return await http.post(f"{gateway.url}/token", data=data, auth=auth)


async def test_sdk_signs_in_refreshes_alone_and_is_refused_once_cancelled(gateway: Gateway, browser: Browser) -> None:
    created = await gateway.post("/api/runs", CONTRACT, status=201)
    run_id = created["run_id"]
    person = Person(browser, "key-op", Choice.run(run_id))
    storage = Memory()

    async with sdk_client(gateway, person, storage) as session:
        shown = person.consents[0]
        assert shown.signed_in and shown.client_name == "Notes agent"
        assert shown.summary["Goal"] == CONTRACT["goal"]
        assert "spend 1.00" in shown.summary["Budgets"] and "tool_calls 100" in shown.summary["Budgets"]
        assert shown.summary["Needs a person's approval"] == "notes__send"
        assert storage.tokens is not None and storage.tokens.access_token.startswith("wat_")
        first = storage.tokens

        tools = await session.list_tools()
        assert {"notes__search", "notes__append"} <= {t.name for t in tools.tools}
        searched = await call(session, "notes__search", {"query": "vendors"})
        assert code_of(searched) is None, searched
        assert await landed_in(gateway, run_id, searched)

        await anyio.sleep(ACCESS_TTL + 1)  # stays: the token must die in a real process; dead at both ends now
        appended = await call(session, "notes__append", {"title": "vendors", "body": "three of them"})
        assert code_of(appended) is None, appended
        assert await landed_in(gateway, run_id, appended)
        assert storage.tokens is not first and storage.tokens.access_token != first.access_token
        assert storage.tokens.refresh_token != first.refresh_token  # rotated
        assert len(person.consents) == 1  # refreshed by itself: nobody was asked again

        await gateway.post(f"/api/runs/{run_id}/cancel", {"reason": "the review was called off"})
        refused = await call(session, "notes__search", {"query": "vendors"})  # the access token is still fresh
        assert code_of(refused) == "run_cancelled", refused

    events = await gateway.event_types(run_id)
    assert "oauth_consented" in events and events.count("oauth_refreshed") == 1, events
    refreshed = await refresh(gateway, storage)
    assert refreshed.status_code == 400, refreshed.text
    error = refreshed.json()
    assert error["error"] == "invalid_grant", error
    assert "cancelled" in error["error_description"] and "successor" in error["error_description"], error


async def test_new_run_from_a_template_then_taken_over(gateway: Gateway, browser: Browser) -> None:
    goal = "Draft the offsite agenda from last year's notes"
    person = Person(browser, "key-op", Choice.new_run("notes", goal=goal, owner="bo@acme.example"))
    async with sdk_client(gateway, person, Memory()) as session:
        shown = person.consents[0]
        assert "notes__*" in shown.summary["May use"] and shown.summary["Needs a person's approval"] == "notes__send"
        searched = await call(session, "notes__search", {"query": "offsite"})
        assert code_of(searched) is None, searched
        runs = [r for r in (await gateway.get("/api/runs?limit=100"))["items"] if r["goal"] == goal]
        assert len(runs) == 1, runs  # the consent page made it, with the goal and owner typed there
        run_id = runs[0]["run_id"]
        assert runs[0]["owner"] == "bo@acme.example" and runs[0]["status"] == "running", runs
        assert await landed_in(gateway, run_id, searched)

        taken = await gateway.post(f"/api/runs/{run_id}/lease", {"worker": "ops-desk", "takeover": True}, 201)
        assert taken["epoch"] == 2, taken
        refused = await call(session, "notes__search", {"query": "offsite"})
        assert code_of(refused) == "lease_superseded", refused
    assert len(person.consents) == 1


async def test_takeover_ticked_on_the_consent_page(gateway: Gateway, browser: Browser) -> None:
    """A run whose lease a harness holds: Allow alone is refused `lease_held` on the page; with the
    takeover ticked the client gets the run, and the harness's next call is refused."""
    run_id = (await gateway.post("/api/runs", CONTRACT, status=201))["run_id"]
    harness = (await gateway.post(f"/api/runs/{run_id}/lease", {"worker": "harness"}, 201))["token"]
    tries: list[str] = []

    async def person(authorization_url: str) -> None:
        assert not tries, "the client asked a person to sign in again"
        with pytest.raises(ConsentRefused) as refused:
            await consent(browser, authorization_url, "key-op", Choice.run(run_id))
        tries.append(refused.value.code)
        await consent(browser, authorization_url, "key-op", Choice.run(run_id, takeover=True))
        tries.append("allowed")

    async with sdk_client(gateway, Person(browser, "key-op", Choice.run(run_id)), Memory(), person) as session:
        assert tries == ["lease_held", "allowed"], tries
        searched = await call(session, "notes__search", {"query": "vendors"})
        assert code_of(searched) is None and await landed_in(gateway, run_id, searched), searched
    async with mcp_agent(gateway.url, harness, WAIT) as agent:
        stale = await agent.call_tool("notes__search", {"query": "vendors"})
    assert code_of(stale) == "lease_superseded", stale


async def test_deny_sends_the_browser_back_with_access_denied(gateway: Gateway, browser: Browser) -> None:
    run_id = (await gateway.post("/api/runs", CONTRACT, status=201))["run_id"]
    person = Person(browser, "key-op", Choice.run(run_id, allow=False))
    with pytest.raises(BaseException) as raised:
        async with sdk_client(gateway, person, Memory()):
            pass
    declined = caused_by(raised.value, Declined)
    assert isinstance(declined, Declined), raised.value
    assert declined.query["error"] == "access_denied" and declined.query.get("state"), declined.query
    assert person.consents[0].query == declined.query  # what Chromium loaded is what the listener got
    assert "oauth_consented" not in await gateway.event_types(run_id)
    run = await gateway.get(f"/api/runs/{run_id}")
    assert run["lease"]["worker"] is None and run["lease"]["epoch"] == 0, run


def ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as probe:
            probe.bind(("::1", 0))
    except OSError:
        return False
    return True


@pytest.mark.skipif(not ipv6_loopback(), reason="this machine has no IPv6 loopback (::1)")
async def test_an_ipv6_loopback_redirect_uri(gateway: Gateway, browser: Browser) -> None:
    """RFC 8252's `http://[::1]:PORT/...`: the consent form's CSP must still let Chromium go there."""
    run_id = (await gateway.post("/api/runs", CONTRACT, status=201))["run_id"]
    person = Person(browser, "key-op", Choice.run(run_id))
    async with sdk_client(gateway, person, Memory(), loopback="::1") as session:
        assert person.consents[0].redirect.startswith("http://[::1]:"), person.consents[0]
        searched = await call(session, "notes__search", {"query": "vendors"})
        assert code_of(searched) is None and await landed_in(gateway, run_id, searched), searched
