"""Verified progress end to end: a served gateway (uvicorn on loopback), the official MCP SDK
client as the worker, the operator API over HTTP, artifacts as real files under a configured root
and sources on a real loopback server that records every request (docs/progress.md).
"""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from gateway.adapters import PythonAdapter
from gateway.app import create_app
from gateway.clock import ManualClock
from gateway.config import load_settings
from tests.contracts import DROP, contract
from tests.harness import answer_lifespan, uvicorn_serving

pytestmark = pytest.mark.anyio

KEYS = {"op": ("acme", "operator"), "rev": ("acme", "approver"), "appr": ("acme", "approver")}
INVENTORY = b'[{"vendor": "a"}, {"vendor": "b"}]'


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@dataclass
class Recorder:
    """A loopback source: answers /vendors.csv with the current body and ETag; records every request."""

    body: bytes = b"vendor,price\na,1\n"
    etag: str = '"v1"'
    requests: list[str] = field(default_factory=list)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            await answer_lifespan(receive, send)
            return
        self.requests.append(scope["path"])
        status, body = (200, self.body) if scope["path"] == "/vendors.csv" else (404, b"")
        headers = [(b"etag", self.etag.encode()), (b"content-length", str(len(body)).encode())]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})


@dataclass
class World:
    url: str
    root: Path
    outside: Path
    source: Recorder
    source_url: str
    forbidden: Recorder
    forbidden_url: str
    clock: ManualClock
    effects: list[dict[str, Any]]

    def client(self, key: str) -> httpx.AsyncClient:
        return httpx.AsyncClient(base_url=self.url, headers={"Authorization": f"Bearer key-{key}"}, timeout=10)

    def artifact(self, name: str, body: bytes) -> dict[str, Any]:
        path = self.root / name
        path.write_bytes(body)
        return {"id": name.split(".")[0], "uri": path.as_uri(), "sha256": sha(body)}

    async def start(self, **changes: Any) -> tuple[str, str]:
        async with self.client("op") as c:
            r = await c.post("/api/runs", json={**CONTRACT, **changes})
            assert r.status_code == 201, r.text
            run_id = r.json()["run_id"]
            grant = (await c.post(f"/api/runs/{run_id}/lease", json={"worker": "agent"})).json()
        return run_id, grant["token"]


CONTRACT: dict[str, Any] = contract(
    goal="A source-linked vendor comparison",
    lease_ttl=DROP,
    budgets={"spend": "5.00"},
    milestones=[
        {"id": "inventory", "checks": [{"artifact": "inventory", "schema": {"type": "array", "minItems": 1}}]},
        {"id": "comparison", "checks": [{"artifact": "comparison"}, {"review": {"reviewer": "rev"}}]},
    ],
)


def shop(effects: list[dict[str, Any]]) -> PythonAdapter:
    adapter = PythonAdapter("shop")

    @adapter.tool(input_schema={"type": "object", "properties": {"card": {"type": "string"}}, "required": ["card"]})
    async def charge(args: dict[str, Any], call: Any) -> dict[str, Any]:
        effects.append(args)
        if args["card"] == "lost":
            raise ConnectionResetError("connection reset after the request was sent")
        return {"id": f"charge-{len(effects)}"}

    return adapter


@pytest.fixture
async def world(tmp_path: Path) -> AsyncIterator[World]:
    source, forbidden = Recorder(), Recorder()
    root = tmp_path / "artifacts"
    root.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    async with uvicorn_serving(source) as source_url, uvicorn_serving(forbidden) as forbidden_url:
        (tmp_path / "policy.yaml").write_text("tools:\n  shop__charge: {effect: write, cost: {spend: '0.20'}}\n")
        keys = "\n".join(
            f"  - {{name: {n}, tenant: {t}, roles: [{r}], key_env: KEY_{n.upper()}}}" for n, (t, r) in KEYS.items()
        )
        host = source_url.removeprefix("http://")
        (tmp_path / "warrant.yaml").write_text(
            f"database: sqlite:///{tmp_path}/w.db\napi_keys:\n{keys}\npolicies: [policy.yaml]\n"
            f"artifact_roots: [artifacts]\nartifact_hosts: ['{host}']\n"
            "artifact_limits: {max_bytes: 65536, timeout: 2}\nwatchdog: {enabled: false}\n"
        )
        env = {f"KEY_{n.upper()}": f"key-{n}" for n in KEYS} | {"WARRANT_LEDGER_KEY": "test-ledger-key"}
        clock = ManualClock()
        effects: list[dict[str, Any]] = []
        app = create_app(load_settings(tmp_path / "warrant.yaml", env), clock=clock, extra_adapters=[shop(effects)])
        async with uvicorn_serving(app) as url:
            yield World(url, root, outside, source, source_url, forbidden, forbidden_url, clock, effects)


