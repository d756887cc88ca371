"""The console's routes under /console, and `/` sent to the runs page."""

from __future__ import annotations

from pathlib import Path

from starlette.responses import RedirectResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import Receive, Scope, Send

from gateway.console.approvals import approval_routes
from gateway.console.connections import connection_routes
from gateway.console.consent import ConsentPages
from gateway.console.pages import Console, NoOidc
from gateway.console.session import session_key
from gateway.oauth.provider import WarrantAuthorization
from gateway.oidc.settings import OidcSettings

STATIC = Path(__file__).parent / "static"


class ToRuns:
    """`/`: the console's runs page (an ASGI app, so the route names no API permission)."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await RedirectResponse("/console/runs", status_code=303)(scope, receive, send)


def console_routes(
    ledger_key: bytes,
    authorization: WarrantAuthorization | None = None,
    oidc: OidcSettings | None = None,
    public_url: str | None = None,
) -> list[Route | Mount]:
    console = Console(session_key(ledger_key), oidc)
    if oidc is not None:  # signing in through an OpenID Connect provider
        # Imported only where it serves: Authlib and joserfc would cost every start otherwise.
        from gateway.console.oidc import OidcPages

        pages = OidcPages(console, oidc, public_url)
        start, callback = pages.start, pages.callback
    else:
        start = callback = NoOidc(console).__call__
    consent: list[Route] = []
    if authorization is not None:  # MCP authorization's consent page (gateway/console/consent.py)
        pages_of = ConsentPages(console, authorization)
        consent = [
            Route("/oauth/consent", pages_of.show, methods=["GET"]),
            Route("/oauth/consent", pages_of.decide, methods=["POST"]),
        ]
    routes = [
        *consent,
        Route("/login", console.login_form, methods=["GET"]),
        Route("/login", console.login, methods=["POST"]),
        Route("/login/oidc", start, methods=["GET"]),
        Route("/login/oidc/callback", callback, methods=["GET"]),
        Route("/logout", console.logout, methods=["POST"]),
        Mount("/static", StaticFiles(directory=STATIC), name="static"),  # the run page's timeline.js
        Route("/runs", console.page("runs.read", console.runs), methods=["GET"]),
        Route("/runs/{run_id}", console.page("runs.read", console.run), methods=["GET"]),
        Route("/runs/{run_id}/events", console.events, methods=["GET"]),
        Route("/runs/{run_id}/{verb}", console.page("runs.read", console.confirm), methods=["GET"]),
        Route("/runs/{run_id}/{verb}", console.control, methods=["POST"]),
        Route("/dead-letters/{dead_letter_id}/{verb}", console.dead_letter, methods=["POST"]),
        Route("/actions/{action_id}/{verb}", console.action, methods=["POST"]),
        *approval_routes(console),
        *connection_routes(console),
    ]
    return [Route("/", ToRuns()), Mount("/console", routes=routes)]
