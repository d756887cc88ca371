"""Also drilled: a wait across a restart (docs/decisions/0027-waits.md).

Two runs wait through `warrant_wait`: one for the signal `quotes_in` (a `until` far enough that
only the signal can end it), one for nothing but a short `until` (on_timeout: pause). In restart
mode the gateway is SIGKILLed while both wait and stays down until the short `until` has passed:
nothing of a wait lives in process memory, so the new process finds both as they were, the
signal wakes the first once, and the watchdog applies the second's timeout once, by the store's
clock, at its first tick.
"""

from __future__ import annotations

import asyncio
import time
from datetime import datetime
from typing import Any

from gateway.drill.case import Findings, Mode, case
from gateway.drill.cases.common import contacts
from gateway.drill.world import World

TOOL = "crm__create_contact"
SIGNAL = "quotes_in"
PAYLOAD = {"quotes": [12, 15, 11]}
TIMEOUT_S = 2.0  # the short wait's until: past it the watchdog (1 s tick) pauses the run
BOUND = 15.0  # seconds the watchdog may take to apply a timeout, at most


def at(text: str) -> float:
    return datetime.fromisoformat(text).timestamp()


def entries(history: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [e for e in history if e["type"] == kind]


async def status_becomes(world: World, run_id: str, status: str, bound: float = BOUND) -> dict[str, Any]:
    """Poll the run until its status is `status` (at most `bound` seconds): the run as last read."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + bound
    run = await world.run(run_id)
    while run["status"] != status and loop.time() < deadline:
        await asyncio.sleep(0.2)
        run = await world.run(run_id)
    return run


@case(
    "wait-across-restart",
    "Also drilled: a wait across a restart",
    "warrant_wait makes the run waiting and a write then is refused run_waiting (nothing reaches the CRM); "
    "across a SIGKILL the same wait stays open; the signal sent twice under one key wakes it once (one "
    "signal_received, one wait_ended cause signal, the second replayed), the agent reads the payload in "
    "warrant_status and the write goes through once; a wait with no signal is paused by the watchdog at "
    "its until by the store's clock, once, also when until passed while the gateway was down",
)
async def wait_across_restart(world: World, mode: Mode, f: Findings) -> None:
    await world.start_gateway()
    run_id, agent = await world.start_run()
    timed_id, timed_agent = await world.start_run("worker-2")
    email = f"wait-{mode}@leads.example"
    lead = {"email": email, "name": "Wait Lead"}

    waited = await agent.call(
        "warrant_wait", {"reason": "quotes from vendors", "until": "10m", "on_timeout": "pause", "wake_on": [SIGNAL]}
    )
    f.expect(waited.ok, f"warrant_wait for the signal answered {waited.code}")
    wait = (waited.structured or {}).get("wait") or {}
    timed = await timed_agent.call(
        "warrant_wait", {"reason": "nothing comes", "until": f"{TIMEOUT_S:g}s", "on_timeout": "pause"}
    )
    f.expect(timed.ok, f"warrant_wait for the time answered {timed.code}")
    timed_wait = (timed.structured or {}).get("wait") or {}
    run = await world.run(run_id)
    f.equal(run["status"], "waiting", "the run after warrant_wait")
    refused = await agent.call(TOOL, lead)
    f.equal(refused.code, "run_waiting", "a write while the run waits")
    f.saw(f"waiting; a write answered {refused.code}")

    if mode == "restart":
        await world.kill_gateway()  # SIGKILL while both wait; down until the short until has passed
        if timed_wait.get("until"):
            await asyncio.sleep(max(0.0, at(timed_wait["until"]) - time.time()) + 0.5)
        await world.start_gateway()
        run = await world.run(run_id)
        f.equal(run["status"], "waiting", "the run after the restart")
        again = await agent.call("warrant_status", {})
        f.equal(((again.structured or {}).get("wait") or {}).get("wait_id"), wait.get("wait_id"), "the open wait")
        f.equal(((again.structured or {}).get("wait") or {}).get("until"), wait.get("until"), "its until")
        refused = await agent.call(TOOL, lead)
        f.equal(refused.code, "run_waiting", "a write while the run waits, after the restart")
        f.saw("SIGKILL while waiting (the short until passed while down): the same wait open")
    f.equal(len(contacts(world, email)), 0, "contacts at the CRM while the run waits")

    # The operator sends the signal twice under one key: recorded and woken once.
    body = {"name": SIGNAL, "payload": PAYLOAD, "idempotency_key": f"quotes-{mode}"}
    first = await world.ok("POST", f"/api/runs/{run_id}/signal", json=body)
    second = await world.ok("POST", f"/api/runs/{run_id}/signal", json=body)
    f.equal((first["status"], first["replayed"]), ("running", False), "the first signal")
    f.equal(first.get("woke_wait_id"), wait.get("wait_id"), "the wait the signal woke")
    f.equal((second["replayed"], second["signal_id"]), (True, first["signal_id"]), "the second send of the key")
    history = await world.events(run_id)
    ended = entries(history, "wait_ended")
    f.equal([(e["data"].get("cause"), e["data"].get("signal_id")) for e in ended], [("signal", first["signal_id"])],
            "wait_ended entries")  # fmt: skip
    f.equal(len(entries(history, "signal_received")), 1, "signal_received entries")
    status = await agent.call("warrant_status", {})
    shown = (status.structured or {}).get("signals") or []
    f.equal([(s.get("name"), s.get("payload")) for s in shown], [(SIGNAL, PAYLOAD)], "the signals warrant_status shows")
    f.equal((status.structured or {}).get("wait"), None, "the open wait warrant_status shows")
    done = await agent.call(TOOL, lead)
    f.expect(done.ok, f"the write after the signal answered {done.code}")
    f.equal(len(contacts(world, email)), 1, "contacts at the CRM after the signal")
    f.saw(f"signal twice: woke once (replayed {second['replayed']}), write {'passed' if done.ok else done.code}")

    # The wait nobody signals: the watchdog pauses it at its until, once.
    paused = await status_becomes(world, timed_id, "paused")
    f.equal(paused["status"], "paused", "the unsignalled run after its until")
    history = await world.events(timed_id)
    ended = entries(history, "wait_ended")
    f.equal([e["data"].get("cause") for e in ended], ["timeout"], "the unsignalled run's wait_ended entries")
    pauses = entries(history, "run_paused")
    f.equal([e["data"].get("by") for e in pauses], ["gateway"], "the unsignalled run's pauses")
    if ended and timed_wait.get("until"):
        f.expect(at(ended[0]["at"]) >= at(timed_wait["until"]), f"timed out at {ended[0]['at']}, before its until")
    await asyncio.sleep(1.5)  # past another watchdog tick: nothing more is applied
    f.equal(len(entries(await world.events(timed_id), "wait_ended")), 1, "wait_ended after another tick")
    f.saw(f"no signal: {paused['status']} by the watchdog after {TIMEOUT_S:g} s")
