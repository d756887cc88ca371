"""Signing in to the console through the OpenID Connect provider of `console_sign_in.oidc`
(docs/oidc.md); the relying party's protocol work is gateway/oidc/client.py.

`GET /console/login/oidc?next=...` starts: a fresh state, nonce and PKCE verifier, sealed with
the page to come back to into a short-lived cookie of this browser (SameSite=Lax, so that it comes
back with the provider's redirect, a cross-site navigation), then the browser goes to the provider.

`GET /console/login/oidc/callback?code&state` finishes: the cookie must be there, unaltered and
young, and its state the one the provider sent back (else `oidc_state_mismatch`: a sign-in
started in another browser, a forged callback; the sign-in under way stays usable); the code is
exchanged and the ID token checked; the claim's value must be one of `users` (else
`oidc_not_allowed`, 403). The session then names the identity's digest, and the browser goes on
to `next` (the consent page that sent it here) or the runs.

The session cookie is SameSite=Strict, which a browser leaves out of a navigation that began at
another site, and this one began at the provider's: the callback answers with a short page that
moves on from the gateway's own site, so the first page after sign-in has its session.
"""

from __future__ import annotations

import hmac

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from gateway.api.routes import gateway_of
from gateway.console import session as sessions
from gateway.console.pages import HEADERS, Console, landing, safe_next
from gateway.errors import Code, InvalidRequest, Unauthenticated, WarrantError
from gateway.oidc import client as oidc_client
from gateway.oidc.settings import OidcSettings
from gateway.store.records import Principal

CALLBACK = "/console/login/oidc/callback"
FLOW_SECONDS = 600  # how long a sign-in may stay at the provider
FLOW_PURPOSE = "oidc-flow"
MAX_COOKIE = 3800  # bytes: browsers keep a cookie of up to about 4 KB


class OidcPages:
    def __init__(self, console: Console, settings: OidcSettings, public_url: str | None = None) -> None:
        self.console = console
        self.settings = settings
        self.public_url = public_url
        self.client = oidc_client.OidcClient(settings)

    def redirect_uri(self, request: Request) -> str:
        if self.settings.redirect_uri is not None:
            return self.settings.redirect_uri
        base = self.public_url or f"{request.url.scheme}://{request.url.netloc}"
        return base.rstrip("/") + CALLBACK

    async def start(self, request: Request) -> Response:
        next_page = safe_next(request.query_params.get("next"))
        gateway = gateway_of(request)
        redirect_uri = self.redirect_uri(request)
        try:
            started = await self.client.start(redirect_uri)
        except WarrantError as error:
            return self.console.login_page(request, error, next_page=next_page)
        flow = {
            "state": started.state,
            "nonce": started.nonce,
            "verifier": started.verifier,
            "redirect_uri": redirect_uri,
            "next": next_page,
            "expires": gateway.clock.now() + FLOW_SECONDS,
        }
        sealed = sessions.seal_data(self.console.key, FLOW_PURPOSE, flow)
        if len(sealed) > MAX_COOKIE:
            too_long = InvalidRequest(
                "the page to come back to is too long to carry through the provider's sign-in: "
                "sign in first, then start again from your client",
                code=Code.INVALID_REQUEST,
            )
            return self.console.login_page(request, too_long, next_page=next_page)
        response = RedirectResponse(started.url, status_code=303, headers=HEADERS)
        sessions.set_cookie(
            request,
            response,
            sessions.OIDC_COOKIE,
            sealed,
            max_age=FLOW_SECONDS,
            samesite="lax",
            path=sessions.OIDC_COOKIE_PATH,
        )
        return response

    async def callback(self, request: Request) -> Response:
        gateway = gateway_of(request)
        params = request.query_params
        flow = sessions.unseal_data(
            self.console.key, FLOW_PURPOSE, request.cookies.get(sessions.OIDC_COOKIE), gateway.clock.now()
        )
        next_page: str | None = None
        matched = False  # the browser's own sign-in answered: its cookie is used up, whatever follows
        try:
            if flow is None:
                raise oidc_client.state_refused(
                    "this sign-in was not started in this browser, or took longer than "
                    f"{FLOW_SECONDS // 60} minutes: sign in again"
                )
            next_page = safe_next(flow.get("next"))
            given = params.get("state", "")
            if not given or not hmac.compare_digest(str(flow["state"]).encode(), given.encode()):
                # Someone else's callback (a link to sign this browser in as them): refused, and the
                # sign-in this browser has under way is left to finish.
                raise oidc_client.state_refused(
                    "the provider's answer does not belong to the sign-in this browser started"
                )
            matched = True
            if "error" in params:
                description = params.get("error_description", "")[:300]
                raise Unauthenticated(
                    f"{self.settings.label} did not sign you in: {params['error'][:100]}"
                    + (f": {description}" if description else ""),
                    code=Code.OIDC_DENIED,
                )
            code = params.get("code", "")
            if not code:
                raise oidc_client.state_refused("the provider's answer carries no code")
            identity = await self.client.finish(
                code, str(flow["redirect_uri"]), nonce=str(flow["nonce"]), verifier=str(flow["verifier"])
            )
            user = self.settings.user_for(identity.value)
            if user is None:
                raise oidc_client.not_allowed(self.settings.label, identity.value)
        except WarrantError as error:
            response = self.console.login_page(request, error, next_page=next_page)
            if matched:
                response.delete_cookie(sessions.OIDC_COOKIE, path=sessions.OIDC_COOKIE_PATH)
            return response
        principal = Principal(name=user.name, tenant=user.tenant, roles=user.roles)
        session = sessions.new_session(self.settings.digest(identity.value), gateway.clock.now())
        target = landing(principal, next_page)
        context = {"principal": None, "csrf": "", "target": target, "who": user.name}
        # Not a redirect: a page of the gateway's own site that moves on (module docstring).
        response = self.console.render(request, "signed_in.html", context)
        self.console.start_session(request, response, session)
        response.delete_cookie(sessions.OIDC_COOKIE, path=sessions.OIDC_COOKIE_PATH)
        return response
