"""What the console's runs and run pages show beyond the API's run view, read through the same store
calls and views as the API: the ledger in sections, the timeline, progress, cost by tag, open alerts.

Nothing here decides anything: open alerts are the watchdog's own pure decision
(`gateway.domain.watch.open_alerts`) over the state it reads, the cost by tag is the run report's
(`gateway.domain.report`), checkpoint and milestones are the recovery package's (gateway/tools/progress.py).
"""

from __future__ import annotations

import json
from collections import deque
from typing import Any

from gateway.api.connections import connection_view
from gateway.api.views import action_view, event_view
from gateway.clock import isoformat
from gateway.domain.report import build_report
from gateway.domain.watch import WatchPolicy, open_alerts
from gateway.service import Gateway
from gateway.store.records import RunRecord

SIGNALS_SHOWN = 20  # a run's newest signals on its page, newest first (warrant_status lists 50)

CONNECTIONS_SHOWN = 100  # a run's connected clients on its page, newest first (the API lists up to 500)
ACTIONS_READ = 2000  # actions one run page reads (the API's actions route pages through them all)
EVENTS_READ = 5000  # entries one run page reads at load ...
EVENTS_SHOWN = 200  # ... of which it shows the newest; the live stream goes on from the last
BATCH = 500
# The event fields a timeline line names, in this order (timeline.js names the same).
SUMMARY_FIELDS = (
    "tool",
    "status",
    "code",
    "action_id",
    "approval_id",
    "milestone_id",
    "version",
    "kind",
    "worker",
    "epoch",
    "by",
    "reason",
)


def last_heartbeat(run: RunRecord) -> str | None:
    """When the worker last renewed its lease: a grant, a renewal and every admitted call set the
    expiry to that moment plus the run's lease_ttl, so the expiry names it."""
    if run.lease_expires_at is None:
        return None
    return isoformat(run.lease_expires_at - run.lease_ttl)


async def last_verified(gateway: Gateway, run_id: str) -> dict[str, Any] | None:
    """The run's milestone verified last: `{milestone_id, verified_at}`, or None."""
    verified = [m for m in await gateway.store.list_milestones(run_id) if m.status == "verified" and m.verified_at]
    if not verified:
        return None
    last = max(verified, key=lambda m: m.verified_at or 0.0)
    return {"milestone_id": last.milestone_id, "verified_at": isoformat(last.verified_at)}


async def alerts_by_run(gateway: Gateway, tenant: str) -> dict[str, list[dict[str, Any]]]:
    """The tenant's open alerts per run: the conditions the watchdog alerts on that hold now (it raises
    each episode once; these stay shown until the condition ends), then the store's own open ones."""
    state = await gateway.store.watch_state(tenant=tenant)
    policy = gateway.watchdog.policy if gateway.watchdog is not None else WatchPolicy()
    found: dict[str, list[dict[str, Any]]] = {}
    for alert in open_alerts(state.runs, state.unknown, gateway.clock.now(), policy):
        found.setdefault(alert.run_id, []).append({"kind": alert.kind, "data": alert.data})
    # And the store's own alerts (a run failed, a completion refused, a serious refusal, ...): events
    # rather than conditions, open until the run makes verified progress again.
    for raised in await gateway.store.open_raised_alerts(tenant):
        data = {k: v for k, v in raised.data.items() if v is not None}
        found.setdefault(raised.run_id, []).append({"kind": raised.kind, "data": {**data, "at": isoformat(raised.at)}})
    return found


def alert_kinds(alerts: list[dict[str, Any]]) -> list[tuple[str, int]]:
    """`[(kind, how many)]` in the order first seen."""
    counts: dict[str, int] = {}
    for alert in alerts:
        counts[alert["kind"]] = counts.get(alert["kind"], 0) + 1
    return list(counts.items())