@asynccontextmanager
async def worker(world: World, token: str) -> AsyncIterator[Client]:
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=10) as http:
        async with Client(streamable_http_client(f"{world.url}/mcp", http_client=http), cache=None) as c:
            yield c


async def call(c: Client, name: str, arguments: dict[str, Any]) -> tuple[bool, dict[str, Any], str]:
    result = await c.call_tool(name, arguments)
    text = result.content[0].text if result.content else ""  # type: ignore[union-attr]
    return result.is_error, result.structured_content or {}, text


# -- completion is the gateway's decision ---------------------------------------------------------
async def test_completion_is_refused_naming_what_is_missing_until_every_check_holds(world: World) -> None:
    run_id, token = await world.start()
    async with worker(world, token) as c:
        # Nothing submitted: both milestones are named.
        err, body, text = await call(c, "warrant_complete", {"summary": "done, trust me"})
        assert err and body["error"]["code"] == "completion_refused"
        assert {m["milestone_id"] for m in body["error"]["milestones"]} == {"inventory", "comparison"}
        assert text.startswith("[completion_refused]")

        # A missing artifact: the milestone fails and says which.
        err, body, _ = await call(c, "warrant_milestone", {"milestone_id": "inventory", "evidence": {}})
        assert not err and body["milestone"]["status"] == "failed"
        assert "inventory" in " ".join(body["milestone"]["reasons"])

        # A wrong checksum: the worker's claim is not the file's bytes.
        inventory = world.artifact("inventory.json", INVENTORY)
        wrong = {**inventory, "sha256": sha(b"something else")}
        err, body, _ = await call(
            c, "warrant_milestone", {"milestone_id": "inventory", "evidence": {"artifacts": [wrong]}}
        )
        assert body["milestone"]["status"] == "failed"
        assert inventory["sha256"] in " ".join(body["milestone"]["reasons"])
        _, body, _ = await call(c, "warrant_complete", {"summary": "done"})
        refused = {m["milestone_id"]: m for m in body["error"]["milestones"]}
        assert refused["inventory"]["status"] == "failed"
        assert inventory["sha256"] in " ".join(refused["inventory"]["reasons"])

        # The right one passes its schema.
        err, body, _ = await call(
            c, "warrant_milestone", {"milestone_id": "inventory", "evidence": {"artifacts": [inventory]}}
        )
        assert body["milestone"]["status"] == "verified", body

        # The review milestone waits for its named reviewer; completion names it.
        comparison = world.artifact("comparison.md", b"# a beats b\n")
        err, body, _ = await call(
            c, "warrant_milestone", {"milestone_id": "comparison", "evidence": {"artifacts": [comparison]}}
        )
        assert body["milestone"]["status"] == "pending_review"
        review_id = body["milestone"]["review_approval_id"]
        err, body, _ = await call(c, "warrant_complete", {"summary": "done"})
        assert err and body["error"]["code"] == "completion_refused"
        assert [m["milestone_id"] for m in body["error"]["milestones"]] == ["comparison"]
        assert body["error"]["milestones"][0]["status"] == "pending_review"

    # Another approver may not decide a named review; the reviewer may, and sees the exact evidence.
    async with world.client("appr") as c:
        r = await c.post(f"/api/approvals/{review_id}/approve", json={"note": "looks fine"})
        assert r.status_code == 403, r.text
    async with world.client("rev") as c:
        shown = (await c.get(f"/api/approvals/{review_id}")).json()
        assert shown["payload"]["artifacts"] == [
            {"id": "comparison", "uri": comparison["uri"], "sha256": comparison["sha256"]}
        ]
        r = await c.post(
            f"/api/approvals/{review_id}/approve", json={"note": "sound", "expected_sha256": shown["payload_sha256"]}
        )
        assert r.status_code == 200, r.text
    async with world.client("op") as c:
        run = (await c.get(f"/api/runs/{run_id}")).json()
        assert run["status"] == "running"  # a review never made the run wait
        assert {m["id"]: m["status"] for m in run["milestones"]} == {"inventory": "verified", "comparison": "verified"}

    async with worker(world, token) as c:
        err, body, text = await call(c, "warrant_complete", {"summary": "compared a and b"})
        assert not err, text
        assert body["completion"]["milestones"] == ["comparison", "inventory"]
        assert body["completion"]["uncertain"] == []
    async with world.client("op") as c:
        run = (await c.get(f"/api/runs/{run_id}")).json()
        events = [
            e["type"] for e in (await c.get(f"/api/runs/{run_id}/events", params={"limit": 1000})).json()["items"]
        ]
    assert run["status"] == "completed"
    assert "milestone_failed" in events and "milestone_verified" in events and "run_completed" in events


