"""The console's pages: sign-in (an API key here; the OpenID Connect provider in
gateway/console/oidc.py) and -out, the runs, one run (its live timeline, ledger, progress and
cost), the confirmation page of each of pause / resume / cancel / fail, the run page's signal form
(`runs.signal`, as POST /api/runs/{id}/signal), and the run's event stream.

Each page authenticates its session's key again and asks `gateway.domain.roles.require` for the very
permission the matching API route names, then calls the same store and service functions, scoped
to the key's tenant: what a key may see and do here is what it may through /api. Every form POST
checks its CSRF token before anything else; a refusal shows the API's error code and status.
"""

from __future__ import annotations

import hashlib
import json
import secrets
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote

import jinja2
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.templating import Jinja2Templates

from gateway.api.events import run_events
from gateway.api.routes import authenticate_key, gateway_of, run_to_act_for
from gateway.api.views import run_view
from gateway.console import run_detail
from gateway.console import session as sessions
from gateway.domain.roles import permits, require
from gateway.domain.waits import signal_problems
from gateway.errors import Code, Conflict, Forbidden, InvalidRequest, NotFound, Unauthenticated, WarrantError
from gateway.gate.compensations import Compensations
from gateway.oidc.settings import OidcSettings
from gateway.service import Gateway
from gateway.store.records import Principal
from gateway.store.retry_records import DeadLetterStatus
from gateway.text import escape_nul
from gateway.tools.standing_view import read_standing, standing_view