async def ledger(gateway: Gateway, tenant: str, run: RunRecord) -> dict[str, Any]:
    """The run's actions as the API shows them, apart: confirmed effects (writes that succeeded or were
    compensated), uncertain ones (`unknown`), refusals (`rejected`), and the other calls (reads,
    failures, calls in flight)."""
    actions: list[dict[str, Any]] = []
    cursor: str | None = None
    while len(actions) < ACTIONS_READ:
        page = await gateway.store.list_actions(tenant, run.run_id, cursor=cursor, limit=BATCH)
        actions += [action_view(a, run.currency) for a in page.items]
        cursor = page.next_cursor
        if cursor is None:
            break
    sections: dict[str, list[dict[str, Any]]] = {"confirmed": [], "unknown": [], "refused": [], "other": []}
    for action in actions:
        if action["status"] == "unknown":
            sections["unknown"].append(action)
        elif action["status"] == "rejected":
            sections["refused"].append(action)
        elif action["effect"] == "write" and action["status"] in ("succeeded", "compensated"):
            sections["confirmed"].append(action)
        else:
            sections["other"].append(action)
    return {**sections, "total": len(actions), "more": cursor is not None}


async def timeline(gateway: Gateway, tenant: str, run_id: str) -> dict[str, Any]:
    """The newest EVENTS_SHOWN entries of the run's history (as the API's events route shows each, with
    a one-line summary) and the seq the live stream goes on after."""
    shown: deque[dict[str, Any]] = deque(maxlen=EVENTS_SHOWN)
    after, read = 0, 0
    while read < EVENTS_READ:
        events = await gateway.store.list_events(tenant, run_id, after=after, limit=BATCH)
        for event in events:
            view = event_view(event)
            shown.append({**view, "summary": summary(view["data"])})
        read += len(events)
        if len(events) < BATCH:
            break
        after = events[-1].seq
    last = shown[-1]["seq"] if shown else 0
    return {"events": list(shown), "after": last, "earlier": max(0, read - len(shown))}


def summary(data: Any) -> str:
    """`key: value` of the SUMMARY_FIELDS an entry carries (timeline.js writes the same)."""
    if not isinstance(data, dict):
        return ""
    return " · ".join(f"{key}: {data[key]}" for key in SUMMARY_FIELDS if data.get(key) not in (None, ""))


async def cost_by_tag(gateway: Gateway, tenant: str, run_id: str) -> dict[str, Any]:
    """The run report's cost: `{total, by_tag}` (money as decimal strings)."""
    report = build_report(await gateway.store.report_inputs(tenant, run_id), gateway.clock.now()).as_dict()
    cost: dict[str, Any] = report["cost"]
    return cost


async def progress(gateway: Gateway, tenant: str, run_id: str) -> dict[str, Any]:
    """The recovery package's checkpoint and milestones, each milestone with the evidence the agent
    submitted (its body, when not purged) beside the checks the gateway ran on it."""
    assert gateway.progress is not None, "the app builds the gateway with its progress part"
    package = await gateway.progress.recovery(tenant, run_id)
    digests = {m.milestone_id: m.evidence_sha256 for m in await gateway.store.list_milestones(run_id)}
    milestones = []
    for item in package["milestones"]["items"]:
        digest = digests.get(item["milestone_id"])
        evidence = await gateway.store.get_blob(digest) if digest else None
        milestones.append({**item, "evidence": evidence, "evidence_sha256": digest})
    acknowledged = {u["action_id"]: u["acknowledged"] for u in package["effects"]["uncertain"]}
    return {"checkpoint": package["checkpoint"], "milestones": milestones, "acknowledged": acknowledged}


async def connections(gateway: Gateway, tenant: str, run: RunRecord) -> list[dict[str, Any]]:
    """The run's connected clients (MCP authorization's grants) as the API's connections route shows
    them, newest first, each with its status against the run as it stands."""
    grants = await gateway.store.list_oauth_grants(tenant, run.run_id, limit=CONNECTIONS_SHOWN)
    now = gateway.clock.now()
    return [connection_view(g, run, now) for g in grants]


async def waits(gateway: Gateway, run_id: str) -> dict[str, Any]:
    """The run's open warrant_wait (reason, until, wake_on) and its newest signals, newest first,
    as warrant_status shows them to the agent (docs/decisions/0027-waits.md)."""
    wait = await gateway.store.open_wait(run_id)
    signals = await gateway.store.list_signals(run_id, limit=SIGNALS_SHOWN)
    return {
        "open": wait.view() if wait is not None else None,
        "signals": [
            {**s.view(), "by": s.principal, "payload_json": _payload_text(s.payload)} for s in reversed(signals)
        ],
    }


def _payload_text(payload: Any) -> str:
    return json.dumps(payload, ensure_ascii=False, sort_keys=True)