async def test_completion_reads_the_evidence_again_and_names_a_milestone_whose_artifact_changed(
    world: World,
) -> None:
    run_id, token = await world.start(milestones=[{"id": "inventory", "checks": [{"artifact": "inventory"}]}])
    inventory = world.artifact("inventory.json", INVENTORY)
    async with worker(world, token) as c:
        err, body, _ = await call(
            c, "warrant_milestone", {"milestone_id": "inventory", "evidence": {"artifacts": [inventory]}}
        )
        assert body["milestone"]["status"] == "verified", body
        (world.root / "inventory.json").write_bytes(b'[{"vendor": "c"}]')  # changed after it was verified
        err, body, text = await call(c, "warrant_complete", {"summary": "done"})
        assert err and body["error"]["code"] == "completion_refused", text
        [missing] = body["error"]["milestones"]
        assert missing["milestone_id"] == "inventory" and missing["status"] == "invalidated"
        assert inventory["sha256"] in " ".join(missing["reasons"])

        # Verified again against the file as it is now, the run completes.
        current = world.artifact("inventory.json", b'[{"vendor": "c"}]')
        err, body, _ = await call(
            c, "warrant_milestone", {"milestone_id": "inventory", "evidence": {"artifacts": [current]}}
        )
        assert body["milestone"]["status"] == "verified", body
        err, body, text = await call(c, "warrant_complete", {"summary": "done"})
        assert not err, text
    async with world.client("op") as c:
        items = (await c.get(f"/api/runs/{run_id}/events", params={"limit": 1000})).json()["items"]
    invalidated = [e["data"] for e in items if e["type"] == "milestone_invalidated"]
    assert [(e["milestone_id"], e["by"]) for e in invalidated] == [("inventory", "agent")]


async def test_a_superseded_worker_claiming_completion_reads_nothing_again(world: World) -> None:
    run_id, first = await world.start(milestones=[{"id": "inventory", "checks": [{"artifact": "inventory"}]}])
    inventory = world.artifact("inventory.json", INVENTORY)
    async with worker(world, first) as c:
        _, body, _ = await call(
            c, "warrant_milestone", {"milestone_id": "inventory", "evidence": {"artifacts": [inventory]}}
        )
        assert body["milestone"]["status"] == "verified", body
    async with world.client("op") as c:
        await c.post(f"/api/runs/{run_id}/lease", json={"worker": "b", "takeover": True})
    (world.root / "inventory.json").write_bytes(b"[]")
    async with worker(world, first) as c:
        _, body, _ = await call(c, "warrant_complete", {"summary": "done"})
        assert body["error"]["code"] == "lease_superseded"
    async with world.client("op") as c:
        run = (await c.get(f"/api/runs/{run_id}")).json()
    assert {m["id"]: m["status"] for m in run["milestones"]} == {"inventory": "verified"}  # not re-checked


async def test_an_unknown_action_blocks_completion_until_acknowledged_and_stays_named(world: World) -> None:
    run_id, token = await world.start(milestones=[])
    async with worker(world, token) as c:
        err, body, _ = await call(c, "shop__charge", {"card": "lost"})
        assert body["error"]["code"] == "outcome_unknown"
        action_id = body["error"]["action_id"]
        err, body, _ = await call(c, "warrant_complete", {"summary": "done"})
        assert body["error"]["code"] == "completion_refused"
        assert body["error"]["unknown_actions"] == [action_id]
    async with world.client("op") as c:
        r = await c.post(f"/api/actions/{action_id}/acknowledge", json={"note": "the processor cannot tell us"})
        assert r.status_code == 200, r.text
        assert r.json()["status"] == "unknown" and r.json()["acknowledged"]["by"] == "op"
    async with worker(world, token) as c:
        err, body, text = await call(c, "warrant_complete", {"summary": "done"})
        assert not err, text
        assert [u["action_id"] for u in body["completion"]["uncertain"]] == [action_id]
        assert action_id in text
    async with world.client("op") as c:
        recovery = (await c.get(f"/api/runs/{run_id}/recovery")).json()
    assert recovery["status"] == "completed"
    assert recovery["effects"]["uncertain"][0]["acknowledged"]["note"] == "the processor cannot tell us"


