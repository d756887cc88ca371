"""The `warrant` CLI as a person or a script drives it: `python -m gateway.cli ...` subprocesses against a
real `warrant serve` process (the shipped demo notebook adapter `adapters/notes.yaml` and the shipped
policy `policies/default.yaml`, whose `notes__send` outside acme.example needs an approver), with an
agent calling tools through `/mcp` with the official SDK client and the lease token the CLI printed.

One gateway serves the module; each test makes its own run. Codes are asserted, never message text;
what a person must see (the payload, its hash, the diff) is asserted as it is printed.
"""

from __future__ import annotations

import contextlib
import json
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx
import mcp.types as types
import pytest
from mcp import Client

from tests.contracts import DROP
from tests.contracts import contract as base_contract
from tests.e2e.serving import ROOT, clean_environ, mcp_agent, warrant_serve
from tests.e2e.test_mcp_end_to_end import code_of
from tests.harness import free_port

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

WAIT = 20.0  # seconds: the bound on every command, call and process start or stop
KEYS = {"ops": "admin", "op": "operator", "appr": "approver", "aud": "auditor"}
LEDGER_KEY = "cli-e2e-ledger-key"
CONTRACT_YAML = """\
# A contract as a person writes it: YAML, money quoted (a YAML 5.00 would be a float).
goal: Collect vendor notes and send one to a partner
spec_version: v1
owner: ana@acme.example
expires_in: 72h
lease_ttl: 5m
budgets:
  spend: "1.00"
  tool_calls: 100
  writes: 10
  active_seconds: 7200
authority:
  allow: ["notes__*"]
milestones:
  - id: notes
"""


@dataclass
class Served:
    url: str
    tmp: Path

    async def warrant(
        self, key: str | None, *argv: str, stdin: str | None = None, offline: bool = False
    ) -> subprocess.CompletedProcess[str]:
        """`warrant ARGV --url URL` (no `--url` when `offline`) with `key-KEY` as WARRANT_API_KEY, bounded by WAIT."""
        env = clean_environ()
        if key is not None:
            env["WARRANT_API_KEY"] = f"key-{key}"
        with anyio.fail_after(WAIT):
            done = await anyio.run_process(
                [sys.executable, "-m", "gateway.cli", *argv, *([] if offline else ["--url", self.url])],
                input=stdin.encode() if stdin is not None else None,
                env=env,
                cwd=ROOT,
                check=False,
            )
        return subprocess.CompletedProcess(done.args, done.returncode, done.stdout.decode(), done.stderr.decode())

    async def ok(self, key: str, *argv: str, stdin: str | None = None) -> str:
        """The stdout of a command that must succeed."""
        done = await self.warrant(key, *argv, stdin=stdin)
        assert done.returncode == 0, f"warrant {' '.join(argv)} exited {done.returncode}:\n{done.stderr}"
        return done.stdout

    async def new_run(self) -> str:
        contract = self.tmp / "contract.yaml"
        contract.write_text(CONTRACT_YAML)
        run_id = (await self.ok("op", "runs", "create", str(contract))).strip()
        assert run_id.startswith("run_") and "\n" not in run_id
        return run_id

    def api(self, key: str) -> httpx.AsyncClient:
        return httpx.AsyncClient(base_url=self.url, headers={"Authorization": f"Bearer key-{key}"}, timeout=WAIT)

    def agent(self, token: str) -> contextlib.AbstractAsyncContextManager[Client]:
        """The official SDK client over streamable HTTP, holding the run's lease token."""
        return mcp_agent(self.url, token, WAIT)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    tmp = tmp_path_factory.mktemp("cli")
    port = free_port()
    keys = "\n".join(
        f"  - {{name: {n}, tenant: acme, roles: [{r}], key_env: CLI_KEY_{n.upper()}}}" for n, r in KEYS.items()
    )
    config = tmp / "warrant.yaml"
    config.write_text(
        f"database: sqlite:///{tmp}/w.db\nlisten: {{host: 127.0.0.1, port: {port}}}\napi_keys:\n{keys}\n"
        f"adapters: [{ROOT / 'adapters' / 'notes.yaml'}]\npolicies: [{ROOT / 'policies' / 'default.yaml'}]\n"
    )
    env = clean_environ() | {"WARRANT_LEDGER_KEY": LEDGER_KEY} | {f"CLI_KEY_{n.upper()}": f"key-{n}" for n in KEYS}
    url = f"http://127.0.0.1:{port}"
    with warrant_serve(config, url, env, tmp / "serve.log", WAIT):
        yield Served(url, tmp)


