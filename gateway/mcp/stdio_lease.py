"""The lease `warrant stdio` holds: checked before serving, renewed in the background.

Two ways in. With `WARRANT_TOKEN` the bridge checks the token once (`POST /api/leases/renew`) and
renews it while the client is connected. With `--run RUN` and a worker key in `WARRANT_API_KEY`
it asks for the lease the gateway holds for that key on that run (`POST /api/runs/{id}/lease`,
`held: true`, gateway/gate/held_leases.py): the same token on every start, so a client that restarts
the bridge does not find its own lease in its way.

What ends the bridge (an `Ended`, with a message for the person reading the client's log):
- the gateway answers 401: the token or key is not one it knows. Never "unavailable": retrying
  does not help, a person must fix the configuration;
- with `--run`, the key may not act for the run (403/404), another worker holds its live lease
  (`lease_held`), or the lease was taken over (`lease_superseded`, at start, on a renewal or in a
  call's answer): the bridge stops instead of retrying, so two workers never fight over a run.
A gateway that does not answer ends nothing: calls meanwhile are `upstream_unavailable`
(retryable) and the bridge keeps trying, with backoff.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import anyio
import httpx2

from gateway import backoff
from gateway.errors import Code

log = logging.getLogger("warrant.stdio")

EXIT_CONFIG = 2  # a token or key the gateway refuses, a run this key may not act for
EXIT_LEASE = 3  # the lease is another worker's (held, or taken over)
RENEW_MIN_S, RENEW_MAX_S = 1.0, 60.0


class Ended(Exception):
    """The bridge must stop: `message` for the person, `status` for the process."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.message = message
        self.status = status


class Unreachable(Exception):
    """The gateway did not answer (connection refused, timeout, a 5xx)."""


