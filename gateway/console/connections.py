"""The console's disconnect of a connected client (MCP authorization's grant, gateway/oauth/): the
confirmation page, then its form, as pause and cancel go (gateway/console/pages.py).

As the API (gateway/api/connections.py): the run page lists connections with `runs.read`;
disconnecting needs `runs.control` and a reason, and is the store's own `revoke_oauth_grant`,
scoped to the key's tenant and to the run the page named (another run's grant is 404). The form
POST checks the session's CSRF token before anything else.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from gateway.api.connections import connection_view
from gateway.api.routes import gateway_of
from gateway.api.views import run_view
from gateway.console.pages import HEADERS, Console
from gateway.domain.roles import require
from gateway.errors import InvalidRequest, NotFound, WarrantError
from gateway.service import Gateway
from gateway.store.records import Principal

VERBS = ("disconnect",)
MAX_REASON = 2000


def connection_routes(console: Console) -> list[Route]:
    pages = ConnectionPages(console)
    path = "/runs/{run_id}/connections/{grant_id}/{verb}"
    return [
        Route(path, console.page("runs.read", pages.confirm), methods=["GET"]),
        Route(path, pages.disconnect, methods=["POST"]),
    ]


class ConnectionPages:
    def __init__(self, console: Console) -> None:
        self.console = console

    async def confirm(self, request: Request, principal: Principal, gateway: Gateway, csrf: str) -> Response:
        """GET .../connections/{grant_id}/disconnect: the client, who let it in, what disconnecting
        does, and the form that does it."""
        if request.path_params["verb"] not in VERBS:
            raise NotFound(f"no route GET {request.url.path}")
        require(principal, "runs.control")  # as the POST will: refused here rather than after the form
        run_id, grant_id = request.path_params["run_id"], request.path_params["grant_id"]
        record = await gateway.store.get_run(principal.tenant, run_id)
        now = gateway.clock.now()
        grants = await gateway.store.list_oauth_grants(principal.tenant, run_id, limit=500)
        found = [g for g in grants if g.grant_id == grant_id]
        if not found:
            raise NotFound(f"no connected client {grant_id} on run {run_id}")
        context = {
            "principal": principal,
            "csrf": csrf,
            "run": run_view(record, now),
            "connection": connection_view(found[0], record, now),
        }
        return self.console.render(request, "disconnect.html", context)

    async def disconnect(self, request: Request) -> Response:
        """POST: the session, then the CSRF token, then `runs.control` and a reason."""
        posted = await self.console.form_post(request, VERBS)
        if isinstance(posted, Response):
            return posted
        principal, csrf, form = posted
        gateway = gateway_of(request)
        run_id, grant_id = request.path_params["run_id"], request.path_params["grant_id"]
        reason = form.get("reason", "").strip()
        try:
            require(principal, "runs.control")
            if not reason:
                raise InvalidRequest("say why the client is disconnected: the reason is recorded in the run's history")
            if len(reason) > MAX_REASON:
                raise InvalidRequest(f"the reason is over {MAX_REASON} characters")
            await gateway.store.get_run(principal.tenant, run_id)
            await gateway.store.revoke_oauth_grant(
                grant_id, reason=reason, by=principal.name, tenant=principal.tenant, run_id=run_id
            )
        except WarrantError as error:
            return self.console.refused(request, error, principal, csrf)
        return RedirectResponse(f"/console/runs/{run_id}#connections", status_code=303, headers=HEADERS)