def structured(result: types.CallToolResult) -> dict[str, Any]:
    assert result.structured_content is not None, result
    return result.structured_content


# -- runs ------------------------------------------------------------------------------------
async def test_a_run_created_from_a_yaml_contract_is_listed_and_shown(served: Served) -> None:
    run_id = await served.new_run()

    listed = await served.ok("aud", "runs", "list", "--all")
    header, *rows = listed.splitlines()
    assert header.split()[:3] == ["RUN_ID", "STATUS", "SPEND"]
    assert [row.split()[:3] for row in rows if row.startswith(run_id)] == [[run_id, "running", "0.00/1.00"]]
    page = json.loads(await served.ok("aud", "runs", "list", "--status", "running", "--limit", "500", "--json"))
    assert run_id in {r["run_id"] for r in page["items"]}

    shown = (await served.ok("aud", "runs", "show", run_id)).splitlines()
    assert shown[0] == f"{run_id}  running"
    assert "  spend           [----------] 0.00 / 1.00" in shown
    assert "  lease         none" in shown
    assert "  notes  required  pending" in shown
    as_json = json.loads(await served.ok("aud", "runs", "show", run_id, "--json"))
    assert (as_json["run_id"], as_json["budgets"]["spend"]["limit"]) == (run_id, "1.00")


async def test_a_contract_from_stdin_creates_a_run_and_a_bad_one_names_its_problems(served: Served) -> None:
    contract = base_contract(
        goal="from a pipe",
        expires_in="1h",
        lease_ttl=DROP,
        budgets={"spend": "0.50", "tool_calls": 5, "writes": 1, "active_seconds": 600},
        authority={"allow": ["notes__search"]},
    )
    created = json.loads(await served.ok("op", "runs", "create", "-", "--json", stdin=json.dumps(contract)))
    assert created["status"] == "running" and created["goal"] == "from a pipe"

    bad = CONTRACT_YAML.replace('spend: "1.00"', "spend: 1.00").replace("owner: ana@acme.example\n", "")
    refused = await served.warrant("op", "runs", "create", "-", stdin=bad)
    assert refused.returncode == 1
    assert refused.stderr.startswith("warrant: [invalid_contract]")
    assert "owner:" in refused.stderr and "budgets.spend:" in refused.stderr


