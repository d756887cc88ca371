"""The operator API for the tool catalog and its pins (gateway/catalog/pins.py).

    GET  /api/tools                        every exposed tool with its pin state
    GET  /api/tools/pending                definitions waiting for an operator, with a diff
    POST /api/tools/{name}/accept          {definition_sha256}: pin exactly the definition shown

Pins are gateway-wide, so accepting one is an admin's decision (`tools.accept`), and, where the
gateway serves more than one tenant, only a `gateway_admin` key's (Gateway.decides_for_every_tenant).
"""

from __future__ import annotations

import difflib
import json
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from gateway.api.bodies import AcceptBody
from gateway.api.routes import endpoint, read_model
from gateway.catalog.catalog import PinState, ToolSpec
from gateway.catalog.pins import definition_json
from gateway.clock import isoformat
from gateway.errors import Forbidden, NotFound
from gateway.service import Gateway
from gateway.store.records import Principal


def tool_view(spec: ToolSpec) -> dict[str, Any]:
    pinned = spec.pinned
    return {
        "tool": spec.name,
        "adapter": spec.adapter.name,
        "name": spec.tool,
        "description": spec.definition.description,
        "effect": "write" if spec.is_write else "read",
        "has_policy": spec.policy is not None,
        "pin": {
            "state": spec.pin_state.value,
            "definition_sha256": spec.definition_sha256,
            "pinned_sha256": pinned.definition_sha256 if pinned else None,
            "pinned_by": pinned.pinned_by if pinned else None,
            "pinned_at": isoformat(pinned.pinned_at) if pinned else None,
        },
    }


def pending_view(spec: ToolSpec) -> dict[str, Any]:
    """A definition waiting for an operator, shown against the one pinned (none for a new tool)."""
    current = definition_json(spec.definition)
    pinned = spec.pinned.definition if spec.pinned is not None else None
    return {
        **tool_view(spec),
        "definition": current,
        "pinned_definition": pinned,
        "diff": definition_diff(spec.name, pinned, current),
    }


def definition_diff(name: str, pinned: dict[str, Any] | None, current: dict[str, Any]) -> str:
    def lines(body: dict[str, Any] | None) -> list[str]:
        return json.dumps(body, indent=2, sort_keys=True, ensure_ascii=False).splitlines() if body else []

    return "\n".join(
        difflib.unified_diff(lines(pinned), lines(current), f"{name} (pinned)", f"{name} (listed now)", lineterm="")
    )


@endpoint("tools.read")
async def list_tools(request: Request, principal: Principal, gateway: Gateway) -> Response:
    items = [tool_view(spec) for spec in sorted(gateway.catalog.all(), key=lambda s: s.name)]
    return JSONResponse({"items": items, "next_cursor": None})


@endpoint("tools.read")
async def list_pending(request: Request, principal: Principal, gateway: Gateway) -> Response:
    specs = sorted(gateway.catalog.all(), key=lambda s: s.name)
    items = [pending_view(spec) for spec in specs if spec.pin_state in (PinState.CHANGED, PinState.NEW)]
    return JSONResponse({"items": items, "next_cursor": None})


@endpoint("tools.accept")
async def accept(request: Request, principal: Principal, gateway: Gateway) -> Response:
    body = await read_model(request, AcceptBody)
    name = request.path_params["name"]
    if gateway.pins is None:
        raise NotFound(f"no tool {name}")
    if not gateway.decides_for_every_tenant(principal):
        # Every tenant's agents see the accepted definition: one tenant's admin may not rug-pull the others.
        raise Forbidden(f"the key {principal.name!r} is one tenant's admin; a gateway_admin key accepts tool pins")
    spec = await gateway.pins.accept(name, body.definition_sha256, principal)
    return JSONResponse(tool_view(spec))


routes = [
    Route("/api/tools", list_tools, methods=["GET"]),
    Route("/api/tools/pending", list_pending, methods=["GET"]),
    Route("/api/tools/{name}/accept", accept, methods=["POST"]),
]
