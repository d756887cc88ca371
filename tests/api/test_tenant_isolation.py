"""Tenant isolation, walked over every route the app serves: globex's admin key with acme's ids.

acme holds a run with a lease, a succeeded write, an `unknown` write, a read, a pending approval,
their events, and a stored API key. globex's admin then calls every route with acme's ids in the
path (and in the query of every list): a route that names an object answers 404 `not_found`, a
list answers without any of acme's items, no body carries any of acme's ids or secrets, and
acme's state (run, lease, approvals, actions, events, keys) is exactly as it was.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from gateway.domain import api_key_hash
from tests.api.conftest import CONTRACT, Api
from tests.api.test_keys import create_key, status_with
from tests.api.test_operator_api import create_run, lease
from tests.api.test_role_matrix import UNBUILT, Served, served_routes
from tests.oauth.conftest import connect_client

pytestmark = pytest.mark.anyio

GATEWAY_WIDE = {"name"}  # path parameters that name no tenant's object: the tool catalog is shared


@dataclass
class Acme:
    ids: dict[str, str]  # path parameter -> one of acme's objects
    secrets: list[str]  # every string of acme's that must never reach globex

    def unname(self, text: str) -> str:
        """`text` with acme's ids replaced by the ids of `Served.url`, that exist nowhere."""
        for name, value in self.ids.items():
            text = text.replace(value, f"{name}_000000000000000000000000")
        return text

    def url(self, route: Served) -> str:
        path = route.path
        for name, value in self.ids.items():
            path = path.replace("{" + name + "}", value)
        return path


async def acme_world(api: Api) -> Acme:
    run = await create_run(api, key="ops")
    grant = await lease(api, run["run_id"])
    token = grant["token"]
    gate = api.gateway.gate
    assert (await gate.call(token, "shop__find", {"q": "acme-query-text"})).code is None
    assert (await gate.call(token, "shop__charge", {"card": "acme-card-4242"})).code is None
    assert (await gate.call(token, "shop__charge", {"card": "lost"})).code == "outcome_unknown"
    asked = await gate.call(token, "shop__order", {"to": "ceo@acme.example"})
    assert asked.code == "approval_required" and asked.structured is not None
    approval = asked.structured["error"]
    key = await create_key(api, "acme-ci", ["admin"])
    # A client signed in for another acme run (MCP authorization): its connection, under acme's run id.
    connected_run = await create_run(api, key="ops")
    connected = await connect_client(api, connected_run["run_id"], key="ops", name="acme-laptop-client")
    async with api.client("ops") as c:
        actions = (await c.get(f"/api/runs/{run['run_id']}/actions")).json()["items"]
        config_keys = [k["key_id"] for k in (await c.get("/api/keys")).json()["items"] if k["source"] == "config"]
    unknown = next(a["action_id"] for a in actions if a["status"] == "unknown")
    dead_letter_id = await plant_dead_letter(api, run, unknown)
    secrets = [
        dead_letter_id,
        "acme-operation-secret",
        "acme",
        run["run_id"],
        run["lineage_id"],
        token,
        hashlib.sha256(token.encode()).hexdigest(),
        approval["approval_id"],
        *(a["action_id"] for a in actions),
        *(a["payload_sha256"] for a in actions),
        "acme-query-text",
        "acme-card-4242",
        "ceo@acme.example",
        key["key_id"],
        key["key"],
        api_key_hash(key["key"]),
        *config_keys,
        connected_run["run_id"],
        connected.grant_id,
        connected.client_id,
        connected.access_token,
        connected.refresh_token,
        "acme-laptop-client",
    ]
    ids = {"run_id": run["run_id"], "approval_id": approval["approval_id"], "action_id": unknown}
    ids |= {"key_id": key["key_id"], "name": "shop__order", "grant_id": connected.grant_id}
    ids |= {"lineage_id": run["lineage_id"], "dead_letter_id": dead_letter_id}
    return Acme(ids, secrets)


async def plant_dead_letter(api: Api, run: dict[str, Any], action_id: str) -> str:
    """One dead letter of acme's run, written straight into the store: the API tests' shop tools have
    no retry policy to make one (tests/integration/test_retries.py makes real ones)."""
    dead_letter_id = "dlt_acme000000000000000000"

    def tx(conn: Any) -> None:
        conn.execute(
            "INSERT INTO dead_letters (dead_letter_id, run_id, tenant, lineage_id, operation_id, tool, payload_sha256, "
            "action_id, attempts, last_code, last_message, status, created_at) "
            "VALUES (?, ?, 'acme', ?, 'acme-operation-secret', 'shop__charge', ?, ?, 3, 'rate_limited', NULL, "
            "'open', 0)",
            (dead_letter_id, run["run_id"], run["lineage_id"], "0" * 64, action_id),
        )

    await api.gateway.store._db.transaction(tx, durable=True)  # type: ignore[attr-defined]
    return dead_letter_id


