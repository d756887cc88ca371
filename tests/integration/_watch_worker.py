"""One OS process acting as a gateway's watchdog: its own SQLiteStore on a shared file, its own
Watchdog and webhook Deliverer. Run by `test_watchdog_processes.py` as
`python _watch_worker.py '<json>'`, the JSON naming: db, ledger_key (hex), name, url (the receiver).

It reads commands on stdin, one a line, and answers each with one JSON line on stdout:

    tick <now>     set its clock to <now>, tick, deliver what is due
                   -> {"holding": bool, "raised": [kind, ...], "delivered": n}
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

from gateway.clock import ManualClock
from gateway.runtime.settings import WatchdogSettings, Webhook
from gateway.runtime.watchdog import Watchdog
from gateway.runtime.webhooks import Deliverer
from gateway.store.sqlite import SQLiteStore


def say(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


async def main(config: dict[str, Any]) -> None:
    clock = ManualClock(0)
    store = SQLiteStore(
        config["db"], clock=clock, ledger_key=bytes.fromhex(config["ledger_key"]), process_id=config["name"]
    )
    await store.open()
    hook = Webhook("receiver", config["url"], b"secret", None)
    settings = WatchdogSettings(tick=5, heartbeat=3600)
    watchdog = Watchdog(store, clock, settings, [hook])
    deliverer = Deliverer(store, clock, [hook], timeout=5)
    say({"ready": True})
    loop = asyncio.get_running_loop()
    try:
        while line := await loop.run_in_executor(None, sys.stdin.readline):
            command, _, argument = line.strip().partition(" ")
            if command != "tick":
                break
            clock.set(float(argument))
            tick = await watchdog.tick()
            delivered = await deliverer.deliver_due()
            say({"holding": tick.holding, "raised": [r.alert.kind for r in tick.raised], "delivered": delivered})
    finally:
        await deliverer.aclose()
        await store.close()


if __name__ == "__main__":
    asyncio.run(main(json.loads(sys.argv[1])))
