"""The consent page of MCP authorization: where a person, signed in to the console, lets a client
act for one run (docs/authorization.md).

`/authorize` (gateway/oauth/) sends the browser here with the checked request sealed in the URL.
Signed out, the person signs in first and comes back. The page names the client and where it
will be sent back to, lists the live runs this key may lease (its tenant's only; a worker key
only the runs given to it) and, for a key that may create runs, the contract templates of the
configuration; each with its contract, budgets and approval rules shown before anything is
chosen. Allow takes the run's lease for the client (a takeover only when ticked) and sends the
browser back to the client with a one-time code; Deny sends it back with `access_denied`.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from gateway.api.routes import gateway_of, run_to_act_for
from gateway.api.views import run_view
from gateway.console import session as sessions
from gateway.console.pages import HEADERS, Console, read_form, shown
from gateway.domain.contract import parse_contract
from gateway.domain.lifecycle import RunStatus
from gateway.domain.roles import permits, require
from gateway.errors import Code, InvalidRequest, NotFound, WarrantError
from gateway.oauth.provider import Consent, WarrantAuthorization
from gateway.oauth.sealed import PendingRequest, unseal
from gateway.service import Gateway
from gateway.store.records import Principal

SCHEME = re.compile(r"[a-z][a-z0-9+.-]{0,63}")
HOST = re.compile(r"[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?")  # urlsplit's hostname is lower-case
LIVE = (RunStatus.RUNNING, RunStatus.WAITING, RunStatus.PAUSED)
MAX_RUNS_SHOWN = 200
MAX_TEXT = 2000


def form_action_source(redirect_uri: str) -> str:
    """The CSP source that admits `redirect_uri` as where the consent form leads, built from the
    URI's parsed parts only (never its raw text: a `;` or a space would end or add a directive).

    `scheme://host[:port]` for a DNS name or an IPv4 address; the scheme alone (`cursor:`) for a
    private-use scheme; and `http:` for an IPv6 loopback (`http://[::1]:PORT/...`, RFC 8252 7.3),
    which CSP cannot name (its host-source has no IPv6 literal: Chromium drops such a source as
    invalid and then blocks the redirect). Plain http is loopback-only here (oauth/clients.py), so
    that widening reaches nothing a person's browser was not already sent to. "" when the URI is
    not one the gateway would accept: nothing is added, and the redirect is blocked."""
    parts = urlsplit(redirect_uri)
    scheme = parts.scheme.lower()
    if not SCHEME.fullmatch(scheme):
        return ""
    try:
        host, port = parts.hostname, parts.port
    except ValueError:
        return ""
    if scheme not in ("http", "https"):
        return f"{scheme}:"
    if host and HOST.fullmatch(host):
        return f"{scheme}://{host}" + (f":{port}" if port is not None else "")
    if scheme == "http" and host is not None and ":" in host:
        return "http:"
    return ""


def template_name(path: Path) -> str:
    return path.stem


class ConsentPages:
    def __init__(self, console: Console, provider: WarrantAuthorization) -> None:
        self.console = console
        self.provider = provider

    def _headers(self, pending: PendingRequest | None) -> dict[str, str]:
        """The page's CSP lets its form lead to the client's redirect URI (Chromium applies
        form-action to where a form's answer redirects), and to nothing else."""
        if pending is None:
            return HEADERS
        csp = HEADERS["Content-Security-Policy"].replace(
            "form-action 'self'", f"form-action 'self' {form_action_source(pending.redirect_uri)}".rstrip()
        )
        return {**HEADERS, "Content-Security-Policy": csp}

    def _pending(self, request: Request, value: str | None) -> PendingRequest | None:
        return unseal(self.provider.consent_key, value, gateway_of(request).clock.now())

    def _expired(self, request: Request, principal: Principal | None, csrf: str = "") -> Response:
        error = InvalidRequest(
            "this sign-in request has expired or was altered: start the connection again from your client",
            code=Code.CONSENT_EXPIRED,
        )
        return self.console.refused(request, error, principal, csrf)

    # -- GET -------------------------------------------------------------------------------
    async def show(self, request: Request) -> Response:
        value = request.query_params.get("request")
        pending = self._pending(request, value)
        if pending is None:
            return self._expired(request, None)
        found = await self.console.signed_in(request)
        if found is None:
            here = f"{request.url.path}?request={quote(value or '')}"
            return RedirectResponse(f"/console/login?next={quote(here)}", status_code=303, headers=HEADERS)
        principal, csrf = found
        return await self._page(request, principal, csrf, pending, value or "")

    async def _page(
        self,
        request: Request,
        principal: Principal,
        csrf: str,
        pending: PendingRequest,
        sealed: str,
        error: WarrantError | None = None,
        status: int = 200,
    ) -> Response:
        gateway = gateway_of(request)
        client = await self.provider.get_client(pending.client_id)
        if client is None:
            return self.console.refused(
                request, NotFound("the client that asked is no longer registered"), principal, csrf
            )
        try:
            require(principal, "leases.acquire")
        except WarrantError as refusal:
            return self.console.refused(request, refusal, principal, csrf)
        runs = await self._runs(gateway, principal)
        templates = self._templates() if permits(principal, "runs.create") else []
        context = {
            "principal": principal,
            "csrf": csrf,
            "request_value": sealed,
            "client": {
                "name": client.client_name or "(the client gave no name)",
                "id": pending.client_id,
                "uri": str(client.client_uri) if client.client_uri else None,
                "redirect": pending.redirect_uri,
                "redirect_host": urlsplit(pending.redirect_uri).netloc or pending.redirect_uri,
            },
            "runs": runs,
            "templates": templates,
            "error": error,
            "resource": pending.resource,
        }
        return self.console.render(request, "consent.html", context, status, headers=self._headers(pending))

    async def _runs(self, gateway: Gateway, principal: Principal) -> list[dict[str, Any]]:
        now = gateway.clock.now()
        shown_runs: list[dict[str, Any]] = []
        for status in LIVE:
            cursor: str | None = None
            while len(shown_runs) < MAX_RUNS_SHOWN:
                page = await gateway.store.list_runs(principal.tenant, status=status.value, cursor=cursor, limit=100)
                for record in page.items:
                    try:
                        await run_to_act_for(gateway, principal, record.run_id)
                    except NotFound:
                        continue
                    view = shown(run_view(record, now))
                    view["contract"] = record.contract
                    view["held"] = (
                        record.lease_worker is not None
                        and record.lease_revoked_at is None
                        and (record.status is not RunStatus.RUNNING or (record.lease_expires_at or 0) > now)
                    )
                    shown_runs.append(view)
                cursor = page.next_cursor
                if cursor is None:
                    break
        return shown_runs[:MAX_RUNS_SHOWN]

    def _templates(self) -> list[dict[str, Any]]:
        out = []
        for path in self.provider.settings.contract_templates:
            try:
                contract = json.loads(path.read_text())
            except (OSError, ValueError):
                continue
            if isinstance(contract, dict):
                out.append({"name": template_name(path), "contract": contract})
        return out

    # -- POST ------------------------------------------------------------------------------
    async def decide(self, request: Request) -> Response:
        found = await self.console.signed_in(request)
        if found is None:
            return self.console.signed_out(request)
        principal, csrf = found
        form = await read_form(request)
        if not sessions.token_matches(csrf, form.get("csrf")):
            return self.console.csrf_refused(request, principal)
        sealed = form.get("request", "")
        pending = self._pending(request, sealed)
        if pending is None:
            return self._expired(request, principal, csrf)
        headers = self._headers(pending)
        if form.get("decision") != "allow":
            return RedirectResponse(self.provider.denied(pending), status_code=303, headers=headers)
        gateway = gateway_of(request)
        try:
            require(principal, "leases.acquire")
            run_id = await self._chosen_run(gateway, principal, form)
            target = await self.provider.consent(
                principal, pending, Consent(run_id=run_id, takeover=form.get("takeover") == "on")
            )
        except WarrantError as error:
            return await self._page(request, principal, csrf, pending, sealed, error, error.http_status)
        return RedirectResponse(target, status_code=303, headers=headers)

    async def _chosen_run(self, gateway: Gateway, principal: Principal, form: dict[str, str]) -> str:
        choice = form.get("choice", "")
        kind, _, name = choice.partition(":")
        if kind == "run" and name:
            await run_to_act_for(gateway, principal, name)
            return name
        if kind == "new" and name:
            require(principal, "runs.create")
            templates = {t["name"]: t["contract"] for t in self._templates()}
            if name not in templates:
                raise NotFound(f"no contract template {name}")
            contract = dict(templates[name])
            for field in ("goal", "owner"):
                value = form.get(f"{field}-{name}", "").strip()
                if len(value) > MAX_TEXT:
                    raise InvalidRequest(f"the {field} is over {MAX_TEXT} characters", code=Code.INVALID_REQUEST)
                if value:
                    contract[field] = value
            parsed = parse_contract(contract)
            gateway.check_against_policy(parsed)
            run = await gateway.store.create_run(principal, parsed)
            return run.run_id
        raise InvalidRequest(
            "choose a run to act for, or a contract to start a new run from", code=Code.INVALID_REQUEST
        )