# -- checkpoints ----------------------------------------------------------------------------------
async def test_checkpoints_compare_and_set_and_a_superseded_worker_is_refused(world: World) -> None:
    run_id, first = await world.start()
    inventory = world.artifact("inventory.json", INVENTORY)
    async with worker(world, first) as c:
        err, body, _ = await call(
            c,
            "warrant_checkpoint",
            {"expected_version": 0, "artifacts": [inventory], "next_operation": {"description": "compare"}},
        )
        assert not err and body["checkpoint"]["version"] == 1
        err, body, _ = await call(c, "warrant_checkpoint", {"expected_version": 0})
        assert body["error"]["code"] == "checkpoint_conflict" and body["error"]["current_version"] == 1

    async with world.client("op") as c:
        second = (await c.post(f"/api/runs/{run_id}/lease", json={"worker": "b", "takeover": True})).json()["token"]
    async with worker(world, first) as c:  # the superseded worker's late write
        err, body, _ = await call(c, "warrant_checkpoint", {"expected_version": 1, "artifacts": []})
        assert body["error"]["code"] == "lease_superseded"
    async with worker(world, second) as c:
        err, body, _text = await call(c, "warrant_status", {})
        recovery = body["recovery"]
        assert recovery["checkpoint"]["version"] == 1 and recovery["last_good_version"] == 1
        assert recovery["next_operation"] == {"description": "compare"}
        assert recovery["artifacts"] == [inventory]
        err, body, _ = await call(c, "warrant_checkpoint", {"expected_version": 1, "artifacts": [inventory]})
        assert body["checkpoint"]["version"] == 2

    # The refused late write is in the audit trail.
    async with world.client("op") as c:
        actions = (await c.get(f"/api/runs/{run_id}/actions")).json()["items"]
    refused = [a for a in actions if a["tool"] == "warrant_checkpoint"]
    assert [a["code"] for a in refused] == ["checkpoint_conflict", "lease_superseded"]


async def test_a_paused_run_still_takes_a_checkpoint_but_not_a_completion(world: World) -> None:
    run_id, token = await world.start(milestones=[])
    async with world.client("op") as c:
        await c.post(f"/api/runs/{run_id}/pause", json={"reason": "lunch"})
    async with worker(world, token) as c:
        err, body, _ = await call(c, "warrant_checkpoint", {"expected_version": 0})
        assert not err and body["checkpoint"]["version"] == 1
        err, body, _ = await call(c, "warrant_complete", {"summary": "done"})
        assert body["error"]["code"] == "run_paused"


# -- resume reconciles reality first --------------------------------------------------------------
async def test_a_source_changed_during_a_pause_invalidates_the_milestone_that_used_it(world: World) -> None:
    run_id, token = await world.start()
    inventory = world.artifact("inventory.json", INVENTORY)
    source = {"uri": f"{world.source_url}/vendors.csv", "etag": world.source.etag}
    async with worker(world, token) as c:
        await call(c, "warrant_checkpoint", {"expected_version": 0, "artifacts": [inventory], "sources": [source]})
        _err, body, _ = await call(
            c, "warrant_milestone", {"milestone_id": "inventory", "evidence": {"artifacts": [inventory]}}
        )
        assert body["milestone"]["status"] == "verified"
        assert body["milestone"]["depends"]["sources"] == [source]  # the checkpoint's sources

    async with world.client("op") as c:
        await c.post(f"/api/runs/{run_id}/pause", json={"reason": "overnight"})
        world.source.etag, world.source.body = '"v2"', b"vendor,price\na,2\n"
        r = await c.post(f"/api/runs/{run_id}/resume", json={"reason": "morning"})
        assert r.status_code == 200, r.text
        resumed = r.json()
        assert resumed["status"] == "running"
        found = resumed["reconciliation"]
        assert [i["milestone_id"] for i in found["invalidated"]] == ["inventory"]
        assert "vendors.csv" in found["invalidated"][0]["reason"] and "changed" in found["invalidated"][0]["reason"]
        assert found["checkpoint_good"] is True  # its artifact did not change
        recovery = (await c.get(f"/api/runs/{run_id}/recovery")).json()
        events = [
            e["type"] for e in (await c.get(f"/api/runs/{run_id}/events", params={"limit": 1000})).json()["items"]
        ]
    items = {m["milestone_id"]: m for m in recovery["milestones"]["items"]}
    assert items["inventory"]["status"] == "invalidated" and recovery["milestones"]["verified"] == []
    assert "milestone_invalidated" in events
    assert "/vendors.csv" in world.source.requests