# -- leases, approvals, the agent ------------------------------------------------------------
async def test_an_approver_sees_the_exact_payload_and_its_diff_and_approves_it_by_its_hash(served: Served) -> None:
    run_id = await served.new_run()
    acquired = await served.warrant("op", "leases", "acquire", run_id, "--worker", "agent-1")
    assert acquired.returncode == 0, acquired.stderr
    token = acquired.stdout.strip()
    assert token.startswith("wl_") and "shown once" in acquired.stderr and token not in acquired.stderr
    renewed = await served.warrant(None, "leases", "renew", "--token", token, "--json")
    assert renewed.returncode == 0 and json.loads(renewed.stdout)["epoch"] == 1, renewed.stderr

    first = {"note_id": "", "to": "bob@partner.example"}
    with anyio.fail_after(WAIT):
        async with served.agent(token) as agent:
            note = await agent.call_tool("notes__append", {"title": "vendors", "body": "three of them"})
            assert code_of(note) is None, note
            first["note_id"] = structured(note)["id"]
            asked = await agent.call_tool("notes__send", first)
    assert code_of(asked) == "approval_required"
    denied_id = structured(asked)["error"]["approval_id"]

    listed = await served.ok("appr", "approvals", "list", "--run", run_id)
    assert [line.split()[:4] for line in listed.splitlines()[1:]] == [[denied_id, run_id, "notes__send", "pending"]]
    await served.ok("appr", "approvals", "deny", denied_id, "--note", "not bob")

    second = {**first, "to": "carol@partner.example"}
    evidence = {"source": "crm://contacts/9", "quote": "carol owns the vendor list"}
    with anyio.fail_after(WAIT):
        async with served.agent(token) as agent:
            proposed = await agent.call_tool(
                "warrant_propose", {"tool": "notes__send", "arguments": second, "evidence": evidence}
            )
    assert code_of(proposed) is None, proposed
    approval_id = structured(proposed)["approval"]["approval_id"]
    sha = structured(proposed)["payload_sha256"]

    shown = await served.ok("appr", "approvals", "show", approval_id)
    assert f"payload sha256 {sha}  (the payload below hashes to it)" in shown
    assert '    "to": "carol@partner.example"' in shown  # the exact payload, pretty
    assert '    "source": "crm://contacts/9"' in shown  # the evidence
    assert f"diff against {denied_id} (denied" in shown
    assert '  -  "to": "bob@partner.example"' in shown and '  +  "to": "carol@partner.example"' in shown

    approved = await served.ok("appr", "approvals", "approve", approval_id, "--note", "carol is right")
    assert f"{approval_id}: approved (sha256 {sha})" in approved.splitlines()
    async with served.api("appr") as api:
        decided = (await api.get(f"/api/approvals/{approval_id}")).json()
    assert (decided["status"], decided["decided_by"], decided["note"]) == ("approved", "appr", "carol is right")

    with anyio.fail_after(WAIT):
        async with served.agent(token) as agent:
            sent = await agent.call_tool("notes__send", second)
    assert code_of(sent) is None, sent
    actions = (await served.ok("aud", "runs", "actions", run_id)).splitlines()
    assert actions[0].split()[:4] == ["ACTION_ID", "TOOL", "EFFECT", "STATUS"]
    assert [line.split()[1:4] for line in actions[1:]] == [
        ["notes__append", "write", "succeeded"],
        ["notes__send", "write", "succeeded"],
    ]


async def test_a_pinned_hash_that_is_not_the_payload_is_refused_payload_mismatch(served: Served) -> None:
    run_id = await served.new_run()
    token = (await served.ok("op", "leases", "acquire", run_id)).strip()
    with anyio.fail_after(WAIT):
        async with served.agent(token) as agent:
            asked = await agent.call_tool("notes__send", {"note_id": "note-x", "to": "dan@partner.example"})
    approval_id = structured(asked)["error"]["approval_id"]
    refused = await served.warrant("appr", "approvals", "approve", approval_id, "--sha256", "0" * 64)
    assert refused.returncode == 1 and "[payload_mismatch]" in refused.stderr
    async with served.api("appr") as api:
        assert (await api.get(f"/api/approvals/{approval_id}")).json()["status"] == "pending"


async def test_an_approver_approves_an_edited_payload_from_a_file_and_from_stdin(served: Served) -> None:
    run_id = await served.new_run()
    token = (await served.ok("op", "leases", "acquire", run_id)).strip()
    proposed = {"note_id": "note-x", "to": "dan@partner.example"}
    edited = {"note_id": "note-x", "to": "erin@partner.example"}
    with anyio.fail_after(WAIT):
        async with served.agent(token) as agent:
            asked = await agent.call_tool("notes__send", proposed)
    approval_id = structured(asked)["error"]["approval_id"]
    bad = await served.warrant("appr", "approvals", "approve", approval_id, "--arguments", "-", stdin="[1]")
    assert bad.returncode == 1 and "[invalid_json]" in bad.stderr
    outside = await served.warrant(
        "appr", "approvals", "approve", approval_id, "--arguments", "-", stdin='{"to": "erin@partner.example"}'
    )
    assert outside.returncode == 1 and "[edit_outside_authority]" in outside.stderr  # note_id is required

    path = served.tmp / "edited.json"
    path.write_text(json.dumps(edited))
    approved = await served.ok("appr", "approvals", "approve", approval_id, "--arguments", str(path))
    assert '-  "to": "dan@partner.example"' in approved and '+  "to": "erin@partner.example"' in approved
    assert f"{approval_id}: approved, edited (sha256 " in approved
    with anyio.fail_after(WAIT):
        async with served.agent(token) as agent:
            told = structured(await agent.call_tool("notes__send", proposed))["error"]
            assert (told["code"], told["arguments"]) == ("approval_edited", edited)
            sent = await agent.call_tool("notes__send", told["arguments"])
    assert code_of(sent) is None and structured(sent)["to"] == "erin@partner.example"


