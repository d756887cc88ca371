"""A person at the consent page, in a real headless Chromium: the browser half of an MCP client's
OAuth sign-in, for any client (the Python SDK here, the TypeScript SDK in tests/interop).

Three pieces, each usable alone:

- `chromium()`: Debian's Chromium under Playwright, as tests/browser starts it (fails naming the apt
  command when missing, skipped with WARRANT_SKIP_BROWSER=1).
- `consent(browser, authorization_url, api_key, choice)`: opens the client's authorization URL in a
  fresh browser context (no cookie), signs in on /console/login with the key, picks `choice` on the
  consent page, checks the picked run's contract, budgets and approval rules are on the page, clicks
  Allow (or Deny) and waits until Chromium has been sent back to the client's redirect URI. Chromium
  really loads that URI: whoever listens there (a `CallbackServer`, or a Node client's own listener)
  gets the code from the browser, as from a person's. A refusal on the page is `ConsentRefused`.
- `CallbackServer`: the client side's loopback listener (`http://127.0.0.1:PORT/callback`), answering
  the browser with a small page and handing each query it received to `await server.next()`.

    with CallbackServer() as callback:
        async with chromium() as browser:
            consented = await consent(browser, url, "key-op", Choice.run(run_id))
            query = await callback.next()  # {"code": "wac_...", "state": "..."}
"""

from __future__ import annotations

import contextlib
import http.server
import queue
import socket
import threading
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from urllib.parse import parse_qs, urlsplit

import anyio
from playwright.async_api import Browser, Page, async_playwright
from playwright.async_api import Error as PlaywrightError
from playwright.async_api import TimeoutError as PlaywrightTimeout

from tests.browser.console import CHROMIUM_ARGS, chromium_executable

PAGE_WAIT = 10_000  # milliseconds: the bound on each navigation and each element looked for
# What the consent page shows of every contract (gateway/console/templates/consent.html), and must.
SUMMARY = ("Goal", "Owner", "Budgets", "May use", "Needs a person's approval")


@dataclass(frozen=True)
class Choice:
    """What the person picks on the consent page: an existing run (`Choice.run`) or a new run from a
    contract template (`Choice.new_run`); `takeover` ticks "take the lease over"; `allow=False`
    presses Deny instead."""

    run_id: str | None = None
    template: str | None = None
    goal: str | None = None
    owner: str | None = None
    takeover: bool = False
    allow: bool = True

    @classmethod
    def run(cls, run_id: str, *, takeover: bool = False, allow: bool = True) -> Choice:
        return cls(run_id=run_id, takeover=takeover, allow=allow)

    @classmethod
    def new_run(cls, template: str, *, goal: str | None = None, owner: str | None = None) -> Choice:
        """A new run from the template: `goal` and `owner` typed over the template's when given."""
        return cls(template=template, goal=goal, owner=owner)

    @property
    def selector(self) -> str:
        if (self.run_id is None) == (self.template is None):
            raise ValueError("a Choice is one existing run or one template")
        return f"#run-{self.run_id}" if self.run_id is not None else f"#template-{self.template}"


@dataclass(frozen=True)
class Consented:
    """What the person saw and where the browser went."""

    redirect: str  # the URL Chromium loaded: the client's redirect URI with code (or error) and state
    query: dict[str, str]  # its query, one value a name
    client_name: str  # the name the consent page gave the client
    summary: dict[str, str]  # the picked contract as shown: SUMMARY's labels -> their text
    signed_in: bool  # whether the console asked for the key on the way


@contextlib.asynccontextmanager
async def chromium() -> AsyncIterator[Browser]:
    """A headless Chromium until the block ends (one launch costs seconds: share it across tests)."""
    executable = chromium_executable()
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=executable, headless=True, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            await browser.close()


async def consent(
    browser: Browser, authorization_url: str, api_key: str, choice: Choice, *, wait_ms: float = PAGE_WAIT
) -> Consented:
    """The whole consent, in a new context of `browser`. Raises ConsentRefused when the page answers
    Allow with a refusal (`lease_held` without the takeover ticked, a finished run...); fails
    (AssertionError, with the page's text and Chromium's messages) when the console refuses the key,
    the page does not offer `choice` or shows its contract incompletely, or the browser is not sent
    back to the client's redirect URI."""
    query = parse_qs(urlsplit(authorization_url).query)
    assert "redirect_uri" in query, f"no redirect_uri in {authorization_url}"
    redirect_uri = query["redirect_uri"][0]
    context = await browser.new_context()
    context.set_default_timeout(wait_ms)
    try:
        page = await context.new_page()
        console: list[str] = []  # Chromium's own messages: a CSP violation is told only there
        page.on("console", lambda message: console.append(message.text))
        await page.goto(authorization_url)
        signed_in = False
        if urlsplit(page.url).path == "/console/login":
            await page.locator('input[name="api_key"]').fill(api_key)
            await page.get_by_role("button", name="Sign in").click()
            await _wait_for_path(page, "/console/oauth/consent", wait_ms)
            signed_in = True
        assert urlsplit(page.url).path == "/console/oauth/consent", await _page_text(page)
        radio = page.locator(choice.selector)
        assert await radio.count() == 1, f"the consent page offers no {choice.selector}:\n{await _page_text(page)}"
        await radio.check()
        if choice.template is not None:
            if choice.goal is not None:
                await page.locator(f"#goal-{choice.template}").fill(choice.goal)
            if choice.owner is not None:
                await page.locator(f"#owner-{choice.template}").fill(choice.owner)
        if choice.takeover:
            await page.locator("#takeover").check()
        summary = await _summary(page, choice.selector)
        client_name = await page.locator("#client-name").inner_text()
        target = await _send_back(page, "#allow" if choice.allow else "#deny", redirect_uri, wait_ms, console)
        return Consented(
            redirect=target,
            query={k: v[0] for k, v in parse_qs(urlsplit(target).query).items()},
            client_name=client_name,
            summary=summary,
            signed_in=signed_in,
        )
    finally:
        await context.close()