async def test_a_refused_resume_of_a_running_run_supersedes_no_review_and_invalidates_nothing(world: World) -> None:
    run_id, token = await world.start()
    comparison = world.artifact("comparison.md", b"# a beats b\n")
    async with worker(world, token) as c:
        _, body, _ = await call(
            c, "warrant_milestone", {"milestone_id": "comparison", "evidence": {"artifacts": [comparison]}}
        )
        review = body["milestone"]["review_approval_id"]
    (world.root / "comparison.md").write_bytes(b"# b beats a\n")  # a re-check would invalidate it
    async with world.client("op") as c:
        r = await c.post(f"/api/runs/{run_id}/resume", json={"reason": "not paused"})
        assert r.status_code == 409 and r.json()["error"]["code"] == "invalid_transition"
        recovery = (await c.get(f"/api/runs/{run_id}/recovery")).json()
        events = [
            e["type"] for e in (await c.get(f"/api/runs/{run_id}/events", params={"limit": 1000})).json()["items"]
        ]
    async with world.client("rev") as c:
        assert (await c.get(f"/api/approvals/{review}")).json()["status"] == "pending"
    item = next(m for m in recovery["milestones"]["items"] if m["milestone_id"] == "comparison")
    assert item["status"] == "pending_review"
    assert "milestone_invalidated" not in events


async def test_a_resume_past_the_deadline_expires_the_run_before_any_re_check(world: World) -> None:
    run_id, token = await world.start(expires_in="1h")
    inventory = world.artifact("inventory.json", INVENTORY)
    async with worker(world, token) as c:
        await call(c, "warrant_milestone", {"milestone_id": "inventory", "evidence": {"artifacts": [inventory]}})
    async with world.client("op") as c:
        await c.post(f"/api/runs/{run_id}/pause", json={})
        (world.root / "inventory.json").write_bytes(b"[]")
        world.clock.advance(3601)
        r = await c.post(f"/api/runs/{run_id}/resume", json={})
        assert r.status_code == 409 and r.json()["error"]["code"] == "run_expired"
        recovery = (await c.get(f"/api/runs/{run_id}/recovery")).json()
    assert recovery["status"] == "expired"
    assert recovery["milestones"]["verified"] == ["inventory"]


async def test_a_completion_refused_for_a_paused_run_reads_no_evidence_again(world: World) -> None:
    run_id, token = await world.start()
    inventory = world.artifact("inventory.json", INVENTORY)
    async with worker(world, token) as c:
        await call(c, "warrant_milestone", {"milestone_id": "inventory", "evidence": {"artifacts": [inventory]}})
    async with world.client("op") as c:
        await c.post(f"/api/runs/{run_id}/pause", json={})
    (world.root / "inventory.json").write_bytes(b"[]")
    async with worker(world, token) as c:
        _, body, _ = await call(c, "warrant_complete", {"summary": "done"})
        assert body["error"]["code"] == "run_paused"
    async with world.client("op") as c:
        recovery = (await c.get(f"/api/runs/{run_id}/recovery")).json()
    assert recovery["milestones"]["verified"] == ["inventory"]