MAX_FORM = 16 * 1024
HEADERS = {
    "Cache-Control": "no-store",
    # Defence in depth behind autoescaping: no script runs, no frame embeds these pages.
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; "
    "frame-ancestors 'none'; base-uri 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}
# The run page's live timeline: its one script file, served by the gateway, reading its event stream.
LIVE_HEADERS = {
    **HEADERS,
    "Content-Security-Policy": "default-src 'none'; script-src 'self'; connect-src 'self'; "
    "style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
}
CONTROLS = ("pause", "resume", "cancel", "fail")
DEAD_LETTER_VERBS = ("retry", "resolve", "drop")
ACTION_VERBS = ("compensate",)


class Console:
    """The pages, holding the session signing key and the templates."""

    def __init__(self, key: bytes, oidc: OidcSettings | None = None) -> None:
        self.key = key
        self.oidc = oidc  # `console_sign_in.oidc`: "Sign in with <provider>" beside the key form
        env = jinja2.Environment(
            loader=jinja2.FileSystemLoader(Path(__file__).parent / "templates"),
            autoescape=True,  # every value, whatever the file's name
            undefined=jinja2.StrictUndefined,
        )
        env.globals["may"] = permits  # the nav shows the pages a key's roles may read
        self.templates = Jinja2Templates(env=env)

    # -- rendering -------------------------------------------------------------------------
    def render(
        self, request: Request, name: str, context: dict[str, Any], status: int = 200, headers: dict[str, str] = HEADERS
    ) -> Response:
        return self.templates.TemplateResponse(request, name, context, status_code=status, headers=headers)

    def refused(self, request: Request, error: WarrantError, principal: Principal | None, csrf: str = "") -> Response:
        context = {"code": error.code, "message": error.message, "status": error.http_status}
        return self.render(
            request, "refused.html", {**context, "principal": principal, "csrf": csrf}, error.http_status
        )

    # -- sign-in ---------------------------------------------------------------------------
    async def login_form(self, request: Request) -> Response:
        return self.login_page(request, next_page=safe_next(request.query_params.get("next")))

    def login_page(self, request: Request, error: WarrantError | None = None, next_page: str | None = None) -> Response:
        nonce = secrets.token_urlsafe(16)
        status = error.http_status if error is not None else 200
        context = {
            "token": sessions.login_token(self.key, nonce),
            "error": error,
            "principal": None,
            "csrf": "",
            "next": next_page,
            "oidc": self.oidc.label if self.oidc is not None else None,
            "oidc_url": "/console/login/oidc" + (f"?next={quote(next_page, safe='')}" if next_page else ""),
        }
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
            return self.login_page(request, error, next_page=safe_next(form.get("next")))
        session = sessions.new_session(hashlib.sha256(key.encode()).hexdigest(), gateway.clock.now())
        response = RedirectResponse(landing(principal, form.get("next")), status_code=303, headers=HEADERS)
        self.start_session(request, response, session)
        return response

    def start_session(self, request: Request, response: Response, session: sessions.Session) -> None:
        sessions.set_cookie(
            request, response, sessions.COOKIE, sessions.seal(self.key, session), max_age=sessions.SESSION_SECONDS
        )
        response.delete_cookie(sessions.LOGIN_COOKIE, path="/")

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
            code=Code.CSRF_FAILED,
        )
        return self.refused(request, error, principal)

    # -- signed-in pages -------------------------------------------------------------------
    async def signed_in(self, request: Request) -> tuple[Principal, str] | None:
        """The session's principal, looked up again now, and its CSRF token; None when signed out."""
        gateway = gateway_of(request)
        session = sessions.unseal(self.key, request.cookies.get(sessions.COOKIE), gateway.clock.now())
        if session is None:
            return None
        principal = await sessions.principal_for_digest(gateway, session.key_sha256, self.oidc)
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
        alerts = await run_detail.alerts_by_run(gateway, principal.tenant)
        runs = []
        for record in page.items:
            run = shown(run_view(record, now))
            run["last_heartbeat"] = run_detail.last_heartbeat(record)
            run["last_verified"] = await run_detail.last_verified(gateway, record.run_id)
            run["alerts"] = run_detail.alert_kinds(alerts.get(record.run_id, []))
            runs.append(run)
        context = {
            "principal": principal,
            "csrf": csrf,
            "runs": runs,
            "next_cursor": page.next_cursor,
            "damaged": page.damaged,
        }
        return self.render(request, "runs.html", context)

    async def run(self, request: Request, principal: Principal, gateway: Gateway, csrf: str) -> Response:
        """One run: the API's run view, then its timeline (live with timeline.js), ledger, progress, cost."""
        tenant = principal.tenant
        record = await gateway.store.get_run(tenant, request.path_params["run_id"])
        run = shown(run_view(record, gateway.clock.now()))
        run["last_heartbeat"] = run_detail.last_heartbeat(record)
        run["last_verified"] = await run_detail.last_verified(gateway, record.run_id)
        run["standing"] = standing_view(await read_standing(gateway.store, record, gateway.clock.now()))
        alerts = (await run_detail.alerts_by_run(gateway, tenant)).get(record.run_id, [])
        context = {
            "principal": principal,
            "csrf": csrf,
            "run": run,
            "alerts": alerts,
            "may_control": permits(principal, "runs.control"),
            "may_signal": permits(principal, "runs.signal"),
            "waits": await run_detail.waits(gateway, record.run_id),
            "signal_key": f"console-{secrets.token_hex(12)}",  # fresh on every load: one send, one signal
            "signalled": _signalled(request),
            "may_read_events": permits(principal, "events.read"),
            "may_read_actions": permits(principal, "actions.read"),
            "timeline": None,
            "ledger": None,
            "progress": await run_detail.progress(gateway, tenant, record.run_id),
            "cost": await run_detail.cost_by_tag(gateway, tenant, record.run_id),
            "connections": await run_detail.connections(gateway, tenant, record),
            "dead_letters": [d.view() for d in await gateway.store.list_dead_letters(tenant, record.run_id)],
            "may_decide_dead_letters": permits(principal, "actions.resolve"),
            # Each tool whose policy names its undo, and the tool that undoes it (docs/compensation.md).
            "compensating": gateway.gate.catalog.compensating_tools(),
            "may_compensate": permits(principal, "actions.resolve"),
        }
        # What the API would refuse this key (events.read, actions.read) the page leaves out.
        if context["may_read_events"]:
            context["timeline"] = await run_detail.timeline(gateway, tenant, record.run_id)
        if context["may_read_actions"]:
            context["ledger"] = await run_detail.ledger(gateway, tenant, record)
        return self.render(request, "run.html", context, headers=LIVE_HEADERS)

    async def confirm(self, request: Request, principal: Principal, gateway: Gateway, csrf: str) -> Response:
        """GET /console/runs/{id}/{verb}: what pause, resume, cancel or fail will do, and the form that does it."""
        verb = request.path_params["verb"]
        if verb not in CONTROLS:
            raise NotFound(f"no route GET {request.url.path}")
        require(principal, "runs.control")  # as the POST will: refused here rather than after the form
        record = await gateway.store.get_run(principal.tenant, request.path_params["run_id"])
        context = {"principal": principal, "csrf": csrf, "run": run_view(record, gateway.clock.now()), "verb": verb}
        return self.render(request, "confirm.html", context)

    async def events(self, request: Request) -> Response:
        """The run's history followed as Server-Sent Events for the timeline: the API's stream, with the
        session's key and the API's permission (`events.read`) checked again while it stays open."""
        found = await self.signed_in(request)
        if found is None:
            return self.refused(request, Unauthenticated("sign in first: the session is missing or expired"), None)
        principal, csrf = found
        gateway = gateway_of(request)

        async def still_allowed() -> bool:
            now = await self.signed_in(request)
            return now is not None and now[0].tenant == principal.tenant and permits(now[0], "events.read")

        try:
            require(principal, "events.read")
            return await run_events(request, principal.tenant, gateway, limit=100, recheck=still_allowed, named=False)
        except WarrantError as error:
            return self.refused(request, error, principal, csrf)

    async def control(self, request: Request) -> Response:
        """POST pause / resume / cancel / fail: the session, then the CSRF token, then `runs.control`.
        POST signal: the same, then `runs.signal` (`signal`)."""
        posted = await self.form_post(request, (*CONTROLS, "signal"))
        if isinstance(posted, Response):
            return posted
        principal, csrf, form = posted
        gateway, run_id, verb = gateway_of(request), request.path_params["run_id"], request.path_params["verb"]
        if verb == "signal":
            return await self.signal(request, principal, csrf, form)
        reason = form.get("reason", "").strip()[:2000] or None
        try:
            require(principal, "runs.control")
            if verb == "pause":
                await gateway.pause(principal, run_id, reason)
            elif verb == "resume":
                await gateway.resume_reconciled(principal, run_id, reason)
            elif verb == "fail":
                if reason is None:  # the run's cause: the API refuses a fail without one too
                    raise InvalidRequest(
                        "a fail needs a reason", problems=[{"field": "reason", "problem": "is required"}]
                    )
                await gateway.fail(principal, run_id, reason)
            else:
                await gateway.cancel(principal, run_id, reason, hard=form.get("hard") == "true")
        except WarrantError as error:
            return self.refused(request, error, principal, csrf)
        return RedirectResponse(f"/console/runs/{run_id}", status_code=303, headers=HEADERS)

    async def signal(self, request: Request, principal: Principal, csrf: str, form: dict[str, str]) -> Response:
        """POST signal {name, payload, idempotency_key}: what POST /api/runs/{id}/signal does, for
        the same keys; back on the run page with its outcome."""
        gateway, run_id = gateway_of(request), request.path_params["run_id"]
        try:
            require(principal, "runs.signal")
            run = await run_to_act_for(gateway, principal, run_id)
            name, key, text = (
                form.get("name", "").strip(),
                form.get("idempotency_key", "").strip(),
                form.get("payload", ""),
            )
            try:
                payload = json.loads(text) if text.strip() else None
                problems = signal_problems(name, payload, key)
            except json.JSONDecodeError as exc:
                problems = [{"field": "payload", "problem": f"is not JSON ({exc.msg}, line {exc.lineno})"}]
            if problems:  # the API's code, and each problem said on the page (it shows the message)
                said = "; ".join(f"{p['field']} {p['problem']}" for p in problems)
                raise InvalidRequest(
                    f"the signal is not one the gateway records: {said}", code=Code.SIGNAL_INVALID, problems=problems
                )
            answer = await gateway.store.signal_run(
                principal, run.run_id, name=name, payload=payload, idempotency_key=key
            )
        except WarrantError as error:
            return self.refused(request, error, principal, csrf)
        outcome = "replayed" if answer.replayed else ("woke" if answer.woke else "kept")
        to = (
            f"/console/runs/{quote(run_id, safe='')}?signal={quote(answer.signal.signal_id, safe='')}&outcome={outcome}"
        )
        return RedirectResponse(f"{to}#signals", status_code=303, headers=HEADERS)

    async def dead_letter(self, request: Request) -> Response:
        """POST retry / resolve / drop of a dead letter: the session, the CSRF token, `actions.resolve`."""
        posted = await self.form_post(request, DEAD_LETTER_VERBS)
        if isinstance(posted, Response):
            return posted
        principal, csrf, form = posted
        gateway, dead_letter_id, verb = (
            gateway_of(request),
            request.path_params["dead_letter_id"],
            request.path_params["verb"],
        )
        reason = form.get("reason", "").strip()[:2000]
        try:
            require(principal, "actions.resolve")
            if not reason:
                raise InvalidRequest(
                    "a decision needs a reason", problems=[{"field": "reason", "problem": "is required"}]
                )
            if verb == "retry":
                letter, _ = await gateway.retry_dead_letter(principal, dead_letter_id, reason)
            else:
                status = DeadLetterStatus.RESOLVED if verb == "resolve" else DeadLetterStatus.DROPPED
                letter = await gateway.store.decide_dead_letter(principal, dead_letter_id, status, reason)
        except WarrantError as error:
            return self.refused(request, error, principal, csrf)
        return RedirectResponse(f"/console/runs/{letter.run_id}", status_code=303, headers=HEADERS)

    async def action(self, request: Request) -> Response:
        """POST compensate {reason}: what POST /api/actions/{id}/compensate does, for the same keys;
        back on the run page at its confirmed effects, or the refusal when nothing was dispatched."""
        posted = await self.form_post(request, ACTION_VERBS)
        if isinstance(posted, Response):
            return posted
        principal, csrf, form = posted
        gateway, action_id = gateway_of(request), request.path_params["action_id"]
        reason = form.get("reason", "").strip()[:2000]
        try:
            require(principal, "actions.resolve")
            original = await gateway.store.get_action(principal.tenant, action_id)
            result = await Compensations(gateway.gate).for_operator(principal, action_id, reason)
            if result.is_error and result.code != Code.OUTCOME_UNKNOWN:
                error = (result.structured or {}).get("error") or {}
                raise Conflict(
                    str(error.get("message") or "the compensation was refused"), code=result.code or Code.CONFLICT
                )
        except WarrantError as error:
            return self.refused(request, error, principal, csrf)
        return RedirectResponse(
            f"/console/runs/{quote(original.run_id, safe='')}#confirmed", status_code=303, headers=HEADERS
        )


