"""The operator API for the tenant's API keys (gateway/domain/keys.py), admin only (`keys.manage`).

    POST /api/keys                      {name, roles, expires_in?, tenant?}: 201, the key shown once
    GET  /api/keys                      the tenant's keys, never a key or its hash
    GET  /api/keys/events               every change to them: who, when (the audit)
    POST /api/keys/{key_id}/revoke      {reason?}: invalid from the next request on
    POST /api/keys/{key_id}/rotate      {overlap, expires_in?}: 201, the new key shown once

Keys are made in the admin's own tenant; `tenant` may be given only as that tenant. Keys from the
configuration file (bootstrap) are listed read-only (`source: "config"`): revoking or rotating
one is `409 key_in_config`, since it lives in the file, not the store.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from gateway.api.bodies import CreateKeyBody, Duration, RevokeKeyBody, RotateKeyBody
from gateway.api.routes import endpoint, query_limit, read_model
from gateway.clock import isoformat
from gateway.domain.keys import ApiKey, ApiKeyRecord, KeyEvent, api_key_hash, mint_api_key, parse_overlap
from gateway.domain.units import parse_duration
from gateway.errors import Code, Conflict, InvalidRequest
from gateway.service import Gateway
from gateway.store.records import Principal

log = logging.getLogger("warrant.api")


def _seconds(field: str, value: Duration | None, parse: Callable[[object], int] = parse_duration) -> int | None:
    """Raises: InvalidRequest naming the field."""
    if value is None:
        return None
    try:
        seconds = parse(value)
    except ValueError as exc:
        raise InvalidRequest(f"{field}: {exc}", problems=[{"field": field, "problem": str(exc)}]) from None
    return seconds


def config_key_id(key: ApiKey) -> str:
    """A stable id for a bootstrap key (it has no row): names nothing secret."""
    return "cfg_" + hashlib.sha256(f"{key.tenant}\0{key.name}".encode()).hexdigest()[:24]


def key_view(key: ApiKeyRecord, now: float) -> dict[str, Any]:
    return {
        "key_id": key.key_id,
        "name": key.name,
        "tenant": key.tenant,
        "roles": sorted(key.roles),
        "source": "store",
        "status": key.status(now).value,
        "created_at": isoformat(key.created_at),
        "created_by": key.created_by,
        "expires_at": isoformat(key.expires_at),
        "revoked_at": isoformat(key.revoked_at),
        "revoked_by": key.revoked_by,
        "rotated_from": key.rotated_from,
        "rotated_to": key.rotated_to,
    }


def config_key_view(key: ApiKey) -> dict[str, Any]:
    """A bootstrap key: always active, with none of the store's history."""
    history = ("created_at", "created_by", "expires_at", "revoked_at", "revoked_by", "rotated_from", "rotated_to")
    return {
        "key_id": config_key_id(key),
        "name": key.name,
        "tenant": key.tenant,
        "roles": sorted(key.roles),
        "source": "config",
        "status": "active",
        **dict.fromkeys(history),
    }


def key_event_view(event: KeyEvent) -> dict[str, Any]:
    return {
        "seq": event.seq,
        "key_id": event.key_id,
        "type": event.type,
        "at": isoformat(event.at),
        "by": event.by,
        "data": event.data,
    }


def _config_keys(gateway: Gateway, tenant: str) -> list[ApiKey]:
    return [key for key in gateway.api_keys if key.tenant == tenant]


def _refuse_config_key(gateway: Gateway, principal: Principal, key_id: str) -> None:
    """Raises: Conflict `key_in_config` for one of the tenant's bootstrap keys."""
    for key in _config_keys(gateway, principal.tenant):
        if config_key_id(key) == key_id:
            raise Conflict(
                f"key {key_id} ({key.name}) is in the configuration file: change it there and restart",
                code=Code.KEY_IN_CONFIG,
            )