def body_for(route: Served, acme: Acme) -> dict[str, Any] | None:
    """A valid body, so the route gets as far as looking acme's object up."""
    if route.method != "POST":
        return None
    last = route.path.rsplit("/", 1)[-1]
    if route.path.startswith("/api/dead-letters/"):  # retry, resolve, drop: a reason
        return {"reason": "intrusion"}
    return {
        "lease": {"worker": "intruder", "takeover": True},
        "pause": {"reason": "intrusion", "hard": True},
        "resume": {"reason": "intrusion"},
        "cancel": {"reason": "intrusion", "hard": True},
        "fail": {"reason": "intrusion"},
        "signal": {"name": "intrusion", "payload": {"x": 1}, "idempotency_key": "intrusion"},
        "approve": {"note": "intrusion"},
        "deny": {"note": "intrusion"},
        "resolve": {"status": "failed", "evidence": "intrusion"},
        "acknowledge": {"note": "intrusion"},
        "compensate": {"reason": "intrusion"},
        "revoke": {"reason": "intrusion"},
        "rotate": {"overlap": "0s", "expires_in": None},
        "accept": {"definition_sha256": "0" * 64},
        "usage": {"kind": "model", "amount": "0.01", "note": "intrusion", "ref": "intrusion"},
        "keys": {"name": "intruder", "roles": ["admin"], "tenant": "acme"},
        "revise": {"spec_version": "intruded", "patch": {"budgets": {"writes": 1}}, "reason": "intrusion"},
        "successor": {"reason": "intrusion"},
        "children": {**CONTRACT, "budgets": {**CONTRACT["budgets"], "spend": "0.01", "tool_calls": 1, "writes": 1}},
        "runs": {},
    }.get(last, {})


async def snapshot(api: Api, acme: Acme) -> dict[str, Any]:
    """Everything acme can see of its own state, as its admin sees it."""
    rid = acme.ids["run_id"]
    async with api.client("ops") as c:
        paths = [
            f"/api/runs/{rid}",
            f"/api/runs/{rid}/actions",
            f"/api/runs/{rid}/events?limit=1000",
            f"/api/runs/{rid}/connections",
            "/api/approvals",
            "/api/actions",
            "/api/keys",
            "/api/keys/events",
            "/api/ledger/verify",
        ]
        return {path: (await c.get(path)).json() for path in paths}


def is_json(response: httpx.Response) -> bool:
    return response.headers.get("content-type", "").startswith("application/json")


def acmes(body: dict[str, Any]) -> bool:
    """Whether a list (or the ledger report) shows anything of acme's: globex holds no runs."""
    items = body.get("items", [])
    return any(i.get("tenant", "globex") != "globex" for i in items) or body.get("runs", 0) != 0


def leaks(response: httpx.Response, acme: Acme, sent: str) -> list[str]:
    """acme's strings in the answer, but for those the caller sent itself (a 404 names the id asked for)."""
    found = response.text + str(response.headers)
    return [secret for secret in acme.secrets if secret in found and secret not in sent]


async def test_another_tenants_admin_reaches_nothing_of_acme_on_any_route(api: Api) -> None:
    acme = await acme_world(api)
    before = await snapshot(api, acme)
    wrong: list[str] = []
    async with api.client("other") as c:
        for route in served_routes(api.app):
            r = await c.request(route.method, acme.url(route), json=body_for(route, acme))
            names = {part[1:-1] for part in route.path.split("/") if part.startswith("{")}
            code = r.json().get("error", {}).get("code") if is_json(r) else None
            if route.permission is UNBUILT:
                expected = r.status_code == 501
            elif route.path == "/api/tools/{name}/accept":  # a pin every tenant sees: no tenant admin's
                expected = (r.status_code, code) == (403, "forbidden")
            elif names - GATEWAY_WIDE:
                # Exactly the answer to an id that exists nowhere: nothing tells the two apart.
                missing = await c.request(route.method, route.url(), json=body_for(route, acme))
                expected = (r.status_code, code) == (404, "not_found") and missing.json() == json.loads(
                    acme.unname(r.text)
                )
            elif route.method == "GET":
                expected = r.status_code == 200 and not (is_json(r) and acmes(r.json()))
            else:  # creating in globex: refused here for an acme tenant or an empty body
                expected = r.status_code in (409, 422)
            if not expected:
                wrong.append(f"{route.method} {route.path}: {r.status_code} {r.text[:200]}")
            if leaks(r, acme, acme.url(route)):
                wrong.append(f"{route.method} {route.path} leaks {leaks(r, acme, acme.url(route))}")
            if route.method == "GET" and not names:
                for param, value in acme.ids.items():  # a list filtered by acme's ids is empty
                    q = await c.get(route.path, params={param: value})
                    if q.status_code == 200 and is_json(q) and acmes(q.json()):
                        wrong.append(f"GET {route.path}?{param}: acme's items")
                    if leaks(q, acme, value):
                        wrong.append(f"GET {route.path}?{param} leaks {leaks(q, acme, value)}")
        events = f"/api/runs/{acme.ids['run_id']}/events"
        stream = await c.get(events, headers={"Accept": "text/event-stream"})
        if stream.status_code != 404 or leaks(stream, acme, events):
            wrong.append(f"the event stream: {stream.status_code}")
    assert wrong == [], "\n".join(wrong)
    assert await snapshot(api, acme) == before
    assert await status_with(api, next(s for s in acme.secrets if s.startswith("wak_"))) == 200
    run = before[f"/api/runs/{acme.ids['run_id']}"]
    assert (run["status"], len(run["approvals"])) == ("waiting", 1)
    assert json.dumps(before).count("intrusion") == 0
