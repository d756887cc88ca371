"""`warrant_wait` as a gateway tool, and what `warrant_status` shows of waits and signals
(docs/decisions/0027-waits.md).

The agent says what it waits for; the store fences the wait again in its transaction (a
superseded worker is refused there too) and the watchdog applies `on_timeout` at `until`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gateway.canonical import canonical_json, sha256_hex
from gateway.clock import isoformat
from gateway.domain.admission import lease_refusal
from gateway.domain.waits import parse_wait
from gateway.errors import Code, Refusal
from gateway.gate.pipeline import CallResult, Gate
from gateway.store.ports import WaitStore
from gateway.store.records import Refused, TokenInfo


@dataclass
class Waiting:
    gate: Gate
    store: WaitStore

    async def wait(self, token: str | None, arguments: Mapping[str, Any]) -> CallResult:
        info = await self.gate.authenticate(token)
        now = self.gate.clock.now()
        try:
            digest = sha256_hex(canonical_json(dict(arguments)))
        except ValueError:
            return CallResult.refused(Refusal(Code.WAIT_INVALID, "the wait is not representable as canonical JSON"))
        dead = await self._dead(info, digest, now)
        if dead is not None:
            return dead
        try:
            spec = parse_wait(arguments, now, info.run.deadline)
        except Refusal as refusal:
            return CallResult.refused(refusal)
        started = await self.store.start_wait(info.run.run_id, epoch=info.epoch, worker=info.worker, spec=spec)
        if isinstance(started, Refused):
            return CallResult.refused(started.refusal, started.action_id)
        wakes = f"a signal named {', '.join(spec.wake_on)}" if spec.wake_on else "no signal (only the time)"
        text = (
            f"waiting ({started.wait_id}) until {isoformat(spec.until)} or {wakes}; then on_timeout: "
            f"{spec.on_timeout.value}. Meanwhile reads and the warrant_* tools still work; check with "
            "warrant_status, which lists the signals received"
        )
        return CallResult([{"type": "text", "text": text}], {"wait": started.view(), "status": "waiting"})

    async def _dead(self, info: TokenInfo, digest: str, now: float) -> CallResult | None:
        """Refuse (and record) a dead lease or a paused run before anything is parsed."""
        refusal = lease_refusal(info.run.snapshot(), info.epoch, now)
        if refusal is None:
            return None
        action_id = await self.gate.store.record_rejection(
            info.run.run_id, tool="warrant_wait", payload_sha256=digest, refusal=refusal, epoch=info.epoch,
            worker=info.worker,
        )  # fmt: skip
        return CallResult.refused(refusal, action_id)

    async def status_of(self, token: str | None) -> dict[str, Any]:
        """What warrant_status shows: the open wait, and the signals received (name, payload, at)."""
        info = await self.gate.authenticate(token)
        wait = await self.store.open_wait(info.run.run_id)
        signals = await self.store.list_signals(info.run.run_id)
        return {"wait": wait.view() if wait is not None else None, "signals": [s.view() for s in signals]}