# -- usage and the pilot report --------------------------------------------------------------
async def test_reported_usage_and_a_tool_call_add_up_in_the_report(served: Served) -> None:
    run_id = await served.new_run()
    token = (await served.ok("op", "leases", "acquire", run_id)).strip()
    with anyio.fail_after(WAIT):
        async with served.agent(token) as agent:
            note = await agent.call_tool("notes__append", {"title": "costs", "body": "one note"})
    assert code_of(note) is None, note
    usage = ("runs", "usage", run_id, "--kind", "model", "--amount", "0.42", "--note", "tokens", "--ref", "step-1")
    first = await served.ok("op", *usage)
    assert ": 0.42 model;" in first and "not charged again" not in first
    assert "not charged again" in await served.ok("op", *usage)
    await served.ok("op", "runs", "usage", run_id, "--kind", "runtime", "--amount", "0.05")
    refused = await served.warrant("op", "runs", "usage", run_id, "--kind", "model", "--amount", "0.001")
    assert refused.returncode == 1 and refused.stderr.startswith("warrant: [invalid_request]")

    shown = (await served.ok("aud", "runs", "report", run_id)).splitlines()
    assert shown[0] == f"{run_id}  running"
    header = next(i for i, line in enumerate(shown) if line.split() == ["TAG", "AMOUNT"])
    rows = dict(line.split() for line in shown[header + 1 :])
    assert rows == {
        "model": "0.42",
        "tool": "0.01",
        "runtime": "0.05",
        "recovery": "0.00",
        "children": "0.00",
        "total": "0.48",
    }
    report = json.loads(await served.ok("aud", "runs", "report", run_id, "--json"))
    run = json.loads(await served.ok("aud", "runs", "show", run_id, "--json"))
    assert report["cost"]["total"] == run["budgets"]["spend"]["spent"] == "0.48"


# -- events, cancel, the ledger --------------------------------------------------------------
async def test_cancel_then_the_history_lists_it_and_an_exported_bundle_verifies_offline_unless_edited(
    served: Served,
) -> None:
    run_id = await served.new_run()
    await served.ok("op", "leases", "acquire", run_id, "--worker", "agent-9")
    cancelled = await served.ok("op", "runs", "cancel", run_id, "--reason", "the job is off")
    assert cancelled.strip() == f"{run_id}: cancelled (the job is off)"

    lines = (await served.ok("aud", "events", "tail", run_id, "--no-follow")).splitlines()
    assert [line.split()[0] for line in lines] == [str(seq) for seq in range(1, len(lines) + 1)]
    assert [line.split()[3] for line in lines] == ["run_created", "lease_granted", "run_cancelled"]
    assert 'reason="the job is off"' in lines[-1]
    entries = [
        json.loads(line)
        for line in (await served.ok("aud", "events", "tail", run_id, "--no-follow", "--json")).splitlines()
    ]
    assert [e["seq"] for e in entries] == [1, 2, 3] and entries[2]["data"]["reason"] == "the job is off"
    later = (await served.ok("aud", "events", "tail", run_id, "--no-follow", "--from", "3")).splitlines()
    assert [line.split()[0] for line in later] == ["3"]

    bundle = served.tmp / f"{run_id}.jsonl"
    await served.ok("aud", "ledger", "export", "--run", run_id, "--out", str(bundle))
    key = served.tmp / "ledger.key"
    key.write_text(LEDGER_KEY + "\n")
    verified = await served.warrant(
        None, "ledger", "verify", "--file", str(bundle), "--key-file", str(key), offline=True
    )
    assert verified.returncode == 0, verified.stdout + verified.stderr
    edited = served.tmp / f"{run_id}-edited.jsonl"
    edited.write_text(bundle.read_text().replace("the job is off", "nothing happened"))
    refused = await served.warrant(
        None, "ledger", "verify", "--file", str(edited), "--key-file", str(key), "--json", offline=True
    )
    report = json.loads(refused.stdout)
    assert (refused.returncode, report["ok"], report["first_bad"]["item"]) == (1, False, "event"), report


