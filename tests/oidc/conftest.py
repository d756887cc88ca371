"""A real OpenID Connect provider on loopback (node-oidc-provider, tests/interop/node/oidc_provider.mjs)
and a gateway whose console signs in through it.

The provider's issuer is http://localhost:PORT and the gateway is at http://127.0.0.1:PORT: two
sites, so that the browser treats the round trip as the cross-site one it is in a deployment (a
SameSite=Strict cookie is not sent after it). The provider's development sign-in form takes any
login and password; the login is the account: `ana` (ana@acme.example, mapped to ana, tenant
acme, operator), `mallory` (a verified address nobody mapped), `unverified` (ana's colleague
whose address the provider has not verified, though mapped).
"""

from __future__ import annotations

import asyncio
import contextlib
import html
import json
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urljoin

import httpx
import pytest

from tests.api.conftest import Api, serving_api
from tests.browser.conftest import browser, chromium, page  # noqa: F401  (Chromium, for test_browser.py)
from tests.harness import free_port
from tests.interop.nodejs import NODE_DIR, node_executable, require_node_modules
from tests.oauth.conftest import write_templates

CLIENT_ID = "warrant-console"
CLIENT_SECRET = "console-client-secret"
ACCOUNTS = {
    "ana": {"email": "Ana@Acme.example", "email_verified": True},
    "mallory": {"email": "mallory@evil.example", "email_verified": True},
    "unverified": {"email": "bo@acme.example", "email_verified": False},
}
USERS = (
    "    users:\n"
    "      - {match: ana@acme.example, name: ana, tenant: acme, roles: [operator]}\n"
    "      - {match: bo@acme.example, name: bo, tenant: acme, roles: [admin]}\n"
)


@dataclass
class Provider:
    issuer: str
    process: asyncio.subprocess.Process
    clients: list[dict[str, Any]] = field(default_factory=list)

    async def tamper(self, **claims: Any) -> None:
        """The token endpoint's next ID tokens with `claims` changed and re-signed; none: honest again."""
        async with httpx.AsyncClient(timeout=5) as http:
            answer = await http.post(f"{self.issuer}/__test__/tamper", content=json.dumps(claims))
        assert answer.status_code == 204, answer.text


@contextlib.asynccontextmanager
async def oidc_provider(redirect_uris: list[str], *, client_id: str = CLIENT_ID) -> AsyncIterator[Provider]:
    require_node_modules()
    options = {
        "clients": [{"client_id": client_id, "client_secret": CLIENT_SECRET, "redirect_uris": redirect_uris}],
        "accounts": ACCOUNTS,
    }
    process = await asyncio.create_subprocess_exec(
        node_executable(),
        str(NODE_DIR / "oidc_provider.mjs"),
        json.dumps(options),
        cwd=NODE_DIR,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        stdin=asyncio.subprocess.DEVNULL,
    )
    try:
        assert process.stdout is not None
        try:
            line = await asyncio.wait_for(process.stdout.readline(), 20)
        except TimeoutError:
            line = b""
        if not line:
            assert process.stderr is not None
            process.kill()
            raise AssertionError(f"the OIDC provider did not start:\n{(await process.stderr.read()).decode()}")
        yield Provider(json.loads(line)["issuer"], process, options["clients"])
    finally:
        if process.returncode is None:
            process.terminate()
            await process.wait()
        assert process.stderr is not None
        faults = [line for line in (await process.stderr.read()).decode().splitlines() if "server_error" in line]
        assert not faults, "the OIDC provider failed:\n" + "\n".join(faults)


def sign_in_config(issuer: str, *, users: str = USERS, client_id: str = CLIENT_ID) -> str:
    return (
        "oauth: {contract_templates: [templates], metadata_documents_allow_loopback_http: true}\n"
        "console_sign_in:\n"
        "  oidc:\n"
        f"    issuer: {issuer}\n"
        f"    client_id: {client_id}\n"
        "    client_secret_env: OIDC_SECRET\n"
        "    display_name: Acme SSO\n"
        "    scopes: [openid, email]\n"
        "    claim: email\n" + users
    )


