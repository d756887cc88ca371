"""Webhook deliveries: rows of the store's outbox POSTed to the configured receivers, signed, retried.

Any gateway process may deliver: each attempt first *claims* its row in the store for a bounded
time (`Store.claim_deliveries`), so two processes never send the same row at once, and a process
that dies mid-send only delays the row until its claim lapses. The body is the exact JSON stored
with the row: a run's entry in its envelope (gateway/domain/events.py: `{v, id, run_id, seq, type,
at, task_id?, message, progress?}` with `kind`, `tenant`, `data`, and an alert's `alert_id`), or a
heartbeat's `{id, kind, run_id: null, tenant: null, at, data}`. `id` is the event's
(`evt_<run_id>_<seq>`: the same for every receiver and every retry, receivers deduplicate on it),
`Warrant-Delivery` names this row.

Signature, as Stripe signs its webhooks:

    Warrant-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, f"{t}.{body}")>

`t` is the time of this attempt; a receiver recomputes v1 over the raw body it received, compares
in constant time, and refuses a `t` too far from its own clock (replays). `verify` is the recipe.

A 2xx marks the row delivered. Anything else (another status, a timeout, a refused connection)
is retried with exponential backoff and jitter (`gateway/backoff.py`) until the row's attempts are
used up, then it is `failed` with the last error. Delivery runs in its own task with its own
HTTP client and timeouts: the gate never waits for it.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import logging
from collections.abc import Callable, Sequence

import httpx

from gateway.backoff import JITTER, backoff_delay
from gateway.clock import Clock
from gateway.runtime.settings import Webhook
from gateway.store.ports import DeliveryStore
from gateway.store.records import Delivery

log = logging.getLogger("warrant.webhooks")

SIGNATURE_HEADER = "Warrant-Signature"
DELIVERY_HEADER = "Warrant-Delivery"
RETRY_FIRST = 5.0  # seconds before the first retry; doubling, jittered, at most RETRY_CAP
RETRY_CAP = 3600.0
BATCH = 50  # deliveries claimed at once; sent concurrently


def sign(secret: bytes, body: bytes, t: int) -> str:
    """The `Warrant-Signature` value for `body` sent at unix time `t`."""
    mac = hmac.new(secret, f"{t}.".encode() + body, hashlib.sha256).hexdigest()
    return f"t={t},v1={mac}"


def verify(secret: bytes, body: bytes, header: str, now: float, tolerance: float = 300.0) -> bool:
    """A receiver's check: the header is well formed, `t` within `tolerance` seconds of `now`, and
    one `v1` matches (several may be present while a secret is rotated)."""
    try:
        parts = [item.split("=", 1) for item in header.split(",")]
        t = int(next(value for key, value in parts if key == "t"))
    except (ValueError, StopIteration):
        return False
    if abs(now - t) > tolerance:
        return False
    expected = sign(secret, body, t).split("v1=", 1)[1]
    return any(key == "v1" and hmac.compare_digest(value, expected) for key, value in parts)


class Deliverer:
    def __init__(
        self,
        store: DeliveryStore,
        clock: Clock,
        webhooks: Sequence[Webhook],
        *,
        timeout: float,
        transport: httpx.AsyncBaseTransport | None = None,
        rng: Callable[[], float] = JITTER.random,
    ) -> None:
        self._store = store
        self._clock = clock
        self._hooks = {hook.name: hook for hook in webhooks}
        self._timeout = timeout
        self._rng = rng
        # Its own client: a slow receiver holds this pool's connections, never the adapters'.
        self._client = httpx.AsyncClient(
            timeout=httpx.Timeout(timeout), transport=transport, follow_redirects=False, trust_env=False
        )
        self.wake = asyncio.Event()

    async def deliver_due(self) -> int:
        """Send every delivery due now (claimed first); the number attempted."""
        total = 0
        while True:
            claimed = await self._store.claim_deliveries(
                self._store.process_id, hold=2 * self._timeout + 5, limit=BATCH
            )
            await asyncio.gather(*(self._send(delivery) for delivery in claimed))
            total += len(claimed)
            if len(claimed) < BATCH:
                return total

    async def _send(self, delivery: Delivery) -> None:
        hook = self._hooks.get(delivery.target)
        ok, error = False, "no webhook of this name is configured"
        if hook is not None:
            body = delivery.body.encode("utf-8")
            headers = {
                "Content-Type": "application/json",
                SIGNATURE_HEADER: sign(hook.secret, body, int(self._clock.now())),
                DELIVERY_HEADER: delivery.delivery_id,
                "User-Agent": "warrant-webhooks",
            }
            try:
                response = await self._client.post(hook.url, content=body, headers=headers)
                ok = 200 <= response.status_code < 300
                error = f"HTTP {response.status_code}"
            except httpx.HTTPError as exc:
                error = f"{type(exc).__name__}: the receiver did not answer"
        retry_at = None
        if not ok and hook is not None and delivery.attempts < delivery.max_attempts:
            retry_at = self._clock.now() + backoff_delay(
                delivery.attempts, initial=RETRY_FIRST, cap=RETRY_CAP, rng=self._rng
            )
        if not ok:
            log.warning(
                "webhook %s, delivery %s (%s), attempt %d of %d: %s",
                delivery.target,
                delivery.delivery_id,
                delivery.kind,
                delivery.attempts,
                delivery.max_attempts,
                error,
            )
        await self._store.finish_delivery(
            delivery.delivery_id, self._store.process_id, ok=ok, error=None if ok else error, retry_at=retry_at
        )

    async def run(self, every: float) -> None:
        """Deliver whenever woken (after each watchdog tick) or every `every` seconds."""
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.wake.wait(), every)
            self.wake.clear()
            try:
                await self.deliver_due()
            except Exception:
                log.exception("webhook deliveries failed; trying again later")

    async def aclose(self) -> None:
        await self._client.aclose()