async def test_a_changed_artifact_makes_the_checkpoint_not_good_and_recovery_names_the_last_good(world: World) -> None:
    run_id, token = await world.start()
    v1 = world.artifact("inventory.json", INVENTORY)
    async with worker(world, token) as c:
        await call(c, "warrant_checkpoint", {"expected_version": 0, "artifacts": [v1]})
        v2 = world.artifact("notes.txt", b"second")
        await call(c, "warrant_checkpoint", {"expected_version": 1, "artifacts": [v1, v2]})
    async with world.client("op") as c:
        await c.post(f"/api/runs/{run_id}/pause", json={})
        (world.root / "notes.txt").write_bytes(b"edited while paused")
        resumed = (await c.post(f"/api/runs/{run_id}/resume", json={})).json()
        recovery = (await c.get(f"/api/runs/{run_id}/recovery")).json()
    assert resumed["reconciliation"]["checkpoint_good"] is False
    assert "notes" in resumed["reconciliation"]["checkpoint_reason"]
    assert recovery["checkpoint"]["version"] == 2 and recovery["checkpoint"]["good"] is False
    assert recovery["last_good_version"] == 1


# -- what the gateway reads ---------------------------------------------------------------------
async def test_an_artifact_outside_the_roots_and_hosts_is_never_fetched(world: World) -> None:
    _run_id, token = await world.start()
    outside = world.outside / "inventory.json"
    outside.write_bytes(INVENTORY)
    (world.root / "link.json").symlink_to(outside)
    candidates = [
        {"id": "inventory", "uri": outside.as_uri(), "sha256": sha(INVENTORY)},
        {"id": "inventory", "uri": (world.root / "link.json").as_uri(), "sha256": sha(INVENTORY)},
        {"id": "inventory", "uri": f"{world.forbidden_url}/inventory.json", "sha256": sha(INVENTORY)},
        {"id": "inventory", "uri": f"file://{world.root}/../outside/inventory.json", "sha256": sha(INVENTORY)},
    ]
    async with worker(world, token) as c:
        for artifact in candidates:
            _, body, _ = await call(
                c, "warrant_milestone", {"milestone_id": "inventory", "evidence": {"artifacts": [artifact]}}
            )
            assert body["milestone"]["status"] == "unverified", (artifact, body)
        _err, body, _ = await call(c, "warrant_complete", {"summary": "done"})
        assert body["error"]["milestones"][0]["status"] in ("unverified", "pending")
    assert world.forbidden.requests == []


async def test_the_milestone_record_is_fenced_again_after_the_checks(world: World) -> None:
    """A worker superseded before it submits is refused, and no check result is recorded for it."""
    run_id, token = await world.start()
    inventory = world.artifact("inventory.json", INVENTORY)
    async with world.client("op") as c:
        await c.post(f"/api/runs/{run_id}/lease", json={"worker": "b", "takeover": True})
    async with worker(world, token) as c:
        _err, body, _ = await call(
            c, "warrant_milestone", {"milestone_id": "inventory", "evidence": {"artifacts": [inventory]}}
        )
    assert body["error"]["code"] == "lease_superseded"
    async with world.client("op") as c:
        recovery = (await c.get(f"/api/runs/{run_id}/recovery")).json()
    assert recovery["milestones"]["items"][0]["status"] == "pending"


async def test_bad_arguments_get_clear_errors(world: World) -> None:
    _, token = await world.start()
    async with worker(world, token) as c:
        _, body, _ = await call(c, "warrant_milestone", {"milestone_id": "nope"})
        assert body["error"]["code"] == "invalid_arguments" and "inventory" in body["error"]["message"]
        _, body, _ = await call(
            c,
            "warrant_checkpoint",
            {"expected_version": 0, "artifacts": [{"id": "x", "uri": "file:///x", "sha256": "no"}]},
        )
        assert body["error"]["code"] == "invalid_arguments" and "artifacts[0]" in body["error"]["message"]
        big = {"expected_version": 0, "next_operation": {"description": "x" * 300_000}}
        _err, body, _ = await call(c, "warrant_checkpoint", big)
        assert body["error"]["code"] == "payload_too_large"


# -- refusal paths each check must keep ----------------------------------------------------------
async def test_completion_is_refused_while_a_child_run_is_live(world: World) -> None:
    run_id, token = await world.start(milestones=[])
    child = {**CONTRACT, "milestones": [], "budgets": {**CONTRACT["budgets"], "spend": "1.00", "tool_calls": 10}}
    async with world.client("op") as c:
        r = await c.post(f"/api/runs/{run_id}/children", json=child)
        assert r.status_code == 201, r.text
        child_id = r.json()["run_id"]
    async with worker(world, token) as c:
        _, body, _ = await call(c, "warrant_complete", {"summary": "done"})
        assert body["error"]["code"] == "completion_refused"
        assert body["error"]["live_children"] == [child_id]
        assert body["error"]["milestones"] == [] and body["error"]["unknown_actions"] == []
    async with world.client("op") as c:
        await c.post(f"/api/runs/{child_id}/cancel", json={"reason": "not needed"})
    async with worker(world, token) as c:
        err, _, text = await call(c, "warrant_complete", {"summary": "done"})
        assert not err, text


