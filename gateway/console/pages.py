"""The console's pages: sign-in and -out, the runs, one run with its pause / resume / cancel forms.

Each page authenticates its session's key again and asks `gateway.roles.require` for the very
permission the matching API route names, then calls the same store and service functions, scoped
to the key's tenant: what a key may see and do here is what it may through /api. Every form POST
checks its CSRF token before anything else; a refusal shows the API's error code and status.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import jinja2
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.templating import Jinja2Templates

from gateway.api.routes import authenticate_key, gateway_of
from gateway.api.views import run_view
from gateway.console import session as sessions
from gateway.errors import Forbidden, NotFound, Unauthenticated, WarrantError
from gateway.roles import permits, require
from gateway.service import Gateway
from gateway.store.records import Principal

MAX_FORM = 16 * 1024
HEADERS = {
    "Cache-Control": "no-store",
    # Defence in depth behind autoescaping: no script runs, no frame embeds these pages.
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; "
    "frame-ancestors 'none'; base-uri 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}
CONTROLS = ("pause", "resume", "cancel")


class Console:
    """The pages, holding the session signing key and the templates."""

    def __init__(self, key: bytes) -> None:
        self.key = key
        env = jinja2.Environment(
            loader=jinja2.FileSystemLoader(Path(__file__).parent / "templates"),
            autoescape=True,  # every value, whatever the file's name
            undefined=jinja2.StrictUndefined,
        )
        env.globals["may"] = permits  # the nav shows the pages a key's roles may read
        self.templates = Jinja2Templates(env=env)

    # -- rendering -------------------------------------------------------------------------
    def render(self, request: Request, name: str, context: dict[str, Any], status: int = 200) -> Response:
        return self.templates.TemplateResponse(request, name, context, status_code=status, headers=HEADERS)

    def refused(self, request: Request, error: WarrantError, principal: Principal | None, csrf: str = "") -> Response:
        context = {"code": error.code, "message": error.message, "status": error.http_status}
        return self.render(
            request, "refused.html", {**context, "principal": principal, "csrf": csrf}, error.http_status
        )

    # -- sign-in ---------------------------------------------------------------------------
    async def login_form(self, request: Request) -> Response:
        return self._login_page(request)

    def _login_page(self, request: Request, error: WarrantError | None = None) -> Response:
        nonce = secrets.token_urlsafe(16)
        status = error.http_status if error is not None else 200
        context = {"token": sessions.login_token(self.key, nonce), "error": error, "principal": None, "csrf": ""}
        response = self.render(request, "login.html", context, status)
        sessions.set_cookie(request, response, sessions.LOGIN_COOKIE, nonce, max_age=3600)
        return response

    async def login(self, request: Request) -> Response:
        form = await read_form(request)
        nonce = request.cookies.get(sessions.LOGIN_COOKIE, "")
        if not nonce or not sessions.token_matches(sessions.login_token(self.key, nonce), form.get("csrf")):
            return self.csrf_refused(request, None)
        gateway = gateway_of(request)
        key = form.get("api_key", "").strip()
        # The API's own authentication, on a request carrying the key as the API takes it.
        as_api = Request({"type": "http", "headers": [(b"authorization", f"Bearer {key}".encode())]})
        try:
            if not key or "\n" in key or "\r" in key:
                raise Unauthenticated("an API key is required")
            principal = await authenticate_key(as_api, gateway)
        except WarrantError as error:
            return self._login_page(request, error)
        session = sessions.new_session(hashlib.sha256(key.encode()).hexdigest(), gateway.clock.now())
        # A key that may not read runs (an approver) lands on what it may read: the approvals.
        landing = "/console/approvals" if not permits(principal, "runs.read") else "/console/runs"
        response = RedirectResponse(landing, status_code=303, headers=HEADERS)
        sessions.set_cookie(
            request, response, sessions.COOKIE, sessions.seal(self.key, session), max_age=sessions.SESSION_SECONDS
        )
        response.delete_cookie(sessions.LOGIN_COOKIE, path="/")
        return response

    async def logout(self, request: Request) -> Response:
        session = sessions.unseal(self.key, request.cookies.get(sessions.COOKIE), gateway_of(request).clock.now())
        if session is not None:
            form = await read_form(request)
            if not sessions.token_matches(sessions.csrf_token(self.key, session.session_id), form.get("csrf")):
                return self.csrf_refused(request, None)
        response = RedirectResponse("/console/login", status_code=303, headers=HEADERS)
        response.delete_cookie(sessions.COOKIE, path="/", httponly=True, samesite="strict")
        return response

    def csrf_refused(self, request: Request, principal: Principal | None) -> Response:
        error = Forbidden(
            "the form carried no valid CSRF token: nothing was changed; reload the page and try again",
            code="csrf_failed",
        )
        return self.refused(request, error, principal)

    # -- signed-in pages -------------------------------------------------------------------
    async def signed_in(self, request: Request) -> tuple[Principal, str] | None:
        """The session's principal, looked up again now, and its CSRF token; None when signed out."""
        gateway = gateway_of(request)
        session = sessions.unseal(self.key, request.cookies.get(sessions.COOKIE), gateway.clock.now())
        if session is None:
            return None
        principal = await sessions.principal_for_digest(gateway, session.key_sha256)
        if principal is None:
            return None  # revoked or expired since sign-in: the session ends here
        return principal, sessions.csrf_token(self.key, session.session_id)

    def page(
        self, permission: str, handler: Callable[[Request, Principal, Gateway, str], Awaitable[Response]]
    ) -> Callable[[Request], Awaitable[Response]]:
        """A GET page: signed in, `permission` granted (as the API route requires it), or refused."""

        async def route(request: Request) -> Response:
            found = await self.signed_in(request)
            if found is None:
                return self.signed_out(request)
            principal, csrf = found
            try:
                require(principal, permission)
                return await handler(request, principal, gateway_of(request), csrf)
            except WarrantError as error:
                return self.refused(request, error, principal, csrf)

        route.__name__ = handler.__name__
        return route

    async def form_post(
        self, request: Request, verbs: tuple[str, ...]
    ) -> tuple[Principal, str, dict[str, str]] | Response:
        """A form POST's principal, CSRF token and fields; or the refusal to answer with, when the path's
        verb is not one of `verbs`, the session is missing or the form does not carry the session's CSRF
        token (nothing else is looked at then)."""
        if request.path_params["verb"] not in verbs:
            return self.refused(request, NotFound(f"no route POST {request.url.path}"), None)
        found = await self.signed_in(request)
        if found is None:
            return self.signed_out(request)
        principal, csrf = found
        form = await read_form(request)
        if not sessions.token_matches(csrf, form.get("csrf")):
            return self.csrf_refused(request, principal)
        return principal, csrf, form

    def signed_out(self, request: Request) -> Response:
        if request.method == "GET":
            return RedirectResponse("/console/login", status_code=303, headers=HEADERS)
        return self.refused(request, Unauthenticated("sign in first: the session is missing, expired or revoked"), None)

    async def runs(self, request: Request, principal: Principal, gateway: Gateway, csrf: str) -> Response:
        """The tenant's runs, newest first, as GET /api/runs lists them (one page)."""
        page = await gateway.store.list_runs(principal.tenant, status=None, cursor=request.query_params.get("cursor"))
        now = gateway.clock.now()
        runs = [shown(run_view(r, now)) for r in page.items]
        context = {"principal": principal, "csrf": csrf, "runs": runs, "next_cursor": page.next_cursor}
        return self.render(request, "runs.html", context)

    async def run(self, request: Request, principal: Principal, gateway: Gateway, csrf: str) -> Response:
        run = await gateway.store.get_run(principal.tenant, request.path_params["run_id"])
        context = {
            "principal": principal,
            "csrf": csrf,
            "run": shown(run_view(run, gateway.clock.now())),
            "may_control": permits(principal, "runs.control"),
        }
        return self.render(request, "run.html", context)

    async def control(self, request: Request) -> Response:
        """POST pause / resume / cancel: the session, then the CSRF token, then `runs.control`."""
        posted = await self.form_post(request, CONTROLS)
        if isinstance(posted, Response):
            return posted
        principal, csrf, form = posted
        gateway, run_id, verb = gateway_of(request), request.path_params["run_id"], request.path_params["verb"]
        reason = form.get("reason", "").strip()[:2000] or None
        try:
            require(principal, "runs.control")
            if verb == "pause":
                await gateway.pause(principal, run_id, reason)
            elif verb == "resume":
                await gateway.resume_reconciled(principal, run_id, reason)
            else:
                await gateway.cancel(principal, run_id, reason, hard=form.get("hard") == "true")
        except WarrantError as error:
            return self.refused(request, error, principal, csrf)
        return RedirectResponse(f"/console/runs/{run_id}", status_code=303, headers=HEADERS)


async def read_form(request: Request) -> dict[str, str]:
    """An urlencoded form's fields (the first value of each); anything else reads as empty."""
    if not request.headers.get("content-type", "").startswith("application/x-www-form-urlencoded"):
        return {}
    body = await request.body()
    if len(body) > MAX_FORM:
        return {}
    try:
        fields = parse_qs(body.decode(), keep_blank_values=True, max_num_fields=20)
    except (UnicodeDecodeError, ValueError):
        return {}
    return {name: values[0] for name, values in fields.items()}


def shown(view: dict[str, Any]) -> dict[str, Any]:
    """The API's run view with each budget's bar widths (percent of its limit)."""
    bars = {}
    for dim, budget in view["budgets"].items():
        limit = _number(budget["limit"])
        spent, reserved = _number(budget["spent"]), _number(budget["reserved"])
        spent_pct = min(100.0, 100.0 * spent / limit) if limit > 0 else 0.0
        reserved_pct = min(100.0 - spent_pct, 100.0 * reserved / limit) if limit > 0 else 0.0
        bars[dim] = {**budget, "spent_pct": round(spent_pct, 1), "reserved_pct": round(reserved_pct, 1)}
    return {**view, "bars": bars}


def _number(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return 0.0
