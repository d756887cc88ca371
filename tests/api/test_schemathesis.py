"""Schemathesis against /api/openapi.json on a real server, with valid keys: no 5xx, and every
response conforms to the document (status code, content type, headers, body schema), carries no
stack trace and no secret (the ledger key, an API key, the world's lease token); and afterwards
nothing recorded before is lost or changed and the ledger verifies (tests/hostile/checks.py).

Generated path ids are random strings (404s) or, half the time, the ids of a real run, approval
and action, so the operations behind the 404 are reached too. Kept small (`EXAMPLES` per
operation) to keep the suite fast; raise it locally to search harder.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from gateway.api import document
from tests.api.conftest import CONTRACT, KEYS, ThreadedApi
from tests.hostile.checks import SERVER_USES_RANDOM, Record, answer_problems, lost_or_changed, record_of

pytestmark = SERVER_USES_RANDOM

EXAMPLES = 25
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
]


@dataclass(frozen=True)
class World:
    api: ThreadedApi
    ids: dict[str, str]  # path parameter -> a real id
    lease_token: str
    before: Record  # what the store held before any generated request

    @property
    def secrets(self) -> list[str]:
        return ["test-ledger-key", self.lease_token, *(f"key-{name}" for name in KEYS)]


@pytest.fixture(scope="module")
def world(threaded_api: ThreadedApi) -> World:
    """A run with a lease, a read, a refusal, a pending approval and an `unknown` write."""
    with httpx.Client(base_url=threaded_api.url, headers={"Authorization": "Bearer key-ops"}, timeout=10) as c:
        run = c.post("/api/runs", json=CONTRACT).json()
        grant = c.post(f"/api/runs/{run['run_id']}/lease", json={"worker": "w1"}).json()
    gate = threaded_api.gateway.gate
    token = grant["token"]
    threaded_api.run(gate.call(token, "shop__find", {"q": "a"}))
    threaded_api.run(gate.call(token, "shop__nope", {}))
    threaded_api.run(gate.call(token, "shop__charge", {"card": "lost"}))
    pending = threaded_api.run(gate.call(token, "shop__order", {"to": "bob@example.com"}))
    unknown = threaded_api.run(threaded_api.gateway.store.audit_actions("acme", status="unknown"))
    ids = {
        "run_id": run["run_id"],
        "approval_id": pending.structured["error"]["approval_id"],
        "action_id": unknown.items[0].action_id,
        "name": "shop__find",
    }
    with httpx.Client(base_url=threaded_api.url, headers={"Authorization": "Bearer key-ops"}, timeout=10) as c:
        before = record_of(c)
    return World(threaded_api, ids, token, before)


# The document the server serves (tests/api/test_openapi.py checks they are the same), loaded at
# import: schemathesis's fixture-based loader does not run under pytest 9 (it sets a private node id).
schema = schemathesis.openapi.from_dict(document())


@schema.parametrize()
@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
def test_the_api_answers_as_its_document_says(case: schemathesis.Case[Any], world: World) -> None:
    parameters = case.path_parameters or {}
    for name, value in list(parameters.items()):
        if name in world.ids and isinstance(value, str) and len(value) % 2 == 0:
            parameters[name] = world.ids[name]
    bearer = world.lease_token if case.operation.path == "/api/leases/renew" else "key-ops"
    documented = document()["paths"][case.operation.path][case.operation.method.lower()]["responses"]
    # A route of a later issue answers its documented 501: the one 5xx that is not a server error.
    checks = [c for c in CHECKS if c is not not_a_server_error or "501" not in documented]
    response = case.call_and_validate(
        base_url=world.api.url, headers={"Authorization": f"Bearer {bearer}"}, checks=checks
    )
    headers = [(name, value) for name, values in response.headers.items() for value in values]
    answer = httpx.Response(response.status_code, content=response.content, headers=headers)
    static = case.operation.path == "/api/openapi.json"  # its descriptions name source files on purpose
    assert answer_problems(answer, world.secrets, traces=not static) == []


def test_nothing_recorded_before_the_generated_requests_is_lost_or_changed(world: World) -> None:
    with httpx.Client(base_url=world.api.url, headers={"Authorization": "Bearer key-ops"}, timeout=10) as c:
        assert lost_or_changed(world.before, record_of(c), c) == []
