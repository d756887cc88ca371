"""An HTTP adapter in front of a respx-mocked CRM, with time that moves only when a retry waits.

`SECRET` is the adapter's credential: the secret tests check that it never leaves in an outcome
or a log record, even when the CRM echoes it back.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
import respx

from gateway import backoff
from gateway.adapters import CallRequest
from gateway.adapters.http import HttpAdapter, HttpAdapterConfig

BASE = "http://crm.test/api"
SECRET = "s3cr3t-crm-token-4242"
KEY = "wk_TESTKEY"
CONTACT = {"type": "object", "properties": {"email": {"type": "string"}, "contact_id": {"type": "string"}}}

DOCUMENT: dict[str, Any] = {
    "name": "crm",
    "kind": "http",
    "base_url": BASE,
    "headers": {"Authorization": f"Bearer {SECRET}"},
    "key_retention": "24h",
    "tools": {
        "create_contact": {
            "description": "Create a contact.",
            "method": "POST",
            "path": "/contacts",
            "input_schema": CONTACT,
            "timeout": 10,
            "idempotency_header": "Idempotency-Key",
            "receipt_id": "id",
            "cost": {"field": "cost"},
            "lookup": {"method": "GET", "path": "/contacts/by-key/{idempotency_key}"},
        },
        "log_call": {  # a write the destination cannot deduplicate: no idempotency header
            "description": "Log a call.",
            "method": "POST",
            "path": "/calls",
            "input_schema": CONTACT,
            "timeout": 10,
        },
        "get_contact": {
            "description": "Read a contact.",
            "method": "GET",
            "path": "/contacts/{contact_id}",
            "input_schema": CONTACT,
            "timeout": 10,
            "read_only": True,
        },
    },
}


@dataclass
class Ticks:
    """A monotonic clock that only moves when a retry waits (`backoff.sleep` is replaced)."""

    now: float = 1000.0
    waits: list[float] = field(default_factory=list)

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.waits.append(seconds)
        self.now += seconds


def make_adapter(ticks: Ticks, **changes: Any) -> HttpAdapter:
    document = {**DOCUMENT, **changes}
    return HttpAdapter(HttpAdapterConfig.model_validate(document), secrets=[SECRET], clock=ticks)


@dataclass
class Crm:
    """The mocked CRM (`router`, relative to `BASE`) and the time adapters made here see."""

    router: respx.MockRouter
    ticks: Ticks

    def adapter(self, **changes: Any) -> HttpAdapter:
        return make_adapter(self.ticks, **changes)


@contextlib.contextmanager
def mocked_crm(monkeypatch: pytest.MonkeyPatch) -> Iterator[Crm]:
    """Every request goes to respx; a retry's wait only moves `ticks` (`backoff.sleep` replaced)."""
    ticks = Ticks()
    monkeypatch.setattr(backoff, "sleep", ticks.sleep)
    with respx.mock(base_url=BASE, assert_all_called=False) as router:
        yield Crm(router, ticks)


def create(arguments: dict[str, Any] | None = None, *, key: str | None = KEY, timeout: float = 10) -> CallRequest:
    return CallRequest("create_contact", arguments or {"email": "a@acme.example"}, "run-1", "act-1", key, timeout)


def log_call(timeout: float = 10) -> CallRequest:
    return CallRequest("log_call", {"email": "a@acme.example"}, "run-1", "act-2", KEY, timeout)


def get_contact(contact_id: str = "c-1", timeout: float = 10) -> CallRequest:
    return CallRequest("get_contact", {"contact_id": contact_id}, "run-1", "act-3", None, timeout, write=False)