async def _summary(page: Page, selector: str) -> dict[str, str]:
    """The contract shown beside the picked option: every label of SUMMARY, none empty."""
    block = page.locator("div.controls").filter(has=page.locator(selector))
    terms = await block.locator("dl.budget dt").all_inner_texts()
    values = await block.locator("dl.budget dd").all_inner_texts()
    shown = {t.strip(): v.strip() for t, v in zip(terms, values, strict=True)}
    missing = [label for label in SUMMARY if not shown.get(label)]
    assert not missing, f"the consent page does not show {missing} for {selector}: {shown}"
    return shown


class ConsentRefused(AssertionError):
    """The consent page answered Allow with a refusal (its `#error`): `code` as the page names it
    (`lease_held`, `run_cancelled`, ...), `message` its words."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"[{code}] {message}")
        self.code = code
        self.message = message


async def _send_back(page: Page, button: str, redirect_uri: str, wait_ms: float, console: list[str]) -> str:
    """Press `button` and wait for the navigation to `redirect_uri` (the listener must answer it), or
    for the consent page shown again with a refusal (ConsentRefused)."""
    with contextlib.suppress(PlaywrightError):  # a blocked redirect: aborted, or no navigation at all
        async with page.expect_navigation(timeout=wait_ms):  # the form's POST, answered one way or the other
            await page.locator(button).click()
    if not page.url.startswith(redirect_uri):
        error = page.locator("#error .code")
        if urlsplit(page.url).path == "/console/oauth/consent" and await error.count():
            code = await error.inner_text()
            whole = await page.locator("#error").inner_text()
            raise ConsentRefused(code, whole.split(f"{code}:", 1)[-1].strip())
        raise AssertionError(
            f"not sent back to {redirect_uri} (Chromium said: {console}); the page at {page.url}:\n"
            f"{await _page_text(page)}"
        )
    return page.url


async def _wait_for_path(page: Page, path: str, wait_ms: float) -> None:
    try:
        await page.wait_for_url(lambda url: urlsplit(url).path == path, timeout=wait_ms)
    except PlaywrightTimeout:
        raise AssertionError(f"not at {path} but {page.url}:\n{await _page_text(page)}") from None


async def _page_text(page: Page) -> str:
    with contextlib.suppress(Exception):
        return (await page.locator("body").inner_text())[:3000]
    return "(no page)"


class _ServerV6(http.server.ThreadingHTTPServer):
    address_family = socket.AF_INET6


@dataclass
class CallbackServer:
    """The client's loopback redirect target: `http://127.0.0.1:PORT{path}` on a free port (or
    `http://[::1]:PORT{path}` with host="::1"), served by a thread until the block ends. Each GET of
    `path` is answered 200 and its query queued for `next`."""

    path: str = "/callback"
    host: str = "127.0.0.1"
    received: queue.Queue[dict[str, str]] = field(default_factory=queue.Queue)
    _server: http.server.ThreadingHTTPServer | None = None

    @property
    def redirect_uri(self) -> str:
        assert self._server is not None, "the callback server is not started"
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self._server.server_address[1]}{self.path}"

    def __enter__(self) -> CallbackServer:
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                parts = urlsplit(self.path)
                if parts.path != owner.path:
                    self.send_error(404)
                    return
                owner.received.put({k: v[0] for k, v in parse_qs(parts.query).items()})
                body = b"<!doctype html><title>Signed in</title><p>Signed in: you may close this window.</p>"
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                pass

        kind = _ServerV6 if ":" in self.host else http.server.ThreadingHTTPServer
        self._server = kind((self.host, 0), Handler)
        threading.Thread(target=self._server.serve_forever, name="oauth-callback", daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    async def next(self) -> dict[str, str]:
        """The query of the next redirect the browser brought here (its code or error, its state).
        Waits as long as it takes: bound it with `anyio.fail_after`."""
        while True:
            try:
                return self.received.get_nowait()
            except queue.Empty:
                await anyio.sleep(0.02)  # a poll of the listener thread's queue, which signals nothing