async def test_progress_writes_are_refused_until_a_revised_contract_is_read(world: World) -> None:
    run_id, token = await world.start()
    async with world.client("op") as c:
        r = await c.post(
            f"/api/runs/{run_id}/revise",
            json={"spec_version": "v2", "patch": {"budgets": {"tool_calls": 50}}, "reason": "tighter"},
        )
        assert r.status_code == 200, r.text
    async with worker(world, token) as c:
        for name, arguments in (
            ("warrant_checkpoint", {"expected_version": 0}),
            ("warrant_milestone", {"milestone_id": "inventory"}),
            ("warrant_complete", {"summary": "done"}),
        ):
            _, body, _ = await call(c, name, arguments)
            assert body["error"]["code"] == "spec_version_mismatch", name
        await call(c, "warrant_status", {})
        err, body, _ = await call(c, "warrant_checkpoint", {"expected_version": 0})
        assert not err and body["checkpoint"]["version"] == 1


async def test_a_denied_review_fails_the_milestone_and_a_new_submission_supersedes_the_old_review(
    world: World,
) -> None:
    run_id, token = await world.start()
    comparison = world.artifact("comparison.md", b"# a beats b\n")
    submit = {"milestone_id": "comparison", "evidence": {"artifacts": [comparison]}}
    async with worker(world, token) as c:
        _, body, _ = await call(c, "warrant_milestone", submit)
        first = body["milestone"]["review_approval_id"]
        _, body, _ = await call(c, "warrant_milestone", submit)
        second = body["milestone"]["review_approval_id"]
    assert first != second
    async with world.client("rev") as c:
        assert (await c.get(f"/api/approvals/{first}")).json()["status"] == "superseded"
        r = await c.post(f"/api/approvals/{first}/approve", json={})
        assert r.status_code == 409 and r.json()["error"]["code"] == "approval_not_pending"
        r = await c.post(f"/api/approvals/{second}/deny", json={"note": "no sources"})
        assert r.status_code == 200, r.text
    async with world.client("op") as c:
        recovery = (await c.get(f"/api/runs/{run_id}/recovery")).json()
    item = next(m for m in recovery["milestones"]["items"] if m["milestone_id"] == "comparison")
    assert item["status"] == "failed"
    assert any("no sources" in reason for reason in item["reasons"])


async def test_a_pending_review_does_not_make_a_resumed_run_wait(world: World) -> None:
    run_id, token = await world.start()
    comparison = world.artifact("comparison.md", b"# a beats b\n")
    async with worker(world, token) as c:
        _, body, _ = await call(
            c, "warrant_milestone", {"milestone_id": "comparison", "evidence": {"artifacts": [comparison]}}
        )
        assert body["milestone"]["status"] == "pending_review"
    async with world.client("op") as c:
        await c.post(f"/api/runs/{run_id}/pause", json={})
        resumed = (await c.post(f"/api/runs/{run_id}/resume", json={})).json()
    assert resumed["status"] == "running"


async def test_a_pending_review_does_not_keep_a_run_waiting_once_its_tool_approval_is_decided(world: World) -> None:
    run_id, token = await world.start(approvals=[{"tool": "shop__charge", "role": "approver"}])
    comparison = world.artifact("comparison.md", b"# a beats b\n")
    async with worker(world, token) as c:
        await call(c, "warrant_milestone", {"milestone_id": "comparison", "evidence": {"artifacts": [comparison]}})
        _, body, _ = await call(c, "shop__charge", {"card": "ok"})
        assert body["error"]["code"] == "approval_required"
        approval_id = body["error"]["approval_id"]
    async with world.client("op") as c:
        assert (await c.get(f"/api/runs/{run_id}")).json()["status"] == "waiting"
    async with world.client("appr") as c:
        assert (await c.post(f"/api/approvals/{approval_id}/approve", json={})).status_code == 200
    async with world.client("op") as c:
        assert (await c.get(f"/api/runs/{run_id}")).json()["status"] == "running"