async def test_events_tail_follows_the_stream_and_ctrl_c_ends_it_cleanly(served: Served) -> None:
    run_id = await served.new_run()
    env = clean_environ() | {"WARRANT_API_KEY": "key-aud"}
    command = [sys.executable, "-m", "gateway.cli", "events", "tail", run_id, "--url", served.url]
    async with await anyio.open_process(command, env=env, cwd=ROOT) as tail:
        assert tail.stdout is not None
        seen = b""

        async def until(event_type: str) -> None:
            nonlocal seen
            while f"  {event_type}".encode() not in seen:
                seen += await tail.stdout.receive()  # type: ignore[union-attr]

        try:
            with anyio.fail_after(WAIT):
                await until("run_created")  # the history first
                async with served.api("op") as api:
                    paused = await api.post(f"/api/runs/{run_id}/pause", json={"reason": "lunch"})
                assert paused.status_code == 200, paused.text
                await until("run_paused")  # then what happens, as it happens
            tail.send_signal(signal.SIGINT)
            with anyio.fail_after(WAIT):
                assert await tail.wait() == 0
        finally:
            if tail.returncode is None:
                tail.kill()
    lines = seen.decode().splitlines()
    assert [line.split()[3] for line in lines] == ["run_created", "run_paused"]
    assert "reason=lunch" in lines[-1]


# -- failures --------------------------------------------------------------------------------
async def test_failures_exit_non_zero_with_the_error_code_on_stderr(served: Served) -> None:
    missing = await served.warrant("aud", "runs", "show", "run_nosuchrun")
    assert (missing.returncode, missing.stdout) == (1, "")
    assert missing.stderr.startswith("warrant: [not_found]")
    as_json = await served.warrant("aud", "runs", "show", "run_nosuchrun", "--json")
    assert as_json.returncode == 1 and json.loads(as_json.stdout)["error"]["code"] == "not_found"

    run_id = await served.new_run()
    forbidden = await served.warrant("appr", "runs", "cancel", run_id)
    assert forbidden.returncode == 1 and "[forbidden]" in forbidden.stderr
    successor = await served.warrant("op", "runs", "successor", run_id, "--reason", "next quarter")
    assert successor.returncode == 1 and "[run_not_terminal]" in successor.stderr  # the run is still live
    no_key = await served.warrant(None, "runs", "list")
    assert no_key.returncode == 1 and "[unauthenticated]" in no_key.stderr
    usage = await served.warrant("op", "runs", "cancel")
    assert usage.returncode == 2


async def test_approvals_show_marks_a_look_alike_address_above_the_payload(served: Served) -> None:
    run_id = await served.new_run()
    acquired = await served.warrant("op", "leases", "acquire", run_id, "--worker", "agent-1")
    assert acquired.returncode == 0, acquired.stderr
    with anyio.fail_after(WAIT):
        async with served.agent(acquired.stdout.strip()) as agent:
            note = await agent.call_tool("notes__append", {"title": "t", "body": "b"})
            asked = await agent.call_tool(
                "notes__send", {"note_id": structured(note)["id"], "to": "ceo@\u0430cme.example"}
            )
    assert code_of(asked) == "approval_required"  # a Cyrillic `а`: not the acme.example the rule allows
    shown = await served.ok("appr", "approvals", "show", structured(asked)["error"]["approval_id"])
    assert "LOOK CLOSELY" in shown and "to  letters from more than one script" in shown and "U+0430" in shown
    assert shown.index("LOOK CLOSELY") < shown.index('"to": "ceo@')  # above the payload