@endpoint("keys.manage")
async def create_key(request: Request, principal: Principal, gateway: Gateway) -> Response:
    body = await read_model(request, CreateKeyBody)
    if body.tenant is not None and body.tenant != principal.tenant:
        raise InvalidRequest(
            "a key is made in your own key's tenant",
            code=Code.TENANT_MISMATCH,
            problems=[{"field": "tenant", "problem": f"must be {principal.tenant}"}],
        )
    expires_in = _seconds("expires_in", body.expires_in)
    if any(key.name == body.name for key in _config_keys(gateway, principal.tenant)):
        raise Conflict(f"the configuration file has a key named {body.name!r}", code=Code.KEY_NAME_TAKEN)
    secret = mint_api_key()
    key = await gateway.store.create_api_key(
        principal, name=body.name, roles=frozenset(body.roles), key_sha256=api_key_hash(secret), expires_in=expires_in
    )
    log.info("key %s (%s, %s) created by %s", key.key_id, key.name, ",".join(sorted(key.roles)), principal.name)
    return JSONResponse({**key_view(key, gateway.clock.now()), "key": secret}, status_code=201)


@endpoint("keys.manage")
async def list_keys(request: Request, principal: Principal, gateway: Gateway) -> Response:
    """The first page starts with the tenant's bootstrap keys, ahead of the stored ones."""
    cursor = request.query_params.get("cursor")
    page = await gateway.store.list_api_keys(principal.tenant, cursor=cursor, limit=query_limit(request))
    now = gateway.clock.now()
    items = [] if cursor else [config_key_view(k) for k in _config_keys(gateway, principal.tenant)]
    items += [key_view(k, now) for k in page.items]
    return JSONResponse({"items": items, "next_cursor": page.next_cursor})


@endpoint("keys.manage")
async def list_key_events(request: Request, principal: Principal, gateway: Gateway) -> Response:
    page = await gateway.store.list_key_events(
        principal.tenant,
        key_id=request.query_params.get("key_id"),
        cursor=request.query_params.get("cursor"),
        limit=query_limit(request, 100),
    )
    return JSONResponse({"items": [key_event_view(e) for e in page.items], "next_cursor": page.next_cursor})


@endpoint("keys.manage")
async def revoke_key(request: Request, principal: Principal, gateway: Gateway) -> Response:
    body = await read_model(request, RevokeKeyBody)
    key_id = request.path_params["key_id"]
    _refuse_config_key(gateway, principal, key_id)
    key = await gateway.store.revoke_api_key(principal, key_id, reason=body.reason)
    log.info("key %s (%s) revoked by %s", key.key_id, key.name, principal.name)
    return JSONResponse(key_view(key, gateway.clock.now()))


@endpoint("keys.manage")
async def rotate_key(request: Request, principal: Principal, gateway: Gateway) -> Response:
    body = await read_model(request, RotateKeyBody)
    key_id = request.path_params["key_id"]
    _refuse_config_key(gateway, principal, key_id)
    overlap = _seconds("overlap", body.overlap, parse_overlap)
    assert overlap is not None
    if "expires_in" in body.model_fields_set:
        expires_in = _seconds("expires_in", body.expires_in)
    else:  # the new key lives as long as the old one was made to
        old = await gateway.store.get_api_key(principal.tenant, key_id)
        expires_in = None if old.expires_at is None else max(1, round(old.expires_at - old.created_at))
    secret = mint_api_key()
    new, old = await gateway.store.rotate_api_key(
        principal, key_id, key_sha256=api_key_hash(secret), overlap=overlap, expires_in=expires_in
    )
    log.info("key %s (%s) rotated to %s by %s", old.key_id, old.name, new.key_id, principal.name)
    now = gateway.clock.now()
    return JSONResponse({**key_view(new, now), "key": secret, "old_key": key_view(old, now)}, status_code=201)


routes = [
    Route("/api/keys", create_key, methods=["POST"]),
    Route("/api/keys", list_keys, methods=["GET"]),
    Route("/api/keys/events", list_key_events, methods=["GET"]),
    Route("/api/keys/{key_id}/revoke", revoke_key, methods=["POST"]),
    Route("/api/keys/{key_id}/rotate", rotate_key, methods=["POST"]),
]