@dataclass
class BridgeLease:
    base_url: str  # the gateway, without /mcp
    token: str | None = None  # WARRANT_TOKEN, or the held lease's once acquired
    run_id: str | None = None  # --run
    api_key: str | None = None  # with --run
    worker: str = "warrant-stdio"
    renew_every: float | None = None  # None: a third of the time the lease has left
    ended: Ended | None = None
    _changed: anyio.Event = field(default_factory=anyio.Event)
    _next: float = 30.0

    @property
    def mcp_url(self) -> str:
        return f"{self.base_url}/mcp"

    def end(self, ended: Ended) -> None:
        if self.ended is None:
            self.ended = ended
        self._changed.set()

    async def wait_ended(self) -> Ended:
        while self.ended is None:
            await self._changed.wait()
            self._changed = anyio.Event()
        return self.ended

    async def establish(self, http: httpx2.AsyncClient) -> None:
        """Before serving: the token checked, or the held lease acquired. Raises: Ended; Unreachable
        (the bridge serves anyway, answering upstream_unavailable, and keeps trying)."""
        if self.run_id is not None:
            await self._acquire(http)
        else:
            await self._renew(http)

    async def keep(self, http: httpx2.AsyncClient) -> None:
        """Renew until the bridge ends (acquire first with --run when the gateway was down)."""
        attempt = 0
        while self.ended is None:
            try:
                await anyio.sleep(self._next if attempt == 0 else backoff.backoff_delay(attempt, cap=self._next))
                if self.token is None:
                    await self._acquire(http)
                else:
                    await self._renew(http)
                attempt = 0
            except Unreachable as exc:
                attempt += 1
                log.warning("renewing the lease through %s failed: %s; retrying", self.base_url, exc)
            except Ended as ended:
                self.end(ended)

    def note_result(self, structured: Any) -> None:
        """A call's answer: with --run, a takeover named there ends the bridge too."""
        if self.run_id is None or not isinstance(structured, dict):
            return
        error = structured.get("error")
        if isinstance(error, dict) and error.get("code") == Code.LEASE_SUPERSEDED:
            self.end(_taken_over(self.run_id, error))

    def unauthenticated(self, message: str) -> Ended:
        what = "API key (WARRANT_API_KEY)" if self.run_id is not None else "lease token (WARRANT_TOKEN)"
        return Ended(
            f"the gateway at {self.base_url} refused this {what}: {message}. "
            "Not retrying: set a valid one in the client's configuration and restart it.",
            EXIT_CONFIG,
        )

    async def _acquire(self, http: httpx2.AsyncClient) -> None:
        assert self.run_id is not None and self.api_key is not None
        status, body = await _post(
            http,
            f"{self.base_url}/api/runs/{self.run_id}/lease",
            self.api_key,
            {"worker": self.worker, "held": True},
        )
        error = _error_of(body)
        if status == 401:
            raise self.unauthenticated(str(error.get("message", "unknown API key")))
        if status in (403, 404):
            raise Ended(
                f"this API key may not act for run {self.run_id} ([{error.get('code')}] {error.get('message')})",
                EXIT_CONFIG,
            )
        if status == 409 and error.get("code") == Code.LEASE_SUPERSEDED:
            raise _taken_over(self.run_id, error)
        if status == 409 and error.get("code") == Code.LEASE_HELD:
            raise Ended(
                f"run {self.run_id} is held by worker {error.get('worker')} until {error.get('expires_at')}; "
                "not taking it over (an operator may: warrant leases acquire RUN --takeover)",
                EXIT_LEASE,
            )
        if status >= 400:
            raise Ended(f"run {self.run_id}: [{error.get('code')}] {error.get('message')}", EXIT_LEASE)
        self.token = str(body["token"])
        self._schedule(body)
        log.info("holding the lease on %s (epoch %s) for %s", self.run_id, body.get("epoch"), self.worker)

    async def _renew(self, http: httpx2.AsyncClient) -> None:
        assert self.token is not None
        status, body = await _post(http, f"{self.base_url}/api/leases/renew", self.token, None)
        error = _error_of(body)
        if status == 401:
            raise self.unauthenticated(str(error.get("message", "unknown lease token")))
        if status >= 400:
            code = error.get("code")
            if self.run_id is not None and code == Code.LEASE_SUPERSEDED:
                raise _taken_over(self.run_id, error)
            # A dead token without --run: the gate answers the agent with its refusal; nothing to renew.
            log.warning("the lease is no longer renewed: [%s] %s", code, error.get("message"))
            self._next = RENEW_MAX_S
            return
        self._schedule(body)

    def _schedule(self, body: dict[str, Any]) -> None:
        if self.renew_every is not None:
            self._next = self.renew_every
            return
        left = RENEW_MAX_S * 3
        expires = body.get("expires_at")
        if isinstance(expires, str):
            try:
                left = datetime.fromisoformat(expires.replace("Z", "+00:00")).timestamp() - time.time()
            except ValueError:
                pass
        self._next = min(RENEW_MAX_S, max(RENEW_MIN_S, left / 3))


def _taken_over(run_id: str, error: dict[str, Any]) -> Ended:
    by = error.get("worker")
    return Ended(
        f"the lease on run {run_id} was taken over{f' by {by}' if by else ''}: this worker stops "
        "(its calls would be refused lease_superseded). Ask the operator before taking it back.",
        EXIT_LEASE,
    )


def _error_of(body: dict[str, Any]) -> dict[str, Any]:
    error = body.get("error")
    return error if isinstance(error, dict) else {}


async def _post(http: httpx2.AsyncClient, url: str, bearer: str, body: Any) -> tuple[int, dict[str, Any]]:
    """Raises: Unreachable for no answer or a 5xx."""
    try:
        response = await http.post(url, json=body, headers={"Authorization": f"Bearer {bearer}"})
    except httpx2.HTTPError as exc:
        raise Unreachable(type(exc).__name__) from exc
    if response.status_code >= 500:
        raise Unreachable(f"HTTP {response.status_code}")
    try:
        data = response.json()
    except ValueError:
        data = {}
    return response.status_code, data if isinstance(data, dict) else {}