@dataclass
class World:
    provider: Provider
    api: Api


@contextlib.asynccontextmanager
async def oidc_world(tmp_path: Path, *, users: str = USERS, port: int | None = None) -> AsyncIterator[World]:
    """The provider, then a gateway on `port` (free when None) whose console signs in through it."""
    port = port or free_port()
    callback = f"http://127.0.0.1:{port}/console/login/oidc/callback"
    write_templates(tmp_path)
    async with oidc_provider([callback]) as provider:
        extra = sign_in_config(provider.issuer, users=users)
        async with serving_api(tmp_path, extra, environ={"OIDC_SECRET": CLIENT_SECRET}, port=port) as api:
            yield World(provider, api)


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    """Module-wide, so that one provider and one gateway (and one Chromium) serve a module's tests."""
    return "asyncio"


@pytest.fixture(scope="module")
async def world(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[World]:
    async with oidc_world(tmp_path_factory.mktemp("oidc")) as served:
        yield served


def form_of(text: str) -> tuple[str, dict[str, str]]:
    """The first form of an HTML page: its action and its hidden fields."""
    action = re.search(r'<form[^>]*action="([^"]*)"', text)
    assert action, f"no form in:\n{text[:2000]}"
    hidden = dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)"', text))
    return html.unescape(action.group(1)), {k: html.unescape(v) for k, v in hidden.items()}


@dataclass
class HttpBrowser:
    """A browser as plain HTTP: one cookie jar for both sites, redirects followed by hand, the
    provider's sign-in form filled in. Each step's answer is kept in `answers`."""

    gateway: str
    cookies: httpx.Cookies = field(default_factory=httpx.Cookies)
    answers: list[httpx.Response] = field(default_factory=list)

    async def get(self, url: str, *, stop_at: str | None = None) -> httpx.Response:
        """GET `url`, following redirects (across both sites) until a page, or a URL starting with `stop_at`."""
        async with httpx.AsyncClient(cookies=self.cookies, timeout=10, follow_redirects=False) as http:
            answer = await http.get(urljoin(self.gateway, url))
            for _ in range(20):
                self.answers.append(answer)
                if answer.status_code not in (302, 303):
                    break
                target = urljoin(str(answer.url), answer.headers["location"])
                if stop_at is not None and target.startswith(stop_at):
                    break
                answer = await http.get(target)
            self.cookies = http.cookies
        return answer

    async def post(self, url: str, data: dict[str, str], *, stop_at: str | None = None) -> httpx.Response:
        async with httpx.AsyncClient(cookies=self.cookies, timeout=10, follow_redirects=False) as http:
            answer = await http.post(url, data=data)
            self.cookies = http.cookies
        self.answers.append(answer)
        if answer.status_code in (302, 303):
            target = urljoin(str(answer.url), answer.headers["location"])
            if stop_at is None or not target.startswith(stop_at):
                return await self.get(target, stop_at=stop_at)
        return answer

    async def provider_sign_in(self, login: str, *, stop_at: str | None = None) -> httpx.Response:
        """From the gateway's sign-in page: "Sign in with", the provider's form, back to the gateway.
        `stop_at`: stop before fetching a URL starting with it (the callback, say), and return that redirect."""
        sign_in_page = await self.get("/console/login")
        link = re.search(r'<a id="oidc"[^>]*href="([^"]+)"', sign_in_page.text)
        assert link, "the sign-in page offers no provider"
        return await self.sign_in_from(html.unescape(link.group(1)), login, stop_at=stop_at)

    async def sign_in_from(self, start: str, login: str, *, stop_at: str | None = None) -> httpx.Response:
        at_provider = await self.get(start)
        assert 'name="login"' in at_provider.text, at_provider.text[:2000]
        action, hidden = form_of(at_provider.text)
        return await self.post(
            urljoin(str(at_provider.url), action), {**hidden, "login": login, "password": "any"}, stop_at=stop_at
        )