def _signalled(request: Request) -> dict[str, str] | None:
    """The outcome of the signal the form just sent, from the redirect's query (shown, not trusted)."""
    signal_id, outcome = request.query_params.get("signal"), request.query_params.get("outcome")
    if not signal_id or outcome not in ("woke", "kept", "replayed"):
        return None
    return {"signal_id": signal_id[:64], "outcome": outcome}


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
    # PostgreSQL's text columns refuse U+0000: a reason or a note keeps it escaped, readably (gateway/text.py).
    return {name: escape_nul(values[0]) for name, values in fields.items()}


def landing(principal: Principal, next_page: str | None) -> str:
    """Where a sign-in ends: back to the page that sent the person here (the consent page), else the
    runs; a key that may not read runs (an approver) lands on what it may read, the approvals."""
    default = "/console/approvals" if not permits(principal, "runs.read") else "/console/runs"
    return safe_next(next_page) or default


def safe_next(value: str | None) -> str | None:
    """Where sign-in may send the browser on to: a console page of this gateway, nothing else."""
    if not value or len(value) > 16_384 or not value.startswith("/console/") or "\\" in value:
        return None
    if value.startswith("//") or any(c in value for c in "\r\n"):
        return None
    return value


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


class NoOidc:
    """The two routes on a gateway without `console_sign_in.oidc`: a clear 404."""

    def __init__(self, console: Console) -> None:
        self.console = console

    async def __call__(self, request: Request) -> Response:
        error = NotFound("this gateway has no OpenID Connect provider configured: sign in with an API key")
        return self.console.login_page(request, error)
