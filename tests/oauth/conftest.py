"""MCP authorization against a real gateway: `serving_api` with `oauth:` set, and a person at the
consent page, either as plain HTTP (`FormBrowser`: sign in, pick, allow; each step the page's
own form) or in Chromium (tests/oauth/browser.py)."""

from __future__ import annotations

import html
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urljoin, urlsplit

import httpx
import pytest

from tests.api.conftest import CONTRACT, Api, serving_api

OAUTH = "oauth: {contract_templates: [templates], metadata_documents_allow_loopback_http: true}\n"


def write_templates(tmp_path: Path) -> None:
    where = tmp_path / "templates"
    where.mkdir(exist_ok=True)
    import json

    (where / "shopping.json").write_text(json.dumps({**CONTRACT, "goal": "Shop for the team"}))


@pytest.fixture
async def oauth_api(tmp_path: Path) -> AsyncIterator[Api]:
    write_templates(tmp_path)
    async with serving_api(tmp_path, OAUTH) as served:
        yield served


def field_value(page: str, name: str) -> str:
    match = re.search(rf'name="{re.escape(name)}" value="([^"]*)"', page)
    assert match, f"no field {name} in the page:\n{page[:2000]}"
    return html.unescape(match.group(1))


@dataclass
class FormBrowser:
    """A person's browser, as HTTP: cookies kept, redirects followed by hand (so the last one, to
    the client, is seen and not fetched)."""

    base: str
    api_key: str
    cookies: httpx.Cookies = field(default_factory=httpx.Cookies)
    pages: list[str] = field(default_factory=list)

    def client(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(base_url=self.base, cookies=self.cookies, timeout=10, follow_redirects=False)

    async def open(self, url: str) -> httpx.Response:
        """GET `url`, following redirects within the gateway; the last answer (a page, or a
        redirect that leaves the gateway)."""
        async with self.client() as http:
            response = await http.get(url)
            for _ in range(10):
                if response.status_code not in (302, 303):
                    break
                target = urljoin(str(response.url), response.headers["location"])
                if not target.startswith(self.base):
                    break
                response = await http.get(target)
            self.cookies = http.cookies
        return response

    async def consent(self, authorization_url: str, choice: str | None = None, **form: str) -> httpx.Response:
        """Sign in if asked, then allow `choice` (the first run offered when None). Returns the
        gateway's last answer: the redirect to the client, or the page it refused with."""
        page = await self.open(authorization_url)
        if "/console/login" in str(page.url):
            async with self.client() as http:
                answer = await http.post(
                    "/console/login",
                    data={
                        "csrf": field_value(page.text, "csrf"),
                        "api_key": self.api_key,
                        "next": field_value(page.text, "next"),
                    },
                )
                self.cookies = http.cookies
            assert answer.status_code == 303, answer.text
            page = await self.open(answer.headers["location"])
        self.pages.append(page.text)
        if page.status_code != 200:
            return page
        if choice is None:
            match = re.search(r'name="choice" value="([^"]+)"', page.text)
            assert match, "the consent page offers nothing"
            choice = html.unescape(match.group(1))
        data = {
            "csrf": field_value(page.text, "csrf"),
            "request": field_value(page.text, "request"),
            "choice": choice,
            "decision": "allow",
            **form,
        }
        async with self.client() as http:
            answer = await http.post("/console/oauth/consent", data=data)
            self.cookies = http.cookies
        return answer


def code_of(answer: httpx.Response) -> tuple[str, str | None]:
    assert answer.status_code == 303, answer.text[:2000]
    query = parse_qs(urlsplit(answer.headers["location"]).query)
    assert "code" in query, answer.headers["location"]
    return query["code"][0], query.get("state", [None])[0]


def location_query(answer: httpx.Response) -> dict[str, Any]:
    return {k: v[0] for k, v in parse_qs(urlsplit(answer.headers["location"]).query).items()}
