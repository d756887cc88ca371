"""`/mcp/runs/{run_id}`: MCP with a worker's API key, the gateway holding the run's lease for it.

`Authorization: Bearer <API key>` (a role that may acquire leases: worker, operator, admin) and the
run in the path. The key is checked on every request (a revoked key fails on its next one), the
run must be this tenant's and given to this key (else 404, as for a run that does not exist),
and the request then goes to the same front as `/mcp` with the token of the lease held for this
(key, run) (gateway/gate/held_leases.py): the same gate, both protocol eras, the fast path. What
could not be established before MCP is a JSON-RPC error at its HTTP status, with `[code]` first.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from starlette.requests import Request
from starlette.types import ASGIApp, Receive, Scope, Send

from gateway.api.routes import authenticate_key, bearer, run_to_act_for
from gateway.domain.roles import require
from gateway.errors import WarrantError
from gateway.gate.held_leases import held_token_for
from gateway.service import Gateway

PATH = "/mcp/runs/{run_id}"


class WorkerKeyRoute:
    """ASGI wrapper: authenticate the key, hold the lease, then hand the request to `app` (the
    /mcp front, behind its lease-token guard) as if it carried that lease's token."""

    def __init__(self, app: ASGIApp, gateway_of: Callable[[], Gateway]) -> None:
        self.app = app
        self.gateway_of = gateway_of

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)  # the front answers 405 for anything but POST
            return
        run_id = str(scope.get("path_params", {}).get("run_id", ""))
        gateway = self.gateway_of()
        request = Request(scope)
        try:
            principal = await authenticate_key(request, gateway)
            require(principal, "leases.acquire")
            await run_to_act_for(gateway, principal, run_id)
            api_key = bearer(request)
            assert api_key is not None, "authenticate_key found one"
            token = await held_token_for(gateway.store, principal, api_key, run_id)
        except WarrantError as error:
            await _refused(send, error)
            return
        headers = [(k, v) for k, v in scope.get("headers", []) if k != b"authorization"]
        headers.append((b"authorization", f"Bearer {token}".encode("latin-1")))
        await self.app({**scope, "headers": headers, "path": "/mcp", "raw_path": b"/mcp"}, receive, send)


async def _refused(send: Send, error: WarrantError) -> None:
    details: dict[str, Any] = {"code": error.code, **{k: v for k, v in error.details.items() if k != "code"}}
    body = {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": -32001, "message": f"[{error.code}] {error.message}", "data": details},
    }
    data = json.dumps(body).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]
    if error.http_status == 401:
        headers.append((b"www-authenticate", b'Bearer realm="warrant", error="invalid_token"'))
    await send({"type": "http.response.start", "status": error.http_status, "headers": headers})
    await send({"type": "http.response.body", "body": data})
