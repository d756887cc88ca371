"""The role matrix, generated from gateway/domain/roles.py's ROLES and the routes the app serves.

Every route names its permission (the `endpoint` decorator records it on the route's function);
a route that names none and is not one of the few public ones fails here. For each role, and a
key holding two roles: a route whose permission the roles do not grant answers 403 `forbidden`,
and one they do grant answers anything but 401/403 (200, 201, 404 for an id that does not
exist, 422 for an empty body...). Keys from the configuration file and keys from the store are
both walked.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from starlette.routing import Route

from gateway.domain import ROLES
from gateway.domain.roles import PERMISSIONS
from gateway.oauth import PATHS as OAUTH_PATHS
from tests.api.conftest import KEYS, Api

pytestmark = pytest.mark.anyio

# Routes that ask for no API key: the MCP endpoint and lease renewal take a lease token; the
# health check and the OpenAPI document say what exists, never what a tenant holds.
PUBLIC = {("GET", "/healthz"), ("GET", "/api/openapi.json"), ("POST", "/api/leases/renew")}
UNBUILT = None  # the permission of a route of a later issue: any key, 501
CONFIG_KEY = {role: name for name, (tenant, role) in KEYS.items() if tenant == "acme"}
MISSING = object()


@dataclass(frozen=True)
class Served:
    method: str
    path: str
    permission: str | None

    def url(self) -> str:
        """The path with every parameter an id that exists nowhere: no route changes anything."""
        return re.sub(r"\{(\w+)(:\w+)?\}", lambda m: f"{m.group(1)}_000000000000000000000000", self.path)


def served_routes(app: Any) -> list[Served]:
    """Every (method, path) the app serves with an API key, and the permission its endpoint names."""
    found = []
    for route in app.routes:
        if not isinstance(route, Route) or route.methods is None:
            continue  # /mcp: the MCP surface, authenticated by lease tokens
        if route.path in OAUTH_PATHS:
            continue  # MCP authorization's own endpoints (tests/oauth/): no API key
        permission = getattr(route.endpoint, "permission", MISSING)
        for method in sorted(route.methods - {"HEAD"}):
            if (method, route.path) in PUBLIC:
                assert permission is MISSING, f"{method} {route.path} is public but names {permission}"
                continue
            assert permission is not MISSING, f"{method} {route.path} names no permission: use @endpoint(...)"
            assert permission is UNBUILT or permission in PERMISSIONS, (method, route.path, permission)
            found.append(Served(method, route.path, permission))  # type: ignore[arg-type]
    return found


async def request(client: httpx.AsyncClient, route: Served) -> httpx.Response:
    return await client.request(route.method, route.url(), json={} if route.method == "POST" else None)


async def store_key(api: Api, roles: list[str]) -> str:
    async with api.client("ops") as c:
        r = await c.post("/api/keys", json={"name": "matrix-" + "-".join(roles), "roles": roles})
    assert r.status_code == 201, r.text
    key: str = r.json()["key"]
    return key


def test_every_role_grants_only_known_permissions_and_admin_all() -> None:
    assert ROLES["admin"] == PERMISSIONS
    for role, granted in ROLES.items():
        assert granted <= PERMISSIONS, role
    assert "keys.manage" not in set().union(*(g for r, g in ROLES.items() if r != "admin"))


@pytest.mark.parametrize(
    ("roles", "source"),
    [
        *(((role,), "config") for role in ROLES),
        *(((role,), "store") for role in ROLES),
        (("approver", "auditor"), "store"),
    ],
)
async def test_each_role_has_exactly_its_rights_on_every_route(api: Api, roles: tuple[str, ...], source: str) -> None:
    key = f"key-{CONFIG_KEY[roles[0]]}" if source == "config" else await store_key(api, list(roles))
    granted = set().union(*(ROLES[role] for role in roles))
    wrong = []
    routes = served_routes(api.app)
    assert {(r.method, r.path) for r in routes} >= {("POST", "/api/keys"), ("GET", "/api/runs")}
    async with httpx.AsyncClient(base_url=api.url, headers={"Authorization": f"Bearer {key}"}, timeout=10) as c:
        for route in routes:
            r = await request(c, route)
            code = (
                r.json().get("error", {}).get("code") if r.headers.get("content-type") == "application/json" else None
            )
            if route.permission is UNBUILT:
                ok = r.status_code == 501
            elif route.permission in granted:
                ok = r.status_code not in (401, 403)
            else:
                ok = (r.status_code, code) == (403, "forbidden")
            if not ok:
                wrong.append(f"{route.method} {route.path} ({route.permission}): {r.status_code} {code}")
    assert wrong == [], f"roles {roles} ({source} key):\n" + "\n".join(wrong)


async def test_every_route_but_the_public_ones_asks_for_a_valid_key(api: Api) -> None:
    revoked = await store_key(api, ["admin"])
    async with api.client("ops") as c:
        items = (await c.get("/api/keys")).json()["items"]
        key_id = next(k["key_id"] for k in items if k["name"] == "matrix-admin")
        assert (await c.post(f"/api/keys/{key_id}/revoke", json={})).status_code == 200
    for headers in ({}, {"Authorization": "Bearer nobody"}, {"Authorization": f"Bearer {revoked}"}):
        async with httpx.AsyncClient(base_url=api.url, headers=headers, timeout=10) as c:
            for route in served_routes(api.app):
                r = await request(c, route)
                assert (r.status_code, r.json()["error"]["code"]) == (401, "unauthenticated"), route
